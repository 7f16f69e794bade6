"""Figures on a page: an image with alt text that records how small its text is.

A plain figure output carries no alt text, and a figure scaled to the column can shrink its
text below what a reader can read; :func:`show` writes both facts into the page, and the
site test checks them.
"""

from __future__ import annotations

import base64
import html
import io
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure


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
