"""Geometry of random queries and keys in many dimensions: cosines, dot products, attention.

Chapter 4 tests the claim that in high dimensions dot products "lose
contrast": it samples cosines and scaled dot products of random vectors,
compares them with their closed forms, and reads how sharp softmax attention over
random keys is (entropy, largest weight, weight on the token itself), the statistics
of `head_stats` that it also reads off a trained model's attention.
"""

from __future__ import annotations

import math

import torch

from mha_lib._checks import check_floating, check_positive_int
from mha_lib.analysis.head_stats import diagonal_mass, entropy, max_weight


def _check_generator(generator: torch.Generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")


def random_cosines(dim: int, num_pairs: int, generator: torch.Generator) -> torch.Tensor:
    """Cosines of `num_pairs` independent pairs of standard Gaussian vectors in `dim` dims."""
    check_positive_int("dim", dim)
    check_positive_int("num_pairs", num_pairs)
    _check_generator(generator)
    x = torch.randn(num_pairs, dim, generator=generator, dtype=torch.float64)  # (N, d)
    y = torch.randn(num_pairs, dim, generator=generator, dtype=torch.float64)  # (N, d)
    return torch.nn.functional.cosine_similarity(x, y, dim=-1)  # (N,)


def random_scaled_dots(
    dim: int, num_pairs: int, generator: torch.Generator, *, scaled: bool = True
) -> torch.Tensor:
    """`q·k / √dim` (or `q·k` if `scaled=False`) for standard Gaussian `q, k`."""
    check_positive_int("dim", dim)
    check_positive_int("num_pairs", num_pairs)
    _check_generator(generator)
    q = torch.randn(num_pairs, dim, generator=generator, dtype=torch.float64)  # (N, d)
    k = torch.randn(num_pairs, dim, generator=generator, dtype=torch.float64)  # (N, d)
    dots = (q * k).sum(-1)  # (N,)
    return dots / math.sqrt(dim) if scaled else dots


def cosine_std(dim: int) -> float:
    """Exact std of the cosine of two independent isotropic vectors: `1/√dim`.

    By symmetry the mean is 0 and the squared cosine averages `1/dim`
    (the squared coordinates of a uniform unit vector share 1 equally).
    """
    return 1.0 / math.sqrt(check_positive_int("dim", dim))


def cosine_pdf(c: torch.Tensor, dim: int) -> torch.Tensor:
    """Exact density of that cosine: `∝ (1 − c²)^((dim − 3)/2)` on `(−1, 1)`, for dim ≥ 2."""
    if check_positive_int("dim", dim) < 2:
        raise ValueError(f"dim must be at least 2 for a density, got {dim}")
    check_floating(c, "c")
    log_norm = math.lgamma(dim / 2) - 0.5 * math.log(math.pi) - math.lgamma((dim - 1) / 2)
    inside = c.abs() < 1
    safe = torch.where(inside, c, torch.zeros_like(c))
    density = torch.exp(log_norm + 0.5 * (dim - 3) * torch.log1p(-(safe**2)))
    return torch.where(inside, density, torch.zeros_like(c))


SCORES = ("cosine", "scaled", "raw")


def random_attention(
    dim: int,
    num_keys: int,
    num_queries: int,
    generator: torch.Generator,
    *,
    scores: str = "cosine",
    beta: float = 1.0,
) -> torch.Tensor:
    """Softmax weights `(Q, T)` of random standard Gaussian queries over random keys.

    `scores` picks what the softmax sees:

    - `"cosine"`: `beta · cos(q, k)`, a fixed temperature on directions.
      Cosines shrink like `1/√dim`, so the weights flatten as `dim` grows.
    - `"scaled"`: `beta · q·k / √dim`; the score std is `beta` at every `dim`.
    - `"raw"`: `beta · q·k`; the std grows like `√dim` and softmax saturates.
    """
    check_positive_int("dim", dim)
    check_positive_int("num_keys", num_keys)
    check_positive_int("num_queries", num_queries)
    _check_generator(generator)
    if scores not in SCORES:
        raise ValueError(f"scores must be one of {SCORES}, got {scores!r}")
    q = torch.randn(num_queries, dim, generator=generator, dtype=torch.float64)  # (Q, d)
    k = torch.randn(num_keys, dim, generator=generator, dtype=torch.float64)  # (T, d)
    if scores == "cosine":
        logits = pairwise_cosines(q, k)  # (Q, T)
    else:
        logits = q @ k.T / (math.sqrt(dim) if scores == "scaled" else 1.0)  # (Q, T)
    return torch.softmax(beta * logits, dim=-1)  # (Q, T)


def pairwise_cosines(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Cosine of every query with every key: `(..., Tq, d), (..., Tk, d) → (..., Tq, Tk)`."""
    check_floating(q, "q")
    check_floating(k, "k")
    if q.shape[-1] != k.shape[-1] or q.shape[:-2] != k.shape[:-2]:
        raise ValueError(
            f"q and k must share leading dimensions and d, got {tuple(q.shape)}, {tuple(k.shape)}"
        )
    qn = q / q.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (..., Tq, d)
    kn = k / k.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (..., Tk, d)
    return qn @ kn.transpose(-2, -1)  # (..., Tq, Tk)


def sharpness_over_key_sets(
    dim: int,
    num_keys: int,
    num_queries: int,
    num_sets: int,
    generator: torch.Generator,
    *,
    scores: str = "cosine",
    beta: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean entropy (nats) and mean largest weight of `random_attention` rows, one value
    per independent set of keys: `(num_sets,)` each.

    One set of keys is one draw; averaging many and keeping their spread separates what the
    width `dim` does from the luck of one draw (one set of 16 keys moved the entropy at
    `dim = 8` by about as much as going to `dim = 1024` did). The sets are drawn one
    after another from `generator`, queries then keys, as `random_attention` does.
    """
    check_positive_int("num_sets", num_sets)
    entropies, largest = [], []
    for _ in range(num_sets):
        weights = random_attention(  # (num_queries, num_keys): one set of keys
            dim, num_keys, num_queries, generator, scores=scores, beta=beta
        )
        entropies.append(entropy(weights).mean())
        largest.append(max_weight(weights).mean())
    return torch.stack(entropies), torch.stack(largest)  # (num_sets,), (num_sets,)


def random_self_weight(
    d_model: int,
    num_heads: int,
    num_tokens: int,
    num_sequences: int,
    generator: torch.Generator,
    *,
    tied: bool,
) -> torch.Tensor:
    """Mean weight each head puts on the token itself, `(H,)`, for random tokens and weights.

    Tokens are standard Gaussian in `d_model` dimensions; `W_q` and `W_k` are Gaussian
    with variance `1/d_model` (the Xavier scale), drawn independently or, with
    `tied=True`, equal. A token's self-score `x·W_qᵀW_k x` has mean
    `tr(W_qᵀW_k)`, about 0 for independent weights, so nothing singles the token out;
    tied weights make it `|W x|² ≥ 0`, about `d_head` before the `1/√d_head` scaling.
    """
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    check_positive_int("num_tokens", num_tokens)
    check_positive_int("num_sequences", num_sequences)
    _check_generator(generator)
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
    d_head = d_model // num_heads
    std = 1.0 / math.sqrt(d_model)
    w_q = std * torch.randn(d_model, d_model, generator=generator)  # (D_out, D_in)
    w_k = w_q if tied else std * torch.randn(d_model, d_model, generator=generator)
    x = torch.randn(num_sequences, num_tokens, d_model, generator=generator)  # (B, T, D)
    shape = (num_sequences, num_tokens, num_heads, d_head)
    q = (x @ w_q.T).view(shape).transpose(1, 2)  # (B, H, T, Dh)
    k = (x @ w_k.T).view(shape).transpose(1, 2)  # (B, H, T, Dh)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)  # (B, H, T, T)
    return diagonal_mass(weights).mean(0)  # (H,)
