"""How much does each head matter? Michel et al. (2019) importance and single-head ablation."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import torch

from mha_lib._checks import check_batches, check_same_shape
from mha_lib.pruning.adapters import HeadAdapter


def head_importance(
    heads: HeadAdapter, batches: Sequence[Any], *, normalize: bool = True, per_example: bool = True
) -> torch.Tensor:
    """Michel et al.'s `I_h = E_x |∂L(x)/∂ξ_h|` at `ξ = 1`, `(L, H)`; NaN for absent heads.

    One forward and one backward pass per batch; the model's parameters get no
    gradient. With `per_example` every example gets its own mask `ξ`, so the
    absolute value is taken per example, as the definition says (the sum of
    per-example losses has `∂/∂ξ_x = ∂L(x)/∂ξ_x`); without, per batch, as the
    paper's code does (signs of different examples then cancel inside a batch).
    With `normalize` each layer's scores are divided by their l2 norm, as the
    paper does so that layers are comparable when ranking heads model-wide.
    """
    check_batches(batches)
    was_training = heads.model.training
    heads.model.eval()  # no dropout: the score is a property of the model, not of a mask draw
    nl, nh = heads.num_layers, heads.num_heads
    total = torch.zeros(nl, nh, dtype=torch.float64, device="cpu")  # scores come back on the CPU
    count = 0
    try:
        for batch in batches:
            rows = heads.rows(batch)
            if per_example and rows % heads.rows_per_example:
                raise ValueError(
                    f"a batch has {rows} rows, not a multiple of rows_per_example = "
                    f"{heads.rows_per_example}"
                )
            xi = (heads.ones(rows) if per_example else heads.ones()).requires_grad_()  # ([B,] L, H)
            with heads.masked(xi):
                losses = heads.loss_fn(heads.model, batch)  # (B,) or ()
            (grad,) = torch.autograd.grad(losses.sum(), xi, allow_unused=True)
            if grad is None:
                grad = torch.zeros_like(xi)
            grad = grad.detach().double().cpu()
            if per_example:
                per = grad.view(-1, heads.rows_per_example, nl, nh).sum(1)  # (E, L, H)
                total += per.abs().sum(0)
                count += per.shape[0]
            else:
                total += (grad / losses.numel()).abs()  # gradient of the mean loss
                count += 1
    finally:
        heads.model.train(was_training)
    scores = total / count  # (L, H)
    scores[~heads.present()] = float("nan")
    if normalize:
        norms = torch.nan_to_num(scores).pow(2).sum(-1, keepdim=True).sqrt()  # (L, 1)
        scores = scores / norms.clamp_min(1e-30)
    return scores.float()


def mean_loss(heads: HeadAdapter, batches: Sequence[Any]) -> float:
    """Mean over batches of the loss, without gradients."""
    check_batches(batches)
    with torch.inference_mode():
        return statistics.fmean(float(heads.loss(b)) for b in batches)


def ablation_scores(heads: HeadAdapter, batches: Sequence[Any]) -> torch.Tensor:
    """`(L, H)` loss increase when each head alone is masked (NaN for absent heads).

    `L·H` evaluations instead of one backward pass: the reference that the
    gradient importance approximates to first order.
    """
    return ablation_effects(heads, batches)[0]


def ablation_effects(
    heads: HeadAdapter, batches: Sequence[Any]
) -> tuple[torch.Tensor, torch.Tensor]:
    """`(mean, stderr)`, each `(L, H)`: the loss increase when each head alone is masked,
    averaged over the loss's rows, and its standard error over those rows.

    The rows are paired (the same items with and without the head), so the error of the
    difference is that of the per-row differences: small when masking moves every item a
    little the same way, large when it only reshuffles them. NaN for absent heads.
    """
    check_batches(batches)

    def row_losses() -> torch.Tensor:
        with torch.inference_mode():
            return torch.cat(
                [heads.loss_fn(heads.model, b).reshape(-1).double().cpu() for b in batches]
            )  # (N,)

    base = row_losses()
    shape = (heads.num_layers, heads.num_heads)
    mean = torch.full(shape, float("nan"), dtype=torch.float64, device="cpu")
    stderr = torch.full(shape, float("nan"), dtype=torch.float64, device="cpu")
    for layer, head in heads.present().nonzero().tolist():
        head_mask = heads.ones()  # 1 keeps a head as it is, 0 silences it
        head_mask[layer, head] = 0.0
        with heads.masked(head_mask):
            diff = row_losses() - base  # (N,)
        mean[layer, head] = diff.mean()
        stderr[layer, head] = diff.std() / diff.numel() ** 0.5 if diff.numel() > 1 else 0.0
    return mean.float(), stderr.float()


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman rank correlation of two equal-shape tensors over entries finite in both."""
    check_same_shape(a, b, "a", "b")
    keep = torch.isfinite(a) & torch.isfinite(b)
    x, y = a[keep].double(), b[keep].double()
    if x.numel() < 3:
        raise ValueError("need at least three finite pairs for a rank correlation")

    def ranks(v: torch.Tensor) -> torch.Tensor:  # average ranks for ties
        order = v.argsort()
        r = torch.empty_like(v)
        r[order] = torch.arange(len(v), dtype=v.dtype, device=v.device)
        for value in v.unique():
            tied = v == value
            r[tied] = r[tied].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / (rx.norm() * ry.norm()))
