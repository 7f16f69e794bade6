"""Where a recall model's errors fall: per context token, and where its heads looked.

A one-key recall model (`mha_lib.experiments.tasks`) answers a query by reading the
(key, value) token that the query names. If its errors were noise, they would spread over all
those tokens in proportion to how often each is asked for. If instead a few tokens are never
learned, the errors pile up on them. These functions tell the two apart from a batch of
answers:

- `token_errors` counts answers and wrong answers per answer token;
- `dead_tokens` names the tokens wrong more often than a threshold;
- `error_share` says what share of all errors fall on a set of tokens, beside the share
  of answers that ask for them (what errors spread evenly would give);
- `right_weight` reads, at each query, the weight a head puts on the position it had to
  read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from mha_lib._checks import check_positive_int, check_rank, check_same_shape, check_tensor

# A token is dead when more than this share of the answers that need it are wrong. Chosen
# before the runs: far above the rate of a learned token (none of a learned token's answers
# need be wrong) and far below chance on 8 values (7/8 wrong), so the count does not hinge on it.
DEAD_ERROR = 0.2


def token_errors(
    tokens: torch.Tensor, wrong: torch.Tensor, vocab_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """`(errors, counts)`, each `(vocab_size,)`: per token id, how many answers asked for
    it (`tokens`, any shape) and how many of them were wrong (`wrong`, boolean, the same
    shape). Counted per token because a model may fail a token whatever its position."""
    check_tensor(tokens, "tokens")
    check_tensor(wrong, "wrong")
    check_same_shape(tokens, wrong, "tokens", "wrong")
    if wrong.dtype != torch.bool:
        raise TypeError(f"wrong must be a boolean tensor, got dtype {wrong.dtype}")
    check_positive_int("vocab_size", vocab_size)
    flat = tokens.reshape(-1).long().cpu()  # (N,)
    if flat.numel() and (flat.min() < 0 or flat.max() >= vocab_size):
        raise ValueError(f"tokens must lie in [0, {vocab_size})")
    counts = torch.bincount(flat, minlength=vocab_size)  # (V,)
    errors = torch.bincount(flat, weights=wrong.reshape(-1).double().cpu(), minlength=vocab_size)
    return errors.numpy().round().astype(int), counts.numpy().astype(int)


def error_rates(
    errors: Sequence[int] | np.ndarray, counts: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Per token, the share of its answers that were wrong; NaN for a token never asked for
    (no answer says anything about it)."""
    e, c = np.asarray(errors, dtype=float), np.asarray(counts, dtype=float)
    if e.shape != c.shape or e.ndim != 1:
        raise ValueError(
            f"errors and counts must be one-dimensional and alike, got {e.shape}, {c.shape}"
        )
    if (e < 0).any() or (e > c).any():
        raise ValueError("need 0 <= errors <= counts for every token")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, e / np.where(c > 0, c, 1), np.nan)


def dead_tokens(
    errors: Sequence[int] | np.ndarray,
    counts: Sequence[int] | np.ndarray,
    threshold: float = DEAD_ERROR,
) -> np.ndarray:
    """The token ids (sorted) whose error rate exceeds `threshold`: those the model has
    not learned, as opposed to an error rate spread thinly over every token."""
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    rates = error_rates(errors, counts)
    return np.flatnonzero(np.nan_to_num(rates, nan=0.0) > threshold)


def error_share(
    errors: Sequence[int] | np.ndarray,
    counts: Sequence[int] | np.ndarray,
    tokens: Sequence[int] | np.ndarray,
) -> tuple[float, float]:
    """`(share of errors, share of answers)` that fall on `tokens`.

    The second is what the first would be if errors were spread evenly over answers (every
    answer equally likely to be wrong): errors concentrate on `tokens` by as much as the
    first exceeds it. With no error at all the share of errors is 0."""
    e, c = np.asarray(errors, dtype=float), np.asarray(counts, dtype=float)
    error_rates(e, c)  # validates
    idx = np.asarray(tokens, dtype=int)
    if idx.size and (idx.min() < 0 or idx.max() >= c.size):
        raise ValueError(f"tokens must lie in [0, {c.size})")
    if not c.sum():
        raise ValueError("no answers counted")
    on_errors = float(e[idx].sum() / e.sum()) if e.sum() else 0.0
    return on_errors, float(c[idx].sum() / c.sum())


def right_weight(
    weights: torch.Tensor, positions: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """`(B, H, Q)`: the weight each head puts, at query rows `rows` `(Q,)`, on the
    position `positions` `(B, Q)` it must read there.

    `weights` is one layer's map `(B, H, T, T)`. Near 1 the head reads the right token
    alone; near 0 it looks elsewhere, and no read-out can recover the value from its output."""
    check_tensor(weights, "weights")
    check_rank(weights, 4, "weights", "(batch, heads, time, time)")
    b, h, t, _ = weights.shape
    if positions.dim() != 2 or positions.shape[0] != b:
        raise ValueError(f"positions must be (B={b}, Q), got {tuple(positions.shape)}")
    if rows.dim() != 1 or rows.shape[0] != positions.shape[1]:
        raise ValueError(f"rows must be (Q={positions.shape[1]},), got {tuple(rows.shape)}")
    if (positions < 0).any() or (positions >= t).any() or (rows < 0).any() or (rows >= t).any():
        raise ValueError(f"positions and rows must lie in [0, {t})")
    at_rows = weights[:, :, rows, :]  # (B, H, Q, T)
    index = positions[:, None, :, None].expand(b, h, -1, 1)  # (B, H, Q, 1)
    return at_rows.gather(3, index)[..., 0]  # (B, H, Q)
