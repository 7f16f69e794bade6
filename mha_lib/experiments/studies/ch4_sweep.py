"""Chapter 4's training sweep: head count h at a fixed d_model, several seeds.

Too long for a notebook (45 runs of up to 4000 steps), so it runs here and
writes a small JSON the chapter reads. Regenerate with::

    .venv/bin/python -m mha_lib.experiments.studies.ch4_sweep --processes 2

(about 45 minutes on 2 busy cores; the file is rewritten after every run, and each
part records its provenance: commit, torch, CPU capability, threads). Every run is
seeded and uses one thread, so the numbers are bit-identical on the same CPU and
torch build; on another CPU the last bits differ. The chapter (the `live`
entries) and `tests/results/test_committed_results.py` (the `check` entry) retrain short runs
through `run_one` and compare within `TOLERANCE`.

The `lr` part asks whether one head is slower rather than weaker: pair recall with one head
and with four, each at the learning rates `LR_GRID` besides the sweep's own (the
`pair` runs of the same seeds), for the sweep's full schedule. Rerun it alone with
`--only lr` (about 20 minutes on 2 cores).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

from mha_lib.analysis.head_stats import head_sharpness
from mha_lib.experiments.reproduce import (
    Check,
    parse_args,
    rounded,
    run_jobs,
    save_results,
    start_parts,
    threads,
)
from mha_lib.experiments.training import Config, make_task, run_experiment

NAME = "ch4_sweep.json"
PARTS = ("pair", "recall", "live", "check", "lr")
HEADS = (1, 2, 4, 8, 16, 32)
SEEDS = (0, 1, 2, 3, 4)
RECALL_HEADS = (1, 4, 16, 32)
RECALL_SEEDS = (0, 1, 2)
ANALYSIS_SEED = 12_345
ANALYSIS_SIZE = 256

# The two-position task: each query names an ordered pair of the 12 keys in
# the context and must answer both values (8 × 8 = 64 classes).
PAIR_TASK = {"num_keys": 12, "num_values": 8, "num_pairs": 12, "num_queries": 4}
PAIR = Config(task="pair_recall", task_args=PAIR_TASK, d_model=32, steps=4000, eval_every=200)
# One lookup per query, same context: isolates the low-rank limit of tiny heads.
RECALL = Config(
    task="associative_recall", task_args=PAIR_TASK, d_model=32, steps=2000, eval_every=100
)
# Short runs the chapter (live) and the tests (check) retrain to verify the cache.
# The live runs use the one-key task, which a few hundred steps already learn.
LIVE = Config(task="associative_recall", task_args=PAIR_TASK, d_model=32, steps=400, eval_every=50)
CHECK = Config(task="pair_recall", task_args=PAIR_TASK, d_model=32, steps=20, eval_every=10)
# How far a retrained short run may be from the file, in loss (nats) and accuracy (fraction)
# at every evaluation and in the head statistics. Measured across CPU kernels (AVX-512,
# AVX2, none) the largest difference was below 1e-6, the file's six decimals included; a
# real change of the code or the data moves these numbers by far more than 1e-3.
TOLERANCE = 1e-3
# The learning rates tried besides PAIR.lr, per head count, on LR_SEEDS (the `lr` part). The
# four-head runs are at their ceiling at PAIR.lr; one more rate says whether they get there
# sooner.
LR_GRID = {1: (1e-3, 1e-2, 3e-2), 4: (1e-2,)}
LR_SEEDS = (0, 1, 2)
# A page that shows the sweep itself retrains the start of two of its runs (h = 1 and 8,
# seed 0) with the whole run's schedule: every evaluation up to PREFIX_STEPS must match.
PREFIX_STEPS = 400
PREFIX_SAMPLE = ((1, 0), (8, 0))


def with_heads(config: Config, num_heads: int) -> Config:
    """`config` with another head count (everything else, d_model included, unchanged)."""
    return Config(**{**config.to_dict(), "num_heads": num_heads})


def train_one(config: Config, seed: int) -> tuple[torch.nn.Module, dict[str, object]]:
    """Train one configuration from one seed; return the model and its JSON record.

    Besides the learning curve, the record holds per-head attention
    statistics of the trained model on a fixed analysis batch: over the
    scored (query) positions and over every position.
    """
    with threads(1):
        model, result = run_experiment(config, seed, progress=False)
        task = make_task(config.task, **config.task_args)
        inputs, targets = task.sample(ANALYSIS_SIZE, torch.Generator().manual_seed(ANALYSIS_SEED))
        maps = model.attention_maps(inputs)[0]  # (B, H, T, T), first layer
    return model, {
        "config": config.to_dict(),
        "seed": seed,
        "result": result.to_dict(),
        "heads_queries": head_sharpness(maps, rows=targets[0] != -100),
        "heads_all": head_sharpness(maps),
    }


def run_one(config: Config, seed: int) -> dict[str, object]:
    """The JSON record of `train_one` (what the study stores)."""
    return train_one(config, seed)[1]


def live_checks(live: dict, committed: dict) -> list[Check]:
    """A retrained record (`live`) against the committed one: curves and head statistics."""
    if (live["config"], live["seed"]) != (committed["config"], committed["seed"]):
        raise ValueError("live and committed are not the same configuration and seed")
    name = f"{live['config']['task']}, h = {live['config']['num_heads']}, seed {live['seed']}"
    checks = [
        Check(
            f"{name}: {label} at every evaluation",
            live["result"][key],
            committed["result"][key],
            TOLERANCE,
        )
        for key, label in (("eval_loss", "loss"), ("eval_accuracy", "accuracy"))
    ]
    checks += [
        Check(
            f"{name}: per-head {key.replace('_', ' ')}",
            live["heads_all"][key],
            committed["heads_all"][key],
            TOLERANCE,
        )
        for key in ("entropy", "max_weight", "diagonal")
    ]
    return checks


def prefix_checks(
    data: dict,
    part: str = "pair",
    sample: Sequence[tuple[int, int]] = PREFIX_SAMPLE,
    *,
    lr: float | None = None,
) -> list[Check]:
    """The first `PREFIX_STEPS` steps of committed runs of `part` (`(h, seed)` in
    `sample`; with `lr`, the run at that learning rate) retrained now, with the full run's
    schedule: every evaluation up to there, loss and accuracy, against the file. Cheap enough
    for every page that shows the sweep."""
    checks = []
    for num_heads, seed in sample:
        record = next(
            (
                r
                for r in data[part]
                if (r["config"]["num_heads"], r["seed"]) == (num_heads, seed)
                and (lr is None or r["config"]["lr"] == lr)
            ),
            None,
        )
        if record is None:
            raise ValueError(f"{part!r} holds no run with h = {num_heads}, seed {seed}, lr {lr}")
        with threads(1):
            _, result = run_experiment(
                Config(**record["config"]), seed, progress=False, stop_after=PREFIX_STEPS
            )
        shown = len(result.steps)
        name = f"{record['config']['task']}, h = {num_heads}, seed {seed}"
        if lr is not None:
            name += f", lr {lr:g}"
        name += f", first {PREFIX_STEPS} steps"
        checks.append(
            Check(f"{name}: steps evaluated", result.steps, record["result"]["steps"][:shown], 0)
        )
        checks += [
            Check(f"{name}: {label} at every evaluation", getattr(result, key),
                  record["result"][key][:shown], TOLERANCE)
            for key, label in (("eval_loss", "loss"), ("eval_accuracy", "accuracy"))
        ]  # fmt: skip
    return checks


def lr_curves(data: dict) -> dict[tuple[int, float], np.ndarray]:
    """Held-out accuracy curves `(seeds, evaluations)` of the learning-rate grid by
    `(h, lr)`, seeds in order: the `lr` part, and the `pair` runs of the same head
    counts and seeds at the sweep's own rate."""
    grouped: dict[tuple[int, float], list] = {}
    for record in data["pair"] + data["lr"]:
        h = record["config"]["num_heads"]
        if h in LR_GRID and record["seed"] in LR_SEEDS:
            key = (h, record["config"]["lr"])
            grouped.setdefault(key, []).append((record["seed"], record["result"]["eval_accuracy"]))
    return {key: np.array([c for _, c in sorted(runs)]) for key, runs in sorted(grouped.items())}


