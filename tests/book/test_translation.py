"""The Chinese edition's catalogues, and the code that carries the English build into them.

Every catalogue must be complete (nothing empty, nothing fuzzy) and consistent (each message's
maths, roles, code, link targets, tags and placeholders exactly the English ones): that is
what CI fails on. The check itself is tested on hand-made catalogues, and the templating of
figure alt texts, the in-page glue rewrite and the switcher's URLs on hand-checked cases.
(Glued values are numbers and names only: tests/book/test_book.py checks that in the built book.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import polib
import pytest
import yaml
from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "book" / "_ext"))
sys.path.insert(0, str(REPO / "book" / "_ext" / "i18n"))

import catalogues  # noqa: E402
from language_switcher import other_edition_url  # noqa: E402
from translated_glue import as_references_to  # noqa: E402
from translated_outputs import fill, template, translate, translate_html  # noqa: E402

TOC = REPO / "_toc.yml"


def _toc_files() -> list[str]:
    def walk(entries: list[dict]) -> list[str]:
        found = []
        for entry in entries:
            if "file" in entry:
                found.append(entry["file"])
            found += walk(entry.get("sections", []) + entry.get("chapters", []))
        return found

    toc = yaml.safe_load(TOC.read_text())
    return [toc["root"], *walk(toc.get("parts", []) + toc.get("chapters", []))]


@pytest.mark.parametrize("page", _toc_files())
def test_every_page_has_a_complete_catalogue(page: str) -> None:
    path = catalogues.CATALOGUES / f"{page}.po"
    assert path.is_file(), f"{page} has no catalogue: run `make catalogues`"
    problems = catalogues.problems_in(path)
    assert not problems, "\n".join(str(p) for p in problems)


def test_the_interface_catalogue_is_complete() -> None:
    path = catalogues.CATALOGUES / "_interface.po"
    assert not catalogues.problems_in(path)


def _po(tmp_path: Path, msgid: str, msgstr: str, **flags: object) -> Path:
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=utf-8"}
    po.append(polib.POEntry(msgid=msgid, msgstr=msgstr, **flags))
    path = tmp_path / "page.po"
    po.save(str(path))
    return path


GOOD_ID = "The top key gets {glue:text}`w:.2f` of the weight at $d_k=512$ (`mha_lib`)."
GOOD_STR = "在 $d_k=512$ 时，最大的键得到 {glue:text}`w:.2f` 的权重（`mha_lib`）。"


@pytest.mark.parametrize(
    ("msgstr", "flags", "what"),
    [
        (GOOD_STR, {}, None),
        ("", {}, "untranslated"),
        (GOOD_STR, {"flags": ["fuzzy"]}, "fuzzy"),
        (GOOD_STR.replace(":.2f", ":.3f"), {}, "role {glue:text}`w:.2f`"),
        (GOOD_STR.replace("d_k=512", "d_k = 512"), {}, "math $d_k=512$"),
        (GOOD_STR.replace("`mha_lib`", "mha_lib"), {}, "code `mha_lib`"),
        (GOOD_ID, {}, "left in English"),
        (GOOD_ID, {"tcomment": "keep"}, None),
    ],
    ids=["good", "empty", "fuzzy", "glue", "maths", "code", "english", "kept-english"],
)
def test_the_check_fails_on_what_would_break_a_page(
    tmp_path: Path, msgstr: str, flags: dict, what: str | None
) -> None:
    problems = catalogues.problems_in(_po(tmp_path, GOOD_ID, msgstr, **flags))
    if what is None:
        assert problems == []
    else:
        assert len(problems) == 1 and what in problems[0].what, problems


def test_titled_cross_references_keep_their_target_only() -> None:
    msgid = "see {doc}`chapter 4 <../notebooks/04_high_dimensional>` and [5](05.ipynb)"
    msgstr = "见 {doc}`第 4 章 <../notebooks/04_high_dimensional>` 与 [第 5 章](05.ipynb)"
    assert catalogues.protected(msgid) == catalogues.protected(msgstr)
    moved = msgstr.replace("04_high_dimensional", "04b_a_match_in_few_features")
    assert catalogues.protected(msgid) != catalogues.protected(moved)


def test_alt_texts_are_templated_on_their_numbers_only() -> None:
    assert template("a ratio of 6.5 on log axes") == ("a ratio of {0} on log axes", ["6.5"])
    assert template("head 0-2, 1e-04 (relative), AVX2, L6") == (
        "head {0}-{1}, {2} (relative), AVX2, L6",
        ["0", "2", "1e-04"],
    )
    curled = ("{0} of MiniLM’s {1} heads", ["5", "72"])
    assert template("5 of MiniLM's 72 heads") == template("5 of MiniLM’s 72 heads") == curled
    assert fill("{0} 个头中的 {1} 个", ["72", "5"]) == "72 个头中的 5 个"
    catalogue = {"{0} heads on log axes": "对数坐标上的 {0} 个头"}
    assert translate("12 heads on log axes", catalogue) == "对数坐标上的 12 个头"
    assert translate("12 heads on linear axes", catalogue) == "12 heads on linear axes"  # kept


def test_table_headers_are_translated() -> None:
    from mha_lib.book import html_table

    table = html_table(["heads h", "speed-up ×, 25 % pruned", "d_head"], [[0.5, 32]]).data
    catalogue = {
        "heads h": "头数 h",
        "speed-up ×, {0} % pruned": "加速比，剪枝 {0}%",
        "table": "表格",
    }
    zh = translate_html(table, catalogue)
    assert ">头数 h</th>" in zh and ">加速比，剪枝 25%</th>" in zh and ">d_head</th>" in zh
    assert 'aria-label="表格"' in zh
    assert translate_html(table, {}) == table  # untranslated: the English output, unchanged


# A hand-made table with every kind of cell: words (a message), words around numbers (one
# template), a number, identifiers, a version, names, a kept example sentence and its word.
CELLS = [
    "soft (attention)",  # words: a message
    "1600 (1 of 5 never)",  # words around numbers: the template "{0} ({1} of {2} never)"
    "0.80",  # a number
    "seed_baseline",  # a code name
    "2.13.0+cpu",  # a version
    "Xavier, AdamW",  # names
    "AVX2",  # a capability
    "the cat sat on the mat.",  # an example sentence: a message, kept English
    "mat",  # one of its words: kept
    "it's the best head",  # an apostrophe: looked up curled, as Sphinx writes the page's text
    "GPT-3 175B (Brown et al. 2020)",  # names and a citation: a message (et al. is 等人)
]


def test_table_cells_with_words_are_messages_and_the_rest_are_not() -> None:
    from translated_outputs import english_cells, worth_translating

    from mha_lib.book import html_table

    assert [c for c in CELLS if worth_translating(c)] == [
        "soft (attention)", "1600 (1 of 5 never)", "the cat sat on the mat.", "mat",
        "it's the best head", "GPT-3 175B (Brown et al. 2020)",
    ]
    table = html_table(["how"], [[c] for c in CELLS]).data
    catalogue = {
        "soft (attention)": "软查找（注意力）",
        "{0} ({1} of {2} never)": "{0}（{2} 次中 {1} 次始终未达到）",
        "the cat sat on the mat.": "the cat sat on the mat.",  # keep
        "mat": "mat",  # keep
        "how": "方式",
    }
    zh = translate_html(table, catalogue)
    cell = '<td style="padding:0.25em 0.9em;text-align:left">{}</td>'.format
    assert cell("软查找（注意力）") in zh and cell("1600（5 次中 1 次始终未达到）") in zh
    for kept in CELLS[2:9]:
        assert cell(kept) in zh  # numbers, names and kept examples: as in the English
    assert cell("it&#x27;s the best head") in zh  # missing from the catalogue: English
    brown = "GPT-3 175B (Brown et al. 2020)"
    assert english_cells(zh, catalogue) == ["it's the best head", brown]
    assert english_cells(table, catalogue) == ["soft (attention)", "1600 (1 of 5 never)",
                                               "it's the best head", brown]
    catalogue["it’s the best head"] = "最好的头"
    catalogue["GPT-{0} 175B (Brown et al. {1})"] = "GPT-{0} 175B（Brown 等人，{1}）"
    assert cell("最好的头") in translate_html(table, catalogue)
    assert english_cells(translate_html(table, catalogue), catalogue) == []


def test_the_english_output_is_unchanged_byte_for_byte() -> None:
    """Only a translated build rewrites outputs, and with nothing to translate it leaves an
    output byte for byte as the English build writes it (escapes included)."""
    from types import SimpleNamespace

    from translated_outputs import is_translated

    from mha_lib.book import html_table

    table = html_table(["a & b", "<c>"], [[c, 1.5, 3] for c in CELLS]).data
    assert translate_html(table, {}) == table
    assert translate_html(table, {"unrelated": "无关"}) == table
    assert not is_translated(SimpleNamespace(language="en"))
    assert not is_translated(SimpleNamespace(language=None))
    assert is_translated(SimpleNamespace(language="zh_CN"))


def _kept_or_translated(path: Path) -> dict[str, str]:
    return {e.msgid: e.msgstr for e in polib.pofile(str(path)) if e.msgstr and not e.fuzzy}


@pytest.mark.book
def test_the_chinese_tables_show_no_english_words_unless_kept(built_book: Path) -> None:
    """Every output table's cell with words is Chinese on the Chinese pages, or kept English by
    its catalogue on purpose (an example sentence, a label): the English cells are printed."""
    from translated_outputs import english_cells

    found = []
    for page in _toc_files():
        built = built_book / "zh" / f"{page}.html"
        path = catalogues.CATALOGUES / f"{page}.po"
        if built.is_file() and path.is_file():
            cells = english_cells(built.read_text(), _kept_or_translated(path))
            found += [f"{page}: {cell!r}" for cell in cells]
    print(f"{len(found)} English word-cells in the Chinese build", *found, sep="\n")
    assert not found, "\n".join(found)


def test_in_page_glue_becomes_a_reference_to_the_page_itself() -> None:
    text = "权重 {glue:text}`w:.2f`，书名 {glue:text}`title`，另见 {glue:text}`x.ipynb::k:.1f`"
    assert as_references_to("01.ipynb", text) == (
        "权重 {glue:text}`01.ipynb::w:.2f`，书名 {glue:text}`01.ipynb::title:s`"
        "，另见 {glue:text}`x.ipynb::k:.1f`"
    )


def test_the_switcher_links_the_same_page_of_the_other_edition() -> None:
    assert other_edition_url("notebooks/01_qkv_lookup", chinese=False) == (
        "../zh/notebooks/01_qkv_lookup.html"
    )
    assert other_edition_url("notebooks/01_qkv_lookup", chinese=True) == (
        "../../notebooks/01_qkv_lookup.html"
    )
    assert other_edition_url("search", chinese=True) == "../search.html"



# --- Chinese typography and wording, over every catalogue (locales/README.md) -------------

def _translations() -> list[tuple[str, polib.POEntry]]:
    return [
        (str(path.relative_to(catalogues.CATALOGUES)), entry)
        for path in catalogues.catalogue_files()
        for entry in polib.pofile(str(path))
        if entry.msgstr and not entry.obsolete
    ]


def _chinese_prose(text: str) -> str:
    """A translation's words, without the parts that stay as in the English (maths, code...)."""
    return catalogues._prose(text) if catalogues._CJK.search(text) else ""


