"""Latency of the pretrained model with 0, 25, 50 and 75 % of its heads removed (float32, CPU).

Run from the repository root:

    HF_HUB_OFFLINE=1 .venv/bin/python bench/pruning.py            # full run, a few minutes
    HF_HUB_OFFLINE=1 .venv/bin/python bench/pruning.py --quick    # smoke run, seconds
    HF_HUB_OFFLINE=1 .venv/bin/python bench/pruning.py --threads 1 --json "$OUT"

With ``OUT=scripts/results/ch6_latency.json`` the last command writes the file
that chapter 6 reads (committed), with its provenance (commit, torch, CPU
capability, threads).

Heads are removed physically (`mha_lib.bert.prune_heads`), the same share from
every layer (`mha_lib.pruning.even_plan`): latency depends on how many heads a
layer keeps, not on which. For every (batch, length) the four models run the
same random token ids; each number is the median of ``--repeats`` samples, the
models interleaved round-robin in a rotating order within each repeat
(`mha_lib.analysis.cost.measure_latency`), so a slow spell of a shared machine hits
them all. Parameters and matrix-multiplication FLOPs are given beside the times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from mha_lib import bert, pruning
from mha_lib.analysis import cost
from mha_lib.experiments.reproduce import provenance, save_results, threads

FRACTIONS = (0.0, 0.25, 0.5, 0.75)
FULL_SHAPES = [(1, 32), (16, 32), (16, 128), (64, 128)]
QUICK_SHAPES = [(1, 16), (8, 32)]


def build_models(path: str | None) -> dict[float, torch.nn.Module]:
    """One copy of the model per pruned fraction."""
    models = {}
    for fraction in FRACTIONS:
        model, _ = bert.load(path)
        kept = [list(range(n)) for n in bert.heads_per_layer(model)]
        plan = pruning.even_plan(kept, fraction)
        if plan:
            bert.prune_heads(model, plan)
        models[fraction] = model
    return models


def run(models: dict[float, torch.nn.Module], shapes, repeats: int, min_sample: float) -> dict:
    vocab = next(iter(models.values())).config.vocab_size
    rows = []
    for batch, length in shapes:
        g = torch.Generator().manual_seed(batch * 1000 + length)
        ids = torch.randint(1000, vocab, (batch, length), generator=g)  # (B, T) ordinary tokens
        mask = torch.ones_like(ids)  # (B, T)
        fns = {
            f: (lambda m=m, i=ids, a=mask: m(input_ids=i, attention_mask=a))
            for f, m in models.items()
        }
        times = cost.measure_latency(
            {str(f): fn for f, fn in fns.items()}, repeats=repeats, min_sample=min_sample
        )
        flops = {str(f): cost.forward_flops(fn) for f, fn in fns.items()}
        rows.append({"batch": batch, "length": length, "seconds": times, "flops": flops})
    return {
        "fractions": list(FRACTIONS),
        "parameters": {str(f): cost.parameter_count(m) for f, m in models.items()},
        "heads": {str(f): sum(bert.heads_per_layer(m)) for f, m in models.items()},
        "rows": rows,
        "threads": torch.get_num_threads(),
        "repeats": repeats,
    }


def markdown_table(result: dict) -> str:
    fr = [str(f) for f in result["fractions"]]
    head = (
        "| batch × length | "
        + " | ".join(f"{float(f):.0%} pruned: ms (speed-up)" for f in fr)
        + " |"
    )
    lines = [head, "|" + "---|" * (len(fr) + 1)]
    for row in result["rows"]:
        base = row["seconds"][fr[0]]
        cells = [f"{row['seconds'][f] * 1e3:.2f} ({base / row['seconds'][f]:.2f}×)" for f in fr]
        lines.append(f"| {row['batch']} × {row['length']} | " + " | ".join(cells) + " |")
    params = result["parameters"]
    lines.append("")
    lines.append(
        "Parameters: "
        + ", ".join(f"{float(f):.0%} pruned {params[f] / 1e6:.2f} M" for f in fr)
        + f". Threads: {result['threads']}; median of {result['repeats']} interleaved samples."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two small shapes, 3 repeats")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--min-sample", type=float, default=0.1, help="seconds per sample")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--model", help="local path or hub name (default: packaged MiniLM)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    repeats = 3 if args.quick else args.repeats
    with threads(args.threads or torch.get_num_threads()):
        result = run(build_models(args.model), shapes, repeats, args.min_sample)
        made = provenance()
    print(markdown_table(result))
    if args.json:
        save_results(Path(args.json), {"latency": result}, {"latency": made})
    return 0


if __name__ == "__main__":
    sys.exit(main())
