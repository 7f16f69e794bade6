"""The ledger quotes the article character for character: every 「…」 of the ledger, in its
source and on both built editions, is the article's own text, shortened only with ……

The article is a copy of the source the book tests (tests/book/fixtures/article-zh.txt); a line
break of the article is not a character of a quote, so its lines are joined.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTICLE = (Path(__file__).resolve().parent / "fixtures" / "article-zh.txt").read_text()
ARTICLE = ARTICLE.replace("\n", "")
_QUOTE = re.compile(r"「([^「」]*)」")


def not_the_articles(quotes: list[str]) -> list[str]:
    """The quotes with a piece (between ……) that the article does not contain."""
    return [q for q in quotes if any(p and p not in ARTICLE for p in q.split("……"))]


def test_the_check_catches_a_changed_quote():
    assert not not_the_articles(["这样每个头学到的东西就不一样了", "Query 是……Key 是"])
    assert not_the_articles(["这样每个头学到的东西就不一样啦"])
    assert not_the_articles(["给点积结果”降温”"])  # curled quotes are not the article's


def test_every_quote_of_the_ledger_source_is_the_articles():
    quotes = _QUOTE.findall((REPO / "book" / "claims.md").read_text())
    assert len(quotes) >= 14
    assert not not_the_articles(quotes), not_the_articles(quotes)


@pytest.mark.book
@pytest.mark.parametrize("edition", ["", "zh"])
def test_every_quote_on_the_built_ledger_is_the_articles(built_book, edition):
    page = (built_book / edition / "book" / "claims.html").read_text()
    body = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", body))
    quotes = _QUOTE.findall(text)
    source = _QUOTE.findall((REPO / "book" / "claims.md").read_text())
    assert len(quotes) >= len(source)
    assert not not_the_articles(quotes), not_the_articles(quotes)[:3]
