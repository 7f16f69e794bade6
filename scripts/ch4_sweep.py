"""Chapter 4's training sweep: head count h at a fixed d_model, several seeds.

Too long for a notebook (45 runs of up to 4000 steps), so it runs here and
writes a small JSON the chapter reads. Regenerate with::

    .venv/bin/python scripts/ch4_sweep.py --processes 2

(about 45 minutes on 2 busy cores; the file is rewritten after every run, and each
part records its provenance: commit, torch, CPU capability, threads). Every run is
seeded and uses one thread, so the numbers are bit-identical on the same CPU and
torch build; on another CPU the last bits differ. The chapter (the ``live``
entries) and ``tests/test_committed_results.py`` (the ``check`` entry) retrain short runs
through :func:`run_one` and compare within :data:`TOLERANCE`.
"""

from __future__ import annotations

import argparse
import time
from multiprocessing import get_context
from pathlib import Path

import torch

from mha_lib.analysis.geometry import head_sharpness
from mha_lib.experiments.reproduce import (
    Check,
    save_results,
    start_parts,
    threads,
)
from mha_lib.experiments.training import Config, make_task, run_experiment

OUT = Path(__file__).parent / "results" / "ch4_sweep.json"
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


def with_heads(config: Config, num_heads: int) -> Config:
    """``config`` with another head count (everything else, d_model included, unchanged)."""
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
    """The JSON record of :func:`train_one` (what the script stores)."""
    return train_one(config, seed)[1]


def live_checks(live: dict, committed: dict) -> list[Check]:
    """A retrained record (``live``) against the committed one: curves and head statistics."""
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


def _job(item: tuple[str, tuple[Config, int]]) -> tuple[str, dict[str, object]]:
    name, (config, seed) = item
    start = time.perf_counter()
    record = run_one(config, seed)
    print(
        f"{config.task} h={config.num_heads} seed={seed}: "
        f"acc={record['result']['final_accuracy']:.3f} ({time.perf_counter() - start:.0f} s)",
        flush=True,
    )
    return name, record


def _sorted(out: dict[str, object]) -> dict[str, object]:
    """Records in a fixed order (by head count, then seed), whatever order they finished in."""
    return {
        name: sorted(group, key=lambda r: (r["config"]["num_heads"], r["seed"]))
        if isinstance(group, list)
        else group
        for name, group in out.items()
    }


def _rounded(obj: object) -> object:
    """Floats to 6 decimals: the file stays small, and the checks use a tolerance anyway."""
    if isinstance(obj, float):
        return round(obj, 6)
    if isinstance(obj, dict):
        return {key: _rounded(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_rounded(value) for value in obj]
    return obj


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("pair", "recall", "live", "check"),
        help="rerun only these groups and keep the others from the existing file",
    )
    args = parser.parse_args()
    jobs = {
        "pair": [(with_heads(PAIR, h), s) for h in HEADS for s in SEEDS],
        "recall": [(with_heads(RECALL, h), s) for h in RECALL_HEADS for s in RECALL_SEEDS],
        "live": [(with_heads(LIVE, h), 0) for h in (1, 4)],
        "check": [(with_heads(CHECK, 2), 0)],
    }
    out, provs, jobs = start_parts(args.out, jobs, args.only)
    flat = [(name, job) for name, group in jobs.items() for job in group]
    # Longest jobs first keeps both processes busy to the end; seed before h, so
    # a partial file (written after every run) already covers every head count.
    flat.sort(key=lambda item: (-item[1][0].steps, item[1][1], item[1][0].num_heads))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with get_context("spawn").Pool(args.processes) as pool:
        for name, record in pool.imap_unordered(_job, flat, chunksize=1):
            out[name].append(record)
            save_results(args.out, _rounded(_sorted(out)), provs, indent=None)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
