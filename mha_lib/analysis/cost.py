"""What multi-head attention costs: parameters, FLOPs, attention-map bytes, and time.

The formulas make one point visible: at a fixed `d_model` the number of heads
`h` appears in neither the parameter count nor the FLOPs, only in the size of
the attention map (one `Tq × Tk` matrix per head) and in the work that scaling,
masking and softmax do on it, which `elementwise_work` counts (FLOP counters
count matrix products only). At a fixed `d_head` the width is `h · d_head` and
the same formulas grow with `h`. Tests check each formula
against a measurement (`numel` and `torch.utils.flop_counter.FlopCounterMode`). The
measured counterparts for any model — `parameter_count`, `forward_flops` and the timing
harness `interleaved_samples` — say what pruning heads saves (chapter 6, `bench/pruning.py`).

Time is compared, never quoted alone: the ratio of two implementations' medians
(`compare`), each median with its spread, which bounds the ratio's noise. Every timing of the
library and of bench/ comes from `interleaved_samples`; `interleaved_times` is the chapters'
reading of it (CPU time on one thread, in ms).
"""

from __future__ import annotations

import gc
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


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
Timing = tuple[float, float]  # (median ms, (max - min) / median)


def interleaved_samples(
    calls: Mapping[str, Callable[[], object]],
    repeats: int,
    *,
    min_sample: float = 0.0,
    warmup: int = 1,
) -> dict[str, dict[str, list[float]]]:
    """Seconds per call of each function, `repeats` samples each on both clocks, in turns.

    The library's one timing method. `warmup` untimed calls each, the last of which sizes
    the samples: a sample runs a function as many times as last `min_sample` seconds of
    wall time (at least once). Then `repeats` rounds in which every function gives one
    sample, in an order rotated by one each round, so a slow spell of a shared machine hits
    them all alike; each sample starts after a garbage collection and reads the wall clock
    (`time.perf_counter`) and the CPU time of this process (`time.process_time`). Autograd
    and the thread count are the caller's. Returns `{clock: {name: samples}}` for the
    clocks of `CLOCKS`, samples in round order.
    """
    check_positive_int("repeats", repeats)
    check_positive_int("warmup", warmup)
    if not calls:
        raise ValueError("calls must name at least one function to time")
    names = list(calls)
    inner: dict[str, int] = {}
    for name in names:
        for _ in range(warmup):
            start = time.perf_counter()
            calls[name]()
            once = time.perf_counter() - start
        inner[name] = max(1, math.ceil(min_sample / max(once, 1e-9)))
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(inner[name]):
                calls[name]()
            cpu[name].append((time.process_time() - start_cpu) / inner[name])
            wall[name].append((time.perf_counter() - start) / inner[name])
    return {"wall": wall, "cpu": cpu}


def interleaved_times(
    calls: Mapping[str, Callable[[], object]], repeats: int
) -> dict[str, Timing]:
    """Median ms and spread (max − min) / median of each call's CPU time, on one thread.

    `interleaved_samples` with one warm-up call each and one call per sample, without
    autograd and on one thread (CPU time, which other programs disturb far less than a
    stopwatch); the thread count is restored.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            samples = interleaved_samples(calls, repeats)["cpu"]
    finally:
        torch.set_num_threads(threads)
    timings = {}
    for name, s in samples.items():
        ms = [1e3 * t for t in s]
        median = statistics.median(ms)
        timings[name] = (median, (max(ms) - min(ms)) / median if median > 0 else 0.0)
    return timings


def compare(new: Timing, old: Timing) -> Timing:
    """Ratio of two timings (new / old) and the ratio's noise.

    Each median lies inside its samples' range, so the ratio is off by at most about half
    of each spread: their mean, at most the larger, which is what is returned.
    """
    if not (new[0] > 0 and old[0] > 0):
        raise ValueError(f"timings must have positive medians, got {new[0]!r} and {old[0]!r}")
    return new[0] / old[0], max(new[1], old[1])
