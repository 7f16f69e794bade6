"""{claim} links (book/_ext/claim_links.py): each opens its row of the ledger, in the edition's
words; a claim the ledger does not have is a warning (the strict build fails on it)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext"
LEDGER = """Ledger
======

.. list-table::
   :header-rows: 1

   * - #
     - claim
   * - 1
     - the first
   * - 5c
     - another
"""


def build(tmp_path: Path, text: str, language: str = "en") -> tuple[str, str]:
    """Build a two-page project with the extension; the index's html and the warnings."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    (src / "book").mkdir(parents=True)
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = ['claim_links']\n"
        f"language = {language!r}\n"
    )
    (src / "book" / "claims.rst").write_text(LEDGER)
    (src / "index.rst").write_text(f"Index\n=====\n\n{text}\n\n.. toctree::\n\n   book/claims\n")
    warnings = io.StringIO()
    app = Sphinx(str(src), str(src), str(tmp_path / "out"), str(tmp_path / "doctrees"), "html",
                 status=None, warning=warnings, freshenv=True)  # fmt: skip
    app.build()
    return (tmp_path / "out" / "index.html").read_text(), warnings.getvalue()


def test_a_claim_links_to_its_row(tmp_path):
    page, warnings = build(tmp_path, "See :claim:`5c` and :claim:`1`.")
    assert 'href="book/claims.html#claim-5c">claim 5c</a>' in page
    assert 'href="book/claims.html#claim-1">claim 1</a>' in page
    ledger = (tmp_path / "out" / "book" / "claims.html").read_text()
    assert 'id="claim-5c"' in ledger and 'id="claim-1"' in ledger
    assert "claims ledger" not in warnings


def test_the_chinese_edition_says_it_in_chinese(tmp_path):
    page, _ = build(tmp_path, "见 :claim:`5c`。", language="zh_CN")
    assert ">论断 5c</a>" in page


@pytest.mark.parametrize("missing", ["99", "5d"])
def test_a_claim_the_ledger_lacks_is_a_warning(tmp_path, missing):
    page, warnings = build(tmp_path, f"See :claim:`{missing}`.")
    assert f"no row '{missing}' in the claims ledger" in warnings
    assert f"claim {missing}" in page and f"#claim-{missing}" not in page


def test_the_ledger_summary_counts_each_rows_leading_verdict():
    import sys

    sys.path.insert(0, str(EXT))
    from claim_links import leading_verdicts, ledger_verdicts

    ledger = """intro

| # | words | verdict | measurement | where |
|---|---|---|---|---|
| 1 | a | supported, nuanced | x | y |
| 2 | b | supported for the layout; contradicted for the rest | x | y |
| 2b | c | not supported as stated: no | x | y |
| 3 | d | nuanced for one, contradicted for another | x | y |
| 4 | e | not testable as stated | x | y |

| 15 | after the first table | contradicted | x | y |
"""
    assert leading_verdicts(ledger) == [
        "supported", "supported", "not supported", "nuanced", "not testable",
    ]
    assert sum("contradicted" in v for v in ledger_verdicts(ledger)) == 2
    with pytest.raises(ValueError, match="names no class"):
        leading_verdicts(ledger.replace("not testable as stated", "unclear"))


def test_the_real_ledger_has_a_class_for_every_verdict():
    import sys

    sys.path.insert(0, str(EXT))
    from claim_links import leading_verdicts

    ledger = (EXT.parents[0] / "claims.md").read_text(encoding="utf-8")
    assert len(leading_verdicts(ledger)) >= 20
