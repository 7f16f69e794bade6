"""The Chinese edition's search cuts a query into the words its index knows
(book/_ext/static/chinese_search.js, run under node) and indexes every character
(book/_ext/chinese_search.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from node_js import node_executable

EXT = Path(__file__).resolve().parents[1] / "book" / "_ext"
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
