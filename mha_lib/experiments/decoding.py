"""Incremental decoding of the causal toy model with a key/value cache (chapter 9).

`forward_cached` runs only the new tokens through the model, reading the earlier
ones' keys and values from a `KVCache`; its logits equal
those of a full causal forward (`tests/unit/test_kv_cache.py`). `bench/kv_cache.py` times
it per generated token for multi-head, grouped-query and multi-query layers.
"""

from __future__ import annotations

import torch

from mha_lib._checks import check_positive_int, check_rank
from mha_lib.core.kv_cache import KVCache, attend_cached
from mha_lib.experiments.toy_transformer import ToyTransformer


def new_cache(model: ToyTransformer, batch: int, capacity: int) -> KVCache:
    """An empty cache for every layer of `model`, room for `capacity` tokens."""
    _check_causal(model)
    return KVCache(model.attentions, batch, capacity)


@torch.no_grad()
def forward_cached(model: ToyTransformer, tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Logits `(B, Tn, C)` of the new `tokens (B, Tn)`, which follow the cached ones."""
    _check_causal(model)
    check_rank(tokens, 2, "tokens", "(batch, new tokens)")
    start, new = cache.length, tokens.shape[1]
    if start + new > model.max_len:
        raise ValueError(f"positions up to {start + new} exceed max_len={model.max_len}")
    positions = torch.arange(start, start + new, device=tokens.device)  # (Tn,)
    x = model.tok_emb(tokens) + model.pos_emb(positions)  # (B, Tn, D)
    for layer, block in enumerate(model.blocks):
        x = x + attend_cached(block.attn, block.ln_attn(x), cache, layer)
        x = x + block.mlp(block.ln_mlp(x))
    cache.advance(new)
    return model.head(model.ln_out(x))  # (B, Tn, C)


@torch.no_grad()
def greedy(model: ToyTransformer, prompt: torch.Tensor, steps: int) -> torch.Tensor:
    """`prompt (B, T0)` followed by `steps` greedily generated tokens, with a cache."""
    check_positive_int("steps", steps)
    cache = new_cache(model, prompt.shape[0], prompt.shape[1] + steps)
    logits = forward_cached(model, prompt, cache)
    out = [prompt]
    for _ in range(steps):
        nxt = logits[:, -1:].argmax(-1)  # (B, 1)
        out.append(nxt)
        logits = forward_cached(model, nxt, cache)
    return torch.cat(out, dim=1)


def _check_causal(model: ToyTransformer) -> None:
    if not isinstance(model, ToyTransformer):
        raise TypeError(f"model must be a ToyTransformer, got {type(model).__name__}")
    if not all(block.causal for block in model.blocks):
        raise ValueError("a key/value cache needs a causal model (ToyTransformer(causal=True))")
