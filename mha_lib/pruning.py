"""Which heads can go? Michel et al. (2019) importance, progressive pruning, and what it saves.

Every function here works on a *head adapter*: a small object that can mask a
model's heads with an ``(L, H)`` float mask, remove heads physically (given in
the original numbering), and compute a differentiable loss on one batch and a
metric on a list of batches. Two adapters cover the book: :class:`MHAHeads` for
any model built from `mha_lib.MultiHeadAttention` modules (the toy transformer
of chapter 4) and :class:`BertHeads` for a BERT-family transformers model.

- :func:`head_importance`: ``I_h = E_x |∂L/∂ξ_h|`` for a head mask ``ξ`` of ones,
  one forward and backward pass per batch, normalised per layer by its l2 norm
  (Michel et al. 2019, section 4).
- :func:`ablation_scores`: the loss change when one head alone is masked, the
  slow quantity that the gradient is a first-order proxy for.
- :func:`pruning_curve`: prune ``step`` heads, re-score, repeat; by importance,
  in reverse, or at random. A layer always keeps one head unless asked otherwise.
- :func:`one_head_per_layer`: keep one head in one layer, all others intact.
- :func:`measure_latency`, :func:`forward_flops`, :func:`even_plan`: what
  physical removal saves.
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from mha_lib._checks import check_floating
from mha_lib.multihead import MultiHeadAttention

ORDERS = ("importance", "random", "reverse")

LossFn = Callable[[nn.Module, Any], torch.Tensor]
MetricFn = Callable[[nn.Module, Sequence[Any]], float]


@runtime_checkable
class HeadModel(Protocol):
    """What pruning needs from a model: mask heads, remove heads, score itself."""

    num_layers: int
    num_heads: int

    def kept_heads(self) -> list[list[int]]: ...
    def masked(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]: ...
    def prune(self, heads: Mapping[int, Sequence[int]]) -> None: ...
    def loss(self, batch: Any) -> torch.Tensor: ...  # noqa: ANN401 - any batch type
    def metric(self, batches: Sequence[Any]) -> float: ...
    def clone(self) -> HeadModel: ...


@dataclass
class _Adapter:
    """Shared bookkeeping: original head numbering, silenced heads, loss and metric under them."""

    model: nn.Module
    loss_fn: LossFn
    metric_fn: MetricFn
    num_layers: int = 0
    num_heads: int = 0
    allow_empty_layers: bool = False
    # Model input rows that make one example (e.g. 8 for a retrieval group); the loss of
    # one example must depend on its own rows only.
    rows_per_example: int = 1
    # Heads a caller removed although they were the last of their layer: they cannot
    # leave physically, so they stay as zero-masked weights.
    silenced: set[tuple[int, int]] = field(default_factory=set)

    # --- to implement per model family
    def kept_heads(self) -> list[list[int]]:
        raise NotImplementedError

    def _raw_mask(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _remove(self, plan: dict[int, list[int]]) -> None:
        raise NotImplementedError

    # --- shared
    def present(self) -> torch.Tensor:
        """``(L, H)`` bool: True for heads still doing work (not removed, not silenced)."""
        alive = torch.zeros(self.num_layers, self.num_heads, dtype=torch.bool)
        for layer, kept in enumerate(self.kept_heads()):
            alive[layer, kept] = True
        for layer, head in self.silenced:
            alive[layer, head] = False
        return alive

    def masked(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        """Scale each head's output by ``mask[layer, head]`` (original numbering) in the block.

        ``mask`` is ``(L, H)``, or ``(L, B, H)`` for one mask per input row.
        """
        check_floating(mask, "mask")
        nl, nh = self.num_layers, self.num_heads
        if mask.dim() not in (2, 3) or (mask.shape[0], mask.shape[-1]) != (nl, nh):
            raise ValueError(
                f"mask must have shape (layers, heads) = ({nl}, {nh}) or (layers, batch, heads), "
                f"got {tuple(mask.shape)}"
            )
        if self.silenced:
            keep = torch.ones(nl, nh, dtype=mask.dtype)
            for layer, head in self.silenced:
                keep[layer, head] = 0.0
            mask = mask * (keep if mask.dim() == 2 else keep[:, None, :])  # (L, [B,] H)
        return self._raw_mask(mask)

    def rows(self, batch: Any) -> int:  # noqa: ANN401 - any batch type
        """Number of model input rows in ``batch`` (first tensor's first dimension, or len)."""
        if isinstance(batch, tuple | list):
            return int(batch[0].shape[0])
        return len(batch)

    @contextlib.contextmanager
    def _as_is(self) -> Iterator[None]:
        if self.silenced:
            with self.masked(torch.ones(self.num_layers, self.num_heads)):
                yield
        else:
            yield

    def loss(self, batch: Any) -> torch.Tensor:  # noqa: ANN401 - any batch type
        """The differentiable mean loss of one batch, silenced heads switched off."""
        with self._as_is():
            return self.loss_fn(self.model, batch).mean()

    def metric(self, batches: Sequence[Any]) -> float:
        """The metric over ``batches`` (higher is better), silenced heads switched off."""
        with self._as_is(), torch.inference_mode():
            return float(self.metric_fn(self.model, batches))

    def prune(self, heads: Mapping[int, Sequence[int]]) -> None:
        """Remove heads (original numbering); refuse to empty a layer unless allowed."""
        if not isinstance(heads, Mapping):
            raise TypeError(f"heads must be a mapping {{layer: [heads]}}, got {type(heads)}")
        alive = self.present()
        plan: dict[int, list[int]] = {}
        for layer, drop in heads.items():
            if isinstance(layer, bool) or not isinstance(layer, int):
                raise TypeError(f"layer indices must be ints, got {layer!r}")
            if not 0 <= layer < self.num_layers:
                raise ValueError(f"layer {layer} is out of range for {self.num_layers} layers")
            drop = sorted(set(drop))
            for h in drop:
                if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < self.num_heads:
                    raise ValueError(
                        f"heads[{layer}] has head {h!r}, expected ints in 0 … {self.num_heads - 1}"
                    )
                if not alive[layer, h]:
                    raise ValueError(f"head {h} of layer {layer} is already pruned")
            if drop and len(drop) >= int(alive[layer].sum()) and not self.allow_empty_layers:
                raise ValueError(
                    f"pruning heads {drop} would remove every head of layer {layer}; "
                    "pass allow_empty_layers=True to the adapter to allow it"
                )
            plan[layer] = drop
        physical: dict[int, list[int]] = {}
        kept = self.kept_heads()
        for layer, drop in plan.items():
            remaining = [h for h in kept[layer] if h not in drop]
            if remaining:
                physical[layer] = drop
            else:  # the last head stays as weights but is switched off for good
                last = kept[layer][-1]
                physical[layer] = [h for h in drop if h != last]
                self.silenced.add((layer, last))
        physical = {k: v for k, v in physical.items() if v}
        if physical:
            self._remove(physical)

    def clone(self) -> _Adapter:
        """A deep copy (model included) to prune without touching the original."""
        return copy.deepcopy(self)


@dataclass
class MHAHeads(_Adapter):
    """Adapter for any model whose attention is `mha_lib.MultiHeadAttention` modules.

    ``loss_fn(model, batch)`` returns differentiable per-row losses ``(B,)``; ``metric_fn(model,
    batches)`` a float, higher is better. Masks are injected into every
    attention module's ``head_mask`` argument by a forward pre-hook, so the
    model's own ``forward`` needs no head-mask argument. Layers are the
    attention modules in ``model.modules()`` order.
    """

    _kept: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.model, nn.Module):
            raise TypeError(f"model must be an nn.Module, got {type(self.model).__name__}")
        attns = self.attentions
        if not attns:
            raise TypeError("model contains no mha_lib.MultiHeadAttention module")
        if not self._kept:
            if len({a.num_heads for a in attns}) != 1:
                raise ValueError("every attention module must start with the same head count")
            self._kept = [list(range(a.num_heads)) for a in attns]
        self.num_layers = len(attns)
        self.num_heads = max(max(k) for k in self._kept) + 1

    @property
    def attentions(self) -> list[MultiHeadAttention]:
        return [m for m in self.model.modules() if isinstance(m, MultiHeadAttention)]

    def kept_heads(self) -> list[list[int]]:
        return [list(k) for k in self._kept]

    @contextlib.contextmanager
    def _raw_mask(self, mask: torch.Tensor) -> Iterator[None]:
        def make_hook(layer: int):  # noqa: ANN202 - a torch hook
            kept = self._kept[layer]

            def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
                scale = mask[layer][..., kept]  # (H_kept,) or (B, H_kept)
                given = kwargs.get("head_mask")
                kwargs = {**kwargs, "head_mask": scale if given is None else given * scale}
                return args, kwargs

            return hook

        handles = [
            attn.register_forward_pre_hook(make_hook(i), with_kwargs=True)
            for i, attn in enumerate(self.attentions)
        ]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _remove(self, plan: dict[int, list[int]]) -> None:
        attns = self.attentions
        for layer, drop in plan.items():
            kept = self._kept[layer]
            attns[layer].prune_heads([kept.index(h) for h in drop])  # current slots
            self._kept[layer] = [h for h in kept if h not in drop]


