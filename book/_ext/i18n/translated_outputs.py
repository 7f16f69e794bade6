"""Translate the words that code writes into a page: alt texts, figure words, table text.

Sphinx's gettext workflow translates the text of the pages; what a notebook computes is not
text of the page. Glued values are numbers and names only (tests/book/test_book.py fails on a glued
string with English words that is not a listed name): every sentence around them is written in
the page, so the catalogues translate it like any other paragraph. Two outputs of code still
carry words, because they are written by the code that draws or tabulates, not by the prose:
the alt text that `mha_lib.book.show` writes on each figure, the words drawn in the figure
(titles, axes, legends: the text elements of the SVG copy that `show` adds for this build),
and the `aria-label`, the column headers (`<th>`) and the cells (`<td>`) that
`mha_lib.book.html_table` puts on each table. This extension gives those to the page's
catalogue, with every number replaced by a placeholder:

- under the gettext builder it adds "Log-log plot ... from {0} to {1}" to the page's messages;
- in a translated build it looks the template up in the page's catalogue and puts the numbers
  of *this* execution back in, so the Chinese page describes the English page's figure.

Why these keep a template when glued prose no longer needs one: they are outputs of code,
which cannot carry a Markdown sentence, and a figure's description has to name its numbers.
Their words depend on deterministic results only (a timing enters an alt text as a number), so
every machine extracts the same templates. An alt text without a translation stays as it is
(the untranslated-message check covers the page's own text only).

Which of these texts are messages is one rule for all of them (`worth_translating`): a text
holding a lowercase word of three letters or more that is not a single identifier. So a table
cell that is a number ("0.80", "1e-04"), a capability, a version or a commit ("AVX2",
"2.13.0+cpu", "d0af9f9fbb"), a type or an exception ("float64", "KeyError"), capitalised
names ("Xavier, AdamW") or a code name ("seed_baseline", "W_q/W_k") is not a message and stays
as it is; a cell with words is one ("soft (attention)"). A cell that quotes an English example
(a sentence the model reads, one of its words, a dependency label, a result file's part name)
is a message too, and its translation is the English itself with the translator's comment
`keep` (scripts/catalogues.py accepts that): the catalogue says it stays English on purpose.

Two smaller transforms keep the catalogues to what a translator should see: displayed
equations are not messages, and the sidebar's part captions, inserted after Sphinx translated
the root page, are translated from its catalogue too.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.transforms import Transform
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.builders.gettext import MsgOrigin
from sphinx.config import Config
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain

# A number on its own (not the 2 of "AVX2" or the 6 of "L6"): 12, 0.80, −3.5, 1e-04.
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?(?![\w])")
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
# Words worth translating: a lowercase word of three letters or more ("table", "heads"), not
# an identifier such as a model name or a CPU capability.
_WORDS = re.compile(r"\b[a-z]{3,}\b")
# One token holding a / or an _ (a path, a code name), or starting with a digit (a version).
_IDENTIFIER = re.compile(r"^(?:\S*[/_]\S*|\d\S*)$")
# The words an output's HTML carries for a reader: a figure's alt text, a table's label, and
# a table's column headers (html_table writes each as plain escaped text inside <th ...>).
_ALT = re.compile(r'(<(?:img|div)\b[^>]*?\b(?:alt|aria-label)=")([^"]*)(")')
_HEADER = re.compile(r"(<th\b[^>]*>)([^<]*)(</th>)")
# ... and its cells, written the same way inside <td ...>.
_CELL = re.compile(r"(<td\b[^>]*>)([^<]*)(</td>)")
_WORDED = (_ALT, _HEADER, _CELL)
# A figure's words: the text elements of the SVG copy of a figure (mha_lib.book.show).
_SVG = re.compile(r'(src="data:image/svg\+xml;base64,)([^"]*)(")')
_SVG_TEXT = re.compile(r"(<text\b[^>]*>)([^<]+)(</text>)")
_CJK = re.compile(r"[\u3400-\u9fff]")
_FIGURE_CONTAINER = '<div class="output text_html mha-figure">'
# Fonts that carry Chinese, before the generic family that ends matplotlib's list.
_CJK_FONTS = (
    "'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Hiragino Sans GB', "
    "'Microsoft YaHei', 'WenQuanYi Zen Hei', sans-serif"
)


def template(text: str) -> tuple[str, list[str]]:
    """`text` with each number replaced by {0}, {1}, ...; and the numbers, in order.

    Apostrophes are spelt ’, as Sphinx's smart quotes spell them in the page's own text."""
    text = text.replace("'", "’")
    numbers: list[str] = []

    def hole(match: re.Match[str]) -> str:
        numbers.append(match.group(0))
        return "{" + str(len(numbers) - 1) + "}"

    return _NUMBER.sub(hole, text), numbers


def fill(translated: str, numbers: list[str]) -> str:
    """The translated template with this execution's numbers put back."""
    return _PLACEHOLDER.sub(
        lambda m: numbers[int(m.group(1))] if int(m.group(1)) < len(numbers) else m.group(0),
        translated,
    )


