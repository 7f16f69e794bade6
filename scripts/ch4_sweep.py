"""Chapter 4's training sweep: head count h at a fixed d_model, several seeds.

Too long for a notebook (45 runs of up to 4000 steps), so it runs here and
writes a small JSON the chapter reads. Regenerate with::

    .venv/bin/python scripts/ch4_sweep.py --processes 2

(about 45 minutes on 2 busy cores; the file is rewritten after every run).
Every run is seeded and uses one thread, so the numbers are bit-identical on
the same torch version and CPU; the chapter (the ``live`` entries) and
``tests/test_training.py`` (the ``check`` entry) retrain short runs through
:func:`run_one` and compare.
"""

from __future__ import annotations

import argparse
import json
import time
from multiprocessing import get_context
from pathlib import Path

import torch

from mha_lib.geometry import head_sharpness
from mha_lib.training import Config, make_task, run_experiment

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


def with_heads(config: Config, num_heads: int) -> Config:
    """``config`` with another head count (everything else, d_model included, unchanged)."""
    return Config(**{**config.to_dict(), "num_heads": num_heads})


def run_one(config: Config, seed: int) -> dict[str, object]:
    """Train one configuration from one seed; return its JSON record.

    Besides the learning curve, the record holds per-head attention
    statistics of the trained model on a fixed analysis batch: over the
    scored (query) positions and over every position.
    """
    torch.set_num_threads(1)
    model, result = run_experiment(config, seed, progress=False)
    task = make_task(config.task, **config.task_args)
    inputs, targets = task.sample(ANALYSIS_SIZE, torch.Generator().manual_seed(ANALYSIS_SEED))
    maps = model.attention_maps(inputs)[0]  # (B, H, T, T), first layer
    return {
        "config": config.to_dict(),
        "seed": seed,
        "result": result.to_dict(),
        "heads_queries": head_sharpness(maps, rows=targets[0] != -100),
        "heads_all": head_sharpness(maps),
    }


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
    out: dict[str, object] = {"torch": torch.__version__, **{name: [] for name in jobs}}
    if args.only:
        kept = json.loads(args.out.read_text())
        out.update({name: kept[name] for name in jobs if name not in args.only})
        jobs = {name: group for name, group in jobs.items() if name in args.only}
    flat = [(name, job) for name, group in jobs.items() for job in group]
    # Longest jobs first keeps both processes busy to the end; seed before h, so
    # a partial file (written after every run) already covers every head count.
    flat.sort(key=lambda item: (-item[1][0].steps, item[1][1], item[1][0].num_heads))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with get_context("spawn").Pool(args.processes) as pool:
        for name, record in pool.imap_unordered(_job, flat, chunksize=1):
            out[name].append(record)
            args.out.write_text(json.dumps(_rounded(_sorted(out))) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
