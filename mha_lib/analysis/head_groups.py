"""Which heads are alike: how far apart two heads' maps are, and whether heads group by layer.

`head_distances` compares every pair of heads with the Jensen–Shannon distance between
their attention rows, averaged over all query tokens; `mds_embedding` lays the heads out
on a plane by those distances. `layer_contrast` and `outlier_heads` ask whether a layer's
heads are closer to each other than to the rest and which head is unlike its layer, and
`grouping_chance` what they find when the heads are dealt into layers at random.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from mha_lib._checks import check_floating, check_maps, check_positive_int
from mha_lib.analysis import differences


def js_distance(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Jensen–Shannon distance (base 2, in [0, 1]) between distributions along the last axis."""
    check_floating(p, "p")
    check_floating(q, "q")
    m = 0.5 * (p + q)

    def bits(a: torch.Tensor) -> torch.Tensor:  # entropy in bits
        return -torch.special.xlogy(a, a).sum(-1) / math.log(2.0)

    # JS(p, q) = H(m) − (H(p) + H(q)) / 2; rounding can make it a hair negative.
    return (bits(m) - 0.5 * (bits(p) + bits(q))).clamp_min(0.0).sqrt()


def head_distances(maps: Sequence[torch.Tensor]) -> torch.Tensor:
    """`(N, N)` mean Jensen–Shannon distance between every pair of the `N = L·H` heads.

    For each sentence and query token, the two heads' attention rows are
    compared; the distance is averaged over all query tokens of all sentences.
    Head `l·H + h` is layer `l`, head `h`. Cost grows as N²·(tokens)·T, so
    a sample of a hundred sentences is plenty for a stable map.
    """
    if not maps:
        raise ValueError("maps must hold at least one sentence")
    by_length: dict[int, list[torch.Tensor]] = {}
    n_heads = None
    for i, m in enumerate(maps):
        t = check_maps(m, f"maps[{i}]")
        flat = m.reshape(-1, t, t).float()  # (N, T, T)
        if n_heads is not None and flat.shape[0] != n_heads:
            raise ValueError(f"maps[{i}] has {flat.shape[0]} heads, expected {n_heads}")
        n_heads = flat.shape[0]
        by_length.setdefault(t, []).append(flat)
    total = torch.zeros(n_heads, n_heads, device=maps[0].device)
    rows = 0
    for group in by_length.values():
        x = torch.cat(group, dim=1)  # (N, rows, T): every query row of these sentences
        rows += x.shape[1]
        for i in range(n_heads - 1):  # the matrix is symmetric: fill the upper triangle
            d = js_distance(x[i : i + 1], x[i + 1 :]).sum(-1)  # (N − i − 1,)
            total[i, i + 1 :] += d
    total = total / rows
    return total + total.T


def mds_embedding(distances: torch.Tensor | np.ndarray, seed: int = 0) -> np.ndarray:
    """2-D metric MDS of a distance matrix, so similar heads land close together."""
    from sklearn.manifold import MDS

    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 3:
        raise ValueError(f"distances must be a square (N, N) matrix with N >= 3, got {d.shape}")
    if not np.allclose(d, d.T, atol=1e-6) or np.any(d < 0):
        raise ValueError("distances must be symmetric and non-negative")
    mds = MDS(n_components=2, metric="precomputed", init="classical_mds", random_state=seed)
    return mds.fit_transform(d)


