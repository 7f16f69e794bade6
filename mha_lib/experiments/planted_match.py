"""A match planted in `k` of `d` features: does a wide head lose it, a narrow one find it?

Chapter 4 tests the source article's claim that one head over 512 features cannot find what
a 64-wide head finds. Every token is a standard Gaussian vector in `d` dimensions; the
query copies the first `k` coordinates of one key (the *right* key) and is noise
elsewhere. Nothing else tells the keys apart, so the weight a head puts on the right key
measures how well it finds the match, against the uniform `1/T` of a head that cannot.

Two settings:

* **fixed projections** (`fixed_head_weights`): the head reads the features as they
  are, or a slice, or a random subspace, and scales by `1/√d_head`. The expected score
  gap between the right key and any other is `k/√d` (`score_gap`), so a head that
  reads all `d` features sees the signal diluted by the noise coordinates;
* **learned projections** (`PlantedHeads`, `train_planted`): `h` heads at a
  fixed `d_model` learn `W_q` and `W_k`, and each may learn to read only the signal.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from mha_lib._checks import check_floating, check_positive_int, check_rank
from mha_lib.core.heads import split_heads


def _check_generator(generator: torch.Generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")


def _check_dims(dim: int, signal_dims: int) -> None:
    check_positive_int("dim", dim)
    if isinstance(signal_dims, bool) or not isinstance(signal_dims, int):
        raise TypeError(f"signal_dims must be an int, got {signal_dims!r}")
    if not 0 <= signal_dims <= dim:
        raise ValueError(f"signal_dims must be in [0, dim={dim}], got {signal_dims}")


def planted_batch(
    batch: int,
    num_keys: int,
    dim: int,
    signal_dims: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries `(B, d)`, keys `(B, T, d)` and the right key's index `(B,)`.

    All entries are independent standard normals, except that each query's first
    `signal_dims` coordinates equal those of its right key.
    """
    check_positive_int("batch", batch)
    check_positive_int("num_keys", num_keys)
    _check_dims(dim, signal_dims)
    _check_generator(generator)
    keys = torch.randn(batch, num_keys, dim, generator=generator, dtype=dtype)  # (B, T, d)
    queries = torch.randn(batch, dim, generator=generator, dtype=dtype)  # (B, d)
    target = torch.randint(num_keys, (batch,), generator=generator)  # (B,)
    rows = torch.arange(batch)
    queries[:, :signal_dims] = keys[rows, target, :signal_dims]
    return queries, keys, target


def fixed_head_weights(
    queries: torch.Tensor, keys: torch.Tensor, projection: torch.Tensor | None = None
) -> torch.Tensor:
    """Weights `(B, T)` of one head that projects queries and keys by `projection`.

    `projection` is `(d_head, d)` (`None`: the identity, `d_head = d`); the scores
    are `(P q)·(P k) / √d_head`, as in attention with `W_q = W_k = P`.
    """
    check_floating(queries, "queries")
    check_floating(keys, "keys")
    check_rank(queries, 2, "queries", "(batch, d)")
    check_rank(keys, 3, "keys", "(batch, T, d)")
    if keys.shape[0] != queries.shape[0] or keys.shape[-1] != queries.shape[-1]:
        raise ValueError(
            f"keys (B, T, d) must match queries (B, d), got {tuple(keys.shape)}, "
            f"{tuple(queries.shape)}"
        )
    if projection is not None:
        check_rank(projection, 2, "projection", "(d_head, d)")
        if projection.shape[1] != queries.shape[-1]:
            raise ValueError(f"projection must be (d_head, {queries.shape[-1]})")
        queries = queries @ projection.T  # (B, Dh)
        keys = keys @ projection.T  # (B, T, Dh)
    scores = (keys @ queries[:, :, None])[..., 0] / math.sqrt(queries.shape[-1])  # (B, T)
    return torch.softmax(scores, dim=-1)  # (B, T)


def score_gap(dim: int, signal_dims: int) -> float:
    """Expected score of the right key minus that of any other, for a head reading `dim`
    features with `signal_dims` of them matched: `k/√d`.

    The right key's dot product with the query is `|s|² + n_q·n_k`, mean `k`; any other
    key's has mean 0; both are divided by `√d`. The noise around it has std about 1.
    """
    _check_dims(dim, signal_dims)
    return signal_dims / math.sqrt(dim)


def right_weight_approx(dim: int, signal_dims: int, num_keys: int, nodes: int = 80) -> float:
    """Approximate mean weight on the right key of a fixed identity head (no projection).

    The right key's score `a` has mean `k/√d` and variance `(d + k)/d`; each of the
    `T − 1` other scores is about standard normal, so their exponentials sum to about
    `(T − 1)·e^{1/2}` (law of large numbers). Then `E[e^a / (e^a + (T − 1)e^{1/2})]`
    with `a` Gaussian, by Gauss–Hermite quadrature. It ignores the spread of that sum.
    """
    _check_dims(dim, signal_dims)
    check_positive_int("num_keys", num_keys)
    x, w = np.polynomial.hermite_e.hermegauss(nodes)  # probabilists' Hermite: weight e^{-x²/2}
    mean, std = signal_dims / math.sqrt(dim), math.sqrt((dim + signal_dims) / dim)
    a = mean + std * x
    rest = math.log(num_keys - 1) + 0.5 if num_keys > 1 else -math.inf
    weight = 1.0 / (1.0 + np.exp(rest - a))
    return float((w * weight).sum() / w.sum())


