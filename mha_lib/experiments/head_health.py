"""Is a head alive? Dead heads, as chapter 7 measures them after good and bad initialisation.

A head can fail in two opposite ways. It can *collapse*: scores so large that
each query puts all its weight on one key, a saturated softmax that passes
almost no gradient back to the head's scores (chapter 2) — though not less to its
query and key weights, when it is their size that made the scores large (chapter 7
measures both). Or it can stay *uniform*: it spreads its weight evenly and ignores
the content.
"""

from __future__ import annotations

import math

import torch

from mha_lib._checks import check_floating, check_same_shape, check_tensor
from mha_lib.analysis.head_stats import entropy
from mha_lib.core.head_hooks import heads_scaled
from mha_lib.core.multihead import MultiHeadAttention

HEAD_STATES = ("collapsed", "uniform", "active")


def head_states(
    weights: torch.Tensor, *, collapsed_at: float = 0.95, uniform_at: float = 0.9
) -> list[str]:
    """Label each head of `weights` `(B, H, T, T)` collapsed, uniform or active.

    `collapsed`: on average the top key gets at least `collapsed_at` of the
    weight. `uniform`: mean entropy at least `uniform_at` × ln T. The
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
    """Per-head norm of the gradient that reached the query and key projections, `(H,)`.

    Call after `backward()`. With `relative=True` each norm is divided by the
    norm of the head's query/key weights: that ratio is how far a plain gradient
    step moves the weights relative to their size, and Adam, whose step is about the
    learning rate per weight whatever the gradient's size, moves large weights by a
    relatively smaller amount too.
    """
    return projection_gradient_norms(attention, ("q", "k"), relative=relative)


def projection_gradient_norms(
    attention: MultiHeadAttention, projections: tuple[str, ...], *, relative: bool = False
) -> torch.Tensor:
    """Per-head norm of the gradient on the weights of `projections` (`"q"`, `"k"`,
    `"v"`) taken together, `(H,)`; `relative=True` divides by their weights' norm."""
    if not isinstance(attention, MultiHeadAttention):
        raise TypeError(f"attention must be a MultiHeadAttention, got {type(attention).__name__}")
    if not projections or any(p not in ("q", "k", "v") for p in projections):
        raise ValueError(f"projections must be among ('q', 'k', 'v'), got {projections!r}")
    if attention.shared_query and "q" in projections:
        raise ValueError("the query projection is shared by every head (shared_query=True)")
    grads, weights = [], []
    for name in projections:
        proj = getattr(attention, f"{name}_proj")
        if proj.weight.grad is None:
            raise ValueError(f"no gradient on the {name} projection: call backward() first")
        grads.append(proj.weight.grad.view(attention.num_heads, -1))  # (H, Dh·D)
        weights.append(proj.weight.detach().view(attention.num_heads, -1))  # (H, Dh·D)
    norms = torch.cat(grads, dim=1).norm(dim=1)  # (H,)
    return norms / torch.cat(weights, dim=1).norm(dim=1) if relative else norms


def projection_weight_norms(
    attention: MultiHeadAttention, projections: tuple[str, ...] = ("q", "k")
) -> torch.Tensor:
    """Per-head norm of the weights of `projections` taken together, `(H,)`."""
    if not isinstance(attention, MultiHeadAttention):
        raise TypeError(f"attention must be a MultiHeadAttention, got {type(attention).__name__}")
    rows = [
        getattr(attention, f"{name}_proj").weight.detach().view(attention.num_heads, -1)
        for name in projections
    ]  # each (H, Dh·D)
    return torch.cat(rows, dim=1).norm(dim=1)  # (H,)


def score_gradient(weights: torch.Tensor, weights_grad: torch.Tensor) -> torch.Tensor:
    """The gradient reaching the scores `s` from the gradient `g` on `p = softmax(s)`.

    Softmax's backward pass: `∂L/∂s = p ⊙ (g − Σ p g)` along the last axis, i.e. the
    Jacobian `diag(p) − p pᵀ` applied to `g`. It vanishes as `p` approaches a one-hot,
    whatever `g` is: the sense in which a saturated softmax passes no gradient.
    Shapes `(..., T)` in and out.
    """
    check_floating(weights, "weights")
    check_floating(weights_grad, "weights_grad")
    check_same_shape(weights, weights_grad, "weights", "weights_grad")
    return weights * (weights_grad - (weights * weights_grad).sum(-1, keepdim=True))


