"""Bold next to Chinese punctuation (book/_ext/i18n/cjk_emphasis.py): closes where a reader expects,
and changes nothing in text without CJK characters (markdown-it's own scan is the reference)."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.rules_inline.state_inline import StateInline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext" / "i18n"))
import cjk_emphasis  # noqa: E402

COMMONMARK_SCAN = StateInline.scanDelims


def render(text: str, patched: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    scan = cjk_emphasis.scan_delims if patched else COMMONMARK_SCAN
    with monkeypatch.context() as m:
        m.setattr(StateInline, "scanDelims", scan)
        return MarkdownIt("commonmark").renderInline(text)


@pytest.mark.parametrize(
    ("source", "expected", "commonmark_too"),
    [
        ("**成立。**在这份目录上", "<strong>成立。</strong>在这份目录上", False),
        ("**检验理解。**把下面的", "<strong>检验理解。</strong>把下面的", False),
        ("在**「每份独立训练」**之后", "在<strong>「每份独立训练」</strong>之后", False),
        ("*（注）*说明", "<em>（注）</em>说明", False),
        ("**开放问题。**Cordonnier 等人", "<strong>开放问题。</strong>Cordonnier 等人", False),
        ("在**加粗**里", "在<strong>加粗</strong>里", True),
        ("这是 **bold.** text", "这是 <strong>bold.</strong> text", True),
    ],
)
def test_emphasis_closes_next_to_chinese(source, expected, commonmark_too, monkeypatch):
    """Hand-checked: the first four stay literal asterisks under CommonMark's rule."""
    assert render(source, True, monkeypatch) == expected
    assert (render(source, False, monkeypatch) == expected) is commonmark_too


@pytest.mark.parametrize(
    "source",
    ["**foo bar**", "** foo bar**", 'a**"foo"**', "foo**bar**", '**foo "*bar*" foo**',
     "*(*foo*)*", "_foo_bar", "__foo, __bar__, baz__", "*foo**bar**baz*", "**a.**b"],
)  # fmt: skip
def test_commonmark_examples_are_unchanged(source, monkeypatch):
    assert render(source, True, monkeypatch) == render(source, False, monkeypatch)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=list("ab .,;:!?\"'()[]-*_ \t1"), max_size=24))
def test_text_without_cjk_parses_as_commonmark(text):
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert render(text, True, monkeypatch) == render(text, False, monkeypatch)


@pytest.mark.book
def test_no_literal_asterisks_on_the_chinese_pages(built_book):
    """What a reader of the Chinese edition sees: no `**` left in the prose (code excluded)."""
    found = []
    for page in sorted((built_book / "zh").rglob("*.html")):
        if "_static" in page.parts:
            continue
        body = re.sub(r"<(script|style|pre|code)\b.*?</\1>", "", page.read_text(), flags=re.S)
        text = html.unescape(re.sub(r"<[^>]+>", "", body))
        found += [f"{page.name}: …{m.group(0)}…" for m in re.finditer(r".{0,12}\*\*.{0,12}", text)]
    assert not found, f"{len(found)} literal ** on the Chinese pages: {found[:5]}"


def test_every_chinese_message_renders_its_emphasis(monkeypatch):
    """Every translated message of the catalogues, parsed as the Chinese build parses it:
    no `**` or `*` pair left over (on today's messages, CommonMark's rule leaves some)."""
    import polib

    catalogues = Path(__file__).resolve().parents[2] / "locales" / "zh_CN" / "LC_MESSAGES"
    messages = [e.msgstr for po in sorted(catalogues.rglob("*.po")) for e in polib.pofile(po)]
    assert len(messages) > 500

    def leftovers(patched: bool) -> list[str]:
        out = []
        for message in messages:
            rendered = re.sub(r"<code>.*?</code>", "", render(message, patched, monkeypatch))
            if "**" in html.unescape(re.sub(r"<[^>]+>", "", rendered)):
                out.append(message[:60])
        return out

    assert leftovers(False), "CommonMark's rule no longer leaves asterisks: is the test blind?"
    assert not leftovers(True)
