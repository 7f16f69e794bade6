"""What multi-head attention costs: parameters, FLOPs, attention-map bytes, and time.

The formulas make one point visible: at a fixed `d_model` the number of heads
`h` appears in neither the parameter count nor the FLOPs, only in the size of
the attention map (one `Tq × Tk` matrix per head) and in the work that scaling,
masking and softmax do on it, which `elementwise_work` counts (FLOP counters
count matrix products only). At a fixed `d_head` the width is `h · d_head` and
the same formulas grow with `h`. Tests check each formula
against a measurement (`numel` and `torch.utils.flop_counter.FlopCounterMode`). The
measured counterparts for any model — `parameter_count`, `forward_flops` and
`measure_latency` — say what pruning heads saves (chapter 6, `bench/pruning.py`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping

import torch
from torch import nn

from mha_lib._checks import check_positive_int


def mha_parameter_count(d_model: int, num_heads: int, *, bias: bool = True) -> int:
    """Parameters of `mha_lib.MultiHeadAttention`: four `d_model × d_model` projections.

    `num_heads` is only validated: splitting the projected features into heads
    slices them, it adds no weights, so the count is the same for every `h`.
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
    four projections cost `2·B·T·d_model²` each; the two attention products
    cost `2·B·Tq·Tk·d_model` each, because `h` heads of width `d_model/h`
    together do the work of one head of width `d_model`. With `backward`,
    every product also computes the gradients of both operands (two more
    products of the same size), so the total triples; this assumes the input
    requires a gradient, as it does inside a deeper model.
    """
    k_len = q_len if k_len is None else k_len
    for name, value in (("batch", batch), ("q_len", q_len), ("k_len", k_len)):
        check_positive_int(name, value)
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
    """Bytes of the per-head weights `(B, H, Tq, Tk)`: the one cost that grows with `h`."""
    k_len = q_len if k_len is None else k_len
    for name, value in (("batch", batch), ("num_heads", num_heads), ("q_len", q_len)):
        check_positive_int(name, value)
    check_positive_int("k_len", k_len)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
    return batch * num_heads * q_len * k_len * dtype.itemsize


def score_elements(batch: int, num_heads: int, q_len: int, k_len: int | None = None) -> int:
    """Entries of the score tensor `(B, H, Tq, Tk)`: what each pass of scaling, masking or
    softmax touches. At a fixed `d_model` the matrix FLOPs do not depend on `h`; this does."""
    k_len = q_len if k_len is None else k_len
    for name, value in (("batch", batch), ("num_heads", num_heads), ("q_len", q_len)):
        check_positive_int(name, value)
    check_positive_int("k_len", k_len)
    return batch * num_heads * q_len * k_len


def elementwise_work(fn: Callable[[], object]) -> list[tuple[str, tuple[int, ...]]]:
    """Name and output shape of every operation of one call of `fn` that writes a new
    tensor and is not a matrix product: the scaling, masking, softmax, bias and
    normalisation work that `FlopCounterMode` leaves out.

    Views (which write nothing) and matrix products are skipped. Summing
    `prod(shape)` over the entries whose shape is an attention map's counts the
    elements written per pass over the scores: it grows as `B · h · Tq · Tk`.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    matmuls = {
        torch.ops.aten.mm.default,
        torch.ops.aten.bmm.default,
        torch.ops.aten.addmm.default,
        torch.ops.aten.baddbmm.default,
    }
    records: list[tuple[str, tuple[int, ...]]] = []

    def storages(tree: object) -> set[int]:
        found: set[int] = set()
        for leaf in torch.utils._pytree.tree_leaves(tree):
            if isinstance(leaf, torch.Tensor):
                found.add(leaf.untyped_storage().data_ptr())
        return found

    class _Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            out = func(*args, **(kwargs or {}))
            if func not in matmuls:
                inputs = storages((args, kwargs))
                for leaf in torch.utils._pytree.tree_leaves(out):
                    if (
                        isinstance(leaf, torch.Tensor)
                        and leaf.numel()
                        and leaf.untyped_storage().data_ptr() not in inputs
                    ):
                        records.append((func.overloadpacket.__name__, tuple(leaf.shape)))
            return out

    # no_grad, not inference_mode: under inference_mode composite ops such as linear reach
    # the mode whole instead of as the matrix products they run.
    with _Record(), torch.no_grad():
        fn()
    return records


def attention_cost(
    layer: nn.Module, x: torch.Tensor, attn_mask: torch.Tensor | None = None
) -> dict[str, int]:
    """What one explicit self-attention pass of an `mha_lib.MultiHeadAttention` on `x` costs,
    counted: `params`; matrix FLOPs in all (`flops`), of the four projections
    (`projection_flops`, the `addmm`/`mm` calls) and of the two attention products
    (`attention_flops`, the `bmm` calls); and `score_work`, the elements that scaling,
    masking and softmax write on the `(B, h, T, T)` score tensor (`elementwise_work`).

    The explicit path (`need_weights=True`) runs because the counters cannot see inside
    the fused kernel, which does the same work without writing the map out.
    """
    from torch.utils.flop_counter import FlopCounterMode

    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, time, d_model), got {tuple(x.shape)}")
    batch, length, _ = x.shape
    scores = (batch, layer.num_heads, length, length)

    def run() -> object:
        return layer(x, attn_mask=attn_mask, need_weights=True)

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        run()
    by_op = counter.get_flop_counts()["Global"]
    aten = torch.ops.aten
    return {
        "params": parameter_count(layer),
        "flops": int(counter.get_total_flops()),
        "projection_flops": int(by_op.get(aten.addmm, 0) + by_op.get(aten.mm, 0)),
        "attention_flops": int(by_op.get(aten.bmm, 0)),
        "score_work": sum(math.prod(s) for _, s in elementwise_work(run) if s == scores),
    }


def _check_heads(d_model: int, num_heads: int) -> None:
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")


def parameter_count(model: nn.Module) -> int:
    """All parameters (embeddings included)."""
    return sum(p.numel() for p in model.parameters())


def forward_flops(fn: Callable[[], object]) -> int:
    """Matrix-multiplication FLOPs of one call of `fn`, counted by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.inference_mode():
        fn()
    return int(counter.get_total_flops())


def measure_latency(
    fns: Mapping[str, Callable[[], object]],
    *,
    repeats: int = 7,
    min_sample: float = 0.05,
    warmup: int = 1,
) -> dict[str, float]:
    """Median seconds per call of each function, interleaved round-robin in a rotating order.

    Each sample repeats a call until `min_sample` seconds pass; all functions
    are timed in every round, so a slow spell of a shared machine hits them all.
    """
    check_positive_int("repeats", repeats)
    names = list(fns)
    if not names:
        raise ValueError("fns must hold at least one function")
    calls: dict[str, int] = {}
    with torch.inference_mode():
        for name in names:  # warm up, and find how many calls fill a sample
            for _ in range(warmup):
                fns[name]()
            start = time.perf_counter()
            fns[name]()
            once = max(time.perf_counter() - start, 1e-6)
            calls[name] = max(1, int(min_sample / once))
        samples: dict[str, list[float]] = {n: [] for n in names}
        for r in range(repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                start = time.perf_counter()
                for _ in range(calls[name]):
                    fns[name]()
                samples[name].append((time.perf_counter() - start) / calls[name])
    return {name: statistics.median(s) for name, s in samples.items()}