_ARTICLE_QUOTE = re.compile(r"「([^「」]*)」")


def test_corner_brackets_quote_the_article_only_and_other_quotes_are_curly() -> None:
    """「」 holds the article's words (each piece between …… is in a quote of the English
    source, which quotes the article the same way); every other quotation is “…”, so a
    straight " in Chinese prose is left only inside the article's own words."""
    article = [q for _, e in _translations() for q in _ARTICLE_QUOTE.findall(e.msgid)]
    found = []
    for name, entry in _translations():
        prose = _chinese_prose(entry.msgstr)
        for quote in _ARTICLE_QUOTE.findall(prose):
            pieces = [p for p in re.split(r"…+", quote) if p.strip()]
            if not pieces or not all(any(p in a for a in article) for p in pieces):
                found.append(f"{name}: 「{quote}」 is not the article's: write “…”")
        outside = _ARTICLE_QUOTE.sub(" ", prose)
        if '"' in outside:
            found.append(f"{name}: a straight quote in Chinese prose: {outside[:80]!r}")
    assert not found, "\n".join(found)


_SPACE_BEFORE_PERCENT = re.compile(r"[\d}`][ \u00a0]%")
# "X 倍" after a comparative reads two ways in Chinese (小了 10 倍: a tenth? a ninth?):
# write 是它的 X 倍 / 只有约 1/X instead.
_AMBIGUOUS_TIMES = re.compile(
    r"(?<![最至])(?:慢|快|小|大|多|少|高|低|增大|减小|缩小|增加|减少)了?\s*"
    r"(?:\{glue[^}]*\}`[^`]*`|\{\d+\}|[\d.]+|[一二三四五六七八九十几]+)\s*倍"
)


