"""Sharing key/value heads after training, and where attention parks (chapter 9).

`pool_kv_heads` turns a trained multi-head toy model into a grouped-query one the
way Ainslie et al. (2023) convert a checkpoint: each group's key and value projections
are replaced by their mean, queries and the output projection are kept.
`first_position_mass` measures how much attention each head puts on position 0, the
"sink" of Xiao et al. (2023), beside the mass a slot of the same kind receives on average;
`query_position_mass` the mass the queries keep among themselves (their own position
and earlier queries'), the other place a causal head can leave its weight.
"""

from __future__ import annotations

import copy

import torch

from mha_lib._checks import check_positive_int, check_rank
from mha_lib.core.multihead import MultiHeadAttention
from mha_lib.experiments.toy_transformer import ToyTransformer


def pooled_attention(attn: MultiHeadAttention, num_kv_heads: int) -> MultiHeadAttention:
    """A copy of `attn` whose `num_kv_heads` key/value heads are its groups' means."""
    check_positive_int("num_kv_heads", num_kv_heads)
    if (
        attn.num_heads != attn.original_num_heads
        or attn.num_kv_heads != attn.num_heads
        or attn.shared_query
    ):
        raise ValueError("pooling needs an unpruned multi-head layer (num_kv_heads == num_heads)")
    if attn.num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={attn.num_heads}")
    weight = attn.q_proj.weight
    new = MultiHeadAttention(
        attn.d_model,
        attn.num_heads,
        num_kv_heads=num_kv_heads,
        bias=attn.q_proj.bias is not None,
        dropout=attn.dropout,
        device=weight.device,
        dtype=weight.dtype,
    )
    group, dh = attn.num_heads // num_kv_heads, attn.d_head
    with torch.no_grad():
        new.q_proj.load_state_dict(attn.q_proj.state_dict())
        new.out_proj.load_state_dict(attn.out_proj.state_dict())
        for name in ("k_proj", "v_proj"):
            old, pooled = getattr(attn, name), getattr(new, name)
            # rows of head h: h*dh ... (h+1)*dh - 1; a group is `group` consecutive heads
            w = old.weight.view(num_kv_heads, group, dh, attn.d_model).mean(1)
            pooled.weight.copy_(w.reshape(num_kv_heads * dh, attn.d_model))
            if old.bias is not None:
                pooled.bias.copy_(old.bias.view(num_kv_heads, group, dh).mean(1).reshape(-1))
    return new.train(attn.training)


def pool_kv_heads(model: ToyTransformer, num_kv_heads: int) -> ToyTransformer:
    """A copy of `model` with every layer's key/value heads mean-pooled into groups."""
    if not isinstance(model, ToyTransformer):
        raise TypeError(f"model must be a ToyTransformer, got {type(model).__name__}")
    new = copy.deepcopy(model)
    for block in new.blocks:
        block.attn = pooled_attention(block.attn, num_kv_heads)
    return new


def first_position_mass(maps: torch.Tensor, slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per layer and head: mean weight on position 0, and on positions `1 … slots − 1`.

    `maps` is `(L, B, H, T, T)`; rows `slots … T − 1` are read (queries that can see
    all `slots` context positions), so position 0 and its `slots − 1` neighbours are
    alike for them and the second number is the baseline for the first. Both `(L, H)`.
    """
    check_rank(maps, 5, "maps", "(layers, batch, heads, queries, keys)")
    if not 1 < slots < maps.shape[-1]:
        raise ValueError(f"slots must be in (1, T={maps.shape[-1]}), got {slots}")
    rows = maps[..., slots:, :]  # (L, B, H, Q, T)
    first = rows[..., 0].mean((1, 3))  # (L, H)
    others = rows[..., 1:slots].mean((1, 3, 4))  # (L, H): one other slot, on average
    return first, others


def query_position_mass(maps: torch.Tensor, slots: int) -> torch.Tensor:
    """Per layer and head `(L, H)`: the mean weight that queries (rows `slots … T − 1`) put
    on query positions (`slots … T − 1`: their own and, under a causal mask, earlier ones)."""
    check_rank(maps, 5, "maps", "(layers, batch, heads, queries, keys)")
    if not 0 < slots < maps.shape[-1]:
        raise ValueError(f"slots must be in (0, T={maps.shape[-1]}), got {slots}")
    return maps[..., slots:, slots:].sum(-1).mean((1, 3))  # (L, H)
