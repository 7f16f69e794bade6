"""Pictures of a BERT's attention: bertviz's interactive views and a static grid of heatmaps."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.bert.loading import load
from mha_lib.bert.maps import attention_maps

if TYPE_CHECKING:
    from IPython.display import HTML
    from matplotlib.figure import Figure


# bertviz draws its model view 970 px wide whatever the page: 12 heads then run past the
# book's text column (a 676 px output box at a 1280 px window) and hide behind a
# scrollbar. Drawn at this width, every head of a layer fits in the column.
MODEL_VIEW_WIDTH = 660
_BERTVIZ_MODEL_WIDTH = "const DIV_WIDTH = 970;"


@functools.lru_cache(maxsize=1)
def _default_model() -> tuple[nn.Module, object]:
    return load()


def show_attention(
    text: str,
    *,
    view: str = "head",
    model: nn.Module | None = None,
    tokenizer: object = None,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
) -> HTML:
    """Visualise your own sentence: bertviz's interactive `head` or `model` view as HTML.

    One call does the common job. The HTML carries its own loaders (require.js,
    d3 and jQuery from bertviz's CDN URLs), so it renders on a static page too; the
    book's build (`book/_ext/site_assets.py`) points them at the site's pinned copies,
    so the published pages need no network while Jupyter keeps bertviz's own URLs.
    The packaged MiniLM is used unless `model` and `tokenizer` are given.
    """
    if not isinstance(text, str) or not text.strip():
        raise TypeError("text must be a non-empty string")
    if view not in ("head", "model"):
        raise ValueError(f"view must be 'head' or 'model', got {view!r}")
    if (model is None) != (tokenizer is None):
        raise ValueError("pass both model and tokenizer, or neither for the packaged model")
    if model is None:
        model, tokenizer = _default_model()
    tokens, maps = attention_maps(model, tokenizer, text)
    # bertviz writes every weight into the page as JSON: 3 decimals keep the page small.
    per_layer = [m.double().round(decimals=3).unsqueeze(0) for m in maps]  # L × (1, H, T, T)
    from bertviz import head_view, model_view

    # bertviz reads its JavaScript with open(...).read() and never closes the file; the
    # ResourceWarning fires inside the call (CPython frees the file at once), so filter it here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        if view == "head":
            html = head_view(per_layer, tokens, layer=layer, heads=heads, html_action="return")
        else:
            html = model_view(per_layer, tokens, include_heads=heads, html_action="return")
            if _BERTVIZ_MODEL_WIDTH not in html.data:
                raise RuntimeError("bertviz's model view no longer sets its width as expected")
            html.data = html.data.replace(
                _BERTVIZ_MODEL_WIDTH, f"const DIV_WIDTH = {MODEL_VIEW_WIDTH};"
            )
    # bertviz's pickers carry a visible caption but no accessible name; screen readers need one.
    for picker, name in (("layer", "Layer"), ("filter", "Attention")):
        html.data = html.data.replace(
            f'<select id="{picker}">', f'<select id="{picker}" aria-label="{name}">'
        )
    return html


def attention_grid(
    tokens: Sequence[str],
    maps: torch.Tensor,
    *,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    title: str = "Attention per head",
    token_labels: bool = False,
) -> Figure:
    """A static grid of heatmaps (rows = layers, columns = heads) for readers without JavaScript.

    `layers` and `heads` pick the rows and columns (all by default); with
    `token_labels` the outer axes name the tokens, which suits a few heads.
    """
    import matplotlib.pyplot as plt

    check_floating(maps, "maps")
    if maps.dim() != 4 or maps.shape[-1] != maps.shape[-2] or maps.shape[-1] != len(tokens):
        raise ValueError(
            f"maps must have shape (L, H, T, T) with T = len(tokens) = {len(tokens)}, "
            f"got {tuple(maps.shape)}"
        )
    layers = list(range(maps.shape[0])) if layers is None else list(layers)
    heads = list(range(maps.shape[1])) if heads is None else list(heads)
    size = 0.25 * len(tokens) + 0.8 if token_labels else 1.3
    fig, axes = plt.subplots(
        len(layers),
        len(heads),
        figsize=(size * len(heads) + 1.5, size * len(layers) + 1),
        squeeze=False,
        sharex=True,
        sharey=True,
    )
    for r, li in enumerate(layers):
        for c, hi in enumerate(heads):
            ax = axes[r][c]
            image = ax.imshow(maps[li, hi].numpy(), vmin=0.0, vmax=1.0, cmap="viridis")
            ax.grid(False)
            if token_labels:
                ticks = range(len(tokens))
                ax.set_xticks(ticks, tokens, rotation=90, fontsize=7)
                ax.set_yticks(ticks, tokens, fontsize=7)
                ax.set_title(f"layer {li}, head {hi}", fontsize=8, fontweight="normal")
            else:
                ax.set_xticks([])
                ax.set_yticks([])
                if r == 0:
                    ax.set_title(f"head {hi}", fontsize=8, fontweight="normal")
            if c == 0:
                ax.set_ylabel("query" if token_labels else f"layer {li}\nquery", fontsize=8)
            if r == len(layers) - 1:
                ax.set_xlabel("key", fontsize=8)
    fig.suptitle(title)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    return fig
