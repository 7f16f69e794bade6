"""Chapter 7's initialisation study: which too-large initial weights hurt a head, and why.

The source article's anecdote: a head "kept not responding"; the cause was "an
initialisation too large, causing gradient explosion"; Xavier initialisation fixed it.
This script trains chapter 4's one-layer, four-head toy transformer on associative recall
and varies one thing at a time, so that the stories can be told apart:

- *which weights* start large: the query and key projections (``qk``: the scores grow
  as ``scale²`` and the softmax saturates), the value projection (``v``: the scores are
  untouched), or all three (``qkv``, the only setting of the first version);
- *which heads*: all four, or head 0 alone (the article speaks of one head);
- *the optimizer of the scaled weights*: AdamW, whose step is about the learning rate
  per weight whatever the gradient's size, or SGD with momentum, whose step is the
  gradient times the learning rate (the rest of the model keeps AdamW: SGD on the whole
  model does not leave the chance plateau of this task from any initialisation, see the
  ``sgd_whole_model`` part);
- *gradient clipping* to a total norm of :data:`CLIP`, the textbook cure for exploding
  gradients;
- a *matched learning rate*: with ``W = scale · W'``, AdamW on ``W`` at ``scale × lr``
  takes exactly the steps on ``W'`` that it takes at ``lr`` (SGD: ``scale² × lr``), so
  the scaled run differs from Xavier only by the saturated softmax, not by its weights
  being large for the optimizer's step.

Every condition runs with the seeds :data:`SEEDS`; the same seed gives every condition
the same initial weights (before scaling), the same training batches and the same
held-out set, so conditions are compared seed by seed. Each run records its learning
curve; on a fixed probe batch, every sixth of the run, each head's top weight,
entropy, weight on the answer's position, q/k and v gradient (absolute and relative to
the weights) and the gradient reaching its scores; per step on the training batch, the
total gradient norm and each head's q/k gradient (kept as window summaries); at the end,
the accuracy with each head silenced. The floors come first: chance, the best answer that
does not look the key up (the context's most frequent value; exactly and on each held-out
set), and the same model trained with its attention held uniform (``W_q = W_k = 0``).

Regenerate the committed results (about 10 minutes on 2 quiet cores) with::

    .venv/bin/python scripts/ch7_init.py --processes 2

Runs are seeded and use one thread each, so a rerun on the same CPU and torch build
reproduces the file bit for bit. On another CPU the last bits differ, and a run that
starts saturated turns them into a different curve; :func:`live_checks` therefore
compares what is robust, and the chapter and ``tests/test_committed_results.py``
re-train runs and assert it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

import torch

from mha_lib.experiments.floors import (
    chance_accuracy,
    context_mode_accuracy,
    expected_context_mode_accuracy,
)
from mha_lib.experiments.head_health import ablation_accuracy
from mha_lib.experiments.reproduce import Check, provenance, save_results, threads
from mha_lib.experiments.toy_transformer import scale_attention_
from mha_lib.experiments.training import (
    EVAL_SEED_OFFSET,
    Config,
    build_model,
    make_task,
    train,
)

OUT = Path(__file__).parent / "results" / "ch7_init.json"
BASE = Config(task="associative_recall", d_model=32, num_heads=4, num_layers=1, steps=600)
SEEDS = (0, 1, 2, 3, 4)
PROBES = 6  # probe diagnostics at step 0 and 6 more times, evenly spaced
WINDOWS = 12  # per-step training-batch gradients are kept as 12 window summaries
PROBE_SIZE = 256
PROBE_SEED_OFFSET = 2 * EVAL_SEED_OFFSET  # the probe batch: neither training nor held-out
CLIP = 1.0
SGD_LR = 0.1  # SGD (momentum 0.9) on the scaled projections; the sgd_lr part compares others
SGD_LRS = (0.01, 0.03, 0.1, 0.3, 1.0)
WHOLE_SGD_LRS = (0.1, 0.3, 1.0)
ONE_HEAD = (0,)
SCALES = (2.0, 4.0, 8.0, 16.0)
BIG = 16.0
LONG_STEPS = 3000


@dataclass(frozen=True)
class Condition:
    """One arm of the study (everything but the seed)."""

    scale: float = 1.0
    projections: tuple[str, ...] = ("q", "k")
    heads: tuple[int, ...] | None = None  # None: all heads
    optimizer: str = "adamw"  # of the scaled projections; the rest of the model: AdamW
    weight_decay: float = BASE.weight_decay
    clip: bool = False
    matched_lr: bool = False
    steps: int = BASE.steps
    uniform: bool = False  # W_q = W_k = 0: attention held uniform (a floor)

    @property
    def name(self) -> str:
        if self.uniform:
            return "uniform attention"
        what = "Xavier" if self.scale == 1 else f"{''.join(self.projections)} ×{self.scale:g}"
        parts = [what]
        if self.scale != 1:
            parts.append("all heads" if self.heads is None else "head 0")
        if self.optimizer == "sgd":
            parts.append("SGD + L2 decay" if self.weight_decay else "SGD")
        else:
            parts.append("AdamW")
        if self.matched_lr:
            parts.append("matched lr")
        if self.clip:
            parts.append("clipped")
        if self.steps != BASE.steps:
            parts.append(f"{self.steps} steps")
        return ", ".join(parts)

    def config(self) -> Config:
        lr, decay = (SGD_LR if self.optimizer == "sgd" else BASE.lr), self.weight_decay
        if self.matched_lr:  # the steps Xavier-sized weights W' = W / scale would take
            lr *= self.scale ** (2 if self.optimizer == "sgd" else 1)
            if self.optimizer == "adamw":
                decay /= self.scale  # AdamW's decay is lr · decay per step: keep it
        own = self.optimizer == "sgd" or self.matched_lr
        return Config(
            **{
                **BASE.to_dict(),
                "steps": self.steps,
                "weight_decay": decay,
                "init_scale": self.scale,
                "init_projections": self.projections,
                "init_heads": self.heads,
                **({"projection_optimizer": self.optimizer, "projection_lr": lr} if own else {}),
                **({"clip_grad_norm": CLIP} if self.clip else {}),
            }
        )


def sgd(**kwargs: object) -> Condition:
    """SGD with momentum on the scaled projections, without weight decay unless given."""
    return Condition(**{"optimizer": "sgd", "weight_decay": 0.0, **kwargs})


def conditions() -> list[Condition]:
    """The arms, Xavier first (the chapter's first live check is the first run)."""
    adam = [Condition()]
    adam += [Condition(scale=s) for s in SCALES]  # q/k of all heads: the dose
    adam += [Condition(scale=s, projections=("v",)) for s in (4.0, BIG)]
    adam += [Condition(scale=BIG, projections=("q", "k", "v"))]
    adam += [
        Condition(scale=BIG, heads=ONE_HEAD),
        Condition(scale=BIG, projections=("q", "k", "v"), heads=ONE_HEAD),
    ]
    adam += [Condition(clip=True), Condition(scale=BIG, clip=True)]
    adam += [Condition(scale=BIG, matched_lr=True)]
    adam += [Condition(uniform=True)]
    sgds = [
        sgd(),
        sgd(scale=4.0),
        sgd(scale=BIG),
        sgd(scale=BIG, heads=ONE_HEAD),
        sgd(clip=True),
        sgd(scale=BIG, clip=True),
        sgd(scale=BIG, matched_lr=True),
        sgd(weight_decay=BASE.weight_decay),
        sgd(scale=BIG, weight_decay=BASE.weight_decay),
    ]
    long = [
        Condition(scale=BIG, steps=LONG_STEPS),
        Condition(scale=BIG, projections=("q", "k", "v"), steps=LONG_STEPS),
    ]
    return adam + sgds + long


def probe_batch(task, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # noqa: ANN001
    inputs, targets = task.sample(
        PROBE_SIZE, torch.Generator().manual_seed(seed + PROBE_SEED_OFFSET)
    )
    return inputs, targets, task.answer_positions(inputs)


def run(condition: Condition, seed: int) -> dict[str, object]:
    """One seeded run of ``condition``: its curve, probe diagnostics, gradients, ablation."""
    config = condition.config()
    task = make_task(config.task, **config.task_args)
    with threads(1):
        model = build_model(config, task, seed)
        if condition.uniform:
            for attention in model.attentions:
                scale_attention_(attention, 0.0, ("q", "k"))
        probe = probe_batch(task, seed)
        every = condition.steps // PROBES
        result = train(model, task, config, seed, progress=False, record_every=every, probe=probe)
        ablation = ablation_accuracy(model, *probe[:2])
    trace = result.trace
    grad = trace["grad_norm"]
    window = condition.steps // WINDOWS
    windows = range(0, len(grad), window)
    kept = [key for key in trace["probe"][0] if key not in ("state", "v_relative_grad")]
    layer0 = {key: [report[key][0] for report in trace["probe"]] for key in kept}

    def median_per_head(key: str, start: int) -> list[float]:
        rows = [step[0] for step in trace[key][start : start + window]]  # (W, H)
        return [statistics.median(column) for column in zip(*rows, strict=True)]

    return _rounded(
        {
            "condition": {**asdict(condition), "name": condition.name},
            "seed": seed,
            "config": config.to_dict(),
            "result": {key: value for key, value in result.to_dict().items() if key != "trace"},
            "probe_steps": trace["probe_steps"],
            "probe": layer0,  # each key: one list of per-head values per probe step
            "init": trace["probe"][0],
            "train": {
                "window": window,
                "grad_norm_first": grad[0],
                "grad_norm_max": max(grad),
                "clipped_fraction": sum(g > CLIP for g in grad) / len(grad),
                "grad_norm_median": [statistics.median(grad[i : i + window]) for i in windows],
                "grad_norm_window_max": [max(grad[i : i + window]) for i in windows],
                "qk_grad_median": [median_per_head("qk_grad", i) for i in windows],
                "qk_relative_grad_median": [
                    median_per_head("qk_relative_grad", i) for i in windows
                ],
                "train_loss_median": [
                    statistics.median(trace["train_loss"][i : i + window]) for i in windows
                ],
            },
            "ablation": {
                "accuracy": ablation["accuracy"],
                "without_head": ablation["without_head"][0],
            },
        }
    )


def floors() -> dict[str, object]:
    """Chance, the context's most frequent value (exact and on each seed's held-out set)."""
    task = make_task(BASE.task, **BASE.task_args)
    exact = expected_context_mode_accuracy(task.num_values, task.num_pairs)
    per_seed = []
    for seed in SEEDS:
        inputs, targets = task.sample(
            BASE.eval_size, torch.Generator().manual_seed(seed + EVAL_SEED_OFFSET)
        )
        per_seed.append(context_mode_accuracy(task, inputs, targets))
    return {
        "chance": chance_accuracy(task),
        "mode_exact": float(exact),
        "mode_exact_fraction": [exact.numerator, exact.denominator],
        "mode_eval": per_seed,
        "eval_size": BASE.eval_size,
    }


def sgd_run(lr: float, seed: int, whole_model: bool) -> dict[str, object]:
    """Xavier, SGD at ``lr`` on the q/k projections (or on the whole model), no weight decay:
    how the SGD arm's learning rate was chosen, and why the rest of the model keeps AdamW."""
    if whole_model:
        extra = {"optimizer": "sgd", "lr": lr}
    else:
        extra = {"projection_optimizer": "sgd", "projection_lr": lr}
    config = Config(
        **{**BASE.to_dict(), "weight_decay": 0.0, "init_projections": ("q", "k"), **extra}
    )
    task = make_task(config.task, **config.task_args)
    with threads(1):
        model = build_model(config, task, seed)
        result = train(model, task, config, seed, progress=False)
    return _rounded(
        {
            "lr": lr,
            "seed": seed,
            "config": config.to_dict(),
            "eval_accuracy": result.eval_accuracy,
            "eval_loss": result.eval_loss,
            "final_accuracy": result.final_accuracy,
        }
    )


# What a re-trained run must share with the file, on any CPU (measured across CPU kernels:
# the chapter states the numbers). At initialisation nothing has trained yet: the probe's
# per-head gradients and the first training batch's gradient norm agree to 1e-3 relative.
INIT_TOLERANCE = 1e-3
# A run that learns (to 100 %) has a final accuracy stable to the last digit across kernels.
LEARNING_TOLERANCE = 0.01
# A run that starts saturated is chaotic: its final accuracy moves across kernels; this
# is far below the gap between "stuck" and "learned".
CHAOTIC_TOLERANCE = 0.05
LIVE_SAMPLE = (
    (Condition(), 0),
    (Condition(scale=BIG), 0),
    (Condition(scale=BIG, heads=ONE_HEAD), 0),
)


def is_chaotic(condition: Condition) -> bool:
    """Runs whose first steps are taken on saturated heads."""
    return condition.scale >= 4 and "v" not in condition.projections or condition.scale >= 8


def live_checks(live: dict, committed: dict) -> list[Check]:
    """What a re-trained run (``live``, from :func:`run`) must share with the committed one."""
    if (live["condition"], live["seed"], live["config"]) != (
        committed["condition"],
        committed["seed"],
        committed["config"],
    ):
        raise ValueError("live and committed are not the same configuration and seed")
    name = f"{live['condition']['name']}, seed {live['seed']}"
    condition = Condition(**{k: v for k, v in live["condition"].items() if k != "name"})
    checks = [
        Check(
            f"{name}: {label} of every head at init",
            live["init"][key][0],
            committed["init"][key][0],
            INIT_TOLERANCE,
            relative=True,
        )
        for key, label in (
            ("qk_grad", "q/k gradient"),
            ("qk_relative_grad", "relative q/k gradient"),
            ("top_weight", "top weight"),
        )
    ]
    checks.append(
        Check(
            f"{name}: gradient norm on the first training batch",
            live["train"]["grad_norm_first"],
            committed["train"]["grad_norm_first"],
            INIT_TOLERANCE,
            relative=True,
        )
    )
    chaotic = is_chaotic(condition)
    checks.append(
        Check(
            f"{name}: final accuracy" + (" (a chaotic run)" if chaotic else ""),
            live["result"]["final_accuracy"],
            committed["result"]["final_accuracy"],
            CHAOTIC_TOLERANCE if chaotic else LEARNING_TOLERANCE,
        )
    )
    return checks


def _rounded(obj: object) -> object:
    """Floats to 5 significant digits (the file stays small; the checks use tolerances
    anyway); NaN, e.g. the relative gradient of weights held at zero, to None."""
    if isinstance(obj, float):
        return None if math.isnan(obj) else float(f"{obj:.5g}")
    if isinstance(obj, dict):
        return {key: _rounded(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [_rounded(value) for value in obj]
    return obj


def _job(item: tuple) -> tuple[str, dict[str, object]]:
    part, args = item
    start = time.perf_counter()
    record = run(*args) if part == "runs" else sgd_run(*args)
    accuracy = record["result"]["final_accuracy"] if part == "runs" else record["final_accuracy"]
    label = record["condition"]["name"] if part == "runs" else f"SGD lr {record['lr']:g}"
    seconds = time.perf_counter() - start
    print(f"{label}, seed {record['seed']}: {accuracy:.3f} ({seconds:.0f} s)", flush=True)
    return part, record


def _steps(job: tuple) -> int:
    part, args = job
    return args[0].steps if part == "runs" else BASE.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    jobs = [("runs", (c, s)) for c in conditions() for s in SEEDS]
    jobs += [("sgd_lr", (lr, s, False)) for lr in SGD_LRS for s in SEEDS]
    jobs += [("sgd_whole_model", (lr, s, True)) for lr in WHOLE_SGD_LRS for s in SEEDS]
    # Longest first keeps both processes busy to the end; the file keeps the jobs' order.
    order = sorted(range(len(jobs)), key=lambda i: -_steps(jobs[i]))
    with get_context("spawn").Pool(args.processes) as pool:
        done = dict(zip(order, pool.map(_job, [jobs[i] for i in order], chunksize=1), strict=True))
    out: dict[str, list] = {"runs": [], "sgd_lr": [], "sgd_whole_model": []}
    for i in range(len(jobs)):
        part, record = done[i]
        out[part].append(record)
    made = provenance(threads=1)  # every run trains on one thread
    parts = {"floors": _rounded(floors()), **out}
    save_results(args.out, parts, {name: made for name in parts}, indent=None)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
