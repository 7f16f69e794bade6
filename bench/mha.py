"""Time multi-head attention implementations that carry the same weights (float32, CPU).

Run from the repository root:

    .venv/bin/python bench/mha.py                  # full run: ~5 min of CPU time
    .venv/bin/python bench/mha.py --quick          # smoke run, well under a minute
    .venv/bin/python bench/mha.py --repeats 9 --threads 2 --json /tmp/mha.json
    .venv/bin/python bench/mha.py --threads 1 --clock cpu  # on a machine shared with other work

For every shape it first checks that all implementations give the same output,
then times forward (under `torch.no_grad`) and forward + backward (the input
requires a gradient, as inside a deeper model). Each number is the median over
`--repeats` samples; implementations are interleaved round-robin within each
repeat, in a rotating order, so a slow spell of the machine hits all of them.
A sample runs an implementation enough times to last `--min-sample` seconds (the
library's timing harness, `mha_lib.analysis.cost.interleaved_samples`).

Ratios are given against `nn.MultiheadAttention(need_weights=False)` and
against the *matmul floor*: the same shapes' matrix products alone (four
projections and the two batched attention products, plus their gradients for
forward + backward) on ready-made tensors, with no softmax, bias, mask or copy.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from mha_lib import MultiHeadAttention
from mha_lib.analysis.cost import CLOCKS, interleaved_samples
from mha_lib.core.reference import loop_over_heads, projections_sdpa

REFERENCE = "nn.MHA need_weights=False"
FLOOR = "matmul floor"
FUSED = "mha_lib fused"
TARGET = 1.05  # mha_lib fused / nn.MultiheadAttention(need_weights=False)


@dataclass(frozen=True)
class Shape:
    name: str
    batch: int
    length: int
    d_model: int
    heads: int
    causal: bool
    repeats: int = 7  # default samples; fewer for the heavy shapes

    def label(self) -> str:
        mask = ", causal" if self.causal else ""
        return (
            f"{self.name}: B={self.batch}, T={self.length}, d_model={self.d_model}, "
            f"h={self.heads}{mask}"
        )


FULL_SHAPES = [
    Shape("BERT-like small", 32, 128, 384, 12, False, repeats=9),
    Shape("BERT-base, long", 4, 512, 768, 12, False, repeats=5),
    Shape("decoder, medium", 16, 256, 512, 8, True),
    Shape("GPT-2 small", 8, 1024, 768, 12, True, repeats=3),
]
QUICK_SHAPES = [
    Shape("tiny", 4, 64, 128, 4, False, repeats=3),
    Shape("tiny causal", 2, 128, 128, 8, True, repeats=3),
]

Fn = Callable[[torch.Tensor], torch.Tensor]


def implementations(shape: Shape) -> dict[str, Fn]:
    """Every implementation as `f(x) -> output`, all carrying one set of weights."""
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(shape.d_model, shape.heads, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(reference).eval()
    t = shape.length
    allowed = torch.ones(t, t, dtype=torch.bool).tril() if shape.causal else None  # True = attend
    blocked = None if allowed is None else ~allowed  # nn.MultiheadAttention: True = blocked

    def torch_mha(need_weights: bool) -> Fn:
        def run(x: torch.Tensor) -> torch.Tensor:
            return reference(
                x,
                x,
                x,
                attn_mask=blocked,
                is_causal=shape.causal,
                need_weights=need_weights,
                average_attn_weights=False,
            )[0]

        return run

    fns = {
        "loop over heads": lambda x: loop_over_heads(ours, x, attn_mask=allowed),
        "mha_lib explicit (need_weights=True)": lambda x: ours(
            x, attn_mask=allowed, need_weights=True
        )[0],
        FUSED: lambda x: ours(x, attn_mask=allowed)[0],
        REFERENCE: torch_mha(False),
        "nn.MHA need_weights=True": torch_mha(True),
        "projections + F.sdpa": lambda x: projections_sdpa(ours, x, is_causal=shape.causal),
    }
    if shape.causal and "is_causal" in inspect.signature(ours.forward).parameters:
        # Only once mha_lib has the causal flag (see bench/README.md).
        fns[FUSED + " is_causal=True"] = lambda x: ours(x, is_causal=True)[0]
    return fns


def matmul_floor(shape: Shape, backward: bool) -> Callable[[], None]:
    """The matrix products of one MHA call, alone, on ready-made contiguous tensors."""
    b, t, d, h = shape.batch, shape.length, shape.d_model, shape.heads
    x = torch.randn(b * t, d)  # (B·T, D)
    grad = torch.randn(b * t, d)  # (B·T, D)
    weights = [torch.randn(d, d) for _ in range(4)]  # W_q, W_k, W_v, W_o
    q, k, v = (torch.randn(b * h, t, d // h) for _ in range(3))  # (B·H, T, Dh)
    probs = torch.randn(b * h, t, t)  # (B·H, T, T)
    grad_scores = torch.randn(b * h, t, t)  # (B·H, T, T)
    grad_out = torch.randn(b * h, t, d // h)  # (B·H, T, Dh)

    def forward() -> None:
        for w in weights:
            x @ w  # (B·T, D)
        q @ k.mT  # (B·H, T, T)
        probs @ v  # (B·H, T, Dh)

    def forward_backward() -> None:
        forward()
        for w in weights:
            grad @ w.mT  # d input
            x.mT @ grad  # d weight
        grad_scores @ k  # d q
        grad_scores.mT @ q  # d k
        grad_out @ v.mT  # d probs
        probs.mT @ grad_out  # d v

    return forward_backward if backward else forward


def check_agreement(fns: dict[str, Fn], x: torch.Tensor) -> dict[str, float]:
    """Max |difference| of each implementation's output from the reference's (float32)."""
    with torch.no_grad():
        outputs = {name: fn(x) for name, fn in fns.items()}
    expected = outputs[REFERENCE]
    tolerance = 1e-4 * max(1.0, expected.abs().max().item())
    diffs = {name: (out - expected).abs().max().item() for name, out in outputs.items()}
    bad = {name: diff for name, diff in diffs.items() if not diff <= tolerance}
    if bad:
        raise SystemExit(f"implementations disagree (tolerance {tolerance:.2e}): {bad}")
    return diffs


def timed_calls(fns: dict[str, Fn], x: torch.Tensor, backward: bool) -> dict[str, Callable]:
    """Wrap each implementation as a no-argument call: forward only, or forward + backward."""
    calls: dict[str, Callable[[], None]] = {}
    if not backward:
        for name, fn in fns.items():

            def call(fn: Fn = fn) -> None:
                with torch.no_grad():
                    fn(x)

            calls[name] = call
        return calls
    leaf = x.detach().requires_grad_(True)
    grad_out = torch.randn_like(x)
    for name, fn in fns.items():

        def call(fn: Fn = fn) -> None:
            leaf.grad = None
            fn(leaf).backward(grad_out)

        calls[name] = call
    return calls


def run_shape(shape: Shape, repeats: int, min_sample: float, clock: str) -> dict:
    torch.manual_seed(1)
    x = torch.randn(shape.batch, shape.length, shape.d_model)  # (B, T, D)
    fns = implementations(shape)
    diffs = check_agreement(fns, x)
    result = {
        "shape": shape.__dict__,
        "label": shape.label(),
        "repeats": repeats,
        "max_abs_diff": diffs,
    }
    for mode, backward in (("forward", False), ("forward+backward", True)):
        calls = timed_calls(fns, x, backward)
        calls[FLOOR] = matmul_floor(shape, backward)
        samples = interleaved_samples(calls, repeats, min_sample=min_sample)[clock]
        result[mode] = {
            name: {
                "median_s": statistics.median(s),
                "min_s": min(s),
                "max_s": max(s),
                "samples_s": s,
            }
            for name, s in samples.items()
        }
    return result


def markdown_table(result: dict) -> str:
    fwd, both = result["forward"], result["forward+backward"]

    def cells(times: dict, name: str) -> list[str]:
        t = times[name]
        spread = 100 * (t["max_s"] - t["min_s"]) / t["median_s"]
        return [
            f"{1e3 * t['median_s']:.2f}",
            f"{spread:.0f} %",
            f"{t['median_s'] / times[REFERENCE]['median_s']:.2f}",
            f"{t['median_s'] / times[FLOOR]['median_s']:.2f}",
        ]

    header = (
        "| implementation | fwd ms | spread | × nn.MHA | × floor "
        "| fwd+bwd ms | spread | × nn.MHA | × floor | max abs diff |"
    )
    title = f"**{result['label']}** (median of {result['repeats']} repeats)"
    lines = [title, "", header, "|" + "---|" * 10]
    for name in fwd:
        diff = result["max_abs_diff"].get(name)
        diff_text = "—" if diff is None else f"{diff:.1e}"
        row = [name, *cells(fwd, name), *cells(both, name), diff_text]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 3 repeats")
    parser.add_argument(
        "--repeats", type=int, help="samples per implementation (default: 3 to 9 by shape)"
    )
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    parser.add_argument(
        "--min-sample", type=float, help="seconds per sample (default 0.2, quick 0.01)"
    )
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="wall",
        help="wall: elapsed time (default); cpu: CPU time of this process, all threads, "
        "which a machine shared with other work disturbs less",
    )
    parser.add_argument(
        "--only", metavar="TEXT", help="run only the shapes whose name contains TEXT"
    )
    parser.add_argument("--json", metavar="PATH", help="also write all samples as JSON")
    args = parser.parse_args(argv)
    for name in ("repeats", "threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be a positive integer, got {value}")
    if args.threads:
        torch.set_num_threads(args.threads)
    min_sample = args.min_sample
    if min_sample is None:
        min_sample = 0.01 if args.quick else 0.2
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    if args.only:
        shapes = [s for s in shapes if args.only.lower() in s.name.lower()]
        if not shapes:
            parser.error(f"--only {args.only!r} matches no shape")
    wall_start, cpu_start = time.perf_counter(), time.process_time()

    machine = {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "clock": args.clock,
    }
    print(
        f"# MHA benchmark — float32, CPU ({machine['cpu']}, {machine['logical_cpus']} logical "
        f"CPUs), torch {machine['torch']}, {machine['threads']} thread(s), "
        f"{args.clock} clock, median of interleaved repeats\n"
    )
    results = []
    for shape in shapes:
        start = time.perf_counter()
        result = run_shape(shape, args.repeats or shape.repeats, min_sample, args.clock)
        result["wall_s"] = time.perf_counter() - start
        results.append(result)
        print(markdown_table(result), "\n", flush=True)

    print(
        "**mha_lib fused path vs nn.MultiheadAttention(need_weights=False)** (target ≤ 1.05 ×; "
        "on causal shapes both get the causal flag, as nn.MHA gets the is_causal hint), and "
        "vs the matmul floor\n"
    )
    print(
        "| shape | variant | fwd × nn.MHA | fwd+bwd × nn.MHA | target met | fwd × floor "
        "| fwd+bwd × floor |"
    )
    print("|---|---|---|---|---|---|---|")
    all_met = True
    for result in results:
        causal = FUSED + " is_causal=True"
        like_for_like = causal if causal in result["forward"] else FUSED
        for name in (FUSED, causal):
            if name not in result["forward"]:
                continue
            modes = ("forward", "forward+backward")
            vs_ref = [result[m][name]["median_s"] / result[m][REFERENCE]["median_s"] for m in modes]
            vs_floor = [result[m][name]["median_s"] / result[m][FLOOR]["median_s"] for m in modes]
            met = all(r <= TARGET for r in vs_ref)
            if name == like_for_like:
                all_met &= met
            print(
                f"| {result['label']} | {name} | {vs_ref[0]:.2f} | {vs_ref[1]:.2f} "
                f"| {'yes' if met else 'no'} | {vs_floor[0]:.2f} | {vs_floor[1]:.2f} |"
            )
    totals = {
        "wall_s": time.perf_counter() - wall_start,
        "cpu_s": time.process_time() - cpu_start,
    }
    print(f"\nWhole run: {totals['wall_s']:.0f} s elapsed, {totals['cpu_s']:.0f} s of CPU time.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "totals": totals, "results": results}, f, indent=1)
    print(f"\nTarget met by {FUSED} in every shape (like for like): {'yes' if all_met else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
