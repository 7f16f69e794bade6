"""The claims ledger reads at a glance (book/claims.md): each row's deciding measurement shows at
most 40 words, a glued number, a formula or a piece of code counting as one word; what else the
measurement says is behind the cell's toggle, a `<details>` named "The full measurement" that
holds the measurement in full (so nothing is lost by the short text, which only repeats its
numbers). The Chinese catalogue splits each cell the same way: the same numbers before the
toggle, the same full text behind it. book/_ext/small_screens.py moves the toggle out of the
cell's paragraph (tests/unit/test_small_screens.py); the built page is checked in
tests/book/test_site.py and tests/book/test_phone.py like every card of the ledger.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import polib
import pytest

REPO = Path(__file__).resolve().parents[2]
LEDGER = REPO / "book" / "claims.md"
CATALOGUE = REPO / "locales" / "zh_CN" / "LC_MESSAGES" / "book" / "claims.po"
MAX_WORDS = 40
SUMMARY = {"en": "The full measurement", "zh_CN": "完整的测量"}

_GLUE = re.compile(r"\{glue:\w+\}`[^`]*`")
_TOGGLE = re.compile(r"^(.*?)\s*<details><summary>([^<]*)</summary>(.*)</details>$", re.S)


def words(markdown: str) -> int:
    """The words a reader sees in a cell's Markdown: a glued number, a formula, a piece of code
    or a citation is one word; a titled role ({term}, {doc}) counts its title."""
    text = _GLUE.sub(" N ", markdown)
    text = re.sub(r"\{(?:term|doc|ref)\}`([^`<]*?)\s*(?:<[^>]*>)?`", r" \1 ", text)
    text = re.sub(r"\{[\w:]+\}`[^`]*`", " R ", text)
    text = re.sub(r"\$[^$]*\$", " M ", text)
    text = re.sub(r"`[^`]*`", " C ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r" \1 ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return sum(1 for w in text.split() if re.search(r"\w", w))


def ledger_cells() -> dict[str, str]:
    """Each row's deciding measurement (the fourth column), by its claim number."""
    cells = {}
    for line in LEDGER.read_text(encoding="utf-8").splitlines():
        parts = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(r"\d+[a-z]?", parts[0]):
            cells[parts[0]] = parts[3]
    return cells


def split(cell: str) -> tuple[str, str | None, str | None]:
    """(shown text, toggle's name, text behind the toggle); the last two None without one."""
    found = _TOGGLE.match(cell)
    return (found.group(1), found.group(2), found.group(3)) if found else (cell, None, None)


def test_words_count_a_glued_number_a_formula_and_code_as_one_word() -> None:
    cell = (
        "at $d_k=512$ the top key gets {glue:text}`../notebooks/a.ipynb::x:.2f` of the "
        "weight, `mha_lib` equals it ({term}`total variation <total variation>`)"
    )
    assert words(cell) == 15
    assert split(cell + " <details><summary>S</summary>more</details>") == (cell, "S", "more")


CELLS = ledger_cells()


@pytest.mark.parametrize("row", sorted(CELLS))
def test_each_deciding_measurement_shows_at_most_40_words(row: str) -> None:
    shown, summary, full = split(CELLS[row])
    assert words(shown) <= MAX_WORDS, f"row {row} shows {words(shown)} words"
    if summary is None:
        return
    assert summary == SUMMARY["en"]
    assert "<details>" not in shown + full
    # The short text repeats numbers of the full measurement, never one of its own.
    extra = Counter(_GLUE.findall(shown)) - Counter(_GLUE.findall(full))
    assert not extra, f"row {row}: numbers shown that the full measurement lacks: {extra}"


@pytest.mark.parametrize("row", sorted(r for r, cell in CELLS.items() if split(cell)[1]))
def test_the_chinese_cell_is_split_the_same_way(row: str) -> None:
    english = CELLS[row]
    entry = polib.pofile(str(CATALOGUE)).find(english)
    assert entry is not None and entry.msgstr and "fuzzy" not in entry.flags
    shown, summary, full = split(english)
    zh_shown, zh_summary, zh_full = split(entry.msgstr)
    assert zh_summary == SUMMARY["zh_CN"], f"row {row}: no toggle in the translation"
    assert Counter(_GLUE.findall(zh_shown)) == Counter(_GLUE.findall(shown))
    assert Counter(_GLUE.findall(zh_full)) == Counter(_GLUE.findall(full))
