"""Serve every script the site needs from the site itself, and put the live lab's model in it.

After an html build:

* the pinned npm packages (`package.json` / `package-lock.json` at the book root,
  installed with `npm ci`) are copied into `_static/vendor/`: MathJax (`_config.yml`
  points `mathjax_path` there), and require.js, d3 and jQuery, which bertviz's views load;
* every page's references to bertviz's CDN copies of those three are rewritten to the local
  ones (the notebooks keep bertviz's own HTML, so they still work in Jupyter), and any
  reference left to a CDN is a build warning (an error under `-W`);
* when the lab page (`book/lab`) was built: `scripts/export_lab_model.py` (cached; a
  no-op when its inputs did not change) writes the ONNX model, and the model, its vocabulary,
  the lab's JavaScript modules and CSS (every `lab/*.js` and `lab/*.css`), the
  benchmark's committed numbers (`bench/results/lab.json`) and ONNX Runtime Web's
  WebAssembly build go into `_static/lab/` and `_static/vendor/onnxruntime-web/`.

The Chinese edition (`zh/` inside the English site, scripts/build_book.py) serves none of the
lab's files itself: with `mha_lab_files_from` set (book/zh.yml: `"../"`, the English site
relative to this one), its lab page loads the lab's script and style sheet, and with them the
model, the vocabulary and ONNX Runtime Web, from the English site's `_static`. One copy
(about 48 MB) serves both editions, and a reader who switches language downloads nothing
again: the browser has those very URLs already.

So the built site works offline from any static server. Set `MHA_NODE_MODULES` to use
another `node_modules` directory (a temporary copy of the book, say).
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
# bertviz's URL (without ".js" where require.js adds it) → the local file under _static/vendor.
BERTVIZ_URLS = {
    f"{CDNJS}/require.js/2.3.6/require.min.js": "vendor/require.js",
    f"{CDNJS}/d3/5.7.0/d3.min": "vendor/d3.min",
    f"{CDNJS}/jquery/2.0.0/jquery.min": "vendor/jquery.min",
}
# node_modules path → _static path. bertviz asks for jQuery 2.0.0, which npm does not carry;
# 2.2.4 is the same major line.
VENDOR_FILES = {
    "requirejs/require.js": "vendor/require.js",
    "d3/dist/d3.min.js": "vendor/d3.min.js",
    "jquery/dist/jquery.min.js": "vendor/jquery.min.js",
}
VENDOR_DIRS = {"mathjax/es5": "vendor/mathjax"}
# ONNX Runtime Web, WebAssembly only. Served as .js, which every static server labels as
# JavaScript (a module script with another MIME type is refused); lab.js names the files.
_ORT = "vendor/onnxruntime-web"
ORT_FILES = {
    "onnxruntime-web/dist/ort.wasm.min.mjs": f"{_ORT}/ort.wasm.min.js",
    "onnxruntime-web/dist/ort-wasm-simd-threaded.mjs": f"{_ORT}/ort-wasm-simd-threaded.js",
    "onnxruntime-web/dist/ort-wasm-simd-threaded.wasm": f"{_ORT}/ort-wasm-simd-threaded.wasm",
    "onnxruntime-web/README.md": f"{_ORT}/README.md",
}
LAB_PAGE = "book/lab"
# lab.js imports its sibling modules by relative URL: every one must be served beside it.
LAB_SOURCE_PATTERNS = ("*.js", "*.css")
MODEL_FILES = ("minilm-lab.stages.gz", "vocab.txt", "lab-model.json")
OFF_HOST = re.compile(
    r"""(?:src|href)=["']https?://(?:cdnjs\.cloudflare\.com|cdn\.jsdelivr\.net|unpkg\.com)[^"']*"""
)
INSTALL_HINT = "run `npm ci` in the book's root (make book does), or set MHA_NODE_MODULES"


def node_modules(srcdir: Path) -> Path | None:
    for candidate in (os.environ.get("MHA_NODE_MODULES"), srcdir / "node_modules"):
        if candidate and (Path(candidate) / "mathjax").is_dir():
            return Path(candidate)
    return None


