"""The Chinese edition's search cuts a query into the words its index knows
(book/_ext/i18n/static/chinese_search.js, run under node) and indexes every character
(book/_ext/i18n/chinese_search.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from node_js import node_executable

EXT = Path(__file__).resolve().parents[2] / "book" / "_ext" / "i18n"
RUNNER = """
const vm = require("vm");
const ctx = { window: {} };
vm.createContext(ctx);
vm.runInContext(require("fs").readFileSync(process.argv[1], "utf8"), ctx);
const { cut } = ctx.window.mhaChineseSearch;
console.log(JSON.stringify(JSON.parse(process.argv[2]).map((q) => cut(q))));
"""


def cut(*queries: str) -> list[list[str]]:
    done = subprocess.run(
        [node_executable(), "-e", RUNNER, str(EXT / "static" / "chinese_search.js"),
         json.dumps(list(queries))],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_a_query_is_cut_into_its_pairs_of_characters():
    assert cut("位置编码", "参数量", "头", "头头头") == [
        ["位置", "置编", "编码"],
        ["参数", "数量"],
        ["头"],
        ["头头"],
    ]


def test_latin_words_and_separators_are_split_as_sphinx_splits_them():
    assert cut("多头 attention模型", "注意力，BERT 层") == [
        ["多头", "attention", "模型"],
        ["注意", "意力", "BERT", "层"],
    ]


def test_the_index_holds_every_character_and_pair():
    """What a query is cut into is always in the index of a page that contains the phrase:
    jieba cuts 参数量 as 参 + 数量 (not 参数), the pairs hold 参数 all the same."""
    sys.path.insert(0, str(EXT))
    from chinese_search import SearchChineseCharacters, characters_and_pairs

    assert characters_and_pairs("参数量，头") == ["参", "数", "量", "参数", "数量", "头"]
    language = SearchChineseCharacters({})
    words = set(language.split("而参数量和矩阵运算量与一个宽头相同"))
    assert {"参数", "数量", "头", "宽头"} <= words
    assert all(language.word_filter(w) for w in ("头", "参数")) and not language.word_filter("a")


RUNNER_WITH_INDEX = """
const vm = require("vm");
const ctx = { window: {} };
vm.createContext(ctx);
vm.runInContext(require("fs").readFileSync(process.argv[1], "utf8"), ctx);
const { cut, texToText } = ctx.window.mhaChineseSearch;
const [queries, known, tex] = JSON.parse(process.argv[2]);
const terms = new Set(known);
console.log(JSON.stringify([queries.map((q) => cut(q, (t) => terms.has(t))), tex.map(texToText)]));
"""


def cut_with_index(queries: list[str], known: list[str], tex: list[str] = ()) -> list:
    done = subprocess.run(
        [node_executable(), "-e", RUNNER_WITH_INDEX, str(EXT / "static" / "chinese_search.js"),
         json.dumps([queries, known, list(tex)])],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_a_query_is_cut_into_the_words_the_index_knows():
    """With the index's terms (jieba's words and every pair a page holds), a run of Chinese is
    covered by as few single characters, then as many pieces, as it can be: 缩放点积 is 缩放 +
    点积 (a page with both words is found, not only one with the phrase, which has 放点 too);
    a longer word is searched as its pairs, and a character the index lacks stays alone."""
    index = ["缩放", "放点", "点积", "注意力", "注意", "意力", "汇聚", "参数量", "参数", "数量"]
    cuts, _ = cut_with_index(["缩放点积", "注意力汇聚", "参数量", "缩放点积注意力", "头"], index)
    assert cuts == [
        ["缩放", "点积"],
        ["注意", "意力", "汇聚"],
        ["参数", "数量"],
        ["缩放", "点积", "注意", "意力"],
        ["头"],
    ]


def test_a_formula_in_a_search_summary_reads_as_text():
    _, text = cut_with_index(
        [],
        [],
        ["\\(W_q\\)", "\\(\\sqrt{d_k}\\)", "\\(d_\\text{head} \\times T\\)", "\\[QK^\\top\\]"],
    )
    assert text == ["W_q", "√d_k", "d_head × T", "QK^⊤"]


def test_a_latin_word_is_indexed_as_the_browser_stems_the_query():
    """Sphinx's Chinese search kept CLS unstemmed in the index while the browser looks for the
    query's Porter stem, cl: a search for [CLS] found nothing."""
    sys.path.insert(0, str(EXT))
    from chinese_search import SearchChineseCharacters

    language = SearchChineseCharacters({})
    language.split("[CLS] 与 [SEP]")
    assert language.stem("CLS") == "cl" and language.stem("heads") == "head"
