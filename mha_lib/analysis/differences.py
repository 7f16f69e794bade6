"""Differences a verdict can rest on: shown, shown absent within a margin, or not detected.

Not detecting a difference is not showing that there is none. A verdict that reports *no*
effect states, before the run, the smallest difference that would matter (the margin, in
the task's own units) and passes an equivalence test: two one-sided t tests (TOST,
Schuirmann 1987), which at level α is the same as the (1 − 2α) confidence interval lying
inside ±margin. `compare` runs it beside the ordinary two-sided test and names one of
four outcomes (`from_intervals` reads them off bootstrap intervals); where neither test
passes, `Difference.detectable` gives the smallest difference the data could have detected,
so that a page can say "not detected at this power" with a number.

Many tests at once (every head of a model, every layer) need a correction: `holm` keeps the
chance of any false positive below α, `benjamini_hochberg` the expected share of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

Values = Sequence[float] | np.ndarray | torch.Tensor

EQUIVALENT = "equivalent"  # inside ±margin, and no difference shown
TRIVIAL = "different but within the margin"  # a difference shown, too small to matter
DIFFERENT = "different"  # a difference shown, not shown to be within the margin
NOT_DETECTED = "not detected at this power"  # neither test passes
POWER = 0.8  # the power at which Difference.detectable is computed


@dataclass(frozen=True)
class Difference:
    """One comparison: the mean difference, its intervals, both tests and the outcome.

    `low90`/`high90` is the (1 − 2α) interval the equivalence test reads, `low95`/
    `high95` the (1 − α) interval of the ordinary test (for α = 0.05: 90 % and 95 %).
    `p_equivalence` is the larger of the two one-sided p-values (equivalence is shown
    when it is below α); `p_difference` the two-sided p-value of a difference from 0.
    `detectable` is the true difference this design detects with probability
    POWER at level α: the "smallest detectable difference" of a null result.
    """

    difference: float
    stderr: float
    df: float
    n: int
    margin: float
    alpha: float
    low90: float
    high90: float
    low95: float
    high95: float
    p_equivalence: float
    p_difference: float
    detectable: float

    @property
    def equivalent(self) -> bool:
        """Shown to lie within ±margin (TOST at level α)."""
        return self.p_equivalence < self.alpha

    @property
    def different(self) -> bool:
        """Shown to differ from 0 (two-sided test at level α)."""
        return self.p_difference < self.alpha

    @property
    def outcome(self) -> str:
        """EQUIVALENT, TRIVIAL, DIFFERENT or NOT_DETECTED."""
        if self.equivalent:
            return TRIVIAL if self.different else EQUIVALENT
        return DIFFERENT if self.different else NOT_DETECTED


def _sample(values: Values, name: str) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().double().cpu().numpy()
    if isinstance(values, str | bytes):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"{name} must be one-dimensional with at least 2 values, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return x


def compare(
    a: Values,
    b: Values | None = None,
    *,
    margin: float,
    paired: bool = False,
    alpha: float = 0.05,
) -> Difference:
    """The difference `mean(a) − mean(b)` (or `mean(a)` alone) against 0 and ±`margin`.

    - `b` None: `a` already holds differences (one per seed or item); a one-sample t.
    - `paired`: `a` and `b` score the same seeds or items, in the same order; the
      test reads their differences (runs that share data must be compared this way).
    - otherwise: two independent samples, Welch's t (no equal-variance assumption).

    `margin` > 0 is the smallest difference that would matter, fixed before the data.
    """
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin > 0:
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    x = _sample(a, "a")
    if b is None:
        if paired:
            raise ValueError("paired=True needs b")
        d, se, df, n = x.mean(), x.std(ddof=1) / np.sqrt(x.size), x.size - 1.0, x.size
    else:
        y = _sample(b, "b")
        if paired:
            if x.shape != y.shape:
                raise ValueError(f"paired samples must have one length, got {x.size} and {y.size}")
            diff = x - y
            d, se, df, n = diff.mean(), diff.std(ddof=1) / np.sqrt(x.size), x.size - 1.0, x.size
        else:
            va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
            d, se, n = x.mean() - y.mean(), np.sqrt(va + vb), x.size + y.size
            # Welch–Satterthwaite degrees of freedom (two constant samples: no spread at all)
            df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1)) if se else n - 2.0
    return _decide(float(d), float(se), float(df), int(n), float(margin), alpha)


def from_stderr(
    difference: float, stderr: float, n: int, *, margin: float, alpha: float = 0.05
) -> Difference:
    """`compare` for a stored summary: the mean of `n` paired differences (or of one
    sample) and its standard error, the sample standard deviation over √n. A one-sample or
    paired t test reads nothing else, so the result equals `compare` on the differences
    themselves (df = n − 1); use it where a committed file keeps a change and its paired
    standard error but not the items."""
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin > 0:
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an integer of at least 2, got {n!r}")
    if not (np.isfinite(difference) and np.isfinite(stderr) and stderr >= 0):
        raise ValueError(f"need a finite difference and stderr >= 0, got {difference}, {stderr}")
    return _decide(float(difference), float(stderr), n - 1.0, n, float(margin), alpha)


def _decide(d: float, se: float, df: float, n: int, margin: float, alpha: float) -> Difference:
    t1, t2 = stats.t.ppf(1 - alpha, df), stats.t.ppf(1 - alpha / 2, df)
    if se == 0:  # every value the same: the intervals are points
        p_lower = 0.0 if d > -margin else 1.0
        p_upper = 0.0 if d < margin else 1.0
        p_diff = 1.0 if d == 0 else 0.0
    else:
        p_lower = float(stats.t.sf((d + margin) / se, df))  # H0: true difference <= -margin
        p_upper = float(stats.t.cdf((d - margin) / se, df))  # H0: true difference >= +margin
        p_diff = float(2 * stats.t.sf(abs(d) / se, df))
    low90, high90, low95, high95 = d - t1 * se, d + t1 * se, d - t2 * se, d + t2 * se
    return Difference(
        difference=d, stderr=se, df=df, n=n, margin=margin, alpha=alpha,
        low90=float(low90), high90=float(high90), low95=float(low95), high95=float(high95),
        p_equivalence=max(p_lower, p_upper), p_difference=float(p_diff),
        detectable=float((t2 + stats.t.ppf(POWER, df)) * se),
    )  # fmt: skip


def from_intervals(
    ci90: tuple[float, float], ci95: tuple[float, float], *, margin: float
) -> str:
    """The outcome read off two intervals of one difference (bootstrap ones, say).

    The 90 % interval decides equivalence at α = 0.05 (inside ±margin), the 95 % interval a
    difference from 0 (excluding it), as `compare` decides them with t intervals.
    """
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin > 0:
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    (lo90, hi90), (lo95, hi95) = ci90, ci95
    if not (lo90 <= hi90 and lo95 <= hi95):
        raise ValueError(f"an interval's low end exceeds its high end: {ci90}, {ci95}")
    if not (lo95 <= lo90 and hi90 <= hi95):
        raise ValueError(f"the 90 % interval {ci90} must lie inside the 95 % one {ci95}")
    inside = -margin < lo90 and hi90 < margin
    excludes_zero = lo95 > 0 or hi95 < 0
    if inside:
        return TRIVIAL if excludes_zero else EQUIVALENT
    return DIFFERENT if excludes_zero else NOT_DETECTED


def group_means(values: torch.Tensor | np.ndarray, groups: Sequence[int]) -> np.ndarray:
    """`(K, G)`: each row of `values` `(K, N)` averaged within each group (`groups`
    gives one id per item; groups in sorted order), so that paired tests pair groups, e.g.
    sentences whose words are not independent, rather than items."""
    v = values.detach().double().cpu().numpy() if isinstance(values, torch.Tensor) else values
    v = np.asarray(v, dtype=float)
    if v.ndim != 2 or len(groups) != v.shape[1]:
        raise ValueError(
            f"values must be (K, N) with one group per item, got {v.shape} and {len(groups)}"
        )
    ids = np.unique(np.asarray(groups))
    index = np.searchsorted(ids, np.asarray(groups))
    sums = np.stack([np.bincount(index, weights=row, minlength=ids.size) for row in v])
    return sums / np.bincount(index, minlength=ids.size)


@dataclass(frozen=True)
class Ranking:
    """Which of several arms scored on the same items is highest, and which it is not shown
    to beat. `comparisons[k]` is the best arm minus arm `k` (paired; `None` for the best
    itself), `adjusted[k]` its Holm-adjusted p-value over the K − 1 comparisons (0 for the
    best), `tied` the arms not shown below the best (the best included), in arm order."""

    best: int
    means: tuple[float, ...]
    comparisons: tuple[Difference | None, ...]
    adjusted: tuple[float, ...]
    tied: tuple[int, ...]
    alpha: float

    @property
    def beaten(self) -> int:
        """How many of the K − 1 comparisons survive the correction."""
        return sum(p < self.alpha for k, p in enumerate(self.adjusted) if k != self.best)


def best_of(
    values: torch.Tensor | np.ndarray,
    groups: Sequence[int] | None = None,
    *,
    margin: float,
    alpha: float = 0.05,
) -> Ranking:
    """The arm of `values` `(K, N)` (K arms, e.g. layers, scored on the same N items) with
    the highest mean, compared with each other arm by a paired test (`compare`) and
    Holm-corrected over the K − 1 comparisons. With `groups` (one id per item, e.g. its
    sentence), items are first averaged within their group and the groups are the pairs, so
    that items sharing a sentence do not count as independent. An arm whose difference from
    the best does not survive the correction is *tied* with it: not shown to be lower, which
    is not shown to be equal (each comparison's `detectable` says how large a gap could hide).

    Choosing the best and testing it on the same items favours it most against the runner-up;
    a two-sided test of that pair is what the choice cannot inflate beyond α.
    """
    v = values.detach().double().cpu().numpy() if isinstance(values, torch.Tensor) else values
    v = np.asarray(v, dtype=float)
    if v.ndim != 2 or v.shape[0] < 2 or v.shape[1] < 2:
        raise ValueError(f"values must be (K, N) with K >= 2 arms and N >= 2 items, got {v.shape}")
    if groups is not None:
        v = group_means(v, groups)  # (K, G)
    means = v.mean(1)
    best = int(np.argmax(means))
    others = [k for k in range(v.shape[0]) if k != best]
    tests = {k: compare(v[best], v[k], margin=margin, paired=True, alpha=alpha) for k in others}
    adjusted = dict(zip(others, holm([tests[k].p_difference for k in others]), strict=True))
    return Ranking(
        best=best,
        means=tuple(float(m) for m in means),
        comparisons=tuple(tests.get(k) for k in range(v.shape[0])),
        adjusted=tuple(0.0 if k == best else float(adjusted[k]) for k in range(v.shape[0])),
        tied=tuple(k for k in range(v.shape[0]) if k == best or adjusted[k] >= alpha),
        alpha=alpha,
    )


@dataclass(frozen=True)
class Many:
    """Many paired comparisons at once (`compare_many`), each as an array of the arms'
    shape: the mean differences, Holm-adjusted p-values, and which are shown within ±margin."""

    difference: np.ndarray
    adjusted: np.ndarray
    equivalent: np.ndarray
    alpha: float

    @property
    def higher(self) -> np.ndarray:
        """Arms shown above their partner after the correction."""
        return (self.adjusted < self.alpha) & (self.difference > 0)

    @property
    def lower(self) -> np.ndarray:
        """Arms shown below their partner after the correction."""
        return (self.adjusted < self.alpha) & (self.difference < 0)


def compare_many(
    a: torch.Tensor | np.ndarray,
    b: torch.Tensor | np.ndarray,
    *,
    margin: float,
    alpha: float = 0.05,
) -> Many:
    """Paired `compare` of `a[:, k]` with `b[:, k]` for every arm `k` at once:
    `a` and `b` are `(N, ...)` (N paired items, e.g. sentences, by any arms, e.g. layers
    by heads), and the two-sided p-values are Holm-corrected over all the arms together."""
    x, y = (t.detach().double().cpu().numpy() if isinstance(t, torch.Tensor) else t for t in (a, b))
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim < 2:
        raise ValueError(f"a and b must share one shape (N, ...), got {x.shape} and {y.shape}")
    arms = x.shape[1:]
    flat_a, flat_b = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    tests = [
        compare(flat_a[:, k], flat_b[:, k], margin=margin, paired=True, alpha=alpha)
        for k in range(flat_a.shape[1])
    ]
    return Many(
        difference=np.array([t.difference for t in tests]).reshape(arms),
        adjusted=holm([t.p_difference for t in tests]).reshape(arms),
        equivalent=np.array([t.equivalent for t in tests]).reshape(arms),
        alpha=alpha,
    )


def permutation_p(observed: float, null: Values) -> float:
    """One-sided permutation p-value of `observed` against `null` (the statistic on
    `len(null)` random relabellings): (1 + draws at least as large) / (1 + draws), the share
    of relabellings that do as well, counting the observed one among them."""
    n = _sample(null, "null")
    return float((1 + np.count_nonzero(n >= observed)) / (1 + n.size))


def permutation_detectable(null: Values, alpha: float = 0.05) -> int:
    """The smallest whole count whose `permutation_p` against `null` is below
    `alpha`: what a count statistic had to reach for the permutation test to detect it."""
    n = _sample(null, "null")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if 1 / (1 + n.size) >= alpha:
        raise ValueError(f"{n.size} draws cannot give a p-value below {alpha}")
    c = int(np.floor(n.min()))
    while permutation_p(c, n) >= alpha:
        c += 1
    return c


def _pvalues(pvalues: Values) -> np.ndarray:
    p = np.asarray(
        pvalues.detach().cpu().numpy() if isinstance(pvalues, torch.Tensor) else pvalues,
        dtype=float,
    )
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"pvalues must be one-dimensional and not empty, got shape {p.shape}")
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("pvalues must lie in [0, 1]")
    return p


def holm(pvalues: Values) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input's order: a test survives at level α
    when its adjusted p is below α, and the chance of any false positive stays below α."""
    p = _pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])  # (m − k) p_(k), k = 0 … m − 1
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)  # never below an earlier, smaller p
    return adjusted


def benjamini_hochberg(pvalues: Values) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (scipy's): below α, the expected share of false
    positives among the tests that survive stays below α."""
    return np.asarray(stats.false_discovery_control(_pvalues(pvalues), method="bh"))


def interval_detectable(ci95: tuple[float, float], *, power: float = POWER) -> float:
    """The smallest detectable difference of a design known only by its 95 % interval (a
    bootstrap one, say): read as a normal interval, its half-width is z(0.975) standard errors,
    and a true difference of (z(0.975) + z(power)) standard errors is detected with probability
    `power` at α = 0.05, as `Difference.detectable` for a t interval."""
    low, high = ci95
    if not low <= high:
        raise ValueError(f"the interval's low end exceeds its high end: {ci95}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    z = stats.norm.ppf(0.975)
    return float((z + stats.norm.ppf(power)) * (high - low) / (2 * z))
