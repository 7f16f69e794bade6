"""Progressive pruning: remove heads step by step by a rule, re-score, record the metric."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from mha_lib._checks import check_batches, check_positive_int
from mha_lib.pruning.adapters import HeadAdapter
from mha_lib.pruning.scores import head_importance

ORDERS = ("importance", "random", "reverse")


@dataclass
class PruningCurve:
    """A pruning run: heads removed and the metrics measured after each step.

    `order` is a permutation of all `(layer, head)` pairs: the first
    `pruned[-1]` in the order they were removed, then the survivors, the
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
    include_last_heads: bool = False,
) -> list[tuple[int, int]]:
    """The `count` present heads with the lowest (or highest) scores, never a layer's last.

    Ties and NaN are broken by position; a head is skipped when taking it would leave its
    layer empty (pruning refuses that, `mha_lib.core.head_removal`), unless
    `include_last_heads`, which ranks every present head (to order the survivors of a
    curve). Asking for more heads than can go raises a ValueError.
    """
    if tuple(scores.shape) != tuple(alive.shape):
        raise ValueError(f"scores {tuple(scores.shape)} and alive {tuple(alive.shape)} differ")
    flat = scores.flatten().double().nan_to_num(nan=float("inf") if not largest else -float("inf"))
    ranking = flat.argsort(descending=largest, stable=True).tolist()
    return _take(ranking, alive, count, include_last_heads)


def _take(
    ranking: list[int], alive: torch.Tensor, count: int, include_last_heads: bool
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
        if left[layer] <= 1 and not include_last_heads:
            continue
        chosen.append((layer, head))
        left[layer] -= 1
    if len(chosen) < count:
        raise ValueError(
            f"cannot prune {count} heads: only {len(chosen)} can go without removing the last "
            "head of a layer, which pruning refuses"
        )
    return chosen


def prunable_count(heads: HeadAdapter) -> int:
    """How many heads can still be removed: all but one per layer."""
    per_layer = heads.present().sum(-1)
    return int((per_layer - 1).clamp_min(0).sum())


def pruning_curve(
    heads: HeadAdapter,
    batches: Sequence[Any],
    *,
    rule: str = "importance",
    step: int = 1,
    eval_batches: Sequence[Any] | None = None,
    seed: int = 0,
    max_pruned: int | None = None,
    extra: Mapping[str, Callable[[HeadAdapter], float]] | None = None,
) -> PruningCurve:
    """Prune `step` heads at a time on a copy of the model and record the metric after each step.

    `rule="importance"` removes the least important heads (re-scored on
    `batches` after every step, as Michel et al. do), `"reverse"` the most
    important, `"random"` follows a random permutation drawn from `seed`.
    The metric is taken on `eval_batches` (default: `batches`). `extra`
    maps names to functions of the pruned adapter (e.g. embedding fidelity).
    """
    if rule not in ORDERS:
        raise ValueError(f"rule must be one of {ORDERS}, got {rule!r}")
    check_positive_int("step", step)
    check_batches(batches)
    eval_batches = batches if eval_batches is None else eval_batches
    check_batches(eval_batches, "eval_batches")
    work = heads.clone()
    limit = prunable_count(work) if max_pruned is None else min(max_pruned, prunable_count(work))
    extra = dict(extra or {})
    total = int(work.present().sum())
    permutation = torch.randperm(
        work.num_layers * work.num_heads,
        generator=torch.Generator().manual_seed(seed),
        device="cpu",  # the generator's device; the order is a list of head indices
    ).tolist()

    def measure() -> None:
        result.metric.append(work.metric(eval_batches))
        for name, fn in extra.items():
            result.extra[name].append(float(fn(work)))

    def next_heads(count: int) -> list[tuple[int, int]]:
        alive = work.present()
        if rule == "random":
            return _take(permutation, alive, count, False)
        scores = head_importance(work, batches)
        return select_heads(scores, alive, count, largest=rule == "reverse")

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
            scores, alive, int(alive.sum()), largest=rule == "reverse", include_last_heads=True
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
    """Heads removed before the metric first falls more than `tolerance` below the start."""
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
    """Heads among the last `top` of *every* removal order: the ones all rules keep longest."""
    if not orders:
        raise ValueError("orders must hold at least one removal order")
    kept = set(map(tuple, orders[0][-top:]))
    for order in orders[1:]:
        kept &= set(map(tuple, order[-top:]))
    return sorted(kept)


def survival_rank(
    orders: Sequence[Sequence[tuple[int, int]]], shape: tuple[int, int]
) -> torch.Tensor:
    """`(L, H)` mean position in the removal orders, scaled to [0, 1] (1 = removed last)."""
    ranks = torch.zeros(shape, dtype=torch.float64, device="cpu")
    for order in orders:
        n = len(order)
        for position, (layer, head) in enumerate(order):
            ranks[layer, head] += position / max(1, n - 1)
    return (ranks / len(orders)).float()


def one_head_per_layer(
    heads: HeadAdapter, eval_batches: Sequence[Any], keep: Sequence[int]
) -> list[float]:
    """Metric when layer `l` keeps only head `keep[l]` and every other layer is intact.

    Michel et al. (2019, table 2) ran this test layer by layer; masking is
    used here (physically pruning the same heads gives the same numbers).
    """
    check_batches(eval_batches, "eval_batches")
    if len(keep) != heads.num_layers:
        raise ValueError(f"keep must name one head per layer ({heads.num_layers}), got {len(keep)}")
    alive = heads.present()
    results = []
    for layer, head in enumerate(keep):
        if not alive[layer, head]:
            raise ValueError(f"keep[{layer}] = {head} is not a present head")
        head_mask = heads.ones()  # 1 keeps a head as it is, 0 silences it
        head_mask[layer] = 0.0
        head_mask[layer, head] = 1.0
        with heads.masked(head_mask), torch.inference_mode():
            results.append(float(heads.metric_fn(heads.model, eval_batches)))
    return results


def best_single_heads(
    heads: HeadAdapter, eval_batches: Sequence[Any]
) -> tuple[list[int], list[float]]:
    """Per layer, the head whose sole survival keeps the metric highest (an oracle: L·H runs)."""
    alive = heads.present()
    best: list[int] = []
    values: list[float] = []
    for layer in range(heads.num_layers):
        scored = []
        for head in alive[layer].nonzero().flatten().tolist():
            head_mask = heads.ones()  # 1 keeps a head as it is, 0 silences it
            head_mask[layer] = 0.0
            head_mask[layer, head] = 1.0
            with heads.masked(head_mask), torch.inference_mode():
                scored.append((float(heads.metric_fn(heads.model, eval_batches)), head))
        value, head = max(scored, key=lambda vh: (vh[0], -vh[1]))
        best.append(head)
        values.append(value)
    return best, values


def even_plan(kept: Sequence[Sequence[int]], fraction: float) -> dict[int, list[int]]:
    """Remove `round(fraction · H_l)` heads from every layer (the last ones), one always kept.

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
