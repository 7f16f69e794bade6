"""Docstrings and comments are written in plain words: names in single backticks.

Pages show the library's code as it is (``literalinclude``), so a Sphinx role or
reStructuredText's double backticks in a docstring would reach the reader as clutter.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|exc|obj|const):`")
FOLDERS = ("mha_lib", "scripts", "bench")  # book/_ext quotes MyST roles, which need them


def _docstrings_and_comments(path: Path) -> list[tuple[int, str]]:
    source = path.read_text()
    starts = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                starts.add((first.value.lineno, first.value.col_offset))
    return [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
        or (token.type == tokenize.STRING and token.start in starts)
    ]


def _markup(text: str) -> bool:
    return bool(ROLE.search(text)) or "``" in text.strip('"').strip("'")


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_sphinx_markup_in_docstrings_or_comments(folder):
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, text in _docstrings_and_comments(path)
        if _markup(text)
    ]
    assert not found, f"Sphinx roles or double backticks in {found[:10]}"


def test_the_check_finds_a_role_and_double_backticks():
    assert _markup('"""See :func:`~mha_lib.core.masks.allowed_keys`."""')
    assert _markup('"""Returns ``(B, H, T, T)`` weights."""')
    assert not _markup('"""Returns `(B, H, T, T)` weights."""')
    assert not _markup('""""""')