@dataclass
class BertHeads(_Adapter):
    """Adapter for a BERT-family transformers model, through `mha_lib.bert`."""

    def __post_init__(self) -> None:
        from mha_lib import bert

        # kept_heads raises a clear TypeError for a model that is not BERT-family
        self.num_layers = len(bert.kept_heads(self.model))
        self.num_heads = int(self.model.config.num_attention_heads)

    def kept_heads(self) -> list[list[int]]:
        from mha_lib import bert

        return bert.kept_heads(self.model)

    def _raw_mask(self, mask: torch.Tensor) -> contextlib.AbstractContextManager[None]:
        from mha_lib import bert

        # Per-example masks arrive as (L, B, H); bert.head_mask takes them as (B, L, H).
        return bert.head_mask(self.model, mask if mask.dim() == 2 else mask.transpose(0, 1))

    def _remove(self, plan: dict[int, list[int]]) -> None:
        from mha_lib import bert

        bert.prune_heads(self.model, plan)


# ---------------------------------------------------------------- scores


def _check_batches(batches: Sequence[Any], name: str = "batches") -> None:
    if isinstance(batches, str | bytes) or not isinstance(batches, Sequence) or not batches:
        raise ValueError(f"{name} must be a non-empty list of batches")


def head_importance(
    heads: _Adapter, batches: Sequence[Any], *, normalize: bool = True, per_example: bool = True
) -> torch.Tensor:
    """Michel et al.'s ``I_h = E_x |∂L(x)/∂ξ_h|`` at ``ξ = 1``, ``(L, H)``; NaN for absent heads.

    One forward and one backward pass per batch; the model's parameters get no
    gradient. With ``per_example`` every example gets its own mask ``ξ``, so the
    absolute value is taken per example, as the definition says (the sum of
    per-example losses has ``∂/∂ξ_x = ∂L(x)/∂ξ_x``); without, per batch, as the
    paper's code does (signs of different examples then cancel inside a batch).
    With ``normalize`` each layer's scores are divided by their l2 norm, as the
    paper does so that layers are comparable when ranking heads model-wide.
    """
    _check_batches(batches)
    was_training = heads.model.training
    heads.model.eval()  # no dropout: the score is a property of the model, not of a mask draw
    nl, nh = heads.num_layers, heads.num_heads
    total = torch.zeros(nl, nh, dtype=torch.float64)
    count = 0
    try:
        for batch in batches:
            rows = heads.rows(batch)
            if per_example and rows % heads.rows_per_example:
                raise ValueError(
                    f"a batch has {rows} rows, not a multiple of rows_per_example = "
                    f"{heads.rows_per_example}"
                )
            shape = (nl, rows, nh) if per_example else (nl, nh)
            xi = torch.ones(shape, requires_grad=True)  # (L, [B,] H)
            with heads.masked(xi):
                losses = heads.loss_fn(heads.model, batch)  # (B,) or ()
            (grad,) = torch.autograd.grad(losses.sum(), xi, allow_unused=True)
            if grad is None:
                grad = torch.zeros(shape)
            if per_example:
                per = grad.view(nl, -1, heads.rows_per_example, nh).sum(2)  # (L, E, H)
                total += per.abs().sum(1).double()
                count += per.shape[1]
            else:
                total += (grad / losses.numel()).abs().double()  # gradient of the mean loss
                count += 1
    finally:
        heads.model.train(was_training)
    scores = total / count  # (L, H)
    scores[~heads.present()] = float("nan")
    if normalize:
        norms = torch.nan_to_num(scores).pow(2).sum(-1, keepdim=True).sqrt()  # (L, 1)
        scores = scores / norms.clamp_min(1e-30)
    return scores.float()


