"""How far do heads look, per sentence, against a head that attends uniformly?

A mean attention distance means little alone: on a sentence of T tokens a head
that spreads its weight evenly already looks (T² − 1) / (3T) tokens away on
average, and long sentences make every head look "far". So each sentence's
distance is divided by that uniform value, giving a ratio (1 = as far as a
uniform head; below 1 = more local), and the spread over sentences is kept so
that a layer's curve comes with an interval. ``[CLS]`` and ``[SEP]`` can be
dropped first (rows renormalised): a head that parks its weight on ``[CLS]``
otherwise looks "far" from every late token.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_lib._checks import check_floating, check_positive_int


def uniform_distance(t: int) -> float:
    """Mean |query − key| of a uniform head over ``t`` tokens: (t² − 1) / (3t)."""
    check_positive_int("t", t)
    return (t * t - 1) / (3 * t)


def words_only(m: torch.Tensor) -> torch.Tensor:
    """``(..., T−2, T−2)``: the map without ``[CLS]`` (first) and ``[SEP]`` (last), rows
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
    """``(S, ...)``: each sentence's mean attention distance over the uniform head's, per head.

    ``maps[s]`` is sentence s's ``(..., T, T)`` map (e.g. ``(L, H, T, T)``).
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
    """``(S, ...)`` weight a query puts on keys at least ``min_distance`` tokens away, and
    ``(S,)`` the same for a uniform head on each sentence (the floor to compare with)."""
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
