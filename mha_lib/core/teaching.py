"""Multi-head attention in the few lines that are the idea: read these first.

Nothing here checks its input, masks a key, drops out a weight or takes a fast path: the
library's :func:`~mha_lib.core.attention.scaled_dot_product_attention` and
:class:`~mha_lib.core.multihead.MultiHeadAttention` do all of that. What is left is the
computation itself, which ``tests/test_teaching.py`` proves equal to both of them and to
PyTorch's own attention. The same goes for :func:`head_importance`, the idea behind
:func:`mha_lib.pruning.head_importance` for one layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q kᵀ / √d) v: each query's output is an average of the values, weighted by
    how well the query matches each key."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
    weights = scores.softmax(dim=-1)  # every row sums to 1
    return weights @ v  # (..., Tq, dv)


def multi_head_attention(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    w_o: torch.Tensor,
    num_heads: int,
) -> torch.Tensor:
    """Project, split into heads, attend in every head, merge, mix.

    ``x`` is ``(B, T, d_model)``; each ``w`` is ``(d_model, d_model)``, applied as ``x @ w``.
    """
    batch, length, d_model = x.shape
    d_head = d_model // num_heads
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, d_model): one projection serves all heads

    def split(t: torch.Tensor) -> torch.Tensor:  # head i owns features i·d_head … (i+1)·d_head
        return t.view(batch, length, num_heads, d_head).transpose(1, 2)  # (B, h, T, d_head)

    heads = attention(split(q), split(k), split(v))  # (B, h, T, d_head): a map per head
    merged = heads.transpose(1, 2).reshape(batch, length, d_model)  # heads side by side
    return merged @ w_o  # W_o mixes what the heads found


def head_importance(
    layer: torch.nn.Module,
    x: torch.Tensor,
    loss: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """Michel et al.'s importance of each head of one layer: the mean over
    sequences of ``|∂L(x)/∂ξ_h|`` at ``ξ = 1``, the gate ``ξ_h`` scaling head
    ``h``'s output.

    ``layer`` is a :class:`~mha_lib.core.multihead.MultiHeadAttention`;
    ``loss`` maps its output ``(B, T, d_model)`` to one loss per sequence.
    """
    gates = x.new_ones(x.shape[0], layer.num_heads, requires_grad=True)  # (B, h)
    out, _ = layer(x, head_mask=gates)  # each head's output times its gate
    (slopes,) = torch.autograd.grad(loss(out).sum(), gates)  # ∂L(x)/∂ξ_h
    return slopes.abs().mean(0)  # (h,): how much the loss feels each head
