"""What each attention head does, in numbers: one number per head, read off its maps.

Every function takes attention maps `(..., T, T)` whose rows (queries) sum to 1 and
returns one number per head `(...)`: a mean over the query rows of one sentence. How
peaked the rows are (`entropy`, `max_weight`), where their mass goes (`mass_on`,
`offset_mass`, `special_mass`), how far a head looks (`mean_distance`, and against a
head that attends uniformly or by position alone: `distance_ratio`, `matched_decay`).
`head_statistics` pools many sentences by averaging over all their query tokens
(Clark et al. 2019 average over tokens the same way); which heads are alike is
`head_groups`.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence

import torch

from mha_lib._checks import check_floating, check_maps, check_positive_int, check_rank

PUNCTUATION = frozenset(string.punctuation)

# How peaked a softmax is, and how much gradient flows through it. Chapter 2 uses these to
# show what dividing by √d_k buys: without it, scores grow with d_k, the softmax saturates,
# and its Jacobian (the only path by which a loss can move the scores) shrinks towards zero.


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of each distribution along the last axis (0·log 0 = 0).

    `log T` for uniform attention over `T` keys, 0 for a one-hot.
    """
    check_floating(weights, "weights")
    terms = weights * torch.log(weights.clamp_min(torch.finfo(weights.dtype).tiny))
    return -terms.sum(dim=-1)  # (...)


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """`∂softmax(s)/∂s = diag(p) − p pᵀ` for each distribution `p` on the last axis.

    Shape `(..., T) → (..., T, T)`. It vanishes as `p` approaches a one-hot,
    which is what a saturated softmax does to learning.
    """
    check_floating(weights, "weights")
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)


# Where a head's mass goes and how far it looks, one sentence at a time.


def _distances(
    t: int, device: torch.device | str | None = None, dtype: torch.dtype = torch.int64
) -> torch.Tensor:
    """`(T, T)`: |i − j|, how many tokens query `i` and key `j` lie apart."""
    pos = torch.arange(t, dtype=dtype, device=device)
    return (pos[:, None] - pos[None, :]).abs()  # (T, T)


def mean_entropy(maps: torch.Tensor) -> torch.Tensor:
    """Mean entropy (nats) of the query rows: 0 = one key gets everything, ln T = uniform."""
    check_maps(maps)
    return entropy(maps).mean(-1)  # (...)


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
    band = _distances(t, maps.device) <= width  # (T, T)
    return (maps * band).sum(-1).mean(-1)  # (...)


def mean_distance(maps: torch.Tensor) -> torch.Tensor:
    """Mean |query − key| distance in tokens, weighted by attention: how far a head looks."""
    t = check_maps(maps)
    dist = _distances(t, maps.device, maps.dtype)  # (T, T)
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


# How far do heads look, per sentence, against a head that attends uniformly?
#
# A mean attention distance means little alone: on a sentence of T tokens a head
# that spreads its weight evenly already looks (T² − 1) / (3T) tokens away on
# average, and long sentences make every head look "far". So each sentence's
# distance is divided by that uniform value, giving a ratio (1 = as far as a
# uniform head; below 1 = more local), and the spread over sentences is kept so
# that a layer's curve comes with an interval. `[CLS]` and `[SEP]` can be
# dropped first (rows renormalised): a head that parks its weight on `[CLS]`
# otherwise looks "far" from every late token.


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
        dist = _distances(t, x.device, x.dtype)  # (T, T)
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
        far = (_distances(t, x.device) >= min_distance).to(x.dtype)  # (T, T)
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
    dist = _distances(t, dtype=torch.float64)  # (t, t)
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
        dist = _distances(t, dtype=torch.float64)  # (t, t)
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


# How sharp a head is, and how much weight a query puts on its own position (chapter 4).


def _check_weights(weights: torch.Tensor) -> None:
    check_floating(weights, "weights")
    if weights.dim() < 1:
        raise ValueError("weights must have at least 1 dimension (..., Tk)")


def max_weight(weights: torch.Tensor) -> torch.Tensor:
    """Largest weight of each attention row, `(..., Tk) → (...)`."""
    _check_weights(weights)
    return weights.amax(-1)  # (...)