def layer_contrast(distances: torch.Tensor, num_layers: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's mean distance to the *other* heads of its layer, and to heads of other layers.

    Returns two `(L, H)` tensors from the `(L·H, L·H)` matrix of
    `head_distances`. A layer whose heads "look alike" has small
    within-layer values; an outlier head stands out with a large one.
    """
    d = torch.as_tensor(distances)
    check_floating(d, "distances")
    n = d.shape[0]
    if d.dim() != 2 or d.shape[1] != n:
        raise ValueError(f"distances must be a square (N, N) matrix, got {tuple(d.shape)}")
    check_positive_int("num_layers", num_layers)
    if n % num_layers or n // num_layers < 2:
        raise ValueError(f"{n} heads do not split into {num_layers} layers of at least 2 heads")
    h = n // num_layers
    layer_of = torch.arange(n, device=d.device) // h  # (N,)
    same = layer_of[:, None] == layer_of[None, :]  # (N, N)
    other_in_layer = same & ~torch.eye(n, dtype=torch.bool, device=d.device)
    within = (d * other_in_layer).sum(1) / (h - 1)  # (N,)
    if num_layers > 1:
        across = (d * ~same).sum(1) / (n - h)  # (N,)
    else:
        across = torch.full((n,), math.nan, device=d.device)
    return within.view(num_layers, h), across.view(num_layers, h)


def outlier_heads(within: torch.Tensor, threshold: float = 3.0) -> list[tuple[int, int]]:
    """Heads unlike the rest of their layer: `(layer, head)` pairs, most unusual first.

    A head is an outlier when its within-layer distance (from `layer_contrast`)
    lies more than `threshold` robust standard deviations (1.4826 × median absolute
    deviation) above its layer's median; the median ignores the outliers themselves.
    """
    check_floating(within, "within")
    if within.dim() != 2 or within.shape[1] < 3:
        raise ValueError(f"within must have shape (L, H) with H >= 3, got {tuple(within.shape)}")
    score = _robust_scores(within)  # (L, H)
    found = (score > threshold).nonzero().tolist()
    return sorted(((int(i), int(h)) for i, h in found), key=lambda ih: -float(score[ih]))


def _robust_scores(within: torch.Tensor) -> torch.Tensor:
    """How far each head's within-layer distance `(..., L, H)` lies above its layer's median,
    in robust standard deviations (1.4826 × median absolute deviation)."""
    median = within.median(dim=-1, keepdim=True).values  # (..., L, 1)
    mad = (within - median).abs().median(dim=-1, keepdim=True).values * 1.4826  # (..., L, 1)
    return (within - median) / mad.clamp_min(1e-12)  # (..., L, H)


def grouping_chance(
    distances: torch.Tensor,
    num_layers: int,
    *,
    draws: int = 1000,
    threshold: float = 3.0,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """What `layer_contrast` and `outlier_heads` find when layers mean nothing.

    The `N` heads are dealt at random into `num_layers` groups of equal size, `draws`
    times; per draw, `"outliers"` is how many heads the outlier rule flags and `"closer"`
    how many heads are closer to their own group than to the others. A count on the real
    layers means something only where it stands above this distribution.
    """
    d = torch.as_tensor(distances).double()
    check_floating(d, "distances")
    check_positive_int("draws", draws)
    check_positive_int("num_layers", num_layers)
    n = d.shape[0]
    if d.dim() != 2 or d.shape[1] != n or n % num_layers or n // num_layers < 3:
        raise ValueError(
            f"distances must be (N, N) with N heads in {num_layers} groups of at least 3, "
            f"got {tuple(d.shape)}"
        )
    h = n // num_layers
    rng = np.random.default_rng(seed)
    order = torch.as_tensor(np.stack([rng.permutation(n) for _ in range(draws)]))  # (K, N)
    shuffled = d[order[:, :, None], order[:, None, :]]  # (K, N, N): group g = rows g·H …
    group = torch.arange(n) // h
    same = group[:, None] == group[None, :]  # (N, N)
    within = (shuffled * same).sum(-1) / (h - 1)  # (K, N); the diagonal is 0
    across = (shuffled * ~same).sum(-1) / (n - h)
    w = within.view(draws, num_layers, h)
    flagged = _robust_scores(w) > threshold  # the rule of outlier_heads
    return {
        "outliers": flagged.sum((1, 2)).numpy(),
        "closer": (within < across).sum(1).numpy(),
    }


@dataclass(frozen=True)
class LayerGrouping:
    """How the heads group by layer (`layer_grouping`), against random groupings.

    `within`/`across` are `layer_contrast`'s `(L, H)`, `outliers` the heads of
    `outlier_heads`, `chance` `grouping_chance`'s counts on random groupings.
    The p-values are one-sided permutation p-values: the share of random groupings (the real
    one counted among them) that do as well or better.
    """

    within: torch.Tensor
    across: torch.Tensor
    outliers: list[tuple[int, int]]
    chance: dict[str, np.ndarray]

    @property
    def closer(self) -> int:
        """How many heads are closer to their own layer than to the others."""
        return int((self.within < self.across).sum())

    @property
    def p_closer(self) -> float:
        return differences.permutation_p(self.closer, self.chance["closer"])

    @property
    def p_outliers(self) -> float:
        return differences.permutation_p(len(self.outliers), self.chance["outliers"])

    @property
    def outliers_detectable(self) -> int:
        """The outlier count the layers had to reach for the test to detect it (α = 0.05)."""
        return differences.permutation_detectable(self.chance["outliers"])


def layer_grouping(
    distances: torch.Tensor,
    num_layers: int,
    *,
    draws: int = 1000,
    threshold: float = 3.0,
    seed: int = 0,
) -> LayerGrouping:
    """`layer_contrast`, `outlier_heads` and `grouping_chance` of one
    `(L·H, L·H)` distance matrix, together."""
    within, across = layer_contrast(distances, num_layers)
    return LayerGrouping(
        within=within,
        across=across,
        outliers=outlier_heads(within, threshold=threshold),
        chance=grouping_chance(
            distances, num_layers, draws=draws, threshold=threshold, seed=seed
        ),
    )


def closest_pair(
    distances: torch.Tensor, num_heads: int, *, same_layer: bool = False
) -> tuple[tuple[int, int], tuple[int, int], float]:
    """The two heads least far apart in an `(L·H, L·H)` distance matrix, as
    `((layer, head), (layer, head), distance)`; with `same_layer`, among pairs of one layer."""
    d = torch.as_tensor(distances).double()
    check_floating(d, "distances")
    check_positive_int("num_heads", num_heads)
    n = d.shape[0]
    if d.dim() != 2 or d.shape[1] != n or n < 2 or n % num_heads:
        raise ValueError(f"distances must be (L·H, L·H) with H = {num_heads}, got {tuple(d.shape)}")
    excluded = torch.eye(n, dtype=torch.bool)
    if same_layer:
        layer = torch.arange(n) // num_heads
        excluded |= layer[:, None] != layer[None, :]
    d = d.masked_fill(excluded, math.inf)
    i, j = divmod(int(d.argmin()), n)
    return divmod(i, num_heads), divmod(j, num_heads), float(d[i, j])
