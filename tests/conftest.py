"""Shared fixtures: the book, built once per test session from scratch; a tiny random BERT.

The build goes into a pytest temporary directory, never into `_build`: every test run
executes every notebook afresh (nothing is reused from a jupyter-cache), so the site
that the tests check is exactly what `make book` publishes from the committed sources.

Three environment variables help while iterating (CI sets none of them):
`MHA_BOOK_HTML=<dir>` checks an already built html dir instead of building,
`MHA_BOOK_TOC=<file>` builds (and the site test visits) only the pages of a private
table of contents, e.g. your chapter before it is in `_toc.yml`, and
`MHA_BOOK_SOURCE=<dir>` builds another book root (e.g. a small private toy book).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 30 * 60  # the whole book; chapters are designed for <= 90 s each


def book_source() -> Path:
    """The book root the session builds: the repository unless MHA_BOOK_SOURCE says otherwise."""
    return Path(os.environ.get("MHA_BOOK_SOURCE", REPO)).resolve()


def book_toc() -> Path:
    """The table of contents the session builds: the book's unless MHA_BOOK_TOC says otherwise."""
    return Path(os.environ.get("MHA_BOOK_TOC", book_source() / "_toc.yml")).resolve()


def _build_command(out: Path) -> list[str]:
    """The command that builds the session's book into `out`."""
    if "MHA_BOOK_TOC" in os.environ or "MHA_BOOK_SOURCE" in os.environ:
        # A private table of contents or another book root: English only, as jupyter-book does.
        cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book_source()),
               "--path-output", str(out), "-W", "-n", "--keep-going"]
        if "MHA_BOOK_TOC" in os.environ:
            cmd += ["--toc", str(book_toc())]
        return cmd
    # Both editions, exactly as `make book` builds them.
    return [sys.executable, str(REPO / "scripts" / "build_book.py"), "--path-output", str(out)]


class _Build:
    """The book build, started in the background as soon as the session knows it needs one."""

    def __init__(self, out: Path) -> None:
        self.out, self.log = out, out / "build.log"
        self.cmd = _build_command(out)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        self.start = time.perf_counter()
        with self.log.open("w") as fh:
            self.proc = subprocess.Popen(self.cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)

    def html(self) -> Path:
        """Wait for the build; its html dir, or the test fails with the log's last lines."""
        try:
            code = self.proc.wait(timeout=max(1.0, BUILD_TIMEOUT_S - self.elapsed()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = f"timeout after {BUILD_TIMEOUT_S} s"
        html = self.out / "_build" / "html"
        if code != 0 or not (html / "index.html").is_file():
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-60:])
            pytest.fail(
                f"book build failed (exit {code}, {self.elapsed():.0f} s): {' '.join(self.cmd)}\n"
                f"--- last lines of {self.log} ---\n{tail}",
                pytrace=False,
            )
        return html

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


_BUILD: _Build | None = None


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of the built book run last, and the build starts now, in the background: the
    other tests run while it executes the notebooks, instead of before or after it."""
    global _BUILD
    items.sort(key=lambda item: item.get_closest_marker("book") is not None)  # stable
    wanted = any(item.get_closest_marker("book") for item in items)
    if wanted and not os.environ.get("MHA_BOOK_HTML") and not config.option.collectonly:
        # The fixture's own temporary directories, kept and pruned as pytest keeps its others
        # (the factory is made by pytest's tmp_path plugin; the fixture cannot be asked yet).
        _BUILD = _Build(config._tmp_path_factory.mktemp("book"))  # noqa: SLF001


def pytest_unconfigure(config: pytest.Config) -> None:
    if _BUILD is not None and _BUILD.proc.poll() is None:
        _BUILD.proc.kill()  # a session cut short leaves no build running


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book built once, both editions (fresh execution, warnings are errors); its html dir.

    The Chinese edition is the `zh` folder inside it."""
    prebuilt = os.environ.get("MHA_BOOK_HTML")
    if prebuilt:
        html = Path(prebuilt).resolve()
        assert (html / "index.html").is_file(), f"MHA_BOOK_HTML={prebuilt} holds no index.html"
        return html
    build = _BUILD or _Build(tmp_path_factory.mktemp("book"))  # a book test asked late
    html = build.html()
    print(f"\nbook built from scratch in {build.elapsed():.0f} s into {html}", file=sys.stderr)
    return html


@pytest.fixture(autouse=True)
def _seed_every_test(request: pytest.FixtureRequest) -> None:
    """Seed torch's global generator from the test's id, so that a test draws the same numbers
    alone as in the whole suite, in any order and any process: a failure can be replayed."""
    import zlib

    import torch

    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


# The tiny random BERT's shape, unless a test says otherwise (any BertConfig field).
TINY_BERT = {
    "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
    "intermediate_size": 16, "max_position_embeddings": 16, "attn_implementation": "eager",
}  # fmt: skip


@pytest.fixture(scope="session")
def tiny_bert() -> Callable[..., Any]:
    """A maker of small random BERTs, fast enough for any unit test: ``tiny_bert(seed=0,
    **config)` seeds torch's global generator with `seed`, then returns a `BertModel`` in
    eval mode built from `TINY_BERT` with `config`'s fields changed, e.g.
    `tiny_bert(vocab_size=tokenizer.vocab_size, max_position_embeddings=64)` for MiniLM's
    tokenizer. The same seed and config give the same weights."""

    def make(*, seed: int = 0, **config: Any) -> Any:
        import torch
        from transformers import BertConfig, BertModel

        torch.manual_seed(seed)
        return BertModel(BertConfig(**{**TINY_BERT, **config})).eval()

    return make
