"""Glued numbers inside translated paragraphs (the Chinese edition).

Sphinx translates a paragraph by parsing its msgstr as a small document of its own. For a
notebook page myst-nb parses that as plain MyST, without the notebook's glue data, so an in-page
``{glue:text}`key``` fails ("No key ... found in glue data"). Cross-page glue does not have
this problem: it is resolved later, from the glue cache that myst-nb writes for every notebook.
So, in a translated message only, this extension spells an in-page glue reference as a reference
to the page itself (`01_qkv_lookup.ipynb::key`): same value, resolved the way that works.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from docutils import nodes
from myst_nb.sphinx_ import Parser
from sphinx.application import Sphinx

# An in-page reference: the role's content has no "::" (a cross-page one is left alone).
_IN_PAGE_GLUE = re.compile(r"\{(glue(?::[a-z]+)?)\}`(?![^`]*::)([^`]+)`")


def _with_format(content: str) -> str:
    """`key` as `key:s`: a cross-page reference reads the text after its last colon as
    the format, so a key without one would lose its last character to the separator."""
    return content if ":" in content else content + ":s"


def as_references_to(page: str, text: str) -> str:
    """`text` with each in-page glue role spelt as a reference to `page` (a notebook)."""
    return _IN_PAGE_GLUE.sub(
        lambda m: f"{{{m.group(1)}}}`{page}::{_with_format(m.group(2))}`", text
    )


class TranslatedGlueParser(Parser):
    """myst-nb's parser, which also resolves in-page glue in a translated message."""

    def parse(self, inputstring: str, document: nodes.document) -> None:
        if document.current_source.endswith("<translated>"):
            docname = self.env.docname
            page = PurePosixPath(self.env.doc2path(docname, False)).name
            if page.endswith(".ipynb"):
                inputstring = as_references_to(page, inputstring)
        super().parse(inputstring, document)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("myst_nb")
    app.add_source_parser(TranslatedGlueParser, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
