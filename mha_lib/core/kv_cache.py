"""The key/value cache of incremental decoding, and what it costs in bytes.

A causal model that generates one token at a time needs, at every step, the keys and
values of all earlier tokens in every layer. Recomputing them costs a full forward per
token; keeping them costs memory: per token and layer, `2 · num_kv_heads · d_head`
numbers. That count is why later models share key/value heads (`MultiHeadAttention`'s
`num_kv_heads`): the cache shrinks by `num_heads / num_kv_heads` while the queries,
and so the number of attention maps, stay. `cache_bytes` counts it;
`KVCache` holds it and its `KVCache.nbytes` reads the real tensors' size,
so the count can be checked against what is allocated.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mha_lib._checks import check_positive_int, check_rank
from mha_lib.core.heads import merge_heads, split_heads
from mha_lib.core.multihead import MultiHeadAttention


def cache_bytes(
    *,
    num_layers: int,
    num_kv_heads: int,
    d_head: int,
    tokens: int,
    batch: int = 1,
    dtype: torch.dtype = torch.float32,
) -> int:
    """Bytes of the keys and values of `tokens` tokens: `2·L·Hkv·Dh·T·B·bytes`."""
    for name, value in (
        ("num_layers", num_layers),
        ("num_kv_heads", num_kv_heads),
        ("d_head", d_head),
        ("tokens", tokens),
        ("batch", batch),
    ):
        check_positive_int(name, value)
    size = torch.empty((), dtype=dtype).element_size()
    return 2 * num_layers * num_kv_heads * d_head * tokens * batch * size


class KVCache:
    """Per layer, preallocated keys and values `(B, Hkv, capacity, Dh)` and a fill level.

    Preallocating (as serving systems do) keeps a step from copying the whole cache;
    the fill level `length` is shared by all layers and advanced by `advance`
    once every layer has appended the step's tokens.
    """

    def __init__(
        self,
        attentions: list[MultiHeadAttention],
        batch: int,
        capacity: int,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        check_positive_int("batch", batch)
        check_positive_int("capacity", capacity)
        if not attentions:
            raise ValueError("attentions must list at least one MultiHeadAttention")
        self.capacity = capacity
        self.length = 0
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        for attn in attentions:
            if not isinstance(attn, MultiHeadAttention):
                raise TypeError(f"attentions must hold MultiHeadAttention, got {type(attn)}")
            weight = attn.k_proj.weight
            shape = (batch, attn.num_kv_heads, capacity, attn.d_head)
            kind = {"dtype": dtype or weight.dtype, "device": device or weight.device}
            self.keys.append(torch.zeros(shape, **kind))
            self.values.append(torch.zeros(shape, **kind))

    def nbytes(self) -> int:
        """Bytes the cache's tensors really hold (their storage), all layers."""
        return sum(t.untyped_storage().nbytes() for t in self.keys + self.values)

    def append(
        self, layer: int, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write `k, v (B, Hkv, Tn, Dh)` after the filled part; return all keys and values."""
        end = self.length + k.shape[-2]
        if end > self.capacity:
            raise ValueError(f"the cache holds {self.capacity} tokens, {end} were asked for")
        self.keys[layer][:, :, self.length : end] = k
        self.values[layer][:, :, self.length : end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def advance(self, tokens: int) -> None:
        """Mark `tokens` more positions as filled (after every layer appended them)."""
        self.length += tokens


def attend_cached(
    attn: MultiHeadAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    """Causal self-attention of the new tokens `x (B, Tn, D)` over the cache and themselves.

    Only the new tokens are projected; their keys and values join the cache of `layer`.
    Equals the rows of a full causal forward that belong to the new tokens (tested in
    `tests/unit/test_kv_cache.py`). No dropout, masks or head mask: decoding in eval mode.
    """
    check_rank(x, 3, "x", "(batch, new tokens, d_model)")
    past = cache.length
    q = attn.project_queries(x)  # (B, H, Tn, Dh)
    k_new = split_heads(attn.k_proj(x), attn.num_kv_heads)  # (B, Hkv, Tn, Dh)
    v_new = split_heads(attn.v_proj(x), attn.num_kv_heads)  # (B, Hkv, Tn, Dh)
    k, v = cache.append(layer, k_new, v_new)  # (B, Hkv, past + Tn, Dh)
    new = x.shape[1]
    # New token i sees every cached token and the new ones up to itself.
    allowed = None
    if new > 1:
        allowed = torch.ones(new, past + new, dtype=torch.bool, device=x.device).tril(past)
    extra = {}
    if attn.num_kv_heads != attn.num_heads:
        if attn._groups_are_even():
            extra = {"enable_gqa": True}
        else:
            index = torch.tensor(attn.kv_slot_of_heads(), device=k.device)
            k, v = k.index_select(1, index), v.index_select(1, index)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, **extra)  # (B, H, Tn, Dh)
    return attn.out_proj(merge_heads(out))  # (B, Tn, D)
