"""A citation right after its authors' names names them once: "Tenney et al. [2019]".

A page that writes the authors and then a parenthetical citation, ``Tenney et al.
{cite}`tenney2019```, prints them twice, "Tenney et al. [Tenney et al., 2019]" (and its
translation "Tenney 等人 [Tenney 等人, 2019]"). What was meant is the textual citation,
`{cite:t}`: "Tenney et al. [2019]". So, in both editions, a parenthetical citation of one
work whose text just before it ends with the very names the citation would print keeps only
its year (and stays the link to the bibliography). A citation of several works, or one after
other words, is left alone.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform


def names_and_year(label: str) -> tuple[str, str] | None:
    """("Tenney et al.", "2019") from a parenthetical label "Tenney et al., 2019"."""
    names, sep, year = label.rpartition(", ")
    return (names.strip(), year) if sep and names.strip() and year else None


class DoubledCitations(SphinxPostTransform):
    """Keep only the year of a parenthetical citation that follows its authors' names."""

    default_priority = 800  # after sphinxcontrib-bibtex has resolved the citations

    def run(self, **kwargs: Any) -> None:
        for citation in list(self.document.findall(nodes.inline)):
            if "bibtex-citation" in citation["classes"]:
                collapse(citation)


def collapse(citation: nodes.inline) -> bool:
    """Drop the names from `citation` ("[Tenney et al., 2019]") if the text just before it
    ends with them; whether it did."""
    refs = [c for c in citation.children if isinstance(c, nodes.reference)]
    text = citation.astext()
    if len(refs) != 1 or not (text.startswith("[") and text.endswith("]")):
        return False
    found = names_and_year(refs[0].astext())
    if found is None or citation.parent is None:
        return False
    names, year = found
    if not text_before(citation).rstrip().endswith(names):
        return False
    refs[0][:] = [nodes.Text(year)]
    return True


def text_before(node: nodes.Node) -> str:
    """The run of text just before `node` among its siblings (a line break in the source is
    a text of its own)."""
    parent = node.parent
    index = parent.index(node)
    texts = []
    while index > 0 and isinstance(parent[index - 1], nodes.Text):
        index -= 1
        texts.insert(0, parent[index].astext())
    return "".join(texts)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(DoubledCitations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
