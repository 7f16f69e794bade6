"""Library code shown on a page reads as Python, not as Sphinx source.

Pages show ``mha_lib``'s functions with ``literalinclude``, so that what a reader sees is what
the tests check. Their docstrings are written for the library's API pages, with Sphinx's
cross-reference roles (``:func:`~mha_lib.core.masks.allowed_keys```) and reStructuredText's
double backticks, which a reader of the page would see as clutter. In a literal block included
from ``mha_lib/``, this turns a role into the name it points at, in backticks
(`` `allowed_keys` ``), and double backticks into single ones; the code itself is untouched.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.transforms import Transform
from sphinx.application import Sphinx

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|exc|obj|const):`(~?)([^`<]+?)`")
_DOUBLE = re.compile(r"``([^`\n]+)``")


def plain(text: str) -> str:
    """``text`` with Sphinx roles as their target's name and double backticks single."""

    def name(match: re.Match[str]) -> str:
        target = match.group(2).strip()
        return f"`{target.split('.')[-1] if match.group(1) else target}`"

    return _DOUBLE.sub(r"`\1`", _ROLE.sub(name, text))


class PlainDocstrings(Transform):
    """Clean the docstrings of every literal block included from the library."""

    default_priority = 500

    def apply(self, **kwargs: Any) -> None:
        for block in self.document.findall(nodes.literal_block):
            source = block.get("source") or ""
            if "mha_lib" not in Path(source).parts:
                continue
            text = block.astext()
            cleaned = plain(text)
            if cleaned != text:
                block.children = [nodes.Text(cleaned)]
                block.rawsource = cleaned


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(PlainDocstrings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
