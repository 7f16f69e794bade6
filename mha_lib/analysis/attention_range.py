"""How far do heads look, per sentence, against a head that attends uniformly?

A mean attention distance means little alone: on a sentence of T tokens a head
that spreads its weight evenly already looks (T² − 1) / (3T) tokens away on
average, and long sentences make every head look "far". So each sentence's
distance is divided by that uniform value, giving a ratio (1 = as far as a
uniform head; below 1 = more local), and the spread over sentences is kept so
that a layer's curve comes with an interval. `[CLS]` and `[SEP]` can be
dropped first (rows renormalised): a head that parks its weight on `[CLS]`
otherwise looks "far" from every late token.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from mha_lib._checks import check_floating, check_positive_int


def uniform_distance(t: int) -> float:
    """Mean |query − key| of a uniform head over `t` tokens: (t² − 1) / (3t)."""
    check_positive_int("t", t)
    return (t * t - 1) / (3 * t)


def words_only(m: torch.Tensor) -> torch.Tensor:
    """`(..., T−2, T−2)`: the map without `[CLS]` (first) and `[SEP]` (last), rows
    renormalised: where a head's weight goes among the words, whatever it parks."""
    return _inner(m, True)


def _inner(m: torch.Tensor, drop_specials: bool) -> torch.Tensor:
    check_floating(m, "maps")
    if m.dim() < 2 or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"maps must have shape (..., T, T), got {tuple(m.shape)}")
    if not drop_specials:
        return m.double()
    if m.shape[-1] < 3:
        raise ValueError("a sentence needs at least one token besides [CLS] and [SEP]")
    inner = m[..., 1:-1, 1:-1].double()  # drop [CLS] (first) and [SEP] (last)
    return inner / inner.sum(-1, keepdim=True).clamp_min(1e-12)


def distance_ratio(maps: Sequence[torch.Tensor], *, drop_specials: bool = True) -> torch.Tensor:
    """`(S, ...)`: each sentence's mean attention distance over the uniform head's, per head.

    `maps[s]` is sentence s's `(..., T, T)` map (e.g. `(L, H, T, T)`).
    """
    if not maps:
        raise ValueError("maps must hold at least one sentence")
    out = []
    for m in maps:
        x = _inner(m, drop_specials)
        t = x.shape[-1]
        if t < 2:
            raise ValueError("a sentence needs at least two tokens to measure a distance")
        pos = torch.arange(t, dtype=x.dtype)
        dist = (pos[:, None] - pos[None, :]).abs()  # (T, T)
        out.append((x * dist).sum(-1).mean(-1) / uniform_distance(t))  # (...)
    return torch.stack(out).float()


