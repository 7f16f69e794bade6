"""Chinese search that finds a phrase on every page that uses it.

Sphinx's Chinese search indexes the words jieba cuts from each page, but splits the reader's
query only at spaces and punctuation, and Chinese has none between words: 位置编码 is one query
term while the index holds 位置 and 编码, so the page that uses the phrase seven times is not
found, and a single character (头) is dropped from the index altogether. Cutting the query
with the index's words is not enough either: jieba cuts 参数量 in a page as 参 + 数量, so a
query cut as 参数 + 量 misses it.

So, in the Chinese edition only, as CJK search engines do: the index holds, next to jieba's
words, every character and every pair of neighbouring characters of a page's Chinese text, and
the browser (`static/chinese_search.js`) cuts a query's Chinese into the words the index
knows, each searched as itself or, if longer than two characters, as its overlapping pairs (a
lone character stays itself). A page that contains the phrase contains all of these, so it is
found; so is a page that has the words apart (缩放点积 finds the chapter on scaling, which says
缩放 and 点积 but never the phrase), ranked by Sphinx as usual.

Synonyms (`html_search_options: {synonyms: {term: [synonym, ...]}}`, book/zh.yml): a page
that uses the term is indexed under each synonym too, so a reader who types another book's word
for it finds the page: d2l-zh's 注意力汇聚 finds the pages on attention sinks (注意力汇).

A Latin word is indexed stemmed as the browser stems a query's words, with Porter's stemmer
(Sphinx's Chinese search indexes with Snowball's English stemmer and keeps an acronym such as
CLS unstemmed, while the browser stems the query with Porter's: it looked for cl and found
nothing).

The same script shows a search result's summary with its formulas as plain text (W_q, not the
TeX source `\\(W_q\\)` of the page's HTML, which MathJax typesets only on the page).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import snowballstemmer
from sphinx import search
from sphinx.application import Sphinx
from sphinx.search.zh import SearchChinese

STATIC = Path(__file__).parent / "static"
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def characters_and_pairs(text: str) -> list[str]:
    """Every CJK character of `text` and every pair of neighbouring ones, in order."""
    found: list[str] = []
    for run in _CJK_RUN.findall(text):
        found += list(run)
        found += [run[i : i + 2] for i in range(len(run) - 1)]
    return found


class SearchChineseCharacters(SearchChinese):
    """Sphinx's Chinese search, with each CJK character and pair of a page indexed too, and
    each synonym of a term the page uses."""

    synonyms: dict[str, list[str]] = {}

    def init(self, options: dict[str, Any]) -> None:
        super().init(options)
        self.synonyms = dict(options.get("synonyms") or {})
        self.porter = snowballstemmer.stemmer("porter")

    def split(self, input: str) -> list[str]:  # noqa: A002 - Sphinx's signature
        words = super().split(input) + characters_and_pairs(input)
        for term, synonyms in self.synonyms.items():
            if term in input:
                for synonym in synonyms:
                    words += [synonym, *characters_and_pairs(synonym)]
        return words

    def stem(self, word: str) -> str:
        """A Latin word stemmed as the browser stems a query's words: with Porter's stemmer,
        the one Sphinx's Chinese search gives the browser (its index used Snowball's English
        one, and kept short words unstemmed: CLS was cls there, cl in the query)."""
        return self.porter.stemWord(word.lower())

    def word_filter(self, stemmed_word: str) -> bool:
        return super().word_filter(stemmed_word) or bool(_CJK_RUN.fullmatch(stemmed_word))


def _add_script(app: Sphinx) -> None:
    if (app.config.language or "").startswith("zh"):
        app.config.html_static_path.append(str(STATIC))
        app.add_js_file("chinese_search.js")


def setup(app: Sphinx) -> dict[str, Any]:
    search.languages["zh"] = SearchChineseCharacters
    app.connect("builder-inited", _add_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
