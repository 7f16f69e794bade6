"""Links to the claims ledger's rows: ``{claim}`5c``` reads "claim 5c" and opens that row.

The ledger (`book/claims`) is one table whose first column numbers the article's claims.
Each of its rows gets the id `claim-<number>`; the role links to it, in the edition's own
words ("claim 5c", "论断 5c"), so a translation keeps the role as it is. A role that names a
row the ledger does not have is a warning, which fails the book's strict build: a link can
never point at a row that was renumbered or removed.

``{verdicts}`nuanced``` prints how many of the article's claims (the ledger's first table) have
a verdict that starts with that class (`supported`, `nuanced`, `contradicted`,
`not supported`, `not testable`; `all` counts the rows; `part contradicted` counts the
verdicts that contradict at least part of a claim), read from the English source,
so the ledger's summary counts its own rows in both editions and can never go stale.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LEDGER = "book/claims"
CLASSES = ("supported", "nuanced", "contradicted", "not supported", "not testable")
WORDS = {"en": "claim {0}", "zh_CN": "论断 {0}"}
_NUMBER = re.compile(r"^\d+[a-z]?$")
logger = logging.getLogger(__name__)


class claim_reference(nodes.Inline, nodes.TextElement):  # noqa: N801 - docutils' node style
    """A `{claim}` role, resolved once the ledger's rows are known."""


def claim_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    number = text.strip()
    node = claim_reference(rawtext, "", claim=number)
    node.line = lineno
    return [node], []


def ledger_verdicts(markdown: str) -> list[str]:
    """The verdict of each row of the ledger's first table, in order."""
    verdicts = []
    in_table = False
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 3 and _NUMBER.match(cells[0]):
            in_table = True
            verdicts.append(cells[2])
        elif in_table and not line.startswith("|"):
            break
    return verdicts


def leading_verdicts(markdown: str) -> list[str]:
    """The leading verdict class of each row of the ledger's first table, in order.

    A verdict may join two classes ("supported for the symptom, contradicted for the cause");
    the one it starts with leads. A verdict that starts with none of `CLASSES` is an
    error: the summary would miscount it.
    """
    classes = []
    for verdict in ledger_verdicts(markdown):
        lead = [c for c in CLASSES if verdict.startswith(c)]
        if not lead:
            raise ValueError(f"verdict {verdict!r} names no class")
        classes.append(max(lead, key=len))
    return classes


def verdicts_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    env = inliner.document.settings.env
    wanted = text.strip()
    if wanted not in ("all", "part contradicted") and wanted not in CLASSES:
        message = inliner.reporter.error(f"no verdict class {wanted!r}", line=lineno)
        return [], [message]
    source = Path(env.srcdir) / f"{LEDGER}.md"
    env.note_dependency(str(source))
    markdown = source.read_text(encoding="utf-8")
    if wanted == "part contradicted":
        count = sum("contradicted" in verdict for verdict in ledger_verdicts(markdown))
    else:
        classes = leading_verdicts(markdown)
        count = len(classes) if wanted == "all" else classes.count(wanted)
    return [nodes.Text(str(count))], []


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
    """Every `{claim}` becomes a link to its ledger row, or a warning if there is none."""

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
    app.add_role("verdicts", verdicts_role)
    app.connect("doctree-read", _label_rows)
    app.connect("env-merge-info", _merge)
    app.add_post_transform(ResolveClaims)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
