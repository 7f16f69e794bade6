"""Chapter 3's coupling experiment: does removing one head change what the others learn?

For every seed of `SEEDS` the study trains chapter 4's one-layer toy transformer
(`CONFIG`: associative recall, four heads) three ways from the same initial weights and
the same batches: the full model; the full model again with every initial weight multiplied
by `1 + 1e-6` (how far two runs that differ only in rounding drift apart: the floor of the
comparison); and, for each head in turn, the model with that head removed before the first
step (`mha_lib.experiments.coupling.train_without`). For each run it records the
held-out accuracy, every head's attention rows at the query positions on a fixed probe batch
(summarised as distances to the full model) and the weight each head puts on each named key.
It also trains a two-layer model per seed and records how silencing each first-layer head
moves the maps of the other heads of its layer and of the next layer.

At `CONFIG`'s 400 steps the models are still learning (75-92 % held out), so part of
what removing a head changes could be the speed of learning, not what is learned. The
`converged` part (`run_converged`) repeats the full, nudged and head-removed runs with
`CONVERGED`, three times as many steps, on `CONVERGED_SEEDS`, after which every
run sits near its ceiling: the same comparison at matched accuracy. Run from the repository
root (a few minutes per part on 2 quiet cores)::

    .venv/bin/python -m mha_lib.experiments.studies.ch3_coupling [--only short|converged]

It writes `scripts/results/ch3_coupling.json` with its provenance. `live_checks`
compares a retrained seed (`live_run`) with the file, for the chapter and
`tests/results/test_committed_results.py`; `converged_checks` retrains the first
`PREFIX_STEPS` steps of two converged runs with their whole schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch

from mha_lib.experiments.coupling import (
    map_change_on_ablation,
    map_distance,
    matched_distance,
    named_key_weight,
    query_maps,
    takeover,
    train_without,
)
from mha_lib.experiments.reproduce import (
    Check,
    kept_parts,
    load_results,
    parse_args,
    provenance,
    rounded,
    run_jobs,
    save_results,
    threads,
)
from mha_lib.experiments.training import Config, make_task

NAME = "ch3_coupling.json"
TASK = {"num_keys": 12, "num_values": 8, "num_pairs": 12, "num_queries": 4}
CONFIG = Config(
    task="associative_recall", task_args=TASK, d_model=32, num_heads=4, steps=400, eval_every=50
)
DEEP = replace(CONFIG, num_layers=2)
# Trained to its ceiling: every run of the converged part ends at matched accuracy.
CONVERGED = replace(CONFIG, steps=1200)
CONVERGED_SEEDS = (0, 1, 2)
PARTS = ("short", "converged")
# The converged runs a page retrains (seed 0, full and without head 0), for this many steps
# with the whole run's schedule.
PREFIX_STEPS = 200
SEEDS = (0, 1, 2, 3, 4)
PROBE_SEED, PROBE_SIZE = 999, 512
NUDGE = 1e-6  # relative change of every initial weight in the rounding-floor run
# A retrained run against the file: accuracy (fraction), per-key weights and map distances.
# Seed 0 retrained on plain-C kernels (ATEN_CPU_CAPABILITY=default) differed from the AVX2
# file by at most 4e-7; 1e-3 leaves room for other CPUs and is far below what removing a head
# does (a distance of about 0.1).
TOLERANCE = 1e-3


def probe() -> torch.Tensor:
    """The fixed probe batch every run is read on."""
    task = make_task(CONFIG.task, **CONFIG.task_args)
    inputs, _ = task.sample(PROBE_SIZE, torch.Generator().manual_seed(PROBE_SEED))
    return inputs


def _nudged(config: Config, seed: int) -> tuple[torch.nn.Module, object]:
    """The full model with every initial weight times `1 + NUDGE`: a rounding-size change."""
    from mha_lib.experiments.training import build_model, train

    task = make_task(config.task, **config.task_args)
    model = build_model(config, task, seed)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1 + NUDGE)
    return model, train(model, task, config, seed, progress=False)


def _curve(result: object) -> dict[str, list]:
    return {k: getattr(result, k) for k in ("steps", "eval_accuracy", "eval_loss")}


def _head_runs(
    config: Config, seed: int, *, curves: bool
) -> tuple[dict[str, object], torch.Tensor, object, torch.Tensor]:
    """What both parts train from one seed: the full model, the nudged one and the model
    without each head of layer 0 (with `curves`, each run's learning curve). Returns the
    record, the full model's query maps `(L, H, B, Q, T)`, the task and the probe batch."""
    task = make_task(config.task, **config.task_args)
    inputs = probe()
    curve = _curve if curves else (lambda result: {})
    full, full_result = train_without(config, seed)
    full_maps = query_maps(full, task, inputs)
    record: dict[str, object] = {
        "seed": seed,
        "config": config.to_dict(),
        "full": {
            "accuracy": full_result.final_accuracy,
            **curve(full_result),
            "named_key_weight": named_key_weight(full, task, inputs)[0].tolist(),
        },
    }
    nudged, nudged_result = _nudged(config, seed)
    record["nudged"] = {
        "accuracy": nudged_result.final_accuracy,
        "distance": map_distance(full_maps, query_maps(nudged, task, inputs))[0].tolist(),
    }
    removed = []
    for head in range(config.num_heads):
        model, result = train_without(config, seed, {0: [head]})
        maps = query_maps(model, task, inputs)
        removed.append(
            {
                "head": head,
                "accuracy": result.final_accuracy,
                **curve(result),
                "distance": rounded(map_distance(full_maps, maps)[0].tolist()),
                "named_key_weight": rounded(named_key_weight(model, task, inputs)[0].tolist()),
            }
        )
    record["removed"] = removed
    return record, full_maps, task, inputs


def run_one(seed: int) -> tuple[dict[str, object], torch.Tensor]:
    """One seed: full, nudged and head-removed runs, and the two-layer ablation; also the
    full model's query maps `(L, H, B, Q, T)` for the seed-to-seed baseline."""
    with threads(1):
        record, full_maps, task, inputs = _head_runs(CONFIG, seed, curves=False)
        record["maps"] = full_maps[0].mean((1, 2)).tolist()  # (H, T): a summary for checks
        deep, deep_result = train_without(DEEP, seed)
        record["deep"] = {
            "config": DEEP.to_dict(),
            "accuracy": deep_result.final_accuracy,
            "ablation": [
                map_change_on_ablation(deep, task, inputs, 0, head).tolist()
                for head in range(DEEP.num_heads)
            ],  # (H_removed, L, H)
        }
    return record, full_maps


def run_converged(seed: int) -> tuple[dict[str, object], torch.Tensor]:
    """One seed trained to convergence (`CONVERGED`): full, nudged and every head
    removed, each with its learning curve; also the full model's query maps."""
    with threads(1):
        record, full_maps, _, _ = _head_runs(CONVERGED, seed, curves=True)
    return record, full_maps


def converged_checks(data: dict, seed: int = 0) -> list[Check]:
    """The first `PREFIX_STEPS` steps of the converged runs of `seed` (whole model,
    and without head 0) retrained now with their whole schedule, against the file's curves:
    cheap enough for the page."""
    record = next(r for r in data["converged"] if r["seed"] == seed)
    if record["config"] != CONVERGED.to_dict():
        raise ValueError("the converged part was made with another configuration")
    checks = []
    for label, removed, stored in (
        ("whole model", None, record["full"]),
        ("without head 0", {0: [0]}, record["removed"][0]),
    ):
        with threads(1):
            _, result = train_without(CONVERGED, seed, removed, stop_after=PREFIX_STEPS)
        shown = len(result.steps)
        name = f"converged run, seed {seed}, {label}, first {PREFIX_STEPS} steps"
        checks.append(Check(f"{name}: steps evaluated", result.steps, stored["steps"][:shown], 0))
        checks += [
            Check(f"{name}: {what} at every evaluation", getattr(result, key),
                  stored[key][:shown], TOLERANCE)
            for key, what in (("eval_loss", "loss"), ("eval_accuracy", "accuracy"))
        ]  # fmt: skip
    return checks


def steps_to(steps: list[int], accuracy: list[float], level: float) -> int | None:
    """The first evaluated step at which `accuracy` reaches `level` (None: never)."""
    return next((s for s, a in zip(steps, accuracy, strict=True) if a >= level), None)


def seed_baseline(maps: dict[int, torch.Tensor]) -> list[dict[str, object]]:
    """Distances between the full models of consecutive seeds (the last paired with the
    first): heads by the same index, and paired by best match."""
    out = []
    seeds = sorted(maps)
    for a, b in zip(seeds, seeds[1:] + seeds[:1], strict=True):
        ma, mb = maps[a], maps[b]
        matched, partners = matched_distance(ma, mb)
        out.append(
            {
                "seeds": [a, b],
                "same_index": map_distance(ma, mb)[0].tolist(),
                "matched": matched[0].tolist(),
                "partners": partners[0],
            }
        )
    return out


def _compare(runs: list, baseline: list) -> dict[str, object]:
    """Distances, accuracies and takeovers of one part's runs (see `summarise`)."""

    def surviving(distance: list) -> list[float]:  # a removed head's entry is null
        return [d for d in distance if d is not None]

    def key_weights(rows: list) -> np.ndarray:  # (H, K); a removed head's row is null
        return np.array([[np.nan] * len(rows[0]) if r[0] is None else r for r in rows])

    full = [key_weights(r["full"]["named_key_weight"]) for r in runs]
    moves = [
        takeover(full[i], key_weights(g["named_key_weight"]), g["head"])
        for i, r in enumerate(runs)
        for g in r["removed"]
    ]
    return {
        "distances": {
            "floor": [float(np.mean(r["nudged"]["distance"])) for r in runs],
            "removed": [
                float(np.mean(surviving(g["distance"]))) for r in runs for g in r["removed"]
            ],
            "matched": [float(np.mean(b["matched"])) for b in baseline],
            "same_index": [float(np.mean(b["same_index"])) for b in baseline],
        },
        "accuracy_full": np.array([r["full"]["accuracy"] for r in runs]),
        "accuracy_nudged": np.array([r["nudged"]["accuracy"] for r in runs]),
        "accuracy_removed": np.array([[g["accuracy"] for g in r["removed"]] for r in runs]),
        "takeover": [m for m in moves if m is not None],
    }


def summarise(data: dict) -> dict[str, object]:
    """What the chapter reads from the file: the distances of each comparison (one value per
    pair of runs), accuracies, and where a removed head's keys went
    (`takeover`, for every removed head that was some
    key's best reader)."""
    runs = data["runs"]
    return {
        **_compare(runs, data["seed_baseline"]),
        "deep_ablation": np.array([r["deep"]["ablation"] for r in runs]),  # (seed, head, L, H)
        "deep_accuracy": np.array([r["deep"]["accuracy"] for r in runs]),
    }


def summarise_converged(data: dict, level: float = 0.95) -> dict[str, object]:
    """`summarise`'s comparisons for the runs trained to convergence, and the step at
    which each run first reached `level` held out (`steps_full` per seed,
    `steps_removed` per seed and removed head; NaN: never)."""
    runs = data["converged"]

    def reached(record: dict) -> float:
        step = steps_to(record["steps"], record["eval_accuracy"], level)
        return float("nan") if step is None else float(step)

    return {
        **_compare(runs, data["converged_baseline"]),
        "steps_full": np.array([reached(r["full"]) for r in runs]),
        "steps_removed": np.array([[reached(g) for g in r["removed"]] for r in runs]),
    }


def live_checks(live: dict, committed: dict) -> list[Check]:
    """A retrained seed (full run and head 0 removed) against the file."""
    name = f"coupling, seed {live['seed']}"
    gone = live["removed"][0]
    theirs = committed["removed"][0]
    return [
        Check(f"{name}: full model's accuracy", live["full"]["accuracy"],
              committed["full"]["accuracy"], TOLERANCE),
        Check(f"{name}: weight on each named key, full model",
              sum(live["full"]["named_key_weight"], []),
              sum(committed["full"]["named_key_weight"], []), TOLERANCE),
        Check(f"{name}: accuracy without head 0", gone["accuracy"], theirs["accuracy"],
              TOLERANCE),
        Check(f"{name}: distance of heads 1-3 to the full model without head 0",
              gone["distance"][1:], theirs["distance"][1:], TOLERANCE),
    ]  # fmt: skip


def live_run(seed: int = 0) -> dict[str, object]:
    """What `live_checks` needs, and no more: the full run and head 0 removed."""
    task = make_task(CONFIG.task, **CONFIG.task_args)
    inputs = probe()
    with threads(1):
        full, full_result = train_without(CONFIG, seed)
        model, result = train_without(CONFIG, seed, {0: [0]})
        full_maps = query_maps(full, task, inputs)
        return {
            "seed": seed,
            "full": {
                "accuracy": full_result.final_accuracy,
                "named_key_weight": named_key_weight(full, task, inputs)[0].tolist(),
            },
            "removed": [
                {
                    "head": 0,
                    "accuracy": result.final_accuracy,
                    "distance": rounded(
                        map_distance(full_maps, query_maps(model, task, inputs))[0].tolist()
                    ),
                    "named_key_weight": rounded(named_key_weight(model, task, inputs)[0].tolist()),
                }
            ],
            "models": (full, model),
        }


# The file's parts that each part of the command line writes.
_WRITES = {"short": ("runs", "seed_baseline"), "converged": ("converged", "converged_baseline")}


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, parts=PARTS, argv=argv)
    made = provenance(threads=1)  # every run trains on one thread
    only = tuple(args.only or PARTS)
    parts: dict[str, object] = {}
    provs: dict[str, dict[str, object]] = {}
    keep = [name for part in PARTS if part not in only for name in _WRITES[part]]
    if keep:
        parts, provs, lines = kept_parts(load_results(args.out), keep)
        print("\n".join(lines))
    for part, runner, seeds in (
        ("short", run_one, SEEDS),
        ("converged", run_converged, CONVERGED_SEEDS),
    ):
        if part not in only:
            continue
        done = [result for _, result in sorted(run_jobs(runner, seeds, args.processes))]
        runs = [record for record, _ in done]
        records, baseline = _WRITES[part]
        parts[records] = runs
        parts[baseline] = seed_baseline({r["seed"]: maps for r, maps in done})
        provs[records] = provs[baseline] = made
        for r in runs:
            print(part, r["seed"], r["full"]["accuracy"], [g["accuracy"] for g in r["removed"]])
    order = [name for part in PARTS for name in _WRITES[part] if name in parts]
    save_results(args.out, {n: parts[n] for n in order}, provs)


if __name__ == "__main__":
    main()
