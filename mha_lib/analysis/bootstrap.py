"""The one bootstrap interval of the library: a percentile interval of a mean.

Every interval the book quotes for a score over items comes from `bootstrap_ci`:
the held-out head choices of chapter 5 (`mha_lib.analysis.heldout`, which resamples whole
sentences when items are arcs of shared sentences) and the word-sense accuracy of chapter 6
(`mha_lib.analysis.probes`). One implementation means one random stream per seed: the
same items give the same interval wherever they are scored.
"""

from __future__ import annotations

from collections.abc import Sequence

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