def diagonal_mass(weights: torch.Tensor) -> torch.Tensor:
    """Mean weight a query puts on its own position, `(..., T, T) → (...)`."""
    check_floating(weights, "weights")
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be square (..., T, T), got shape {tuple(weights.shape)}")
    return weights.diagonal(dim1=-2, dim2=-1).mean(-1)  # (...)


def head_sharpness(weights: torch.Tensor, rows: torch.Tensor | None = None) -> dict[str, list]:
    """Per-head sharpness and self-attention of one layer's maps `(B, H, T, T)`.

    `rows` (bool `(T,)`) restricts the statistics to some query positions
    (e.g. the positions that are scored). Returns per-head lists `entropy`,
    `max_weight`, `diagonal` (mean weight on the query's own position) and
    the scalar `diagonal_of_mean`: the same for the head-averaged map.
    Because the diagonal is linear in the map, the head-averaged map's diagonal
    mass is exactly the mean of the heads' masses; averaging can dilute one
    head's self-bias, never remove the heads' mean bias.
    """
    check_floating(weights, "weights")
    check_rank(weights, 4, "weights", "(batch, heads, T, T)")
    length = weights.shape[-1]
    if weights.shape[-2] != length:
        raise ValueError(f"weights must be square in T, got shape {tuple(weights.shape)}")
    if rows is None:
        rows = torch.ones(length, dtype=torch.bool)
    if rows.dtype != torch.bool or tuple(rows.shape) != (length,):
        raise ValueError(f"rows must be a bool tensor of shape ({length},)")
    diag = weights.diagonal(dim1=-2, dim2=-1)[..., rows]  # (B, H, R)
    picked = weights[:, :, rows]  # (B, H, R, T)
    mean_map_diag = weights.mean(1).diagonal(dim1=-2, dim2=-1)[..., rows]  # (B, R)
    return {
        "entropy": entropy(picked).mean((0, 2)).tolist(),
        "max_weight": max_weight(picked).mean((0, 2)).tolist(),
        "diagonal": diag.mean((0, 2)).tolist(),
        "diagonal_of_mean": mean_map_diag.mean().item(),
    }


# Where heads park attention, and how much they move there (chapter 9).
#
# A "sink" (Xiao et al. 2023) is a position that receives much of a head's weight whatever
# the query: in BERT-family models `[CLS]` and `[SEP]`. Weight alone can overstate it: a
# head can put weight on a token whose transformed value is small, moving little
# (Kobayashi et al. 2020). `special_mass` reads both measures for `[CLS]` and
# `[SEP]`, the norm-weighted one from `mha_lib.bert.norms` (the same maps chapter 5 reads).


@torch.no_grad()
def special_mass(
    model: torch.nn.Module, tokenizer: object, sentences: Sequence[str]
) -> dict[str, torch.Tensor]:
    """Per layer and head `(L, H)`, averaged over sentences and queries: the weight on
    `[CLS]` and on `[SEP]`, and the same after norm weighting; and the share of the
    sentence's positions the two tokens are (what a uniform head would give them)."""
    from mha_lib.bert import batch_attention_maps

    if not sentences:
        raise ValueError("special_mass needs at least one sentence")
    weights = batch_attention_maps(model, tokenizer, list(sentences))
    moved = batch_attention_maps(model, tokenizer, list(sentences), norm_weighted=True)
    sums = {k: 0.0 for k in ("cls", "sep", "cls_moved", "sep_moved")}
    uniform = 0.0
    for (_, w), (_, m) in zip(weights, moved, strict=True):  # (L, H, T, T) each
        sums["cls"] = sums["cls"] + w[..., 0].mean(-1)
        sums["sep"] = sums["sep"] + w[..., -1].mean(-1)
        sums["cls_moved"] = sums["cls_moved"] + m[..., 0].mean(-1)
        sums["sep_moved"] = sums["sep_moved"] + m[..., -1].mean(-1)
        uniform += 1.0 / w.shape[-1]
    out = {k: v / len(sentences) for k, v in sums.items()}
    out["uniform"] = torch.tensor(uniform / len(sentences))
    return out
