"""Translate what the notebooks print into the prose: glued phrases and figure alt texts.

Sphinx's gettext workflow translates the text of the pages; what a notebook computes is not
text of the page. Most of it is numbers, which need no translation, but some of it is words: a
glued phrase such as "6.5 times slower", chosen by a measurement, and the alt text that
``mha_lib.book.show`` writes on each figure. This extension gives those to the same
catalogues, with every number replaced by a placeholder:

- under the gettext builder it adds "{0} times slower" to the page's messages;
- in a translated build it looks the template up in the page's catalogue and puts the numbers
  of *this* execution back in, so the Chinese page shows the English page's numbers.

A phrase without a translation stays as it is, without a warning: which phrase a timing picks
(slower, faster, within the noise) can differ on another machine, and the build must pass on any
CPU. So the catalogue holds every phrase a computation can pick (locales/phrase_variants.yml
lists the families), and tests/test_translation.py fails when a family is translated in part.

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
# Words worth translating: a lowercase word of three letters or more ("yes", "slower"), not an
# identifier such as a model name or a CPU capability.
_WORDS = re.compile(r"\b[a-z]{3,}\b")
_IDENTIFIER = re.compile(r"^\S*[/_]\S*$")
VARIANTS = "phrase_variants.yml"
# The words an output's HTML carries for a reader: a figure's alt text, a table's label.
_ALT = re.compile(r'(<(?:img|div)\b[^>]*?\b(?:alt|aria-label)=")([^"]*)(")')


def template(text: str) -> tuple[str, list[str]]:
    """``text`` with each number replaced by {0}, {1}, ...; and the numbers, in order.

    Apostrophes are spelt ’ whichever way the phrase reached the page: Sphinx's smart quotes
    curl an in-page glued phrase but not a cross-page one, which is how the Chinese build
    pastes every phrase of a translated paragraph (translated_glue.py)."""
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


def _worth_translating(text: str) -> bool:
    return bool(_WORDS.search(text)) and not _IDENTIFIER.match(text.strip())


def _pasted(doctree: nodes.Node) -> Iterator[nodes.inline]:
    for node in doctree.findall(nodes.inline):
        if "pasted-text" in node.get("classes", []) and _worth_translating(node.astext()):
            yield node


def _alt_texts(doctree: nodes.Node) -> Iterator[tuple[nodes.raw, str]]:
    for node in doctree.findall(nodes.raw):
        if "html" in node.get("format", "").split():
            for match in _ALT.finditer(node.astext()):
                alt = html.unescape(match.group(2))
                if _worth_translating(alt):
                    yield node, alt


def messages(doctree: nodes.Node) -> list[str]:
    """The templates of a resolved page's glued phrases and figure alt texts, in page order."""
    found = [template(node.astext())[0] for node in _pasted(doctree)]
    found += [template(alt)[0] for _, alt in _alt_texts(doctree)]
    return list(dict.fromkeys(found))


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
    """The build language's catalogue ``name`` (e.g. "notebooks/01_qkv_lookup.po"), if any."""
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
    """``text`` translated through its template, or unchanged when the catalogue lacks it."""
    pattern, numbers = template(text)
    translated = catalogue.get(pattern)
    return fill(translated, numbers) if translated else text


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
    """In a translated build: glued phrases and alt texts from the page's catalogue."""

    default_priority = 20  # after myst-nb pastes cross-page glue (priority 5)

    def is_supported(self) -> bool:
        return is_translated(self.config) and self.app.builder.format == "html"

    def run(self, **kwargs: Any) -> None:
        catalogue = page_catalogue(self.app, self.env.docname)
        if not catalogue:
            return
        for node in list(_pasted(self.document)):
            _set_text(node, translate(node.astext(), catalogue))
        for node in self.document.findall(nodes.raw):
            if "html" not in node.get("format", "").split():
                continue
            source = node.astext()
            changed = _ALT.sub(
                lambda m: m.group(1)
                + html.escape(translate(html.unescape(m.group(2)), catalogue))
                + m.group(3),
                source,
            )
            if changed != source:
                _set_text(node, changed)


def _set_text(node: nodes.Element, text: str) -> None:
    if text != node.astext():
        node.clear()
        node.append(nodes.Text(text))


def phrase_families(app: Sphinx) -> list[list[str]]:
    """The glued phrases that a computation picks among (locales/phrase_variants.yml)."""
    import yaml

    for folder in app.config.locale_dirs:
        path = Path(app.srcdir, folder, VARIANTS)
        if path.is_file():
            return [list(family) for family in yaml.safe_load(path.read_text()) or []]
    return []


def _extract(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under the gettext builder, add the page's phrases and alt texts to its catalogue, and
    with each phrase the others its computation could have picked on another machine."""
    if app.builder.name != "gettext":
        return
    catalog = app.builder.catalogs[docname_to_domain(docname, app.config.gettext_compact)]
    source = str(app.env.doc2path(docname))
    families = phrase_families(app)
    for message in messages(doctree):
        for member in next((f for f in families if message in f), [message]):
            catalog.add(member, MsgOrigin(source, 0))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(KeepMathBlocks)
    app.add_transform(TranslateTocCaptions)
    app.add_post_transform(TranslateOutputs)
    app.connect("doctree-resolved", _extract)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
