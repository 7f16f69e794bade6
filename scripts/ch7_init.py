"""Chapter 7's initialisation study: Xavier vs larger initial attention weights.

Trains the same 1-layer, 4-head toy transformer on associative recall with the
query/key/value projections' Xavier weights multiplied by ``init_scale`` and
records, per run, the learning curve and each head's health (state, top
weight, entropy, query/key gradient) at initialisation and after training.

Regenerate the committed results (a few minutes on 2 cores) with:

    .venv/bin/python scripts/ch7_init.py --out scripts/results/ch7_init.json

Runs are seeded and use one thread each, so a rerun on the same torch version
reproduces the file; the chapter re-trains one configuration live and checks it.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from mha_lib.head_health import diagnose_heads
from mha_lib.training import EVAL_SEED_OFFSET, Config, build_model, make_task, train

SCALES = (1.0, 2.0, 4.0, 8.0, 16.0)
SEEDS = (0, 1, 2, 3, 4)
LONG_SCALES, LONG_STEPS = (4.0, 8.0, 16.0), 3000  # do the bad inits only learn slower?
BASE = Config(task="associative_recall", d_model=32, num_heads=4, num_layers=1, steps=600)


def run(init_scale: float, seed: int, steps: int = BASE.steps) -> dict[str, object]:
    """One seeded run: health at initialisation, training curve, health at the end."""
    torch.set_num_threads(1)
    config = Config(**{**BASE.to_dict(), "init_scale": init_scale, "steps": steps})
    task = make_task(config.task, **config.task_args)
    model = build_model(config, task, seed)
    probe = task.sample(256, torch.Generator().manual_seed(seed + 2 * EVAL_SEED_OFFSET))
    before = diagnose_heads(model, *probe)
    result = train(model, task, config, seed, progress=False)
    after = diagnose_heads(model, *probe)
    return {
        "init_scale": init_scale,
        "seed": seed,
        "config": config.to_dict(),
        "result": result.to_dict(),
        "before": before,
        "after": after,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("scripts/results/ch7_init.json"))
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    grid = [(s, seed, BASE.steps) for s in SCALES for seed in SEEDS]
    grid += [(s, 0, LONG_STEPS) for s in LONG_SCALES]
    with ProcessPoolExecutor(args.processes) as pool:
        runs = list(pool.map(run, *zip(*grid, strict=True)))
    args.out.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    for r in runs:
        print(r["init_scale"], r["seed"], r["config"]["steps"], r["result"]["final_accuracy"])


if __name__ == "__main__":
    main()