def oracle_top1(
    read_dims: int, num_keys: int, num_queries: int, generator: torch.Generator
) -> float:
    """How often the right key scores highest for a head that reads only matched coordinates.

    A head of width `d_head` can read at most `min(k, d_head)` of the `k` matched
    features, and reading noise coordinates only adds noise, so scoring by the dot product
    of `read_dims` matched coordinates is the best such a head can rank the keys: the
    ceiling for its top-1 rate (sampled, `num_queries` queries).
    """
    check_positive_int("read_dims", read_dims)
    check_positive_int("num_queries", num_queries)
    queries, keys, target = planted_batch(num_queries, num_keys, read_dims, read_dims, generator)
    scores = (keys @ queries[:, :, None])[..., 0]  # (B, T)
    return (scores.argmax(-1) == target).double().mean().item()


class PlantedHeads(nn.Module):
    """`num_heads` heads of width `d_model / num_heads` that learn `W_q` and `W_k`.

    Same parameters for every head count (two `d_model × d_model` matrices, Xavier-uniform
    as in `MultiHeadAttention`); only the split changes.
    """

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        for proj in (self.q_proj, self.k_proj):
            nn.init.xavier_uniform_(proj.weight)

    def forward(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Per-head weights `(B, H, T)` of queries `(B, d)` over keys `(B, T, d)`."""
        q = split_heads(self.q_proj(queries)[:, None], self.num_heads)  # (B, H, 1, Dh)
        k = split_heads(self.k_proj(keys), self.num_heads)  # (B, H, T, Dh)
        scores = (q @ k.transpose(-2, -1))[:, :, 0] / math.sqrt(self.d_head)  # (B, H, T)
        return torch.softmax(scores, dim=-1)  # (B, H, T)


def right_weights(weights: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Weight each head puts on the right key: `(B, H, T), (B,) → (B, H)`."""
    check_floating(weights, "weights")
    check_rank(weights, 3, "weights", "(batch, heads, T)")
    if target.shape != weights.shape[:1]:
        raise ValueError(f"target must be ({weights.shape[0]},), got {tuple(target.shape)}")
    index = target[:, None, None].expand(-1, weights.shape[1], 1)  # (B, H, 1)
    return weights.gather(-1, index)[..., 0]  # (B, H)


def fit_planted(
    d_model: int,
    num_heads: int,
    signal_dims: int,
    *,
    num_keys: int = 32,
    steps: int = 600,
    batch: int = 64,
    lr: float = 3e-3,
    eval_size: int = 1024,
    eval_every: int = 50,
    seed: int = 0,
) -> tuple[PlantedHeads, dict[str, object]]:
    """Train `PlantedHeads` so that every head finds the right key; the model, its record.

    The loss is the mean over heads of `−log` (weight on the right key), so each head is
    trained on its own to find the match (Adam, fresh batches). The record holds the
    held-out mean weight on the right key every `eval_every` steps (`steps`,
    `right_weight`), and at the end each head's mean weight and top-1 rate (`head_weight`,
    `head_top1`) and the head-averaged map's weight (`averaged_weight`), all on the same
    `eval_size` held-out items for every head count.
    """
    _check_dims(d_model, signal_dims)
    torch.manual_seed(seed)
    model = PlantedHeads(d_model, num_heads)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    train_gen = torch.Generator().manual_seed(1_000 + seed)
    held_out = planted_batch(
        eval_size, num_keys, d_model, signal_dims, torch.Generator().manual_seed(2_000 + seed)
    )

    def evaluate() -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            queries, keys, target = held_out
            weights = model(queries, keys)  # (B, H, T)
            return right_weights(weights, target), weights

    record: dict[str, list] = {"steps": [], "right_weight": []}
    for step in range(steps + 1):
        if step % eval_every == 0:
            right, _ = evaluate()
            record["steps"].append(step)
            record["right_weight"].append(right.mean().item())
        if step == steps:
            break
        queries, keys, target = planted_batch(batch, num_keys, d_model, signal_dims, train_gen)
        right = right_weights(model(queries, keys), target)  # (B, H)
        loss = -right.clamp_min(1e-30).log().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    right, weights = evaluate()
    top1 = weights.argmax(-1) == held_out[2][:, None]  # (B, H)
    averaged = right_weights(weights.mean(1, keepdim=True), held_out[2])  # (B, 1)
    return model, {
        **record,
        "head_weight": right.mean(0).tolist(),
        "head_top1": top1.double().mean(0).tolist(),
        "averaged_weight": averaged.mean().item(),
    }


def train_planted(
    d_model: int, num_heads: int, signal_dims: int, **kwargs: int | float
) -> dict[str, object]:
    """The record of `fit_planted` (same keyword arguments), without the model."""
    return fit_planted(d_model, num_heads, signal_dims, **kwargs)[1]  # type: ignore[arg-type]
