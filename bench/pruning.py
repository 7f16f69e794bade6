"""Latency of the pretrained model with 0, 25, 50 and 75 % of its heads removed, under
transformers' `eager` and `sdpa` attention (float32, CPU).

Run from the repository root:

    HF_HUB_OFFLINE=1 .venv/bin/python bench/pruning.py            # full run, several minutes
    HF_HUB_OFFLINE=1 .venv/bin/python bench/pruning.py --quick    # smoke run, seconds
    HF_HUB_OFFLINE=1 .venv/bin/python bench/pruning.py --threads 1 --json "$OUT"

With `OUT=scripts/results/ch6_latency.json` the last command writes the file
that chapter 6 reads (committed), with its provenance (commit, torch, CPU
capability, threads).

Heads are removed physically (`mha_lib.bert.prune_heads`), the same share from
every layer (`mha_lib.pruning.even_plan`): latency depends on how many heads a
layer keeps, not on which. Eight models are timed: the four fractions under
`eager` attention (explicit scores, softmax and `h·T²` attention maps written
and read back; what `mha_lib.bert.load` gives by default, and what the chapters
need for maps) and under `sdpa` (transformers' default,
`F.scaled_dot_product_attention`, which never stores the maps). For every
(batch, length) all eight run the same random token ids (no padding); each
repeat times all eight round-robin, in an order rotated by one model per repeat,
so a slow spell of a shared machine hits them all. Each sample repeats a call
until `--min-sample` seconds pass (one warm-up call first; the library's timing harness,
`mha_lib.analysis.cost.interleaved_samples`). A speed-up is the
full model's median over the pruned model's, *within one implementation*; its
range is the smallest and largest per-repeat ratio of the two (samples of the
same repeat, taken moments apart). `spread` is (max − min) / median of one
model's samples: speed-ups smaller than it are not measured.

JSON (`--json PATH`, written with `mha_lib.experiments.reproduce.save_results`,
one part `"latency"` with its provenance under `"provenance"`; fraction keys
are `str(fraction)`: `"0.0"`, `"0.25"`, `"0.5"`, `"0.75"`)::

    latency
      fractions         [0.0, 0.25, 0.5, 0.75]
      implementations   ["eager", "sdpa"]
      threads, repeats, min_sample
      by_implementation
        <impl>                      "eager" | "sdpa"
          parameters    {fraction: int}      all parameters, embeddings included
          heads         {fraction: int}      heads left in the whole model
          rows          [ one per (batch, length):
            batch, length
            seconds        {fraction: float}          median seconds per forward
            spread         {fraction: float}          (max - min) / median of the samples
            samples        {fraction: [float, ...]}   seconds per call, in repeat order
            speedup        {fraction: float}          seconds["0.0"] / seconds[fraction]
            speedup_range  {fraction: [lo, hi]}       per-repeat ratios, smallest and largest
            cpu            {seconds, spread, samples, speedup, speedup_range}:
                           the same five, of the process's CPU time over the same samples
            flops          {fraction: int}            matrix-multiplication FLOPs of a forward
          ]
      sdpa_over_eager   [ one per (batch, length):
        batch, length
        ratio          {fraction: float}   sdpa seconds / eager seconds (below 1: sdpa faster)
        cpu_ratio      {fraction: float}   the same, of CPU time
      ]

Wall time (`perf_counter`, the top-level `seconds`) is what a user waits
for; on a machine shared with other work it also counts the moments the
process waits for a core. CPU time (`process_time`, all threads of the
process) is read around the same samples; with `--threads 1` it counts the
work done and is far less disturbed by other jobs (still not immune: they share
caches and memory bandwidth). Compare the two to tell noise from effect.

FLOPs are counted by torch's `FlopCounterMode` on the eager model and
recorded for both implementations: the two do the same matrix products, but
the counter does not see inside the CPU flash kernel
(`_scaled_dot_product_flash_attention_for_cpu`), so counted under sdpa the
attention products would be missing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

import torch

from mha_lib import bert, pruning
from mha_lib.analysis import cost
from mha_lib.experiments.reproduce import provenance, save_results, threads

FRACTIONS = (0.0, 0.25, 0.5, 0.75)
IMPLEMENTATIONS = ("eager", "sdpa")
FULL_SHAPES = [(1, 32), (16, 32), (16, 128), (64, 128)]
QUICK_SHAPES = [(1, 16), (8, 32)]


def build_models(path: str | None) -> dict[tuple[str, float], torch.nn.Module]:
    """One copy of the model per (implementation, pruned fraction)."""
    models = {}
    for impl in IMPLEMENTATIONS:
        for fraction in FRACTIONS:
            model, _ = bert.load(path, attn_implementation=impl)
            kept = [list(range(n)) for n in bert.heads_per_layer(model)]
            plan = pruning.even_plan(kept, fraction)
            if plan:
                bert.prune_heads(model, plan)
            models[impl, fraction] = model
    return models


def spread(samples: list[float]) -> float:
    return (max(samples) - min(samples)) / statistics.median(samples)


def summary(samples: Mapping[str, list[float]]) -> dict:
    """Medians, spreads and speed-ups over the full model (key `"0.0"`) of one clock."""
    seconds = {k: statistics.median(s) for k, s in samples.items()}
    per_repeat = {
        k: [a / b for a, b in zip(samples["0.0"], s, strict=True)] for k, s in samples.items()
    }
    return {
        "seconds": seconds,
        "spread": {k: spread(s) for k, s in samples.items()},
        "samples": dict(samples),
        "speedup": {k: seconds["0.0"] / seconds[k] for k in samples},
        "speedup_range": {k: [min(r), max(r)] for k, r in per_repeat.items()},
    }


def run(
    models: dict[tuple[str, float], torch.nn.Module], shapes, repeats: int, min_sample: float
) -> dict:
    vocab = next(iter(models.values())).config.vocab_size
    keys = [str(f) for f in FRACTIONS]
    by_impl: dict[str, dict] = {
        impl: {
            "parameters": {str(f): cost.parameter_count(models[impl, f]) for f in FRACTIONS},
            "heads": {str(f): sum(bert.heads_per_layer(models[impl, f])) for f in FRACTIONS},
            "rows": [],
        }
        for impl in IMPLEMENTATIONS
    }
    ratios = []
    for batch, length in shapes:
        g = torch.Generator().manual_seed(batch * 1000 + length)
        ids = torch.randint(1000, vocab, (batch, length), generator=g)  # (B, T) ordinary tokens
        mask = torch.ones_like(ids)  # (B, T)
        fns = {
            f"{impl} {f}": (lambda m=m, i=ids, a=mask: m(input_ids=i, attention_mask=a))
            for (impl, f), m in models.items()
        }
        # one name list alternating implementations, so the rotation mixes them
        order = [f"{impl} {f}" for f in FRACTIONS for impl in IMPLEMENTATIONS]
        with torch.inference_mode():
            samples = cost.interleaved_samples(
                {n: fns[n] for n in order}, repeats, min_sample=min_sample
            )
        wall, cpu = samples["wall"], samples["cpu"]
        flops = {str(f): cost.forward_flops(fns[f"eager {f}"]) for f in FRACTIONS}
        rows = {}
        for impl in IMPLEMENTATIONS:
            row = {
                "batch": batch,
                "length": length,
                **summary({str(f): wall[f"{impl} {f}"] for f in FRACTIONS}),
                "cpu": summary({str(f): cpu[f"{impl} {f}"] for f in FRACTIONS}),
                "flops": flops,
            }
            by_impl[impl]["rows"].append(row)
            rows[impl] = row
        ratios.append(
            {
                "batch": batch,
                "length": length,
                "ratio": {
                    k: rows["sdpa"]["seconds"][k] / rows["eager"]["seconds"][k] for k in keys
                },
                "cpu_ratio": {
                    k: rows["sdpa"]["cpu"]["seconds"][k] / rows["eager"]["cpu"]["seconds"][k]
                    for k in keys
                },
            }
        )
    return {
        "fractions": list(FRACTIONS),
        "implementations": list(IMPLEMENTATIONS),
        "threads": torch.get_num_threads(),
        "repeats": repeats,
        "min_sample": min_sample,
        "by_implementation": by_impl,
        "sdpa_over_eager": ratios,
    }


def _pct(f: str) -> str:
    return f"{float(f):.0%}"


def markdown_tables(result: dict) -> str:
    fr = [str(f) for f in result["fractions"]]
    lines = []
    for impl in result["implementations"]:
        part = result["by_implementation"][impl]
        lines.append(
            f"**{impl}** attention: median ms (spread); speed-up over the full {impl} model "
            "(range of the per-repeat ratios)"
        )
        lines.append("")
        head = "| batch × length | full model | " + " | ".join(f"{_pct(f)} pruned" for f in fr[1:])
        lines += [head + " |", "|" + "---|" * (len(fr) + 1)]
        for row in part["rows"]:
            cells = [f"{row['seconds']['0.0'] * 1e3:.2f} ({row['spread']['0.0']:.0%})"]
            for f in fr[1:]:
                lo, hi = row["speedup_range"][f]
                cells.append(
                    f"{row['seconds'][f] * 1e3:.2f} ({row['spread'][f]:.0%}); "
                    f"**{row['speedup'][f]:.2f}×** ({lo:.2f}–{hi:.2f})"
                )
            lines.append(f"| {row['batch']} × {row['length']} | " + " | ".join(cells) + " |")
        lines.append("")
    impls = result["implementations"]
    lines.append(
        "**CPU time** of the same samples: full model ms (spread); speed-up (range) per fraction"
    )
    lines.append("")
    lines.append(
        "| batch × length | "
        + " | ".join(f"{impl} full | " + " | ".join(f"{impl} {_pct(f)}" for f in fr[1:])
                     for impl in impls)
        + " |"
    )  # fmt: skip
    lines.append("|" + "---|" * (len(fr) * len(impls) + 1))
    for i, row in enumerate(result["by_implementation"][impls[0]]["rows"]):
        cells = []
        for impl in impls:
            c = result["by_implementation"][impl]["rows"][i]["cpu"]
            cells.append(f"{c['seconds']['0.0'] * 1e3:.2f} ({c['spread']['0.0']:.0%})")
            for f in fr[1:]:
                lo, hi = c["speedup_range"][f]
                cells.append(f"{c['speedup'][f]:.2f}× ({lo:.2f}–{hi:.2f})")
        lines.append(f"| {row['batch']} × {row['length']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("**sdpa / eager** time, same weights (below 1: sdpa faster): wall; CPU")
    lines.append("")
    lines.append("| batch × length | " + " | ".join(f"{_pct(f)} pruned" for f in fr) + " |")
    lines.append("|" + "---|" * (len(fr) + 1))
    for row in result["sdpa_over_eager"]:
        cells = [f"{row['ratio'][f]:.2f}; {row['cpu_ratio'][f]:.2f}" for f in fr]
        lines.append(f"| {row['batch']} × {row['length']} | " + " | ".join(cells) + " |")
    params = result["by_implementation"][result["implementations"][0]]["parameters"]
    lines.append("")
    lines.append(
        "Parameters: "
        + ", ".join(f"{_pct(f)} pruned {params[f] / 1e6:.2f} M" for f in fr)
        + f". Threads: {result['threads']}; median of {result['repeats']} interleaved samples"
        " of all eight models."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two small shapes, 3 repeats")
    parser.add_argument("--repeats", type=int, default=11, help="samples per model (default 11)")
    parser.add_argument("--min-sample", type=float, default=0.1, help="seconds per sample")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--model", help="local path or hub name (default: packaged MiniLM)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    torch.manual_seed(0)
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    repeats = 3 if args.quick else args.repeats
    with threads(args.threads or torch.get_num_threads()):
        result = run(build_models(args.model), shapes, repeats, args.min_sample)
        made = provenance()
    print(markdown_tables(result))
    if args.json:
        save_results(Path(args.json), {"latency": result}, {"latency": made})
    return 0


if __name__ == "__main__":
    sys.exit(main())
