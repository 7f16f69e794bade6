"""Shared fixtures: the book, built once per test session from scratch.

The build goes into a pytest temporary directory, never into ``_build``: every test run
executes every notebook afresh (nothing is reused from a jupyter-cache), so the site
that the tests check is exactly what ``make book`` publishes from the committed sources.

Three environment variables help while iterating (CI sets none of them):
``MHA_BOOK_HTML=<dir>`` checks an already built html dir instead of building,
``MHA_BOOK_TOC=<file>`` builds (and the site test visits) only the pages of a private
table of contents, e.g. your chapter before it is in ``_toc.yml``, and
``MHA_BOOK_SOURCE=<dir>`` builds another book root (e.g. a small private toy book).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 30 * 60  # the whole book; chapters are designed for <= 90 s each


def book_source() -> Path:
    """The book root the session builds: the repository unless MHA_BOOK_SOURCE says otherwise."""
    return Path(os.environ.get("MHA_BOOK_SOURCE", REPO)).resolve()


def book_toc() -> Path:
    """The table of contents the session builds: the book's unless MHA_BOOK_TOC says otherwise."""
    return Path(os.environ.get("MHA_BOOK_TOC", book_source() / "_toc.yml")).resolve()


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the book once, both editions (fresh execution, warnings are errors); its html dir.

    The Chinese edition is the ``zh`` folder inside it."""
    prebuilt = os.environ.get("MHA_BOOK_HTML")
    if prebuilt:
        html = Path(prebuilt).resolve()
        assert (html / "index.html").is_file(), f"MHA_BOOK_HTML={prebuilt} holds no index.html"
        return html

    out = tmp_path_factory.mktemp("book")
    log = out / "build.log"
    if "MHA_BOOK_TOC" in os.environ or "MHA_BOOK_SOURCE" in os.environ:
        # A private table of contents or another book root: English only, as jupyter-book does.
        cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book_source()),
               "--path-output", str(out), "-W", "-n", "--keep-going"]
        if "MHA_BOOK_TOC" in os.environ:
            cmd += ["--toc", str(book_toc())]
    else:
        # Both editions, exactly as `make book` builds them.
        cmd = [sys.executable, str(REPO / "scripts" / "build_book.py"), "--path-output", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.run(
            cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=BUILD_TIMEOUT_S
        )
    elapsed = time.perf_counter() - start
    html = out / "_build" / "html"
    if proc.returncode != 0 or not (html / "index.html").is_file():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-60:])
        pytest.fail(
            f"book build failed (exit {proc.returncode}, {elapsed:.0f} s): {' '.join(cmd)}\n"
            f"--- last lines of {log} ---\n{tail}",
            pytrace=False,
        )
    print(f"\nbook built from scratch in {elapsed:.0f} s into {html}", file=sys.stderr)
    return html


@pytest.fixture(autouse=True)
def _seed_every_test(request: pytest.FixtureRequest) -> None:
    """Seed torch's global generator from the test's id, so that a test draws the same numbers
    alone as in the whole suite, in any order and any process: a failure can be replayed."""
    import zlib

    import torch

    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))
