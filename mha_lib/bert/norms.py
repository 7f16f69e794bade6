"""What a head moves, not only where it looks: attention weights times value norms.

A head's output for query i is a sum over keys j of alpha_ij f(x_j), where
f(x) = (x W_v + b_v)[head] W_o[head] is key j's value carried through the head's
slice of the output projection. A large weight on a key whose f(x_j) is nearly zero
moves almost nothing: Kobayashi et al. (2020) found that BERT's heavy weights on
[CLS] and [SEP] mostly multiply such small vectors. So each weight is read beside
alpha_ij * ||f(x_j)||, the norm of what that key actually adds (the output bias b_o
is added once per layer, not per key, and belongs to no key).
"""

from __future__ import annotations

import torch
from torch import nn

from mha_lib._checks import check_floating


def transformed_values(layer: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """`(B, H, T, D)`: f(x_j) of every head of one encoder `layer` for its input `hidden`.

    `hidden` is the layer's input `(B, T, D)` (`hidden_states[l]` of a model run
    with `output_hidden_states=True`); the value bias is included, b_o is not.
    """
    check_floating(hidden, "hidden")
    if hidden.dim() != 3:
        raise ValueError(f"hidden must have shape (B, T, D), got {tuple(hidden.shape)}")
    sa, dense = layer.attention.self, layer.attention.output.dense
    h, dh = int(sa.num_attention_heads), int(sa.attention_head_size)
    b, t, _ = hidden.shape
    v = sa.value(hidden).view(b, t, h, dh).transpose(1, 2)  # (B, H, T, dh)
    w_o = dense.weight.view(dense.out_features, h, dh)  # (D, H, dh): each head's columns
    return torch.einsum("bhtk,dhk->bhtd", v, w_o)


def norm_weighted(
    maps: torch.Tensor, norms: torch.Tensor, *, normalise: bool = True
) -> torch.Tensor:
    """`alpha_ij * ||f(x_j)||` for maps `(..., T, T)` and norms `(..., T)` (one per key).

    With `normalise` each row is divided by its sum, so the result reads as a map
    (rows sum to 1) and every statistic of an attention map applies to it.
    """
    check_floating(maps, "maps")
    check_floating(norms, "norms")
    if maps.dim() < 2 or maps.shape[-1] != maps.shape[-2]:
        raise ValueError(f"maps must have shape (..., T, T), got {tuple(maps.shape)}")
    if norms.shape != maps.shape[:-1]:
        raise ValueError(
            f"norms must have shape {tuple(maps.shape[:-1])} (one per key), "
            f"got {tuple(norms.shape)}"
        )
    if bool((norms < 0).any()):
        raise ValueError("norms must be non-negative")
    moved = maps * norms.unsqueeze(-2)  # (..., T, T): key j's column scaled by its norm
    if not normalise:
        return moved
    return moved / moved.sum(-1, keepdim=True).clamp_min(torch.finfo(moved.dtype).tiny)
