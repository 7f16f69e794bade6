"""Chapter and part numbers in every title, as the text names them ("chapter 4, part 3").

A chapter's pages are `notebooks/NN_*.ipynb` (its first part) and `notebooks/NNb_*`,
`NNc_*` … (its later parts). The chapter's first page is titled "4 …" and its parts "4.2 …",
"4.3 …": so the sidebar, the page's heading and every link that shows a page's title say the
same as the prose. Sphinx's own `numbered` toctree cannot: it would number the live lab,
which sits between chapters 5 and 6, and call part 2 of a chapter "x.1".

The number goes in after the page is translated, so both editions carry it.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from docutils.transforms import Transform
from sphinx.application import Sphinx

_PAGE = re.compile(r"^notebooks/(\d{2})([b-z]?)_")


def page_number(docname: str) -> str | None:
    """"4" for a chapter's first page, "4.3" for its third part, None for other pages."""
    match = _PAGE.match(docname)
    if not match:
        return None
    chapter, part = int(match.group(1)), match.group(2)
    return f"{chapter}" if not part else f"{chapter}.{ord(part) - ord('a') + 1}"


class NumberTitle(Transform):
    """Prefix the page's title (its first section's heading) with its number."""

    default_priority = 870  # after the translation (20), before doctree-read collects titles (880)

    def apply(self, **kwargs: Any) -> None:
        env = getattr(self.document.settings, "env", None)
        if env is None or env.app.builder.name == "gettext":
            return  # the catalogues hold the titles as written
        number = page_number(env.docname)
        if number is None:
            return
        section = next(iter(self.document.findall(nodes.section)), None)
        if section is None or not isinstance(section[0], nodes.title):
            return
        title = section[0]
        if not title.astext().startswith(f"{number} "):
            title.insert(0, nodes.Text(f"{number} "))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(NumberTitle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
