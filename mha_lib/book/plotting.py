"""The figures chapters draw more than once: runs as a mean with their spread, a heat map.

Each chapter's figures repeat two shapes: several seeds' curves shown as their mean with
a band from the lowest to the highest run (never one lucky seed alone), and a grid of
per-head values (layers × heads) as a heat map with its colour bar. They live here once,
tested, so a chapter shows only what it plots. `COLUMN_INCHES` is the widest figure that
the site's text column shows at full size, which keeps its text as large as it was drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

# The text column is 688 px wide at a 1280 px window; figures are saved at 110 dpi
# (mha_lib.book.setup). A figure up to this width is never scaled down on the page.
COLUMN_INCHES = 688 / 110


def runs_band(
    ax: Axes,
    x: Sequence[float] | np.ndarray,
    runs: Sequence[Sequence[float]] | np.ndarray,
    *,
    label: str,
    color: str | None = None,
    alpha: float = 0.2,
    **line: object,
) -> Line2D:
    """Draw several runs of one curve (`runs`: runs × len(x)) as their mean and min–max band.

    Returns the mean's line; `line` passes on to `ax.plot` (marker, style).
    """
    values = np.asarray(runs, dtype=float)
    xs = np.asarray(x, dtype=float)
    if values.ndim != 2 or values.shape[1] != xs.shape[0] or values.shape[0] == 0:
        raise ValueError(
            f"runs must be (runs, len(x)) = (n, {xs.shape[0]}) with n >= 1, "
            f"got {values.shape}"
        )
    (mean,) = ax.plot(xs, values.mean(0), color=color, label=label, **line)
    ax.fill_between(xs, values.min(0), values.max(0), color=mean.get_color(), alpha=alpha)
    return mean


def heatmap(
    ax: Axes,
    values: Sequence[Sequence[float]] | np.ndarray,
    *,
    title: str,
    colorbar_label: str,
    xlabel: str = "head",
    ylabel: str = "layer",
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
) -> None:
    """Per-head values (rows = layers, columns = heads), a tick per cell, and the colour bar.

    `vmin`/`vmax` fix the colour scale (attention weights: 0 to 1) instead of the data's range.
    """
    grid = np.asarray(values, dtype=float)
    if grid.ndim != 2:
        raise ValueError(f"values must be a 2-D grid (layers, heads), got shape {grid.shape}")
    image = ax.imshow(grid, cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set_xticks(range(grid.shape[1]))
    ax.set_yticks(range(grid.shape[0]))
    ax.grid(False)
    ax.figure.colorbar(image, ax=ax, label=colorbar_label)