def diagnose_heads(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    answers: torch.Tensor | None = None,
    detail: bool = False,
) -> dict[str, list]:
    """Per-head health of a model built from `MultiHeadAttention` layers, on one batch.

    `model(inputs, need_weights=True)` must return `(logits, [weights per layer])`
    (as `mha_lib.experiments.toy_transformer.ToyTransformer` does); the loss is cross-entropy
    against `targets` (`-100` = no answer). Returns, per layer, each head's
    state, mean top weight, normalised entropy and query/key gradient norm
    (absolute and relative to the weights).

    `detail=True` adds, per head: `qk_weight` (norm of its query/key weights),
    `v_grad` and `v_relative_grad` (the value projection's gradient) and
    `score_grad` (norm of the gradient reaching its scores `q·k/√d_head`, over the
    batch: `score_gradient`). `answers` `(B, T, r)`, the positions that hold
    each answer (-1 where there is none; e.g. `KeyValueRecall.answer_positions`),
    adds `answer_weight`: the weight a head puts on them, averaged over the
    answered positions (1 for a head that looks exactly where the answer is).
    The model's gradients are cleared before and after.
    """
    if answers is not None:
        check_tensor(answers, "answers")
        if answers.dim() != 3 or answers.shape[:2] != inputs.shape[:2]:
            raise ValueError(
                f"answers must have shape (B, T, r) with (B, T) = {tuple(inputs.shape[:2])}, "
                f"got {tuple(answers.shape)}"
            )
    attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not attentions:
        raise TypeError("model has no MultiHeadAttention layers")
    was_training = model.training
    model.eval()  # no dropout: the diagnosis should not depend on a random mask
    model.zero_grad(set_to_none=True)
    try:
        logits, maps = model(inputs, need_weights=True)
        if detail:
            for weights in maps:
                weights.retain_grad()
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
        extra = ("qk_weight", "v_grad", "v_relative_grad", "score_grad") if detail else ()
        for key in (*extra, *(("answer_weight",) if answers is not None else ())):
            report[key] = []
        for attention, weights in zip(attentions, maps, strict=True):
            grad = weights.grad if detail else None  # (B, H, T, T): retained above
            weights = weights.detach()  # (B, H, T, T)
            report["state"].append(head_states(weights))
            report["top_weight"].append(weights.amax(-1).mean(dim=(0, 2)).tolist())
            spread = entropy(weights).mean(dim=(0, 2)) / math.log(weights.shape[-1])
            report["entropy"].append(spread.tolist())
            report["qk_grad"].append(qk_gradient_norms(attention).tolist())
            report["qk_relative_grad"].append(qk_gradient_norms(attention, relative=True).tolist())
            if detail:
                report["qk_weight"].append(projection_weight_norms(attention).tolist())
                report["v_grad"].append(projection_gradient_norms(attention, ("v",)).tolist())
                report["v_relative_grad"].append(
                    projection_gradient_norms(attention, ("v",), relative=True).tolist()
                )
                scores = score_gradient(weights, grad)  # (B, H, T, T)
                report["score_grad"].append(scores.transpose(0, 1).flatten(1).norm(dim=1).tolist())
            if answers is not None:
                report["answer_weight"].append(answer_weight(weights, answers).tolist())
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    return report


def answer_weight(weights: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Per head, the weight on the positions holding each answer, `(H,)`.

    `weights` `(B, H, T, T)`; `answers` `(B, T, r)` long, the key positions each
    query position needs (-1 at positions without an answer). For each answered row the
    weights on its `r` positions are summed; the result is the mean over those rows:
    1 when every answered query looks only where its answer is, `r/T` for uniform
    attention.
    """
    check_floating(weights, "weights")
    check_tensor(answers, "answers")
    if (
        weights.dim() != 4
        or answers.dim() != 3
        or tuple(answers.shape[:2]) != (weights.shape[0], weights.shape[2])
    ):
        raise ValueError(
            f"weights (B, H, T, T) and answers (B, T, r) do not match: {tuple(weights.shape)}, "
            f"{tuple(answers.shape)}"
        )
    answered = (answers >= 0).all(-1)  # (B, T)
    if not answered.any():
        raise ValueError("answers has no answered position (all are -1)")
    index = answers.clamp_min(0).unsqueeze(1).expand(-1, weights.shape[1], -1, -1)  # (B, H, T, r)
    on_answer = weights.gather(-1, index).sum(-1)  # (B, H, T)
    return on_answer.transpose(0, 1)[:, answered].mean(-1)  # (H,)


@torch.no_grad()
def ablation_accuracy(
    model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor
) -> dict[str, object]:
    """Accuracy on one batch as it is and with each head silenced in turn.

    Returns `{"accuracy": a, "without_head": [[accuracy with head h of layer l zeroed]]}`.
    A head is silenced by a zero `head_mask` entry, injected from outside the model
    (`mha_lib.core.head_hooks.heads_scaled`, as the pruning adapters do), which
    removes its output before `out_proj` — the same as zeroing its columns of
    `out_proj`. A head the model does not use costs nothing when silenced; the drop
    measures how much the model relies on it.
    """
    attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not attentions:
        raise TypeError("model has no MultiHeadAttention layers")
    answered = targets != -100
    was_training = model.training
    model.eval()

    def accuracy() -> float:
        logits, _ = model(inputs)
        return (logits.argmax(-1)[answered] == targets[answered]).float().mean().item()

    try:
        report: dict[str, object] = {"accuracy": accuracy(), "without_head": []}
        for attention in attentions:
            row = []
            for head in attention.kept_heads:  # original numbering, as head_mask has it
                device = attention.out_proj.weight.device
                head_mask = torch.ones(attention.original_num_heads, device=device)
                head_mask[head] = 0.0  # silence this head alone
                with heads_scaled([attention], [head_mask]):
                    row.append(accuracy())
            report["without_head"].append(row)
    finally:
        model.train(was_training)
    return report
