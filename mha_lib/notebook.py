"""One call at the top of every chapter: seeded, offline, quiet, consistent figures.

Chapters must run the same way on the static site, a laptop and Binder, and
their rendered pages must carry no stderr noise. Everything that would differ
or print is settled here, once.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import random
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from IPython.display import HTML
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

    from mha_lib.experiments.reproduce import Check


def setup(seed: int = 0) -> None:
    """Seed every generator, stay offline, silence progress bars and library chatter."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

    # tqdm.auto warns when ipywidgets is absent, although the bars are disabled anyway.
    warnings.filterwarnings("ignore", message="IProgress not found", module="tqdm")

    import matplotlib as mpl
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    mpl.rcParams.update(
        {
            "figure.dpi": 110,
            "savefig.dpi": 110,
            "image.cmap": "viridis",
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.titleweight": "bold",
            # Okabe–Ito: distinguishable with the common colour-vision deficiencies.
            "axes.prop_cycle": mpl.cycler(
                color=[
                    "#0072B2",
                    "#E69F00",
                    "#009E73",
                    "#D55E00",
                    "#CC79A7",
                    "#56B4E9",
                    "#F0E442",
                    "#000000",
                ]
            ),
        }
    )


def device() -> torch.device:
    """The GPU when there is one (Colab), else the CPU: where chapters put the pretrained model.

    The small models the book trains stay on the CPU, where their committed results were made.
    """
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def put(*pair: object, **values: object) -> None:
    """Glue measured values for the prose: ``put("key", value)`` or ``put(key=value, ...)``.

    Tensors and NumPy scalars are glued as plain Python numbers (their repr cannot be
    formatted by ``{glue:text}`` roles); nothing is displayed.
    """
    from myst_nb import glue

    if pair:
        if len(pair) != 2 or not isinstance(pair[0], str):
            raise TypeError("put takes a key and a value, or key=value pairs")
        values = {pair[0]: pair[1], **values}
    if not values:
        raise TypeError("put needs at least one value to glue")
    for name, value in values.items():
        glue(name, value.item() if hasattr(value, "item") else value, display=False)


def glue_cited(name: str, value: float, source: str) -> None:
    """Glue a number quoted from the literature (not measured here), naming its BibTeX key.

    Chapters glue measured values only; a figure reported by a paper is the one
    exception, and this call marks it as such (the book's tests check the key).
    """
    from myst_nb import glue

    if not isinstance(source, str) or not source.strip():
        raise ValueError("source must be the BibTeX key of the paper that reports the value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"value must be a number, got {value!r}")
    glue(name, value, display=False)


def slower_or_faster(ratio: float, noise: float = 0.0) -> str:
    """Words for a measured time ratio (new / old) that cannot contradict the number.

    Timings differ between machines, so prose next to one is phrased from its value:
    "2.4 times slower", "1.3 times faster", or "about as fast (within the noise)" when
    the ratio is within ``noise`` (a fraction, e.g. the repeats' spread) of 1.
    """
    if not (isinstance(ratio, int | float) and ratio > 0 and math.isfinite(ratio)):
        raise ValueError(f"ratio must be a positive finite number, got {ratio!r}")
    if not noise >= 0:
        raise ValueError(f"noise must be non-negative, got {noise!r}")
    if ratio > 1 + noise:
        return f"{ratio:.1f} times slower"
    if ratio < 1 / (1 + noise):
        return f"{1 / ratio:.1f} times faster"
    return "about as fast (within the noise)"


def smallest_text_px(fig: Figure) -> float:
    """The height in image pixels of the figure's smallest visible text, as saved.

    A figure scaled down to the page's width shrinks its text with it; the site test
    multiplies this by the rendered width over the image's own width and requires 9 px.
    """
    import matplotlib as mpl
    from matplotlib.text import Text

    fig.canvas.draw()  # tick labels exist only once drawn
    sizes: list[float] = []

    def walk(artist: Artist) -> None:  # an invisible artist hides its children too
        if not artist.get_visible():
            return
        if isinstance(artist, Text) and artist.get_text().strip():
            sizes.append(artist.get_fontsize())
        for child in artist.get_children():
            walk(child)

    walk(fig)
    saved = mpl.rcParams["savefig.dpi"]  # show() saves at this, unless it is "figure"
    dpi = fig.dpi if saved == "figure" else float(saved)
    return min(sizes) * dpi / 72 if sizes else math.inf


def show(fig: Figure, alt: str) -> None:
    """Display a matplotlib figure as an image with alt text, then close it.

    A plain figure output carries no alt text, which screen readers need and
    the site test checks; an ``<img>`` with a data URI works in Jupyter, Binder
    and the static site alike. The image carries the pixel height of its smallest
    text (``data-min-text-px``) so that the site test can check it stays readable.
    """
    from IPython.display import HTML, display

    if not alt.strip():
        raise ValueError("alt must describe the figure for readers who cannot see it")
    min_px = smallest_text_px(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    size = f' data-min-text-px="{min_px:.2f}"' if math.isfinite(min_px) else ""
    display(
        HTML(
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}"{size} '
            'style="max-width:100%;height:auto">'
        )
    )


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
    """The live-vs-committed checks of a chapter as a table (call after ``verify``)."""

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