def plateau_step(curve: Sequence[float], steps: Sequence[int], within: float) -> int:
    """The first evaluated step from which `curve` stays within `within` of its last
    value: where the run settled."""
    if len(curve) != len(steps) or not len(curve):
        raise ValueError("curve and steps must be equally long and not empty")
    near = np.asarray(curve) >= curve[-1] - within
    settled = np.flatnonzero(~near)  # the last evaluation is always near
    return int(steps[0 if not settled.size else settled[-1] + 1])


def steps_to_level(curve: Sequence[float], steps: Sequence[int], level: float) -> float:
    """The training step at which `curve` first reaches `level`, read between evaluations
    by a straight line (`inf` if it never does): how fast a run gets there, finer than the
    evaluation interval."""
    if len(curve) != len(steps) or not len(curve):
        raise ValueError("curve and steps must be equally long and not empty")
    values = np.asarray(curve, dtype=float)
    hit = np.flatnonzero(values >= level)
    if not hit.size:
        return float("inf")
    i = int(hit[0])
    if i == 0:
        return float(steps[0])
    before, after = values[i - 1], values[i]
    return float(steps[i - 1] + (level - before) / (after - before) * (steps[i] - steps[i - 1]))


def _job(item: tuple[str, tuple[Config, int]]) -> tuple[str, dict[str, object]]:
    name, (config, seed) = item
    start = time.perf_counter()
    record = run_one(config, seed)
    print(
        f"{config.task} h={config.num_heads} lr={config.lr:g} seed={seed}: "
        f"acc={record['result']['final_accuracy']:.3f} ({time.perf_counter() - start:.0f} s)",
        flush=True,
    )
    return name, record


def _sorted(out: dict[str, object]) -> dict[str, object]:
    """Records in a fixed order (by head count, then seed), whatever order they finished in."""
    return {
        name: sorted(group, key=lambda r: (r["config"]["num_heads"], r["config"]["lr"], r["seed"]))
        if isinstance(group, list)
        else group
        for name, group in out.items()
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, parts=PARTS, argv=argv)
    jobs = {
        "pair": [(with_heads(PAIR, h), s) for h in HEADS for s in SEEDS],
        "recall": [(with_heads(RECALL, h), s) for h in RECALL_HEADS for s in RECALL_SEEDS],
        "live": [(with_heads(LIVE, h), 0) for h in (1, 4)],
        "check": [(with_heads(CHECK, 2), 0)],
        "lr": [
            (Config(**{**with_heads(PAIR, h).to_dict(), "lr": lr}), s)
            for h, rates in LR_GRID.items()
            for lr in rates
            for s in LR_SEEDS
        ],
    }
    out, provs, jobs = start_parts(args.out, jobs, args.only)
    flat = [(name, job) for name, group in jobs.items() for job in group]
    # Longest jobs first keeps both processes busy to the end; seed before h, so
    # a partial file (written after every run) already covers every head count.
    flat.sort(key=lambda item: (-item[1][0].steps, item[1][1], item[1][0].num_heads))
    for _, (name, record) in run_jobs(_job, flat, args.processes):
        out[name].append(record)
        save_results(args.out, rounded(_sorted(out), decimals=6), provs, indent=None)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
