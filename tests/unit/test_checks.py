"""The library's shared input checks (mha_lib._checks), and that the library uses them.

A positive-int check written inline drifts: one copy forgets bools, another says "must be
positive" without naming the argument. The guard below reads the library's source and
fails on a new inline copy.
"""

import ast
from pathlib import Path

import pytest

from mha_lib._checks import check_batches, check_positive_int

LIBRARY = Path(__file__).resolve().parents[2] / "mha_lib"
# Files that may still carry an inline copy (none: every check goes through the one helper).
NOT_YET: set[str] = set()


@pytest.mark.parametrize("value", [1, 7, 10**12])
def test_positive_ints_pass_through(value):
    assert check_positive_int("n", value) == value


@pytest.mark.parametrize("value", [0, -3, True, False, 1.0, "2", None])
def test_anything_else_is_a_value_error_naming_the_argument(value):
    with pytest.raises(ValueError, match=rf"^num_heads must be a positive int, got {value!r}$"):
        check_positive_int("num_heads", value)


@pytest.mark.parametrize("batches", [[], (), "ab", b"ab", None, iter([1])])
def test_batches_must_be_a_non_empty_sequence(batches):
    with pytest.raises(ValueError, match="eval_batches must be a non-empty list of batches"):
        check_batches(batches, "eval_batches")
    check_batches([object()])


def inline_positive_int_checks(tree):
    """`isinstance(x, bool) or not isinstance(x, int) or x < 1` (or `<= 0`), anywhere."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)):
            continue
        text = ast.unparse(node)
        if "isinstance" in text and ", bool)" in text and ", int)" in text and (
            "< 1" in text or "<= 0" in text
        ):
            found.append(node.lineno)
    return found


def test_the_guard_finds_an_inline_copy():
    copy = "if isinstance(n, bool) or not isinstance(n, int) or n < 1:\n    raise ValueError"
    assert inline_positive_int_checks(ast.parse(copy)) == [1]


def test_the_library_has_no_inline_positive_int_check():
    found = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        name = path.relative_to(LIBRARY).as_posix()
        if name == "_checks.py" or name in NOT_YET:
            continue
        lines = inline_positive_int_checks(ast.parse(path.read_text()))
        if lines:
            found[name] = lines
    assert not found, f"use mha_lib._checks.check_positive_int instead: {found}"
