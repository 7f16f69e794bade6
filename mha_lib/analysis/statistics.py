"""How sure a number is: the one bootstrap interval of the library, and the held-out choice
of a best head that every quoted score of chapter 5 goes through.

Every interval the book quotes for a score over items comes from `bootstrap_ci`, a
percentile interval of a mean: the held-out head choices of chapter 5 (below, resampling
whole sentences when items are arcs of shared sentences) and the word-sense accuracy of
chapter 6 (`mha_lib.analysis.probes`). One implementation means one random stream per
seed: the same items give the same interval wherever they are scored. `bootstrap_p` is its
two-sided test, `paired_stderr` the standard error of a paired difference.

Choosing the best of 72 heads and scoring it on the same items overstates it: on pure noise
the maximum of 72 coin-flip accuracies sits well above 50 %. So every probe in chapter 5
splits its items (or sentences) into two halves (`split_halves`), *selects* the head on one
and *reports* it on the other (`best_head`, `best_rule`, `paired_gain`), with a bootstrap
interval over the reported half. Tests between conditions, with margins and Holm's
correction, are `mha_lib.analysis.differences`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from mha_lib._checks import check_positive_int, check_tensor


def bootstrap_ci(
    values: torch.Tensor,
    groups: Sequence[int] | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of the mean of `values` `(N,)`, resampling items or whole groups.

    `values` may be bool (hits) or numbers. With `groups` (one group id per item), whole
    groups are drawn with replacement and the mean is over the items they hold, so items
    that share a sentence are not counted as independent. `n_boot` resamples are drawn
    from NumPy's generator seeded with `seed`; the interval's ends are the
    `(1 − level)/2` and `(1 + level)/2` percentiles of their means (linear interpolation).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    means = _resampled_means(values, groups, n_boot, seed)
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_p(
    values: torch.Tensor,
    groups: Sequence[int] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> float:
    """Two-sided bootstrap p-value of "the mean of `values` is 0", from the very resamples
    `bootstrap_ci` draws with the same `seed`: twice the smaller share of resampled
    means on either side of 0 (each counted with the observed one, `(k + 1) / (n_boot + 1)`,
    so it is never 0), at most 1. Below 0.05 exactly when the 95 % interval excludes 0, up to
    the interpolation of its ends; for many such tests, correct with
    `mha_lib.analysis.differences.holm`."""
    means = _resampled_means(values, groups, n_boot, seed)
    below, above = int((means <= 0).sum()), int((means >= 0).sum())
    return min(1.0, 2 * (min(below, above) + 1) / (n_boot + 1))


def _resampled_means(
    values: torch.Tensor, groups: Sequence[int] | None, n_boot: int, seed: int
) -> np.ndarray:
    """`(n_boot,)`: the mean of `values` over items (or whole groups) drawn with
    replacement, from NumPy's generator seeded with `seed`."""
    check_tensor(values, "values")
    if values.dim() != 1 or values.shape[0] == 0:
        raise ValueError(f"values must have shape (N,) with N > 0, got {tuple(values.shape)}")
    if groups is not None and len(groups) != values.shape[0]:
        raise ValueError(
            f"groups must give one group per item ({values.shape[0]}), got {len(groups)}"
        )
    check_positive_int("n_boot", n_boot)
    v = values.detach().double().cpu()
    rng = np.random.default_rng(seed)
    if groups is None:
        sums, sizes = v.numpy(), np.ones(len(v))
    else:
        ids = sorted(set(int(g) for g in groups))
        index = {g: k for k, g in enumerate(ids)}
        g = np.array([index[int(x)] for x in groups])
        sums = np.bincount(g, weights=v.numpy(), minlength=len(ids))
        sizes = np.bincount(g, minlength=len(ids)).astype(float)
    draws = rng.integers(0, len(sums), size=(n_boot, len(sums)))  # (n_boot, G)
    return sums[draws].sum(1) / sizes[draws].sum(1)  # (n_boot,): mean over the items drawn


