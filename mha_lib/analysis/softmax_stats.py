"""How peaked a softmax is, and how much gradient flows through it.

Chapter 2 uses these to show what dividing by √d_k buys: without it, scores
grow with d_k, the softmax saturates, and its Jacobian — the only path by which
a loss can move the scores — shrinks towards zero.
"""

from __future__ import annotations

import torch

from mha_lib._checks import check_floating


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of each distribution along the last axis (0·log 0 = 0).

    `log T` for uniform attention over `T` keys, 0 for a one-hot.
    """
    check_floating(weights, "weights")
    terms = weights * torch.log(weights.clamp_min(torch.finfo(weights.dtype).tiny))
    return -terms.sum(dim=-1)  # (...)


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """`∂softmax(s)/∂s = diag(p) − p pᵀ` for each distribution `p` on the last axis.

    Shape `(..., T) → (..., T, T)`. It vanishes as `p` approaches a one-hot,
    which is what a saturated softmax does to learning.
    """
    check_floating(weights, "weights")
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)
