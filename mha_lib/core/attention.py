"""Scaled dot-product attention, written out so every step can be inspected."""

from __future__ import annotations

import math

import torch

from mha_lib._checks import check_broadcastable, check_floating, check_mask_dtype
from mha_lib.core.masks import as_additive


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return `(softmax(q kᵀ · scale + mask) v, weights)`.

    Shapes: `q` is `(..., Tq, d)`, `k` is `(..., Tk, d)`, `v` is
    `(..., Tk, dv)`, with the same leading dimensions. The weights come back
    because the book looks at them; `torch.nn.functional.scaled_dot_product_attention`
    computes the same output without materialising them.

    `mask` broadcasts to `(..., Tq, Tk)` and says which keys each query is *allowed*
    to see: a boolean mask follows torch, **True = may attend**. A float mask is added to
    the scores; `-inf`, or a
    `finfo.min`-filled entry as transformers makes them, blocks a key. A query
    that may attend to nothing gets zero weights and a zero output rather than
    NaN. `scale` defaults to `1/√d`. `mha_lib.core.masks` has the
    library's mask conventions in one place.
    """
    _check_qkv(q, k, v)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) * scale  # (..., Tq, Tk)
    if mask is not None:
        check_mask_dtype(mask, "mask", scores)
        check_broadcastable(mask, tuple(scores.shape), "mask")
        scores = scores + as_additive(mask, scores.dtype)  # mask: True = may attend
    # A row of only -inf would make softmax divide 0 by 0; give it zero weights instead.
    nowhere = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (..., Tq, 1): no key allowed
    weights = torch.softmax(scores.masked_fill(nowhere, 0.0), dim=-1)  # (..., Tq, Tk)
    weights = weights.masked_fill(nowhere, 0.0)
    return weights @ v, weights  # (..., Tq, dv), (..., Tq, Tk)


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_floating(x, name)
        if x.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., T, d), got shape {tuple(x.shape)}"
            )
    if not (q.dim() == k.dim() == v.dim()):
        raise ValueError(
            f"q, k and v must have the same number of dimensions, got shapes "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            f"q, k and v must share their leading (batch, head) dimensions, got "
            f"{tuple(q.shape[:-2])}, {tuple(k.shape[:-2])}, {tuple(v.shape[:-2])}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size d, got {q.shape[-1]} and {k.shape[-1]}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same length Tk, got {k.shape[-2]} and {v.shape[-2]}"
        )
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