def far_mass(
    maps: Sequence[torch.Tensor], min_distance: int, *, drop_specials: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """`(S, ...)` weight a query puts on keys at least `min_distance` tokens away, and
    `(S,)` the same for a uniform head on each sentence (the floor to compare with)."""
    check_positive_int("min_distance", min_distance)
    if not maps:
        raise ValueError("maps must hold at least one sentence")
    measured, uniform = [], []
    for m in maps:
        x = _inner(m, drop_specials)
        t = x.shape[-1]
        pos = torch.arange(t)
        far = ((pos[:, None] - pos[None, :]).abs() >= min_distance).to(x.dtype)  # (T, T)
        measured.append((x * far).sum(-1).mean(-1))  # (...)
        uniform.append(far.sum(-1).mean() / t)  # a uniform row puts 1/T on every key
    return torch.stack(measured).float(), torch.stack(uniform).float()


def decay_map(t: int, tau: torch.Tensor | float) -> torch.Tensor:
    """`(..., t, t)`: a head that attends by position alone, each row ∝ exp(−|i − j| / τ).

    `tau` (a number or a tensor of decay lengths, in tokens, `(...)`) sets how fast the
    weight falls with distance: near 0 every token looks at itself, `inf` gives a uniform head.
    It knows nothing of the words: what it gives a token itself is what locality alone gives.
    """
    check_positive_int("t", t)
    tau = torch.as_tensor(tau, dtype=torch.float64)
    if torch.isnan(tau).any() or (tau <= 0).any():
        raise ValueError("tau must be positive (inf for a uniform head)")
    pos = torch.arange(t, dtype=torch.float64)
    dist = (pos[:, None] - pos[None, :]).abs()  # (t, t)
    rate = (1.0 / tau)[..., None, None]  # (..., 1, 1): 0 for a uniform head
    scores = -dist * rate  # (..., t, t)
    return torch.softmax(scores, dim=-1)


def _decay_pooled(lengths: Sequence[int], tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean distance and self-weight of `decay_map`, pooled over every query token of
    sentences of these lengths (as `head_statistics` pools)."""
    dist_sum = torch.zeros_like(tau)
    self_sum = torch.zeros_like(tau)
    counts: dict[int, int] = {}
    for t in lengths:
        counts[int(t)] = counts.get(int(t), 0) + 1
    for t, n in counts.items():
        m = decay_map(t, tau)  # (..., t, t)
        pos = torch.arange(t, dtype=torch.float64)
        dist = (pos[:, None] - pos[None, :]).abs()
        dist_sum += n * (m * dist).sum((-2, -1))
        self_sum += n * m.diagonal(dim1=-2, dim2=-1).sum(-1)
    rows = sum(int(t) for t in lengths)
    return dist_sum / rows, self_sum / rows


def matched_decay(
    lengths: Sequence[int], distance: torch.Tensor, *, steps: int = 60
) -> tuple[torch.Tensor, torch.Tensor]:
    """The position-only head of `decay_map` that looks as far as each given head.

    `lengths` are the sentences' lengths (tokens of the maps the heads were measured on),
    `distance` `(...)` each head's mean attention distance pooled over those sentences'
    query tokens (`head_statistics(...)["distance"]`). Returns `(tau, self_weight)`, both
    `(...)`: the decay length whose pooled mean distance equals the head's (found by
    bisection on log τ), and the weight that decay head gives a token itself, pooled the same
    way: the self-weight that locality alone explains. A head that looks as far as a uniform
    head or further is matched by the uniform head (τ = inf).
    """
    if not lengths or any(isinstance(t, bool) or int(t) < 1 for t in lengths):
        raise ValueError("lengths must be a non-empty list of positive sentence lengths")
    check_positive_int("steps", steps)
    target = torch.as_tensor(distance, dtype=torch.float64)
    if torch.isnan(target).any() or (target < 0).any():
        raise ValueError("distance must be non-negative")
    lo = torch.full_like(target, -6.0)  # log τ: e^-6 tokens, all weight on itself
    hi = torch.full_like(target, 8.0)  # e^8 tokens: uniform on any sentence the book reads
    for _ in range(steps):
        mid = (lo + hi) / 2
        far_enough = _decay_pooled(lengths, mid.exp())[0] >= target
        hi = torch.where(far_enough, mid, hi)
        lo = torch.where(far_enough, lo, mid)
    uniform = _decay_pooled(lengths, torch.full_like(target, math.inf))[0]
    tau = torch.where(target >= uniform, torch.full_like(target, math.inf), hi.exp())
    return tau.float(), _decay_pooled(lengths, tau)[1].float()


def self_weight(maps: Sequence[torch.Tensor]) -> torch.Tensor:
    """`(S, ...)`: per sentence, the mean weight a query gives itself (the map's diagonal)."""
    if not maps:
        raise ValueError("maps must hold at least one sentence")
    out = []
    for m in maps:
        x = _inner(m, False)
        out.append(x.diagonal(dim1=-2, dim2=-1).mean(-1))
    return torch.stack(out).float()


def decay_self_weight(lengths: Sequence[int], tau: torch.Tensor) -> torch.Tensor:
    """`(S, ...)`: per sentence of each length, the mean weight the position-only head of
    `decay_map` with decay lengths `tau` `(...)` gives a token itself (the per-sentence
    partner of `self_weight`, for tests paired by sentence)."""
    if not lengths:
        raise ValueError("lengths must not be empty")
    tau = torch.as_tensor(tau, dtype=torch.float64)
    cache: dict[int, torch.Tensor] = {}
    out = []
    for t in lengths:
        if int(t) not in cache:
            cache[int(t)] = decay_map(int(t), tau).diagonal(dim1=-2, dim2=-1).mean(-1)
        out.append(cache[int(t)])
    return torch.stack(out).float()