def paired_stderr(a: torch.Tensor, b: torch.Tensor) -> float:
    """Standard error of `mean(a) − mean(b)` when `a` and `b` `(N,)` score the same
    items: the sample standard deviation of the per-item differences over √N. Items both runs
    get right (or wrong) add no noise, so it is smaller than an unpaired error."""
    check_tensor(a, "a")
    check_tensor(b, "b")
    if a.dim() != 1 or a.shape != b.shape or a.shape[0] < 2:
        raise ValueError(
            f"a and b must have the same shape (N,) with N > 1, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )
    d = a.detach().double().cpu() - b.detach().double().cpu()
    return float(d.std(unbiased=True) / d.numel() ** 0.5)


def split_halves(n_groups: int, seed: int = 0) -> tuple[list[int], list[int]]:
    """A seeded random split of `range(n_groups)` into a selection half and a report half."""
    check_positive_int("n_groups", n_groups)
    if n_groups < 2:
        raise ValueError(f"n_groups must be at least 2 to split in halves, got {n_groups}")
    order = np.random.default_rng(seed).permutation(n_groups)
    half = n_groups // 2
    return sorted(int(i) for i in order[:half]), sorted(int(i) for i in order[half:])


def _check_hits(hits: torch.Tensor, groups: Sequence[int] | None) -> torch.Tensor:
    check_tensor(hits, "hits")
    if hits.dim() < 1 or hits.shape[0] == 0:
        raise ValueError(f"hits must have shape (N, ...) with N > 0, got {tuple(hits.shape)}")
    if groups is not None and len(groups) != hits.shape[0]:
        raise ValueError(
            f"groups must give one group per item ({hits.shape[0]}), got {len(groups)}"
        )
    return hits.double()


def _rows(groups: Sequence[int] | None, n: int, members: Sequence[int]) -> torch.Tensor:
    """Indices of the items whose group is in `members` (items are their own groups if None)."""
    keep = set(int(m) for m in members)
    if groups is None:
        return torch.tensor(sorted(i for i in keep if 0 <= i < n), dtype=torch.long)
    return torch.tensor([i for i, g in enumerate(groups) if int(g) in keep], dtype=torch.long)


@dataclass(frozen=True)
class HeldOut:
    """A head chosen on the selection half and scored on the report half (fractions)."""

    layer: int
    head: int
    selected: float  # its score on the half that chose it (optimistic)
    reported: float  # its score on the other half (the number to quote)
    ci: tuple[float, float]  # bootstrap interval of `reported`

    @property
    def name(self) -> str:
        return f"{self.layer}-{self.head}"


def best_head(
    hits: torch.Tensor,
    select: Sequence[int],
    report: Sequence[int],
    groups: Sequence[int] | None = None,
    *,
    layer: int | None = None,
    seed: int = 0,
) -> HeldOut:
    """The head with the best mean of `hits` (N, L, H) on `select`, scored on `report`.

    `select` and `report` list groups (or items when `groups` is None). With
    `layer` set, only that layer's heads compete (for per-layer curves).
    """
    h = _check_hits(hits, groups)
    if h.dim() != 3:
        raise ValueError(f"hits must have shape (N, L, H), got {tuple(h.shape)}")
    rows_a, rows_b = (_rows(groups, h.shape[0], m) for m in (select, report))
    if len(rows_a) == 0 or len(rows_b) == 0:
        raise ValueError("both halves must hold at least one item")
    score = h[rows_a].mean(0)  # (L, H)
    if layer is not None:
        if not 0 <= layer < h.shape[1]:
            raise ValueError(f"layer must be in 0 … {h.shape[1] - 1}, got {layer!r}")
        masked = torch.full_like(score, -1.0)
        masked[layer] = score[layer]
        score = masked
    best_l, best_h = divmod(int(score.argmax()), h.shape[2])
    values = h[rows_b, best_l, best_h]  # (N_b,)
    sub_groups = None if groups is None else [groups[int(i)] for i in rows_b]
    return HeldOut(
        layer=best_l,
        head=best_h,
        selected=float(score[best_l, best_h]),
        reported=float(values.mean()),
        ci=bootstrap_ci(values, sub_groups, seed=seed),
    )


def best_rule(
    hits: dict[str, torch.Tensor],
    select: Sequence[int],
    report: Sequence[int],
    groups: Sequence[int] | None = None,
    *,
    seed: int = 0,
) -> tuple[str, float, tuple[float, float]]:
    """Among rule baselines `{name: hits (N,)}`, the best on `select`, scored on `report`.

    Returns `(name, reported score, bootstrap interval)`; ties go to the first name.
    """
    if not hits:
        raise ValueError("hits must name at least one rule")
    first = next(iter(hits.values()))
    n = first.shape[0]
    rows_a, rows_b = (_rows(groups, n, m) for m in (select, report))
    scores = {k: float(_check_hits(v, groups)[rows_a].mean()) for k, v in hits.items()}
    name = max(scores, key=lambda k: scores[k])  # max keeps the first of equal scores
    values = hits[name].double()[rows_b]
    sub_groups = None if groups is None else [groups[int(i)] for i in rows_b]
    return name, float(values.mean()), bootstrap_ci(values, sub_groups, seed=seed)


def paired_gain(
    hits: torch.Tensor,
    rule: torch.Tensor,
    chosen: HeldOut,
    report: Sequence[int],
    groups: Sequence[int] | None = None,
    *,
    seed: int = 0,
) -> tuple[float, tuple[float, float], float]:
    """The chosen head's score minus a rule's on the report half: `(gain, interval, p)`.

    `hits` is `(N, L, H)` and `rule` `(N,)` on the same items; resampling the
    differences item by item (or group by group) keeps the pairing, so the interval is
    narrower than the two separate intervals suggest when head and rule agree often. `p` is
    the two-sided bootstrap p-value from the same resamples: the test that many relations at
    once correct with Holm's method.
    """
    diff, sub_groups = _paired(hits, rule, chosen, report, groups)
    ci = bootstrap_ci(diff, sub_groups, seed=seed)
    return float(diff.mean()), ci, bootstrap_p(diff, sub_groups, seed=seed)


def _paired(
    hits: torch.Tensor,
    rule: torch.Tensor,
    chosen: HeldOut,
    report: Sequence[int],
    groups: Sequence[int] | None,
) -> tuple[torch.Tensor, list[int] | None]:
    """`(N_b,)` head-minus-rule differences on the report half, and their groups."""
    h = _check_hits(hits, groups)
    r = _check_hits(rule, groups)
    if h.dim() != 3 or r.shape != h.shape[:1]:
        raise ValueError(
            f"hits must be (N, L, H) and rule (N,), got {tuple(h.shape)}, {tuple(r.shape)}"
        )
    rows = _rows(groups, h.shape[0], report)
    diff = h[rows, chosen.layer, chosen.head] - r[rows]  # (N_b,)
    sub_groups = None if groups is None else [groups[int(i)] for i in rows]
    return diff, sub_groups


def percent(value: float, ci: tuple[float, float], *, signed: bool = False) -> str:
    """A fraction and its interval as percentages for a table: `"83.8 [80.0, 87.3]"`."""
    spec = "+.1f" if signed else ".1f"
    return f"{100 * value:{spec}} [{100 * ci[0]:{spec}}, {100 * ci[1]:{spec}}]"
