"""Multi-head attention in the few lines that are the idea: read these first.

Nothing here checks its input, masks a key, drops out a weight or takes a fast path: the
library's `scaled_dot_product_attention` and
`MultiHeadAttention` do all of that. What is left is the
computation itself, which `tests/unit/test_teaching.py` proves equal to both of them and to
PyTorch's own attention. The same goes for `head_importance`, the idea behind
`mha_lib.pruning.head_importance` for one layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """softmax(q kᵀ / √d) v: each query's output is an average of the
    values, weighted by how well the query matches each key."""
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (..., Tq, Tk)
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

    `x` is `(B, T, d_model)`; each `w` is `(d_model, d_model)`,
    applied as `x @ w`.
    """
    batch, length, d_model = x.shape
    d_head = d_model // num_heads
    # One projection serves all heads: (B, T, d_model) each.
    q, k, v = x @ w_q, x @ w_k, x @ w_v

    def split(t: torch.Tensor) -> torch.Tensor:
        # Head i owns features i·d_head … (i+1)·d_head: (B, h, T, d_head).
        return t.view(batch, length, num_heads, d_head).transpose(1, 2)

    # Every head attends on its own: a T × T map per head.
    heads = attention(split(q), split(k), split(v))  # (B, h, T, d_head)
    # The heads' outputs side by side, then W_o mixes what they found.
    merged = heads.transpose(1, 2).reshape(batch, length, d_model)
    return merged @ w_o


def head_importance(
    layer: torch.nn.Module,
    x: torch.Tensor,
    loss: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """Michel et al.'s importance of each head of one layer: the mean
    over sequences of `|∂L(x)/∂ξ_h|` at `ξ = 1`, the gate `ξ_h`
    scaling head `h`'s output.

    `layer` is a `MultiHeadAttention`;
    `loss` maps its output `(B, T, d_model)` to one loss per sequence.
    """
    # One gate per sequence and head, all 1: (B, h).
    gates = x.new_ones(x.shape[0], layer.num_heads, requires_grad=True)
    out, _ = layer(x, head_mask=gates)  # each head's output times its gate
    (slopes,) = torch.autograd.grad(loss(out).sum(), gates)  # ∂L(x)/∂ξ_h
    return slopes.abs().mean(0)  # (h,): how much the loss feels each head
