"""What multi-head attention costs, in closed form: parameters, FLOPs, attention-map bytes.

The formulas make one point visible: at a fixed ``d_model`` the number of heads
``h`` appears in neither the parameter count nor the FLOPs, only in the size of
the attention map (one ``Tq × Tk`` matrix per head). Tests check each formula
against a measurement (``numel`` and `torch.utils.flop_counter.FlopCounterMode`).
"""

from __future__ import annotations

import torch


def mha_parameter_count(d_model: int, num_heads: int, *, bias: bool = True) -> int:
    """Parameters of `mha_lib.MultiHeadAttention`: four ``d_model × d_model`` projections.

    ``num_heads`` is only validated: splitting the projected features into heads
    slices them, it adds no weights, so the count is the same for every ``h``.
    """
    _check_heads(d_model, num_heads)
    weights = 4 * d_model * d_model  # W_q, W_k, W_v, W_o
    return weights + (4 * d_model if bias else 0)


def mha_flops(
    batch: int,
    q_len: int,
    d_model: int,
    num_heads: int,
    k_len: int | None = None,
    *,
    backward: bool = False,
) -> int:
    """Matrix-multiplication FLOPs of one forward (or forward + backward) pass.

    Counted as `FlopCounterMode` counts them: 2 FLOPs per multiply-add, matrix
    products only (softmax, scaling, masking and biases are lower order). The
    four projections cost ``2·B·T·d_model²`` each; the two attention products
    cost ``2·B·Tq·Tk·d_model`` each, because ``h`` heads of width ``d_model/h``
    together do the work of one head of width ``d_model``. With ``backward``,
    every product also computes the gradients of both operands (two more
    products of the same size), so the total triples; this assumes the input
    requires a gradient, as it does inside a deeper model.
    """
    k_len = q_len if k_len is None else k_len
    for name, value in (("batch", batch), ("q_len", q_len), ("k_len", k_len)):
        _check_positive(value, name)
    _check_heads(d_model, num_heads)
    projections = 2 * batch * d_model * d_model * (2 * q_len + 2 * k_len)  # q, out; k, v
    attention = 2 * (2 * batch * q_len * k_len * d_model)  # q kᵀ and weights · v, all heads
    forward = projections + attention
    return 3 * forward if backward else forward


def attention_map_bytes(
    batch: int,
    num_heads: int,
    q_len: int,
    k_len: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> int:
    """Bytes of the per-head weights ``(B, H, Tq, Tk)``: the one cost that grows with ``h``."""
    k_len = q_len if k_len is None else k_len
    for name, value in (("batch", batch), ("num_heads", num_heads), ("q_len", q_len)):
        _check_positive(value, name)
    _check_positive(k_len, "k_len")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    return batch * num_heads * q_len * k_len * dtype.itemsize


def _check_positive(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _check_heads(d_model: int, num_heads: int) -> None:
    _check_positive(d_model, "d_model")
    _check_positive(num_heads, "num_heads")
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