def test_chinese_typography_no_space_before_percent_no_et_al_no_ambiguous_times() -> None:
    found = []
    for name, entry in _translations():
        text = entry.msgstr if catalogues._CJK.search(entry.msgstr) else ""
        words = catalogues._MATH.sub(" ", catalogues._CODE.sub(" ", text))
        if _SPACE_BEFORE_PERCENT.search(words):
            found.append(f"{name}: a space before % (write 96.0%): {entry.msgstr[:70]!r}")
        if "et al." in _chinese_prose(text):
            found.append(f"{name}: 'et al.' in Chinese (write 等人): {entry.msgstr[:70]!r}")
        if _AMBIGUOUS_TIMES.search(text):
            found.append(f"{name}: 'X 倍' after a comparative: {entry.msgstr[:70]!r}")
    assert not found, "\n".join(found)


def glossary_variants() -> dict[str, str]:
    """Each variant the glossary of locales/README.md forbids, mapped to the term to use."""
    table = (REPO / "locales" / "README.md").read_text().split("## Glossary", 1)[1]
    variants = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2] and not set(cells[2]) <= set("-"):
            for variant in re.split(r"[、，]", cells[2]):
                if variant.strip() and variant.strip() != "不用":
                    variants[variant.strip()] = cells[1]
    return variants


