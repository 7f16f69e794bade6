"""The Chinese edition's typography, read off a built page as a reader reads it.

Shared by tests/book/test_chinese_typography.py (every page of the built Chinese edition, and each
rule on hand-made cases) and by whoever counts what is left (``python
tests/book/chinese_typography.py _build/html/zh`` prints the counts per page and rule).

The text is the page's article, without code, maths, program outputs shown as text, the
bibliography's entries (English works, cited in their own language) and the theme's heading
links, read block by block (a paragraph, a list item, a table cell, a heading) as the browser
lays it out: a line break inside a paragraph is a space. The rules (locales/README.md):

- `cjk_spaces`: no space between two Chinese characters (or Chinese punctuation);
- quotation marks, one convention with two roles (locales/README.md, the ledger): 「…」 quotes
  the source article, character for character (tests/book/test_article_quotes.py checks the ledger's
  against the article), and every other quotation is “…” (‘…’ inside), as GB/T 15834 and
  d2l-zh write horizontal Chinese. So `straight_quotes`: no half-width " (or ' beside a
  Chinese character) in Chinese text, but inside a 「…」, where the article's own characters
  stay; and `corner_quotes`: no 「…」 that does not hold the article's words;
- `citations`: no "et al.", "and others" / "和 others", "n.d.", and no citation that repeats
  the names just before it ("Tenney 等人 [Tenney 等人, 2019]");
- `english`: no English word left in Chinese prose: names (capitalised: BERT, Tenney,
  PyTorch; or listed: torch, bertviz), the words the glossary keeps in English (softmax, ...),
  a gloss in brackets right after the Chinese term (注意力汇（attention sink）) and quoted
  words (an English example sentence, “dog bites man”) aside.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from bs4 import BeautifulSoup

# Han characters (CJK ideographs), and the CJK punctuation and full-width forms around them.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
_HAN = re.compile(f"[{HAN}]")

# What is not prose: code, maths, outputs shown as text, the bibliography, the heading links.
# A formula or a piece of code inside a sentence stands there as a Latin placeholder (the
# space beside it is a space beside Latin text, which the rules allow).
NOT_PROSE = (
    "script, style, pre, div.math, .headerlink, div.highlight, .cell_input, "
    "div.citation-list, div.citation, .bibliography, .mha-lab-strings"
)
IN_SENTENCE = "code, kbd, samp, span.math, mjx-container"
PLACEHOLDER = "X"
BLOCKS = "p, li, td, th, dt, dd, h1, h2, h3, h4, h5, h6, caption, figcaption, summary"


def blocks(page_html: str) -> list[str]:
    """The article's prose, one string per innermost block, as laid out (whitespace runs are
    one space; a formula or code in a sentence is `PLACEHOLDER`)."""
    soup = BeautifulSoup(page_html, "html.parser")
    article = soup.find("article") or soup
    for el in article.select(NOT_PROSE):
        el.decompose()
    for el in article.select(IN_SENTENCE):
        el.replace_with(PLACEHOLDER)
    found = []
    for block in article.select(BLOCKS):
        if block.select_one(BLOCKS):  # an outer block: its inner ones are read instead
            continue
        text = re.sub(r"[ \t\r\n]+", " ", block.get_text("")).strip()
        if text:
            found.append(text)
    return found


def _context(text: str, start: int, end: int, width: int = 14) -> str:
    return text[max(0, start - width) : end + width]


# --- The rules: each takes one block's text and returns what it finds (with context). ---

_CJK_SPACE = re.compile(f"(?<=[{HAN}{CJK_PUNCT}])[ \u00a0\u3000]+(?=[{HAN}{CJK_PUNCT}])")


def cjk_spaces(text: str) -> list[str]:
    """Spaces between two Chinese characters (or Chinese punctuation)."""
    return [_context(text, m.start(), m.end()) for m in _CJK_SPACE.finditer(text)]


_CORNER = re.compile(r"「[^「」]*」")
_STRAIGHT = re.compile('"|(?<=[' + HAN + "])'|'(?=[" + HAN + "])")


def _outside_corners(text: str) -> str:
    """`text` with the inside of each 「…」 blanked (the article's exact characters)."""
    return _CORNER.sub(lambda m: "「" + "\u2026" * (len(m.group(0)) - 2) + "」", text)


def straight_quotes(text: str) -> list[str]:
    """Half-width quotation marks (" and ' beside Chinese) in Chinese text, outside 「…」."""
    if not _HAN.search(text):
        return []
    outside = _outside_corners(text)
    return [_context(text, m.start(), m.end()) for m in _STRAIGHT.finditer(outside)]


ARTICLE = (Path(__file__).resolve().parent / "fixtures" / "article-zh.txt").read_text()
ARTICLE = ARTICLE.replace("\n", "")


def corner_quotes(text: str) -> list[str]:
    """A 「…」 that does not hold the article's words (each piece between …… is in it): 「」
    quotes the article, exactly (tests/book/test_article_quotes.py), every other quotation is
    “…”."""
    found = []
    for m in _CORNER.finditer(text):
        pieces = [p for p in re.split("\u2026+", m.group(0)[1:-1]) if p.strip()]
        if not pieces or not all(p in ARTICLE for p in pieces):
            found.append(_context(text, m.start(), m.end(), width=4))
    return found


_CITATION_WORDS = re.compile(
    r"\bet al\.|(?:\band|和) others\b|\bothers, \d{4}|\bn\.d\."
    r"|([A-Z][\w-]+(?: (?:et al\.|等人|和 [A-Z][\w-]+|and [A-Z][\w-]+))?) \[\1, "
)


def citations(text: str) -> list[str]:
    """Citations left in English ("et al.", "others", "n.d."), and a citation that repeats
    the names just before it."""
    return [_context(text, m.start(), m.end()) for m in _CITATION_WORDS.finditer(text)]


# English words a Chinese page keeps: the glossary's terms that stay English (locales/README.md:
# softmax; `mha_lib` and model names are code or capitalised), and names of tools and modes.
KEPT_ENGLISH = frozenset({
    "softmax", "one-hot", "eager", "sdpa", "transformers", "logit", "logits", "argmax",
    "token", "tokens", "nats", "torch", "bertviz", "sparsemax", "qkv", "gzip", "min", "max",
    "sentence-transformers",
})  # fmt: skip
# A word followed by a slash is a name too: the owner in a hub id (nreimers/MiniLM-L6-...).
_WORD = re.compile(r"(?<![\w.-])[A-Za-z][A-Za-z'-]*[A-Za-z](?![\w/-])")
# A gloss in brackets after a Chinese term, and quoted words (an English example sentence).
_GLOSS = re.compile(f"(?<=[{HAN}])（[A-Za-z][^（）]*）|(?<=[{HAN}]) ?\\([A-Za-z][^()]*\\)")
_QUOTED = re.compile(
    '\u201c[^\u201c\u201d]*\u201d|「[^「」]*」|"[^"]*"|\u2018[^\u2018\u2019]*\u2019'
)


def english(text: str) -> list[str]:
    """English words (three letters or more, not names) in a block of Chinese prose."""
    if not _HAN.search(text):
        return []
    blank = lambda m: " " * len(m.group(0))  # noqa: E731
    bare = _QUOTED.sub(blank, _GLOSS.sub(blank, text))
    found = []
    for m in _WORD.finditer(bare):
        word = m.group(0)
        if len(word) < 3 or word.lower() in KEPT_ENGLISH or not word.islower():
            continue  # short, kept, or a name (BERT, Tenney, PyTorch, MiniLM, d_model)
        found.append(_context(text, m.start(), m.end()))
    return found


RULES: dict[str, Callable[[str], list[str]]] = {
    "cjk_spaces": cjk_spaces,
    "straight_quotes": straight_quotes,
    "corner_quotes": corner_quotes,
    "citations": citations,
    "english": english,
}


def chinese_pages(zh: Path) -> Iterator[tuple[str, Path]]:
    """Every page of a built Chinese edition ("notebooks/01_qkv_lookup", its file)."""
    for path in sorted(zh.rglob("*.html")):
        if "_static" in path.parts or path.name in ("search.html", "genindex.html"):
            continue
        yield path.relative_to(zh).with_suffix("").as_posix(), path


def findings(page: Path, rule: str) -> list[str]:
    """What `rule` finds on one built page."""
    check = RULES[rule]
    return [hit for text in blocks(page.read_text()) for hit in check(text)]


if __name__ == "__main__":
    zh = Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html/zh")
    totals = dict.fromkeys(RULES, 0)
    for name, path in chinese_pages(zh):
        counts = {rule: len(findings(path, rule)) for rule in RULES}
        for rule, n in counts.items():
            totals[rule] += n
        if any(counts.values()):
            print(name, " ".join(f"{r}={n}" for r, n in counts.items() if n))
    print("total", " ".join(f"{r}={n}" for r, n in totals.items()))
