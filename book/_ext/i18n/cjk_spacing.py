"""No space between two Chinese characters where markup meets text (the Chinese edition).

A translation keeps a space between Chinese and a role (locales/README.md), which is right
where the role prints a number or a Latin word (共 {glue:text}`n:d` 个头 → 共 12 个头) and
wrong where it prints Chinese: 同一组 {term}`投影 <projections>` → "同一组 投影", 一个
{term}`头 <head>` 就是 → "一个 头 就是", and a space after bold that ends on Chinese
punctuation, **成立。** 凡是 → "成立。 凡是". Chinese sets no space between its characters, so
in the Chinese edition (book/zh.yml loads this extension) a space at the edge of a run of text
is dropped when the characters on both sides of it, across the markup, are Chinese (a Han
character or Chinese punctuation). Spaces beside a number, a Latin word, a formula or code
stay, and so does a space typed inside one run of Chinese text (the catalogue's to mend).
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

_CJK = re.compile(
    "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3000-\u303f\uff01-\uff0f\uff1a-\uff20"
    "\uff3b-\uff40\uff5b-\uff65]"
)
_SPACE = " \t\n\u00a0"
# Text that is not prose: its characters are neighbours, but its spaces are its own.
_KEEP = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw)


def _is_cjk(char: str) -> bool:
    return bool(char) and bool(_CJK.match(char))


def tighten(runs: list[str]) -> list[str]:
    """The runs of text of one paragraph, in order, without the spaces at their edges that
    stand between two Chinese characters (the neighbours may be in the next or previous run)."""
    out = list(runs)
    for i, run in enumerate(out):
        body = run.strip(_SPACE)
        before = next((r.rstrip(_SPACE)[-1:] for r in reversed(out[:i]) if r.strip(_SPACE)), "")
        after = next((r.lstrip(_SPACE)[:1] for r in runs[i + 1 :] if r.strip(_SPACE)), "")
        lead = run[: len(run) - len(run.lstrip(_SPACE))]
        trail = run[len(run.rstrip(_SPACE)) :] if body else ""
        if not body:  # only spaces, between two runs
            out[i] = "" if _is_cjk(before) and _is_cjk(after) else run
            continue
        if lead and _is_cjk(before) and _is_cjk(body[0]):
            lead = ""
        if trail and _is_cjk(body[-1]) and _is_cjk(after):
            trail = ""
        out[i] = lead + body + trail
    return out


class ChineseSpacing(SphinxPostTransform):
    """Drop the spaces between Chinese characters at markup boundaries, paragraph by paragraph."""

    default_priority = 950  # after citations, glue and the terms' links are in place
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for block in self.document.findall(nodes.TextElement):
            if isinstance(block, nodes.Inline | nodes.FixedTextElement):
                continue
            texts = [t for t in block.findall(nodes.Text) if _owner(t, block) is block]
            runs = tighten([str(t) for t in texts])
            for text, new in zip(texts, runs, strict=True):
                if new != str(text) and not isinstance(text.parent, _KEEP):
                    text.parent.replace(text, nodes.Text(new))


def _owner(text: nodes.Text, block: nodes.Element) -> nodes.Element:
    """The innermost block (a paragraph, a title, not an inline) that holds `text`."""
    node = text.parent
    while node is not None and node is not block:
        if isinstance(node, nodes.TextElement) and not isinstance(node, nodes.Inline):
            return node
        node = node.parent
    return block


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(ChineseSpacing)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