def worth_translating(text: str) -> bool:
    """Whether an output's text is a message: a lowercase word (or a citation, whose "et al."
    a Chinese page writes 等人), and not one identifier."""
    worded = bool(_WORDS.search(text)) or " et al." in text
    return worded and not _IDENTIFIER.match(text.strip())


def _svg(data: str) -> str:
    import base64

    return base64.b64decode(data).decode("utf-8")


def figure_words(svg: str) -> list[str]:
    """The words drawn in a figure (its SVG text elements worth translating), in order."""
    found = (html.unescape(m.group(2)) for m in _SVG_TEXT.finditer(svg))
    return [text for text in found if worth_translating(text)]


def translate_svg(svg: str, catalogue: dict[str, str]) -> str:
    """The SVG with each translated text element in Chinese, in a font that has it."""

    def one(match: re.Match[str]) -> str:
        text = html.unescape(match.group(2))
        translated = translate(text, catalogue)
        if translated == text:
            return match.group(0)
        tag = match.group(1).replace("sans-serif", _CJK_FONTS, 1)
        return tag + html.escape(translated, quote=False) + match.group(3)

    return _SVG_TEXT.sub(one, svg)


def _alt_texts(doctree: nodes.Node) -> Iterator[tuple[nodes.raw, str]]:
    for node in doctree.findall(nodes.raw):
        if "html" in node.get("format", "").split():
            source = node.astext()
            for pattern in _WORDED:
                for match in pattern.finditer(source):
                    alt = html.unescape(match.group(2))
                    if worth_translating(alt):
                        yield node, alt
            for match in _SVG.finditer(source):
                for words in figure_words(_svg(match.group(2))):
                    yield node, words


def messages(doctree: nodes.Node) -> list[str]:
    """The templates of a resolved page's alt texts, figure words and table text, in order."""
    return list(dict.fromkeys(template(alt)[0] for _, alt in _alt_texts(doctree)))


@cache
def _catalogue(po_path: Path, mtime: float) -> dict[str, str]:
    from babel.messages.pofile import read_po

    with po_path.open("rb") as fh:
        catalogue = read_po(fh)
    return {
        str(m.id): str(m.string)
        for m in catalogue
        if m.id and m.string and not m.fuzzy
    }


def is_translated(config: Config) -> bool:
    """Whether this build is the translated edition (the Chinese one), not the English."""
    return config.language not in (None, "", "en")


def catalogue_path(app: Sphinx, name: str) -> Path | None:
    """The build language's catalogue `name` (e.g. "notebooks/01_qkv_lookup.po"), if any."""
    for folder in app.config.locale_dirs:
        path = Path(app.srcdir, folder, app.config.language, "LC_MESSAGES", name)
        if path.is_file():
            return path
    return None


def page_catalogue(app: Sphinx, docname: str) -> dict[str, str]:
    """The translated messages (msgid to msgstr, none fuzzy) of one page, or {} without any."""
    path = catalogue_path(app, docname_to_domain(docname, app.config.gettext_compact) + ".po")
    return _catalogue(path, path.stat().st_mtime) if path else {}


