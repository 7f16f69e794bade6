"""Tables on a page: small HTML tables (no pandas), including the reproduction checks'.

They render the same in Jupyter, Binder and the static site, and a wide one scrolls inside
the text column instead of being cut off.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.display import HTML

    from mha_lib.experiments.reproduce import Check


def html_table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], floatfmt: str = ".3g"
) -> HTML:
    """A small HTML table (no pandas): renders in Jupyter and on the site alike."""
    from IPython.display import HTML

    pad = "padding:0.25em 0.9em;"

    def cell(value: object) -> str:
        text = format(value, floatfmt) if isinstance(value, float) else str(value)
        align = "right" if isinstance(value, int | float) else "left"
        return f'<td style="{pad}text-align:{align}">{html.escape(text)}</td>'

    head = "".join(f'<th style="{pad}text-align:left">{html.escape(str(h))}</th>' for h in headers)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    # A wide table scrolls inside the text column instead of being cut off; the
    # scrolling region takes keyboard focus so that it can be scrolled without a mouse.
    return HTML(
        '<div class="mha-table" style="overflow-x:auto" tabindex="0" role="region" '
        'aria-label="table">'
        '<table style="border-collapse:collapse;margin:0.5em 0;'
        f'font-size:0.9em"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )


def checks_table(checks: Sequence[Check]) -> HTML:
    """The live-vs-committed checks of a chapter as a table (call after `verify`)."""

    def shown(x: object) -> object:
        if isinstance(x, int | float):
            return float(x)
        values = list(x)  # type: ignore[call-overload]
        if len(values) == 1:
            return float(values[0])
        return f"{len(values)} values, last {float(values[-1]):.4g}"

    return html_table(
        ["what is recomputed", "live", "committed", "largest difference", "tolerance", "holds"],
        [
            [
                c.what,
                shown(c.live),
                shown(c.committed),
                f"{c.difference:.2g}" + (" (relative)" if c.relative else ""),
                f"{c.tolerance:.2g}",
                "yes" if c.holds else "NO",
            ]
            for c in checks
        ],
        floatfmt=".6g",
    )


def provenance_table(results: Mapping[str, object]) -> HTML:
    """Where each part of a committed result file came from."""
    from mha_lib.experiments.reproduce import PROVENANCE

    records = results[PROVENANCE]
    if not isinstance(records, Mapping):
        raise ValueError("results carry no provenance records")
    return html_table(
        ["part", "commit", "torch", "CPU capability", "threads", "started (UTC)"],
        [
            [
                name,
                str(r["git_commit"])[:10] + (" + uncommitted changes" if r["git_dirty"] else ""),
                str(r["torch"]),
                str(r["cpu_capability"]),
                str(r["threads"]),
                str(r["created"]).replace("T", " ")[:16],
            ]
            for name, r in records.items()
        ],
    )
