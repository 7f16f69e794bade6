#!/usr/bin/env bash
# Install what the site and its browser tests (tests/book/test_site.py, tests/book/test_lab*.py) need:
#   * Debian's Chromium (/usr/bin/chromium), via apt-get, only when running as root
#     (CI and this project's machines); elsewhere it prints how to install it;
#   * the site's pinned JavaScript with `npm ci` in the repository root (package-lock.json):
#     MathJax, bertviz's require.js, d3 and jQuery, ONNX Runtime Web, which the built site
#     serves itself (book/_ext/site_assets.py), and axe-core for the test.
# With --npm-only (make book) only npm and `npm ci`. Idempotent and quick when everything
# is already there; `make test` and `make book` run it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages still missing. fonts-wqy-zenhei: the book quotes Chinese (the source
# article's title, chapter 8); without a CJK font the screenshots show empty boxes there.
need=()
if [ "${1:-}" != "--npm-only" ]; then
    [ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
    fc-list :lang=zh 2>/dev/null | grep -q . || need+=(fonts-wqy-zenhei fontconfig)
fi
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "install_browser: apt-get install ${need[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
        echo "install_browser: missing ${need[*]}; the browser test will be skipped." >&2
        echo "  Install them with: sudo apt-get install ${need[*]}" >&2
    fi
fi

if command -v npm >/dev/null; then
    # Re-run `npm ci` whenever the lock file changed since the last install.
    want=$(sha256sum package-lock.json | cut -d' ' -f1)
    stamp=node_modules/.installed-lock.sha256
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        npm ci --no-audit --no-fund --loglevel=error
        echo "$want" > "$stamp"
    fi
else
    echo "install_browser: npm missing; the site cannot be built and the browser test will be skipped." >&2
    echo "  Install it with: sudo apt-get install npm" >&2
fi