def test_the_glossary_table_lists_variants_and_its_check_finds_them() -> None:
    variants = glossary_variants()
    assert variants["关联回忆"] == "关联召回" and variants["批量大小"] == "批大小"
    assert variants["双键召回"] == "成对召回" and "et al." in variants
    assert "缩放点积注意力" not in variants
    # issue 38: one term each for switching a head off, sentence embedding, word piece,
    # equivalent, not detected, the margin and attention sinks
    for variant, term in [("静音", "关掉"), ("静默", "关掉"), ("句向量", "句子嵌入"),
                          ("句子向量", "句子嵌入"), ("嵌入向量", "句子嵌入"), ("词片", "子词"),
                          ("等效", "等价"), ("未检出", "未检测到"), ("可检出", "可检测到"),
                          ("界限", "界值"), ("汇点", "注意力汇")]:  # fmt: skip
        assert term in variants[variant], (variant, variants.get(variant))
    assert "屏蔽" not in variants and "注意力汇聚" not in variants  # masking; d2l's pooling


def test_one_term_per_concept_the_glossarys() -> None:
    variants = glossary_variants()
    found = [
        f"{name}: {variant!r} (the glossary says {term}): {entry.msgstr[:60]!r}"
        for name, entry in _translations()
        for variant, term in variants.items()
        if variant in _chinese_prose(entry.msgstr)
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("准确率为 96.0 %", True),
        ("准确率为 {glue:text}`acc:.1f` %", True),
        ("准确率为 96.0%", False),
        ("梯度小 {glue:text}`r:.0f` 倍", True),
        ("慢 2.0 倍", True),
        ("耗时是它的 2.0 倍", False),
        ("最多 {3} 倍", False),
    ],
)
def test_the_typography_patterns_on_hand_checked_cases(text: str, flagged: bool) -> None:
    hit = bool(_SPACE_BEFORE_PERCENT.search(text) or _AMBIGUOUS_TIMES.search(text))
    assert hit == flagged