def mean_loss(heads: _Adapter, batches: Sequence[Any]) -> float:
    """Mean over batches of the loss, without gradients."""
    _check_batches(batches)
    with torch.inference_mode():
        return statistics.fmean(float(heads.loss(b)) for b in batches)


def ablation_scores(heads: _Adapter, batches: Sequence[Any]) -> torch.Tensor:
    """``(L, H)`` loss increase when each head alone is masked (NaN for absent heads).

    ``L·H`` evaluations instead of one backward pass: the reference that the
    gradient importance approximates to first order.
    """
    base = mean_loss(heads, batches)
    alive = heads.present()
    out = torch.full((heads.num_layers, heads.num_heads), float("nan"))
    for layer, head in alive.nonzero().tolist():
        mask = torch.ones(heads.num_layers, heads.num_heads)
        mask[layer, head] = 0.0
        with heads.masked(mask), torch.inference_mode():
            loss = statistics.fmean(float(heads.loss_fn(heads.model, b).mean()) for b in batches)
        out[layer, head] = loss - base
    return out


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman rank correlation of two equal-shape tensors over entries finite in both."""
    if a.shape != b.shape:
        raise ValueError(
            f"a and b must have the same shape, got {tuple(a.shape)}, {tuple(b.shape)}"
        )
    keep = torch.isfinite(a) & torch.isfinite(b)
    x, y = a[keep].double(), b[keep].double()
    if x.numel() < 3:
        raise ValueError("need at least three finite pairs for a rank correlation")

    def ranks(v: torch.Tensor) -> torch.Tensor:  # average ranks for ties
        order = v.argsort()
        r = torch.empty_like(v)
        r[order] = torch.arange(len(v), dtype=v.dtype)
        for value in v.unique():
            tied = v == value
            r[tied] = r[tied].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / (rx.norm() * ry.norm()))


# ---------------------------------------------------------------- progressive pruning


@dataclass
class PruningCurve:
    """A pruning run: heads removed and the metrics measured after each step.

    ``order`` is a permutation of all ``(layer, head)`` pairs: the first
    ``pruned[-1]`` in the order they were removed, then the survivors, the
    ones the rule would remove next first (so the *last* entries are the
    heads this order keeps longest).
    """

    rule: str
    seed: int | None
    pruned: list[int]  # heads removed so far, strictly increasing
    metric: list[float]
    extra: dict[str, list[float]]
    order: list[tuple[int, int]]
    total_heads: int

    @property
    def fraction(self) -> list[float]:
        return [p / self.total_heads for p in self.pruned]

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "seed": self.seed,
            "pruned": self.pruned,
            "metric": self.metric,
            "extra": self.extra,
            "order": [list(p) for p in self.order],
            "total_heads": self.total_heads,
        }


def select_heads(
    scores: torch.Tensor,
    alive: torch.Tensor,
    count: int,
    *,
    largest: bool = False,
    allow_empty_layers: bool = False,
) -> list[tuple[int, int]]:
    """The ``count`` present heads with the lowest (or highest) scores, never a layer's last.

    Ties and NaN are broken by position; a head is skipped when taking it would
    leave its layer empty, unless ``allow_empty_layers``. Asking for more heads
    than can go raises a ValueError.
    """
    if tuple(scores.shape) != tuple(alive.shape):
        raise ValueError(f"scores {tuple(scores.shape)} and alive {tuple(alive.shape)} differ")
    flat = scores.flatten().double().nan_to_num(nan=float("inf") if not largest else -float("inf"))
    ranking = flat.argsort(descending=largest, stable=True).tolist()
    return _take(ranking, alive, count, allow_empty_layers)


def _take(
    ranking: list[int], alive: torch.Tensor, count: int, allow_empty_layers: bool
) -> list[tuple[int, int]]:
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be a non-negative int, got {count!r}")
    num_heads = alive.shape[1]
    left = alive.sum(-1).tolist()  # heads per layer still present
    chosen: list[tuple[int, int]] = []
    for index in ranking:
        if len(chosen) == count:
            break
        layer, head = divmod(index, num_heads)
        if not alive[layer, head]:
            continue
        if left[layer] <= 1 and not allow_empty_layers:
            continue
        chosen.append((layer, head))
        left[layer] -= 1
    if len(chosen) < count:
        raise ValueError(
            f"cannot prune {count} heads: only {len(chosen)} can go without removing the last "
            "head of a layer (allow_empty_layers=True removes them too)"
        )
    return chosen


def prunable_count(heads: _Adapter) -> int:
    """How many heads can still be removed (one per layer stays unless empty layers are allowed)."""
    alive = heads.present()
    per_layer = alive.sum(-1)
    if heads.allow_empty_layers:
        return int(per_layer.sum())
    return int((per_layer - 1).clamp_min(0).sum())


def pruning_curve(
    heads: _Adapter,
    batches: Sequence[Any],
    *,
    rule: str = "importance",
    step: int = 1,
    eval_batches: Sequence[Any] | None = None,
    seed: int = 0,
    max_pruned: int | None = None,
    extra: Mapping[str, Callable[[_Adapter], float]] | None = None,
) -> PruningCurve:
    """Prune ``step`` heads at a time on a copy of the model and record the metric after each step.

    ``rule="importance"`` removes the least important heads (re-scored on
    ``batches`` after every step, as Michel et al. do), ``"reverse"`` the most
    important, ``"random"`` follows a random permutation drawn from ``seed``.
    The metric is taken on ``eval_batches`` (default: ``batches``). ``extra``
    maps names to functions of the pruned adapter (e.g. embedding fidelity).
    """
    if rule not in ORDERS:
        raise ValueError(f"rule must be one of {ORDERS}, got {rule!r}")
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"step must be a positive int, got {step!r}")
    _check_batches(batches)
    eval_batches = batches if eval_batches is None else eval_batches
    _check_batches(eval_batches, "eval_batches")
    work = heads.clone()
    limit = prunable_count(work) if max_pruned is None else min(max_pruned, prunable_count(work))
    extra = dict(extra or {})
    total = int(work.present().sum())
    permutation = torch.randperm(
        work.num_layers * work.num_heads, generator=torch.Generator().manual_seed(seed)
    ).tolist()

    def measure() -> None:
        result.metric.append(work.metric(eval_batches))
        for name, fn in extra.items():
            result.extra[name].append(float(fn(work)))

    def next_heads(count: int) -> list[tuple[int, int]]:
        alive = work.present()
        if rule == "random":
            return _take(permutation, alive, count, work.allow_empty_layers)
        scores = head_importance(work, batches)
        return select_heads(
            scores,
            alive,
            count,
            largest=rule == "reverse",
            allow_empty_layers=work.allow_empty_layers,
        )

    result = PruningCurve(
        rule, seed if rule == "random" else None, [0], [], {n: [] for n in extra}, [], total
    )
    measure()
    removed: list[tuple[int, int]] = []
    while len(removed) < limit:
        chosen = next_heads(min(step, limit - len(removed)))
        plan: dict[int, list[int]] = {}
        for layer, head in chosen:
            plan.setdefault(layer, []).append(head)
        work.prune(plan)
        removed.extend(chosen)
        result.pruned.append(len(removed))
        measure()
    # Survivors, in the order the rule would take them next; the last ones are its core heads.
    alive = work.present()
    if rule == "random":
        survivors = _take(permutation, alive, int(alive.sum()), True)
    else:
        scores = head_importance(work, batches)
        survivors = select_heads(
            scores, alive, int(alive.sum()), largest=rule == "reverse", allow_empty_layers=True
        )
    never_present = [
        (layer, head)
        for layer in range(work.num_layers)
        for head in range(work.num_heads)
        if (layer, head) not in set(removed) | set(survivors)
    ]
    result.order = never_present + removed + survivors
    return result


def heads_within(curve: PruningCurve, tolerance: float) -> int:
    """Heads removed before the metric first falls more than ``tolerance`` below the start."""
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be non-negative, got {tolerance!r}")
    base = curve.metric[0]
    last = 0
    for pruned, value in zip(curve.pruned, curve.metric, strict=True):
        if value < base - tolerance:
            break
        last = pruned
    return last


def core_heads(orders: Sequence[Sequence[tuple[int, int]]], top: int) -> list[tuple[int, int]]:
    """Heads among the last ``top`` of *every* removal order: the ones all rules keep longest."""
    if not orders:
        raise ValueError("orders must hold at least one removal order")
    kept = set(map(tuple, orders[0][-top:]))
    for order in orders[1:]:
        kept &= set(map(tuple, order[-top:]))
    return sorted(kept)


def survival_rank(
    orders: Sequence[Sequence[tuple[int, int]]], shape: tuple[int, int]
) -> torch.Tensor:
    """``(L, H)`` mean position in the removal orders, scaled to [0, 1] (1 = removed last)."""
    ranks = torch.zeros(shape, dtype=torch.float64)
    for order in orders:
        n = len(order)
        for position, (layer, head) in enumerate(order):
            ranks[layer, head] += position / max(1, n - 1)
    return (ranks / len(orders)).float()


def one_head_per_layer(
    heads: _Adapter, eval_batches: Sequence[Any], keep: Sequence[int]
) -> list[float]:
    """Metric when layer ``l`` keeps only head ``keep[l]`` and every other layer is intact.

    Michel et al. (2019, table 2) ran this test layer by layer; masking is
    used here (physically pruning the same heads gives the same numbers).
    """
    _check_batches(eval_batches, "eval_batches")
    if len(keep) != heads.num_layers:
        raise ValueError(f"keep must name one head per layer ({heads.num_layers}), got {len(keep)}")
    alive = heads.present()
    results = []
    for layer, head in enumerate(keep):
        if not alive[layer, head]:
            raise ValueError(f"keep[{layer}] = {head} is not a present head")
        mask = torch.ones(heads.num_layers, heads.num_heads)
        mask[layer] = 0.0
        mask[layer, head] = 1.0
        with heads.masked(mask), torch.inference_mode():
            results.append(float(heads.metric_fn(heads.model, eval_batches)))
    return results


def best_single_heads(
    heads: _Adapter, eval_batches: Sequence[Any]
) -> tuple[list[int], list[float]]:
    """Per layer, the head whose sole survival keeps the metric highest (an oracle: L·H runs)."""
    alive = heads.present()
    best: list[int] = []
    values: list[float] = []
    for layer in range(heads.num_layers):
        scored = []
        for head in alive[layer].nonzero().flatten().tolist():
            mask = torch.ones(heads.num_layers, heads.num_heads)
            mask[layer] = 0.0
            mask[layer, head] = 1.0
            with heads.masked(mask), torch.inference_mode():
                scored.append((float(heads.metric_fn(heads.model, eval_batches)), head))
        value, head = max(scored, key=lambda vh: (vh[0], -vh[1]))
        best.append(head)
        values.append(value)
    return best, values


# ---------------------------------------------------------------- what removal saves


def even_plan(kept: Sequence[Sequence[int]], fraction: float) -> dict[int, list[int]]:
    """Remove ``round(fraction · H_l)`` heads from every layer (the last ones), one always kept.

    Latency depends on how many heads a layer has, not on which; an even plan
    gives every layer the same shapes.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction must be in [0, 1), got {fraction!r}")
    plan = {}
    for layer, heads in enumerate(kept):
        drop = min(round(fraction * len(heads)), len(heads) - 1)
        if drop:
            plan[layer] = list(heads)[len(heads) - drop :]
    return plan


