"""Splitting a model dimension into heads, and back: two reshapes, no arithmetic."""

from __future__ import annotations

import torch

from mha_lib._checks import check_positive_int, check_rank, check_tensor


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """`(B, T, D) → (B, H, T, D/H)`: head `h` owns features `h·D/H … (h+1)·D/H − 1`.

    Nothing is computed; each head just sees its own contiguous slice of the
    features, which is why more heads at a fixed `D` cost no extra parameters.
    """
    check_tensor(x, "x")
    check_rank(x, 3, "x", "(batch, time, d_model)")
    check_positive_int("num_heads", num_heads)
    batch, time, d_model = x.shape
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} (last dimension of x) is not divisible by num_heads={num_heads}"
        )
    return x.view(batch, time, num_heads, d_model // num_heads).transpose(1, 2)  # (B, H, T, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """`(B, H, T, Dh) → (B, T, H·Dh)`, the inverse of `split_heads`."""
    check_tensor(x, "x")
    check_rank(x, 4, "x", "(batch, heads, time, d_head)")
    batch, heads, time, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, time, heads * d_head)  # (B, T, H·Dh)
