#!/usr/bin/env bash
# Install what the browser test (tests/test_site.py) needs:
#   * Debian's Chromium (/usr/bin/chromium), via apt-get, only when running as root
#     (CI and this project's machines); elsewhere it prints how to install it;
#   * the pinned JavaScript test assets (axe-core and the libraries bertviz loads from a
#     CDN, served locally by the test) with `npm ci` in tests/site_assets/.
# Idempotent and quick when everything is already there; `make test` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages still missing. fonts-wqy-zenhei: the book quotes Chinese (the source
# article's title, chapter 8); without a CJK font the screenshots show empty boxes there.
need=()
[ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
fc-list :lang=zh 2>/dev/null | grep -q . || need+=(fonts-wqy-zenhei fontconfig)
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
    want=$(sha256sum tests/site_assets/package-lock.json | cut -d' ' -f1)
    stamp=tests/site_assets/node_modules/.installed-lock.sha256
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        (cd tests/site_assets && npm ci --no-audit --no-fund --loglevel=error)
        echo "$want" > "$stamp"
    fi
else
    echo "install_browser: npm missing; the browser test will be skipped." >&2
    echo "  Install it with: sudo apt-get install npm" >&2
fi
