"""Bold and italics that end on Chinese punctuation, followed by a Chinese character.

CommonMark decides whether `**` can close emphasis from its two neighbours: after
punctuation, a closing `**` must be followed by a space or punctuation. Chinese has no
spaces between words, so `**成立。**在这份目录上` stays literal asterisks, and so do
`在**「引用」**之后` and `**开放问题。**Cordonnier`. As the fix proposed for CommonMark
(markdown-it's "cjk-friendly" plugin) does, full-width punctuation counts as a letter (it
carries its own spacing), and a CJK character stands where the rule asks for a space or
punctuation. A delimiter next to a CJK character still never counts as next to a space, so
`在**加粗**里` opens and closes as before, and text without CJK parses as CommonMark.

The patch replaces markdown-it's delimiter scan for the whole build (both editions: English
pages quote the article's Chinese too); tests/book/test_cjk_emphasis.py checks both halves.

Chinese has no italics either: a slanted 汉字 is a machine's fake, not a form of the type. In the
Chinese edition only, emphasis that holds Chinese is marked for the way Chinese typesetting
emphasises (`_static/book.css` draws it, with `font-style: normal`):

- a word or a short phrase (at most `SHORT` characters, no sentence punctuation) in bold
  (class `mha-cjk-bold`), as d2l-zh and Chinese textbooks mark a stressed word;
- a longer run, a sentence (the translated glosses of the article in the claims ledger and the
  chapters) in 楷体, KaiTi (class `mha-cjk-kai`), as Chinese books set quotations and as
  LaTeX's ctex maps a Chinese emphasis (`\\emph`) to 楷体; where no KaiTi font is
  installed, a Song (serif) face still sets the run apart from the sans-serif text.

No `<em>` is left around Chinese: a word becomes `<strong>` (still emphasis to a screen
reader), a run in 楷体 a `<span>`, so nothing is italic even where the style sheet is not
loaded (reader views, feeds, a page saved without its CSS). English text and the English
edition are untouched.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from markdown_it.common.utils import isMdAsciiPunct, isPunctChar, isWhiteSpace
from markdown_it.rules_inline.state_inline import Scanned, StateInline
from sphinx.transforms.post_transforms import SphinxPostTransform

# CJK ideographs, kana, hangul, CJK symbols and punctuation, full-width forms.
_CJK = re.compile(
    "[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"
)


def is_cjk(char: str) -> bool:
    """Whether `char` is a CJK character or CJK punctuation."""
    return bool(_CJK.match(char))


# Emphasis of Chinese text: bold up to this many characters, 楷体 beyond (or for a sentence).
SHORT = 12
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SENTENCE = re.compile("[，。；：！？]")
BOLD, KAI = "mha-cjk-bold", "mha-cjk-kai"


def chinese_emphasis(text: str) -> str | None:
    """How emphasis of `text` is drawn in the Chinese edition: `BOLD`, `KAI`, or None
    (text without Chinese keeps its italics)."""
    if not _HAN.search(text):
        return None
    return KAI if len(text.strip()) > SHORT or _SENTENCE.search(text) else BOLD


class ChineseEmphasis(SphinxPostTransform):
    """Redraw every emphasis that holds Chinese (after citations and glue are resolved): no
    `<em>`, which any reader without our style sheet shows in italics."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        language = self.config.language or ""
        if not language.startswith("zh"):
            return
        for node in list(self.document.findall(nodes.emphasis)):
            kind = chinese_emphasis(node.astext())
            if kind is None:
                continue
            upright = nodes.strong if kind == BOLD else nodes.inline
            node.replace_self(
                upright(node.rawsource, "", *node.children, classes=["mha-cjk", kind])
            )


def scan_delims(self: StateInline, start: int, canSplitWord: bool) -> Scanned:  # noqa: N803
    """markdown-it's `StateInline.scanDelims`, with CJK neighbours in the flanking rule."""
    pos = start
    maximum = self.posMax
    marker = self.src[start]
    last = self.src[start - 1] if start > 0 else " "  # the line's start counts as a space
    while pos < maximum and self.src[pos] == marker:
        pos += 1
    count = pos - start
    following = self.src[pos] if pos < maximum else " "

    # The two changes. Full-width punctuation carries its own spacing, so it counts as a
    # letter, not as punctuation; and where a space or punctuation would do, a CJK character
    # does too.
    last_punct = (isMdAsciiPunct(ord(last)) or isPunctChar(last)) and not is_cjk(last)
    next_punct = (isMdAsciiPunct(ord(following)) or isPunctChar(following)) and not is_cjk(
        following
    )
    last_space = isWhiteSpace(ord(last))
    next_space = isWhiteSpace(ord(following))
    last_open = last_space or last_punct or is_cjk(last)
    next_open = next_space or next_punct or is_cjk(following)

    left_flanking = not (next_space or (next_punct and not last_open))
    right_flanking = not (last_space or (last_punct and not next_open))
    if not canSplitWord:
        can_open = left_flanking and ((not right_flanking) or last_punct)
        can_close = right_flanking and ((not left_flanking) or next_punct)
    else:
        can_open, can_close = left_flanking, right_flanking
    return Scanned(can_open, can_close, count)


def install() -> None:
    """Use `scan_delims` in every markdown-it parser of this process."""
    StateInline.scanDelims = scan_delims  # type: ignore[method-assign]


def setup(app: Any) -> dict[str, Any]:
    install()
    app.add_post_transform(ChineseEmphasis)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