def test_a_figure_carries_a_translatable_copy_and_the_english_output_is_unchanged() -> None:
    import base64
    import html as html_lib

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from translated_outputs import figure_words

    from mha_lib.book import show

    InteractiveShell.instance()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [1, 4, 9], label="sampled variance")
    ax.set(xlabel=r"key width $d_k$", ylabel="mean largest weight", title="head 3")
    ax.legend()
    with capture_output() as captured:
        show(fig, alt="three points")
    (output,) = captured.outputs
    english = output.data["text/html"]
    assert english.startswith('<img src="data:image/png;base64,')  # as before: one PNG
    assert english.endswith('alt="three points" data-min-text-px="' + english.split('px="')[1])
    copy = output.data["text/markdown"]
    assert copy.endswith(english.split('"', 2)[2] + "</div>")  # the same alt and text size
    svg = base64.b64decode(copy.split("base64,")[1].split('"')[0]).decode()
    words = figure_words(svg)
    assert words == ["key width d_k", "mean largest weight", "head 3", "sampled variance"]
    catalogue = {"key width d_k": "键宽度 d_k", "head {0}": "头 {0}", "three points": "三个点"}
    zh = translate_html(copy, catalogue)
    zh_svg = base64.b64decode(zh.split("base64,")[1].split('"')[0]).decode()
    assert figure_words(zh_svg) == ["mean largest weight", "sampled variance"]  # the rest: 中文
    assert ">键宽度 d_k</text>" in zh_svg and ">头 3</text>" in zh_svg
    assert "WenQuanYi Zen Hei" in zh_svg and 'alt="三个点"' in zh
    assert zh.startswith('<div class="output text_html mha-figure">')  # styled as the English
    assert translate_html(copy, {}).split(">", 1)[1] == copy.split(">", 1)[1]
    assert html_lib.unescape("&lt;") == "<"  # (the SVG's text is XML-escaped both ways)


@pytest.mark.parametrize(
    ("label", "plain"),
    [
        (r"$1/\sqrt{d_k}$ (default)", "1/√d_k (default)"),
        (r"sampled $q\cdot k/\sqrt{d_k}$", "sampled q·k/√d_k"),
        (r"$\|\partial p/\partial s\|_F$ per query", "‖∂p/∂s‖_F per query"),
        (r"$W_{qk}$ scale (× Xavier)", "W_qk scale (× Xavier)"),
        ("no maths", "no maths"),
    ],
)
def test_maths_in_a_label_is_spelt_as_plain_text_for_the_translatable_copy(
    label: str, plain: str
) -> None:
    from mha_lib.book.figures import maths_as_text

    assert maths_as_text(label) == plain


def test_the_figure_copy_reports_its_width_in_pixels_for_small_screens() -> None:
    import base64

    from small_screens import png_width

    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="446px" height="315px" viewBox="0 0 3 2">'
    src = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
    assert png_width(src) == 446
    assert png_width("data:image/svg+xml;base64," + base64.b64encode(b"<svg>").decode()) is None