def _copy(src: Path, dst: Path) -> None:
    """Copy one file unless an identical one is already there (rebuilds stay quick)."""
    if not src.is_file():
        raise ExtensionError(f"site_assets: {src} is missing; {INSTALL_HINT}")
    if dst.is_file() and filecmp.cmp(src, dst, shallow=False):
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _copy_tree(src: Path, dst: Path) -> None:
    for path in src.rglob("*"):
        if path.is_file():
            _copy(path, dst / path.relative_to(src))


def rewrite_cdn_urls(html_dir: Path) -> list[str]:
    """Point bertviz's loaders at the site's copies; return the pages still naming a CDN."""
    left = []
    for page in html_dir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = text
        depth = len(page.relative_to(html_dir).parts) - 1
        static = "../" * depth + "_static/"
        for url, local in BERTVIZ_URLS.items():
            new = new.replace(url, static + local)
        if new != text:
            page.write_text(new, encoding="utf-8")
        found = OFF_HOST.findall(new)
        if found:
            left.append(f"{page.relative_to(html_dir)}: {sorted(set(found))[:3]}")
    return left


def lab_sources(srcdir: Path) -> list[str]:
    """The lab's files the site serves: its ES modules and its style sheet."""
    return sorted(
        path.name for pattern in LAB_SOURCE_PATTERNS for path in (srcdir / "lab").glob(pattern)
    )


def export_lab_model(srcdir: Path) -> Path:
    out = Path(os.environ.get("MHA_LAB_MODEL_DIR", srcdir / "_build" / "lab-model"))
    script = srcdir / "scripts" / "export_lab_model.py"
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    if done.returncode != 0:
        raise ExtensionError(
            f"site_assets: {script.name} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
        )
    logger.info(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "lab model ready")
    return out


def share_lab_files(page: Path, up: str, depth: int) -> None:
    """Point the lab page's script and style sheet at another site's copy (`up`: "../").

    `depth` is the page's folder depth in its own site: the link becomes exactly
    `"../" * depth + up`, so an incremental build, which finds the page already pointed
    there when Sphinx did not write it again, leaves it as it is.
    """
    text = page.read_text(encoding="utf-8")
    target = "../" * depth + up
    link = re.compile(r'((?:src|href)=")((?:\.\./)*)_static/lab/')
    if not link.search(text):
        raise ExtensionError(f"site_assets: {page} names no _static/lab/ file to share")
    page.write_text(link.sub(rf"\1{target}_static/lab/", text), encoding="utf-8")


def build_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    srcdir = Path(app.srcdir)
    outdir = Path(app.outdir)
    static = outdir / "_static"
    modules = node_modules(srcdir)
    lab_built = (outdir / f"{LAB_PAGE}.html").is_file()
    if modules is None:
        if lab_built:
            raise ExtensionError(
                f"site_assets: no node_modules with the site's scripts; {INSTALL_HINT}"
            )
        logger.info(
            "site_assets: no node_modules, pages will miss MathJax and bertviz's scripts; "
            + INSTALL_HINT
        )
    else:
        for src, dst in VENDOR_FILES.items():
            _copy(modules / src, static / dst)
        for src, dst in VENDOR_DIRS.items():
            _copy_tree(modules / src, static / dst)
    left = rewrite_cdn_urls(outdir)
    if left:
        logger.warning("site_assets: pages still load scripts from a CDN:\n" + "\n".join(left))
    if not lab_built:
        return
    if app.config.mha_lab_files_from:
        depth = LAB_PAGE.count("/")
        share_lab_files(outdir / f"{LAB_PAGE}.html", app.config.mha_lab_files_from, depth)
        return
    for src, dst in ORT_FILES.items():
        _copy(modules / src, static / dst)
    model_dir = export_lab_model(srcdir)
    for name in MODEL_FILES:
        _copy(model_dir / name, static / "lab" / name)
    for name in lab_sources(srcdir):
        _copy(srcdir / "lab" / name, static / "lab" / name)
    bench = srcdir / "bench" / "results" / "lab.json"
    if bench.is_file():
        _copy(bench, static / "lab" / "lab-bench.json")
    else:  # the page then shows only what the reader's own browser measures
        (static / "lab" / "lab-bench.json").write_text("null\n")


def setup(app: Sphinx) -> dict[str, bool]:
    # Where the lab's files are served instead of this site's own _static (book/zh.yml).
    app.add_config_value("mha_lab_files_from", "", "html", [str])
    app.connect("build-finished", build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
