"""Is a head alive? Dead heads, as chapter 7 measures them after good and bad initialisation.

A head can fail in two opposite ways. It can *collapse*: scores so large that
each query puts all its weight on one key, a saturated softmax that passes
almost no gradient back to the head's queries and keys (chapter 2). Or it can
stay *uniform*: it spreads its weight evenly and ignores the content.
"""

from __future__ import annotations

import math

import torch

from mha_lib._checks import check_floating
from mha_lib.analysis.softmax_stats import entropy
from mha_lib.core.multihead import MultiHeadAttention

HEAD_STATES = ("collapsed", "uniform", "active")


def head_states(
    weights: torch.Tensor, *, collapsed_at: float = 0.95, uniform_at: float = 0.9
) -> list[str]:
    """Label each head of ``weights`` ``(B, H, T, T)`` collapsed, uniform or active.

    ``collapsed``: on average the top key gets at least ``collapsed_at`` of the
    weight. ``uniform``: mean entropy at least ``uniform_at`` × ln T. The
    thresholds are arguments because any such line is a choice; the book
    shows the underlying numbers too.
    """
    check_floating(weights, "weights")
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:
        raise ValueError(
            f"weights must have shape (B, H, T, T) with T >= 2, got {tuple(weights.shape)}"
        )
    top = weights.amax(-1).mean(dim=(0, 2))  # (H,)
    spread = entropy(weights).mean(dim=(0, 2)) / math.log(weights.shape[-1])  # (H,)
    return [
        "collapsed" if t >= collapsed_at else "uniform" if s >= uniform_at else "active"
        for t, s in zip(top.tolist(), spread.tolist(), strict=True)
    ]


def qk_gradient_norms(attention: MultiHeadAttention, *, relative: bool = False) -> torch.Tensor:
    """Per-head norm of the gradient that reached the query and key projections, ``(H,)``.

    Call after ``backward()``. With ``relative=True`` each norm is divided by the
    norm of the head's query/key weights: Adam moves every weight by roughly the
    learning rate per step, so what decides how fast a head can change where it
    looks is the gradient *relative* to the size of its weights.
    """
    if not isinstance(attention, MultiHeadAttention):
        raise TypeError(f"attention must be a MultiHeadAttention, got {type(attention).__name__}")
    grads, weights = [], []
    for proj in (attention.q_proj, attention.k_proj):
        if proj.weight.grad is None:
            raise ValueError("no gradient on the query/key projections: call backward() first")
        grads.append(proj.weight.grad.view(attention.num_heads, -1))  # (H, Dh·D)
        weights.append(proj.weight.detach().view(attention.num_heads, -1))  # (H, Dh·D)
    norms = torch.cat(grads, dim=1).norm(dim=1)  # (H,)
    return norms / torch.cat(weights, dim=1).norm(dim=1) if relative else norms


def diagnose_heads(
    model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor
) -> dict[str, list]:
    """Per-head health of a model built from `MultiHeadAttention` layers, on one batch.

    ``model(inputs, need_weights=True)`` must return ``(logits, [weights per layer])``
    (as `mha_lib.experiments.toy_transformer.ToyTransformer` does); the loss is cross-entropy
    against ``targets`` (``-100`` = no answer). Returns, per layer, each head's
    state, mean top weight, normalised entropy and query/key gradient norm
    (absolute and relative to the weights).
    The model's gradients are cleared before and after.
    """
    attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not attentions:
        raise TypeError("model has no MultiHeadAttention layers")
    was_training = model.training
    model.eval()  # no dropout: the diagnosis should not depend on a random mask
    model.zero_grad(set_to_none=True)
    try:
        logits, maps = model(inputs, need_weights=True)
        loss = torch.nn.functional.cross_entropy(
            logits.flatten(0, -2), targets.flatten(), ignore_index=-100
        )
        loss.backward()
        report: dict[str, list] = {
            "state": [],
            "top_weight": [],
            "entropy": [],
            "qk_grad": [],
            "qk_relative_grad": [],
        }
        for attention, weights in zip(attentions, maps, strict=True):
            weights = weights.detach()  # (B, H, T, T)
            report["state"].append(head_states(weights))
            report["top_weight"].append(weights.amax(-1).mean(dim=(0, 2)).tolist())
            spread = entropy(weights).mean(dim=(0, 2)) / math.log(weights.shape[-1])
            report["entropy"].append(spread.tolist())
            report["qk_grad"].append(qk_gradient_norms(attention).tolist())
            report["qk_relative_grad"].append(qk_gradient_norms(attention, relative=True).tolist())
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    return report
