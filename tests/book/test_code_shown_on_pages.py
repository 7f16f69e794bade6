"""Library code shown on a page reads as Python: no Sphinx roles in what a page shows."""

from __future__ import annotations

import re

import pytest


@pytest.mark.book
def test_no_sphinx_role_in_the_code_a_page_shows(built_book):
    found = []
    for page in sorted((built_book / "notebooks").glob("*.html")):
        for block in re.findall(r'<div class="highlight[^"]*"><pre>(.*?)</pre>', page.read_text(),
                                flags=re.S):  # fmt: skip
            text = re.sub(r"<[^>]+>", "", block)
            if re.search(r":(?:func|class|mod|meth|data|attr):`|``", text):
                found.append(page.name)
    assert not found, f"Sphinx roles or double backticks shown in the code of {sorted(set(found))}"
