"""Build the book in both languages: English into _build/html, Chinese into _build/html/zh.

    python scripts/build_book.py [--path-output DIR]   # what `make book` runs

The English build executes the notebooks (or reuses jupyter-cache's copy of an unchanged one).
The Chinese build reads the *same* cache, so it executes nothing: both editions show the same
numbers and figures, and only the words differ, taken from locales/zh_CN (see locales/README.md).

Jupyter Book's `--config` replaces _config.yml instead of extending it, so the Chinese config
is written at build time: _config.yml with book/zh.yml merged over it, and the paths that
Jupyter Book reads relative to the config file made absolute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ZH_OVERRIDES = REPO / "book" / "zh.yml"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
STRICT = ["-W", "-n", "--keep-going"]


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`base` with `over` merged into it, dictionaries key by key."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def book_config(cache: Path, overrides: Path | None = None) -> dict[str, Any]:
    """_config.yml (with `overrides` merged in) for a build that uses jupyter-cache `cache`."""
    import yaml

    config = yaml.safe_load((REPO / "_config.yml").read_text())
    if overrides is not None:
        config = _merged(config, yaml.safe_load(overrides.read_text()))
    sphinx = config.setdefault("sphinx", {})
    sphinx["local_extensions"] = {
        name: str(REPO / path) for name, path in sphinx.get("local_extensions", {}).items()
    }
    config.setdefault("execute", {})["cache"] = str(cache)
    return config


def _write_config(config: dict[str, Any], path: Path) -> Path:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return path


def _jupyter_book(*args: str) -> float:
    """Run jupyter-book; return its wall time in seconds, or exit with its status on failure."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    status = subprocess.call([str(JUPYTER_BOOK), "build", str(REPO), *args], env=env)
    if status != 0:
        sys.exit(status)
    return time.perf_counter() - start


def build(path_output: Path = REPO) -> tuple[float, float]:
    """Both editions under `path_output/_build/html`; returns the two builds' times (s)."""
    build_dir = path_output / "_build"
    english = _jupyter_book("--path-output", str(path_output), *STRICT)

    zh_root = build_dir / "zh"
    config = book_config(build_dir / ".jupyter_cache", ZH_OVERRIDES)
    chinese = _jupyter_book(
        "--config", str(_write_config(config, zh_root / "_config.yml")),
        "--path-output", str(zh_root), *STRICT,
    )
    target = build_dir / "html" / "zh"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(zh_root / "_build" / "html", target)
    print(f"English build {english:.0f} s; Chinese build {chinese:.0f} s (from the same cache)")
    return english, chinese


def gettext_build(out: Path) -> Path:
    """Extract the book's messages into .pot files under `out`; returns their folder."""
    config = book_config(REPO / "_build" / ".jupyter_cache")
    # A figure's words are in its translatable copy (mha_lib.book.show), which the Chinese
    # build shows: read that one here too, and the PNG only where there is no copy.
    config["sphinx"]["config"]["nb_mime_priority_overrides"] = [
        ["gettext", "text/markdown", 5], ["gettext", "text/html", 10]
    ]
    _jupyter_book(
        "--config", str(_write_config(config, out / "_config.yml")),
        "--path-output", str(out), "--builder", "custom", "--custom-builder", "gettext", *STRICT,
    )
    return out / "_build" / "gettext"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path-output", type=Path, default=REPO,
                        help="build under DIR/_build (default: the repository)")
    build(parser.parse_args().path_output.resolve())
