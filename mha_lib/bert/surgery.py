"""Head surgery on a BERT-family model: mask heads (with gradients), remove them, or copy a layer.

Heads are always named by their *original* index, as transformers 4 did: pruning records
which heads remain (`mha_lib_kept_heads` on each self-attention module), and masks given
after pruning still use original indices. Masks follow the library's one convention (see
`mha_lib.core.masks`): `(L, H)` for the whole model, `(B, L, H)` per example.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

import torch
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.bert.loading import encoder_layers, num_heads
from mha_lib.core.head_removal import (
    head_features,
    keep_input_features,
    keep_output_features,
    slots_of,
    surviving_heads_per_layer,
)
from mha_lib.core.multihead import MultiHeadAttention


def _kept_heads(self_attention: nn.Module) -> list[int]:
    """Original indices of the heads still present in a self-attention module."""
    heads = self_attention.query.out_features // self_attention.attention_head_size
    return list(getattr(self_attention, "mha_lib_kept_heads", range(heads)))


@contextlib.contextmanager
def head_mask(model: nn.Module, mask: torch.Tensor) -> Iterator[None]:
    """Multiply each head's context output by `mask[layer, head]` inside the block.

    `mask` is a float head mask (1 keeps a head as it is, 0 silences it), `(L, H)`, or
    `(B, L, H)` for one mask per batch row
    (per-example importance); `H` is the model's original head count, and
    entries of heads already pruned are ignored. A forward hook on each layer's
    self-attention scales the heads' outputs before `attention.output.dense`,
    exactly where transformers 4 applied `head_mask`; the attention mask and
    padding are untouched, and gradients flow to `mask` (Michel et al. 2019
    importance scores are those gradients).
    """
    layers = encoder_layers(model)
    check_floating(mask, "mask")
    expected = (len(layers), num_heads(model))
    if mask.dim() not in (2, 3) or tuple(mask.shape[-2:]) != expected:
        raise ValueError(
            f"mask must have shape (layers, heads) = {expected} or (batch, *{expected}), "
            f"got {tuple(mask.shape)}"
        )
    per_row = mask.dim() == 3

    def make_hook(index: int, kept: list[int]):  # noqa: ANN202 - a torch hook
        def hook(module: nn.Module, args: tuple, output: tuple) -> tuple:
            context = output[0] if isinstance(output, tuple) and output else None  # (B, T, H·Dh)
            width = len(kept) * module.attention_head_size
            if not isinstance(context, torch.Tensor) or context.shape[-1] != width:
                raise TypeError(
                    f"layer {index}'s self-attention returned {type(output).__name__}, not a "
                    f"tuple starting with its (batch, tokens, {width}) context: head_mask "
                    "supports the BERT modules of transformers 5 only"
                )
            if per_row and mask.shape[0] != context.shape[0]:
                raise ValueError(
                    f"mask has {mask.shape[0]} rows but the batch has {context.shape[0]}"
                )
            scale = mask[..., index, kept].to(device=context.device, dtype=context.dtype)
            scale = scale[:, None, :, None] if per_row else scale[:, None]  # broadcast
            shaped = context.unflatten(-1, (len(kept), -1))  # (B, T, H, Dh)
            return ((shaped * scale).flatten(-2), *output[1:])  # (B, T, H·Dh)

        return hook

    handles = [
        layer.attention.self.register_forward_hook(make_hook(i, _kept_heads(layer.attention.self)))
        for i, layer in enumerate(layers)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def prune_heads(model: nn.Module, heads: Mapping[int, Iterable[int]]) -> None:
    """Remove heads physically: their query/key/value rows and output-dense columns go.

    `heads` maps a layer index to head indices in the *original* numbering (as
    transformers 4 did), so a head-importance table can be pruned in several rounds. The
    result equals masking those heads with zeros, with fewer parameters and less compute.
    The rules of `mha_lib.core.head_removal` apply: a head out of range or already
    removed is a ValueError, and so is removing a layer's last head (use `head_mask`
    with zeros to silence a whole layer); the whole plan is checked before any layer
    changes.
    """
    layers = encoder_layers(model)
    present = [_kept_heads(layer.attention.self) for layer in layers]
    survivors = surviving_heads_per_layer(heads, present, num_heads(model))
    for layer, remaining in survivors.items():
        sa = layers[layer].attention.self
        output = layers[layer].attention.output
        slots = slots_of(present[layer], remaining)  # where the survivors sit now
        idx = head_features(slots, sa.attention_head_size, sa.query.weight.device)
        sa.query = keep_output_features(sa.query, idx)
        sa.key = keep_output_features(sa.key, idx)
        sa.value = keep_output_features(sa.value, idx)
        output.dense = keep_input_features(output.dense, idx)
        # BertSelfAttention reshapes with -1 heads, so only these bookkeeping attributes change.
        sa.num_attention_heads = len(remaining)
        sa.all_head_size = len(remaining) * sa.attention_head_size
        sa.mha_lib_kept_heads = remaining


def kept_heads(model: nn.Module) -> list[list[int]]:
    """Per layer, the original indices of the heads still present (all, until pruned)."""
    return [_kept_heads(layer.attention.self) for layer in encoder_layers(model)]


def heads_per_layer(model: nn.Module) -> list[int]:
    """How many heads each layer has now (after any pruning)."""
    return [len(kept) for kept in kept_heads(model)]


# ---------------------------------------------------------------- bridge to mha_lib


def mha_from_layer(model: nn.Module, layer: int) -> MultiHeadAttention:
    """A `mha_lib.MultiHeadAttention` carrying layer `layer`'s q/k/v and output-dense weights.

    Fed that layer's input hidden states (with `key_padding_mask` for padding),
    its per-head weights equal transformers' attention probabilities and its
    output equals `attention.output.dense` before dropout, residual and LayerNorm.
    """
    layers = encoder_layers(model)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(layers):
        raise ValueError(f"layer must be an int in 0 … {len(layers) - 1}, got {layer!r}")
    sa = layers[layer].attention.self
    dense = layers[layer].attention.output.dense
    d_model = sa.query.in_features
    n_heads = len(_kept_heads(sa))
    if n_heads * sa.attention_head_size != d_model:
        raise ValueError(
            f"layer {layer} has {n_heads} heads of size {sa.attention_head_size} after pruning; "
            f"MultiHeadAttention needs heads × d_head = d_model = {d_model}"
        )
    scaling = getattr(sa, "scaling", sa.attention_head_size**-0.5)
    if abs(scaling - sa.attention_head_size**-0.5) > 1e-12:
        raise ValueError(f"layer {layer} scales scores by {scaling}, not 1/sqrt(d_head)")
    mha = MultiHeadAttention(
        d_model,
        n_heads,
        bias=sa.query.bias is not None,
        dropout=sa.dropout.p,
        device=sa.query.weight.device,
        dtype=sa.query.weight.dtype,
    )
    pairs = (
        (mha.q_proj, sa.query),
        (mha.k_proj, sa.key),
        (mha.v_proj, sa.value),
        (mha.out_proj, dense),
    )
    with torch.no_grad():
        for ours, theirs in pairs:
            ours.weight.copy_(theirs.weight)
            if ours.bias is not None:
                ours.bias.copy_(theirs.bias)
    return mha.train(model.training)
