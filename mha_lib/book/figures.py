"""Figures on a page: an image with alt text that records how small its text is.

A plain figure output carries no alt text, and a figure scaled to the column can shrink its
text below what a reader can read; `show` writes both facts into the page, and the
site test checks them.

The same execution also feeds the Chinese edition: `show` adds to the output a second
copy of the figure, an SVG whose words are text elements (`text/markdown`, which Jupyter
and the English site never show; book/zh.yml ranks it first). The Chinese build translates
those words from the page's catalogue, as it translates alt texts and table headers
(book/_ext/i18n/translated_outputs.py), so a figure's titles, axes and legends read in Chinese
without running anything again.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
import struct
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


# Maths in a label, spelt as plain text for the translatable copy: a label's words must be
# one text element, and matplotlib draws mathtext glyph by glyph.
_MATHS_AS_TEXT = (
    (r"\\sqrt\{([^{}]*)\}", r"√\1"), (r"\\sqrt", "√"), (r"\\cdot ?", "·"), (r"\\times", "×"),
    (r"\\\|", "‖"), (r"\\partial ?", "∂"), (r"\\log", "log"), (r"\\ln", "ln"),
    (r"\\(?:mathrm|text|mathdefault)\{([^{}]*)\}", r"\1"), (r"\\top", "ᵀ"),
    (r"\\alpha", "α"), (r"\\beta", "β"), (r"\\sigma", "σ"), (r"\\xi", "ξ"), (r"\\ell", "ℓ"),
    (r"\\,|\\;|\\!", " "), (r"([_^])\{([^{}]*)\}", r"\1\2"), (r"[{}$\\]", ""),
)
_WORD = re.compile(r"\b[a-z]{3,}\b")


def maths_as_text(label: str) -> str:
    """A mathtext label as plain text: `"key width $d_k$"` becomes `"key width d_k"`."""
    if "$" not in label:
        return label
    for pattern, plain in _MATHS_AS_TEXT:
        label = re.sub(pattern, plain, label)
    return label


def _translatable_svg(fig: Figure, width_px: int, height_px: int) -> str:
    """The figure as SVG with its worded labels as text elements, sized as the PNG."""
    import matplotlib as mpl
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        label = text.get_text()
        if "$" in label and _WORD.search(label):
            text.set_text(maths_as_text(label))
    buffer = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mha"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buffer.getvalue()
    # Shown at the PNG's size (its pixels), so that both editions draw the figure alike.
    return re.sub(
        r'<svg([^>]*?) width="[^"]*" height="[^"]*"',
        rf'<svg\1 width="{width_px}px" height="{height_px}px"',
        svg,
        count=1,
    )


class _Output:
    """A prepared output that IPython displays as the mimebundle it holds (for `glue`)."""

    def __init__(self, bundle: dict[str, str]) -> None:
        self.bundle = bundle

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict:
        return self.bundle


def show(fig: Figure, alt: str, glue_as: str | None = None) -> None:
    """Display a matplotlib figure as an image with alt text, then close it.

    A plain figure output carries no alt text, which screen readers need and
    the site test checks; an `<img>` with a data URI works in Jupyter, Binder
    and the static site alike. The image carries the pixel height of its smallest
    text (`data-min-text-px`) so that the site test can check it stays readable.
    `glue_as` also glues the figure under that name, so that another page can show it
    (the `{glue}` directive with `:doc:`) without drawing it again. What is glued is the
    SVG copy as HTML: a page that pastes from another renders HTML only, and the SVG is the
    copy whose words the Chinese build translates.
    """
    from IPython.display import display

    if not alt.strip():
        raise ValueError("alt must describe the figure for readers who cannot see it")
    min_px = smallest_text_px(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    png = buffer.getvalue()
    width_px, height_px = struct.unpack(">II", png[16:24])  # the PNG's IHDR chunk
    svg = _translatable_svg(fig, width_px, height_px)
    import matplotlib.pyplot as plt

    plt.close(fig)
    size = f' data-min-text-px="{min_px:.2f}"' if math.isfinite(min_px) else ""
    tail = f' alt="{html.escape(alt)}"{size} style="max-width:100%;height:auto">'
    data = base64.b64encode(png).decode("ascii")
    words = base64.b64encode(svg.encode()).decode("ascii")
    bundle = {
        "text/html": f'<img src="data:image/png;base64,{data}"' + tail,
        # For the Chinese edition only (see the module): one raw HTML block.
        "text/markdown": f'<div class="mha-figure"><img src="data:image/svg+xml;base64,'
        f'{words}"' + tail + "</div>",
        "text/plain": "<IPython.core.display.HTML object>",
    }
    display(bundle, raw=True)
    if glue_as is not None:
        from myst_nb import glue

        pasted = {"text/html": bundle["text/markdown"], "text/plain": bundle["text/plain"]}
        glue(glue_as, _Output(pasted), display=False)
