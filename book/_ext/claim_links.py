"""Links to the claims ledger's rows: ``{claim}`5c``` reads "claim 5c" and opens that row.

The ledger (``book/claims``) is one table whose first column numbers the article's claims.
Each of its rows gets the id ``claim-<number>``; the role links to it, in the edition's own
words ("claim 5c", "论断 5c"), so a translation keeps the role as it is. A role that names a
row the ledger does not have is a warning, which fails the book's strict build: a link can
never point at a row that was renumbered or removed.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LEDGER = "book/claims"
WORDS = {"en": "claim {0}", "zh_CN": "论断 {0}"}
_NUMBER = re.compile(r"^\d+[a-z]?$")
logger = logging.getLogger(__name__)


class claim_reference(nodes.Inline, nodes.TextElement):  # noqa: N801 - docutils' node style
    """A ``{claim}`` role, resolved once the ledger's rows are known."""


def claim_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    number = text.strip()
    node = claim_reference(rawtext, "", claim=number)
    node.line = lineno
    return [node], []


def row_number(row: nodes.row) -> str | None:
    """The claim number in a ledger row's first cell ("5c"), or None for another row."""
    entries = list(row.findall(nodes.entry))
    text = entries[0].astext().strip() if entries else ""
    return text if _NUMBER.match(text) else None


def _label_rows(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    if env.docname != LEDGER:
        return
    numbers = []
    for row in doctree.findall(nodes.row):
        number = row_number(row)
        if number is not None:
            row["ids"].append(f"claim-{number}")
            numbers.append(number)
    env.mha_claims = numbers  # type: ignore[attr-defined]


def _merge(app: Sphinx, env: BuildEnvironment, docnames: Any, other: BuildEnvironment) -> None:
    if getattr(other, "mha_claims", None):
        env.mha_claims = other.mha_claims  # type: ignore[attr-defined]


class ResolveClaims(SphinxPostTransform):
    """Every ``{claim}`` becomes a link to its ledger row, or a warning if there is none."""

    default_priority = 5

    def run(self, **kwargs: Any) -> None:
        known = set(getattr(self.env, "mha_claims", []))
        words = WORDS.get(self.config.language or "en", WORDS["en"])
        for node in list(self.document.findall(claim_reference)):
            number = node["claim"]
            text = nodes.Text(words.format(number))
            if number not in known:
                logger.warning("no row %r in the claims ledger", number, location=node)
                node.replace_self(text)
                continue
            uri = self.app.builder.get_relative_uri(self.env.docname, LEDGER)
            link = nodes.reference("", "", text, internal=True, refuri=f"{uri}#claim-{number}")
            node.replace_self(link)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(claim_reference)
    app.add_role("claim", claim_role)
    app.connect("doctree-read", _label_rows)
    app.connect("env-merge-info", _merge)
    app.add_post_transform(ResolveClaims)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
