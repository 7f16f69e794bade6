"""Chapter 7's initialisation study: Xavier vs larger initial attention weights.

Trains the same 1-layer, 4-head toy transformer on associative recall with the
query/key/value projections' Xavier weights multiplied by ``init_scale`` and
records, per run, the learning curve and each head's health (state, top
weight, entropy, query/key gradient) at initialisation and after training.

Regenerate the committed results (a few minutes on 2 cores) with:

    .venv/bin/python scripts/ch7_init.py --out scripts/results/ch7_init.json

Runs are seeded and use one thread each, so a rerun on the same CPU and torch
build reproduces the file bit for bit. On another CPU the last bits differ, and
a run started 8 or 16 times too large is chaotic enough to turn them into a
different curve; :func:`live_checks` therefore compares what is robust, and the
chapter and ``tests/test_ch7_init.py`` re-train runs and assert it.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from mha_lib.experiments.head_health import diagnose_heads
from mha_lib.experiments.reproduce import Check, provenance, save_results, threads
from mha_lib.experiments.training import EVAL_SEED_OFFSET, Config, build_model, make_task, train

SCALES = (1.0, 2.0, 4.0, 8.0, 16.0)
SEEDS = (0, 1, 2, 3, 4)
LONG_SCALES, LONG_STEPS = (4.0, 8.0, 16.0), 3000  # do the bad inits only learn slower?
BASE = Config(task="associative_recall", d_model=32, num_heads=4, num_layers=1, steps=600)
# Tolerances of a re-trained run against the file. At initialisation nothing has trained
# yet: per-head gradients agree to 1e-4 across CPU kernels (AVX-512, AVX2, none), so 1e-3
# relative. A run that learns (Xavier) matched the file exactly under all three; one
# point of accuracy at every evaluation leaves room for other CPUs. A run that starts
# saturated is chaotic: across kernels its curve moved by up to 1.5 points and its final
# accuracy by up to 1, against 1.9 points between its seeds, so its final accuracy is
# checked within 3 points — enough to tell "stuck near the floor" from "learned".
INIT_TOLERANCE = 1e-3
LEARNING_TOLERANCE = 0.01
CHAOTIC_TOLERANCE = 0.03
CHAOTIC_SCALES = (8.0, 16.0)


def run(init_scale: float, seed: int, steps: int = BASE.steps) -> dict[str, object]:
    """One seeded run: health at initialisation, training curve, health at the end."""
    config = Config(**{**BASE.to_dict(), "init_scale": init_scale, "steps": steps})
    task = make_task(config.task, **config.task_args)
    with threads(1):
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


def live_checks(live: dict, committed: dict) -> list[Check]:
    """What a re-trained run (``live``, from :func:`run`) must share with the committed one."""
    if (live["init_scale"], live["seed"], live["config"]) != (
        committed["init_scale"],
        committed["seed"],
        committed["config"],
    ):
        raise ValueError("live and committed are not the same configuration and seed")
    name = f"{live['init_scale']:g}× Xavier, seed {live['seed']}"

    def flat(report: dict, key: str) -> list:
        return [v for layer in report[key] for v in layer]

    states = zip(flat(live["before"], "state"), flat(committed["before"], "state"), strict=True)
    states_differ = sum(a != b for a, b in states)
    checks = [
        Check(f"{name}: heads whose state at init differs", states_differ, 0, 0),
        Check(
            f"{name}: relative q/k gradient of every head at init",
            flat(live["before"], "qk_relative_grad"),
            flat(committed["before"], "qk_relative_grad"),
            INIT_TOLERANCE,
            relative=True,
        ),
    ]
    if live["init_scale"] in CHAOTIC_SCALES:
        checks.append(
            Check(
                f"{name}: final accuracy (a chaotic run)",
                live["result"]["final_accuracy"],
                committed["result"]["final_accuracy"],
                CHAOTIC_TOLERANCE,
            )
        )
    else:
        checks.append(
            Check(
                f"{name}: accuracy at every evaluation",
                live["result"]["eval_accuracy"],
                committed["result"]["eval_accuracy"],
                LEARNING_TOLERANCE,
            )
        )
    return checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("scripts/results/ch7_init.json"))
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    grid = [(s, seed, BASE.steps) for s in SCALES for seed in SEEDS]
    grid += [(s, 0, LONG_STEPS) for s in LONG_SCALES]
    with ProcessPoolExecutor(args.processes) as pool:
        runs = list(pool.map(run, *zip(*grid, strict=True)))
    save_results(args.out, {"runs": runs}, {"runs": provenance(threads=1)})
    for r in runs:
        print(r["init_scale"], r["seed"], r["config"]["steps"], r["result"]["final_accuracy"])


if __name__ == "__main__":
    main()
