"""Library code shown on a page reads as Python (book/_ext/plain_docstrings.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from plain_docstrings import plain  # noqa: E402


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        (":func:`~mha_lib.core.masks.allowed_keys`", "`allowed_keys`"),
        (":class:`torch.Tensor`", "`torch.Tensor`"),
        (":mod:`~mha_lib.core.masks` holds the convention", "`masks` holds the convention"),
        (":py:meth:`~MultiHeadAttention.forward`", "`forward`"),
        ("``(B, H, T, T)`` weights", "`(B, H, T, T)` weights"),
        ("x = a @ b  # no markup here", "x = a @ b  # no markup here"),
    ],
)
def test_roles_and_double_backticks_become_plain_names(source, shown):
    assert plain(source) == shown


@pytest.mark.book
def test_no_sphinx_role_in_the_code_a_page_shows(built_book):
    found = []
    for page in sorted((built_book / "notebooks").glob("*.html")):
        for block in re.findall(r'<div class="highlight[^"]*"><pre>(.*?)</pre>', page.read_text(),
                                flags=re.S):  # fmt: skip
            text = re.sub(r"<[^>]+>", "", block)
            if re.search(r":(?:func|class|mod|meth|data|attr):`", text):
                found.append(page.name)
    assert not found, f"Sphinx roles shown in the code of {sorted(set(found))}"
