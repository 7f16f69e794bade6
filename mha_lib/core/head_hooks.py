"""Masking the heads of `MultiHeadAttention` modules from outside the model.

A model built from `mha_lib.MultiHeadAttention` layers need not pass a `head_mask`
through its own `forward`: `heads_scaled` injects one into every listed module with
a forward pre-hook, for the length of a `with` block. Head importance (`mha_lib.pruning`)
and single-head ablation (`mha_lib.experiments.head_health`) both go through it, so the two
silence a head the same way: its output is multiplied by its entry before `out_proj`, as
a `head_mask` argument would (`mha_lib.core.masks` states the head-mask convention).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from mha_lib.core.multihead import MultiHeadAttention


@contextlib.contextmanager
def heads_scaled(
    attentions: Sequence[MultiHeadAttention], head_masks: Sequence[torch.Tensor]
) -> Iterator[None]:
    """Inside the block, `attentions[i]` scales its heads' outputs by `head_masks[i]`.

    Each `head_masks[i]` is float `(H,)` or `(B, H)` over that module's *original* heads
    (entries of removed heads are ignored); the module checks it at each call. A
    `head_mask` the caller passes as well is multiplied with it. Gradients flow to the
    masks. The hooks are removed on leaving the block, also on an error.
    """
    if len(attentions) != len(head_masks):
        raise ValueError(
            f"head_masks must give one mask per attention module ({len(attentions)}), "
            f"got {len(head_masks)}"
        )
    for attention in attentions:
        if not isinstance(attention, MultiHeadAttention):
            raise TypeError(
                f"attentions must be MultiHeadAttention modules, got {type(attention).__name__}"
            )

    def make_hook(scale: torch.Tensor):  # noqa: ANN202 - a torch hook
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            given = kwargs.get("head_mask")
            return args, {**kwargs, "head_mask": scale if given is None else given * scale}

        return hook

    handles = [
        attention.register_forward_pre_hook(make_hook(scale), with_kwargs=True)
        for attention, scale in zip(attentions, head_masks, strict=True)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
