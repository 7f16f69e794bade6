"""Other ways to compute the same multi-head attention, for comparison and timing.

Each function reads its weights from a `mha_lib.MultiHeadAttention`, so every
implementation computes the same function; tests check that they agree and
`bench/mha.py` times them. Masks follow `mha_lib`: boolean True = may attend.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mha_lib.core.attention import scaled_dot_product_attention
from mha_lib.core.heads import merge_heads, split_heads
from mha_lib.core.multihead import MultiHeadAttention


def loop_over_heads(
    mha: MultiHeadAttention,
    query: torch.Tensor,
    key: torch.Tensor | None = None,
    value: torch.Tensor | None = None,
    *,
    attn_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """One small attention per head, then concatenate: multi-head attention as usually drawn.

    Head `h` uses rows `h·Dh … (h+1)·Dh − 1` of each input projection's `weight`
    (columns of `W_q`, `W_k`, `W_v` in the `x @ W` form the book writes), so the
    arithmetic is that of the batched module; what differs is `H` times as many
    small kernel calls. `attn_mask` is shared by all heads: `(Tq, Tk)` or `(B, Tq, Tk)`.
    """
    _check_module(mha)
    key = query if key is None else key
    value = key if value is None else value
    outputs = []
    for h in range(mha.num_heads):
        rows = slice(h * mha.d_head, (h + 1) * mha.d_head)
        q = _project_rows(mha.q_proj, query, rows)  # (B, Tq, Dh)
        k = _project_rows(mha.k_proj, key, rows)  # (B, Tk, Dh)
        v = _project_rows(mha.v_proj, value, rows)  # (B, Tk, Dh)
        out, _ = scaled_dot_product_attention(q, k, v, attn_mask)  # (B, Tq, Dh)
        outputs.append(out)
    return mha.out_proj(torch.cat(outputs, dim=-1))  # (B, Tq, d_model)


def projections_sdpa(
    mha: MultiHeadAttention,
    query: torch.Tensor,
    key: torch.Tensor | None = None,
    value: torch.Tensor | None = None,
    *,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """The shortest fast version: three projections, torch's fused attention, one projection.

    No input checks and no mask handling beyond what
    `torch.nn.functional.scaled_dot_product_attention` does; timing it next to
    the library's fused path shows what those cost. `is_causal=True` lets the
    kernel skip the blocks above the diagonal instead of reading a mask.
    """
    _check_module(mha)
    key = query if key is None else key
    value = key if value is None else value
    heads = mha.num_heads
    q = split_heads(mha.q_proj(query), heads)  # (B, H, Tq, Dh)
    k = split_heads(mha.k_proj(key), heads)  # (B, H, Tk, Dh)
    v = split_heads(mha.v_proj(value), heads)  # (B, H, Tk, Dh)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    return mha.out_proj(merge_heads(out))  # (B, Tq, d_model)


def _project_rows(linear: torch.nn.Linear, x: torch.Tensor, rows: slice) -> torch.Tensor:
    bias = None if linear.bias is None else linear.bias[rows]
    return F.linear(x, linear.weight[rows], bias)  # (B, T, Dh)


def _check_module(mha: object) -> None:
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be a mha_lib.MultiHeadAttention, got {type(mha).__name__}")