def translate(text: str, catalogue: dict[str, str]) -> str:
    """`text` translated through its template, or unchanged when the catalogue lacks it."""
    pattern, numbers = template(text)
    translated = catalogue.get(pattern)
    return fill(translated, numbers) if translated else text


def translate_html(source: str, catalogue: dict[str, str]) -> str:
    """An output's HTML with its alt texts, table labels, headers, cells and figure words
    translated; a text whose template the catalogue lacks stays English, without a warning."""
    import base64

    def figure(match: re.Match[str]) -> str:
        svg = _svg(match.group(2))
        translated = translate_svg(svg, catalogue)
        if translated == svg:
            return match.group(0)
        return match.group(1) + base64.b64encode(translated.encode()).decode() + match.group(3)

    source = _SVG.sub(figure, source)
    # The copy takes the English output's place, so it takes its container's class too: the
    # theme scrolls a `.cell_output .output` sideways when a figure is wider than a phone.
    source = source.replace('<div class="mha-figure">', _FIGURE_CONTAINER)
    for pattern in _WORDED:
        source = pattern.sub(
            lambda m: m.group(1)
            + html.escape(translate(html.unescape(m.group(2)), catalogue))
            + m.group(3),
            source,
        )
    return source


def english_cells(source: str, catalogue: dict[str, str]) -> list[str]:
    """The table cells with words in an output's HTML that are still English (no Chinese
    character) although the catalogue does not keep them English on purpose (a kept message is
    translated as itself): what a Chinese page shows in English by omission."""

    def kept(cell: str) -> bool:
        pattern = template(cell)[0]
        return catalogue.get(pattern) == pattern

    found = (html.unescape(m.group(2)) for m in _CELL.finditer(source))
    return [c for c in found if worth_translating(c) and not _CJK.search(c) and not kept(c)]


class KeepMathBlocks(Transform):
    """A displayed equation is not a message: the same maths in both languages."""

    default_priority = 10  # before Sphinx extracts or translates messages (priority 20)

    def apply(self, **kwargs: Any) -> None:
        for node in self.document.findall(nodes.math_block):
            node["translatable"] = False


class TranslateTocCaptions(Transform):
    """The sidebar's part captions ("Chapters"), which sphinx-external-toc inserts into the
    root page only after Sphinx has translated it (priority 100 against 20)."""

    default_priority = 101

    def apply(self, **kwargs: Any) -> None:
        env = self.document.settings.env
        if not is_translated(env.app.config) or env.app.builder.name == "gettext":
            return
        catalogue = page_catalogue(env.app, env.docname)
        for node in self.document.findall(addnodes.toctree):
            caption = node.get("caption")
            if caption and catalogue.get(caption):
                node["caption"] = node["rawcaption"] = catalogue[caption]


class TranslateOutputs(SphinxPostTransform):
    """In a translated build: alt texts, figure words and table text from the page's catalogue."""

    default_priority = 20  # after myst-nb has rendered the outputs

    def is_supported(self) -> bool:
        return is_translated(self.config) and self.app.builder.format == "html"

    def run(self, **kwargs: Any) -> None:
        catalogue = page_catalogue(self.app, self.env.docname)
        if not catalogue:
            return
        for node in self.document.findall(nodes.raw):
            if "html" not in node.get("format", "").split():
                continue
            source = node.astext()
            changed = translate_html(source, catalogue)
            if changed != source:
                node.clear()
                node.append(nodes.Text(changed))


def _extract(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under the gettext builder, add the page's alt texts, figure words and table text to its
    catalogue."""
    if app.builder.name != "gettext":
        return
    catalog = app.builder.catalogs[docname_to_domain(docname, app.config.gettext_compact)]
    source = str(app.env.doc2path(docname))
    for message in messages(doctree):
        catalog.add(message, MsgOrigin(source, 0))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(KeepMathBlocks)
    app.add_transform(TranslateTocCaptions)
    app.add_post_transform(TranslateOutputs)
    app.connect("doctree-resolved", _extract)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