def parameter_count(model: nn.Module) -> int:
    """All parameters (embeddings included)."""
    return sum(p.numel() for p in model.parameters())


def forward_flops(fn: Callable[[], object]) -> int:
    """Matrix-multiplication FLOPs of one call of ``fn``, counted by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        fn()
    return int(counter.get_total_flops())


def measure_latency(
    fns: Mapping[str, Callable[[], object]],
    *,
    repeats: int = 7,
    min_sample: float = 0.05,
    warmup: int = 1,
) -> dict[str, float]:
    """Median seconds per call of each function, interleaved round-robin in a rotating order.

    Each sample repeats a call until ``min_sample`` seconds pass; all functions
    are timed in every round, so a slow spell of a shared machine hits them all.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    names = list(fns)
    if not names:
        raise ValueError("fns must hold at least one function")
    calls: dict[str, int] = {}
    with torch.inference_mode():
        for name in names:  # warm up, and find how many calls fill a sample
            for _ in range(warmup):
                fns[name]()
            start = time.perf_counter()
            fns[name]()
            once = max(time.perf_counter() - start, 1e-6)
            calls[name] = max(1, int(min_sample / once))
        samples: dict[str, list[float]] = {n: [] for n in names}
        for r in range(repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                start = time.perf_counter()
                for _ in range(calls[name]):
                    fns[name]()
                samples[name].append((time.perf_counter() - start) / calls[name])
    return {name: statistics.median(s) for name, s in samples.items()}


def toy_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Per-sequence ``(B,)`` cross-entropy over the answered positions of a chapter-4 task batch."""
    inputs, targets = batch
    logits, _ = model(inputs)  # (B, T, C)
    answered = targets != -100  # (B, T)
    token = F.cross_entropy(
        logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="none"
    ).view(targets.shape)  # (B, T)
    return (token * answered).sum(1) / answered.sum(1).clamp_min(1)  # (B,)


def toy_accuracy(model: nn.Module, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Accuracy over the answered positions of all batches."""
    correct = total = 0
    for inputs, targets in batches:
        logits, _ = model(inputs)  # (B, T, C)
        answered = targets != -100  # (B, T)
        correct += int((logits.argmax(-1)[answered] == targets[answered]).sum())
        total += int(answered.sum())
    return correct / total
