"""Post-norm blocks, as in the original Transformer and BERT: LayerNorm after each residual sum.

The toy transformer is pre-norm, `x + f(LN(x))`: the residual stream carries the gradient
past every sublayer unchanged, so stacking blocks cannot multiply it up. The original
Transformer and BERT put the LayerNorm on the main path instead, `LN(x + f(x))`, so the
gradient that reaches a lower layer passes through every LayerNorm above it; deep post-norm
stacks are the ones known to need warm-up and clipping. Chapter 7 trains both to see whether
a too-large initialisation makes the gradients explode in either.
"""

from __future__ import annotations

import torch

from mha_lib.experiments.toy_transformer import Block, ToyTransformer


class PostNormBlock(Block):
    """`x = LN(x + attn(x))`, then `LN(x + mlp(x))`: the same parameters as
    `Block` (its `ln_attn` and `ln_mlp`
    follow the sums instead of preceding the sublayers)."""

    def forward(
        self, x: torch.Tensor, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        attended, weights = self.attn(x, need_weights=need_weights)  # (B, T, D)
        x = self.ln_attn(x + attended)  # (B, T, D)
        return self.ln_mlp(x + self.mlp(x)), weights  # (B, T, D), (B, H, T, T) or None


def post_norm_(model: ToyTransformer) -> ToyTransformer:
    """Make every block of `model` a `PostNormBlock`, in place, weights untouched.

    Built this way, a post-norm model starts from exactly the weights of the pre-norm model
    of the same seed, so the two differ only in where the LayerNorms sit."""
    if not isinstance(model, ToyTransformer):
        raise TypeError(f"model must be a ToyTransformer, got {type(model).__name__}")
    for block in model.blocks:
        if type(block) not in (Block, PostNormBlock):
            raise TypeError(f"cannot make a {type(block).__name__} post-norm")
        if getattr(block, "causal", False):
            raise ValueError("post_norm_ supports bidirectional blocks only (causal=False)")
        block.__class__ = PostNormBlock
    return model
