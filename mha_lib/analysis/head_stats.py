"""What each attention head does, in numbers: entropy, where its mass goes, how far it looks.

Every function takes attention maps `(..., T, T)` whose rows (queries) sum to
1 and returns one number per head `(...)`: a mean over the query rows of one
sentence. `head_statistics` pools many sentences by averaging over all
their query tokens (Clark et al. 2019 average over tokens the same way); which
heads are alike is `head_groups`.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence

import torch

from mha_lib._checks import check_maps
from mha_lib.analysis import softmax_stats

PUNCTUATION = frozenset(string.punctuation)


def mean_entropy(maps: torch.Tensor) -> torch.Tensor:
    """Mean entropy (nats) of the query rows: 0 = one key gets everything, ln T = uniform."""
    check_maps(maps)
    return softmax_stats.entropy(maps).mean(-1)  # (...)


def mass_on(maps: torch.Tensor, keys: torch.Tensor | Sequence[bool]) -> torch.Tensor:
    """Mean attention that a query puts on the keys where `keys` is True (e.g. `[CLS]`)."""
    t = check_maps(maps)
    keys = torch.as_tensor(keys, device=maps.device)
    if keys.dtype != torch.bool or tuple(keys.shape) != (t,):
        raise ValueError(
            f"keys must be a boolean vector of length T = {t}, got {tuple(keys.shape)}"
        )
    return maps[..., keys].sum(-1).mean(-1)  # (...)


def offset_mass(maps: torch.Tensor, offset: int) -> torch.Tensor:
    """Mean weight on the key `offset` positions away: 0 = itself, −1 = previous, +1 = next.

    Averaged over the queries that have such a key (the first token has no
    previous one); a sentence too short for the offset gives NaN.
    """
    t = check_maps(maps)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int, got {offset!r}")
    if abs(offset) >= t:
        return maps.new_full(maps.shape[:-2], math.nan)
    return torch.diagonal(maps, offset=offset, dim1=-2, dim2=-1).mean(-1)  # (...)


def local_mass(maps: torch.Tensor, width: int = 1) -> torch.Tensor:
    """Mean weight a query puts on keys at most `width` positions away (itself included)."""
    t = check_maps(maps)
    if isinstance(width, bool) or not isinstance(width, int) or width < 0:
        raise ValueError(f"width must be a non-negative int, got {width!r}")
    pos = torch.arange(t, device=maps.device)
    band = (pos[:, None] - pos[None, :]).abs() <= width  # (T, T)
    return (maps * band).sum(-1).mean(-1)  # (...)


def mean_distance(maps: torch.Tensor) -> torch.Tensor:
    """Mean |query − key| distance in tokens, weighted by attention: how far a head looks."""
    t = check_maps(maps)
    pos = torch.arange(t, dtype=maps.dtype, device=maps.device)
    dist = (pos[:, None] - pos[None, :]).abs()  # (T, T)
    return (maps * dist).sum(-1).mean(-1)  # (...)


def token_masks(
    tokens: Sequence[str],
    cls: str = "[CLS]",
    sep: str = "[SEP]",
    *,
    device: torch.device | str = "cpu",
) -> dict[str, torch.Tensor]:
    """Per kind of token (`"cls"`, `"sep"`, `"punct"`), a boolean `(T,)` that is True
    where the key is a token of that kind, for `mass_on`."""
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise TypeError("tokens must be a list of strings")
    flags = {
        "cls": [t == cls for t in tokens],
        "sep": [t == sep for t in tokens],
        "punct": [bool(t) and all(ch in PUNCTUATION for ch in t) for t in tokens],
    }
    return {k: torch.tensor(v, dtype=torch.bool, device=device) for k, v in flags.items()}


STATISTICS = (
    "entropy",
    "cls",
    "sep",
    "punct",
    "self",
    "previous",
    "next",
    "local",
    "distance",
)


def head_statistics(
    maps: Sequence[torch.Tensor],
    tokens: Sequence[Sequence[str]],
    *,
    cls: str = "[CLS]",
    sep: str = "[SEP]",
) -> dict[str, torch.Tensor]:
    """Pool the per-head statistics over sentences, weighting each query token equally.

    `maps[i]` is sentence `i`'s `(L, H, T_i, T_i)` map and `tokens[i]` its
    `T_i` tokens. Returns one `(L, H)` tensor per name in `STATISTICS`
    (entropy in nats, distance in tokens, the rest as attention fractions; `local`
    is the weight within one position: previous, self and next together).
    """
    if len(maps) != len(tokens) or not maps:
        raise ValueError(
            f"maps and tokens must be non-empty and equally long, got {len(maps)} and {len(tokens)}"
        )
    totals: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = dict.fromkeys(STATISTICS, 0)
    shape = None
    for i, (m, toks) in enumerate(zip(maps, tokens, strict=True)):
        t = check_maps(m, f"maps[{i}]")
        if len(toks) != t:
            raise ValueError(f"tokens[{i}] has {len(toks)} tokens but maps[{i}] has T = {t}")
        if shape is None:
            shape = m.shape[:-2]
        elif m.shape[:-2] != shape:
            raise ValueError(f"maps[{i}] has heads {tuple(m.shape[:-2])}, expected {tuple(shape)}")
        is_kind = token_masks(toks, cls, sep, device=m.device)  # True = a token of that kind
        m = m.double()
        values = {
            "entropy": (mean_entropy(m), t),
            "cls": (mass_on(m, is_kind["cls"]), t),
            "sep": (mass_on(m, is_kind["sep"]), t),
            "punct": (mass_on(m, is_kind["punct"]), t),
            "self": (offset_mass(m, 0), t),
            "previous": (offset_mass(m, -1), t - 1),
            "next": (offset_mass(m, 1), t - 1),
            "local": (local_mass(m, 1), t),
            "distance": (mean_distance(m), t),
        }
        for name, (value, n) in values.items():
            if n <= 0:
                continue
            totals[name] = totals.get(name, 0) + value * n
            counts[name] += n
    return {name: (totals[name] / counts[name]).float() for name in STATISTICS if counts[name]}
