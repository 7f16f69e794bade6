"""Chapter 7's initialisation study: which too-large initial weights hurt a head, and why.

The source article's anecdote: a head "kept not responding"; the cause was "an
initialisation too large, causing gradient explosion"; Xavier initialisation fixed it.
This study trains chapter 4's one-layer, four-head toy transformer on associative recall
and varies one thing at a time, so that the stories can be told apart:

- *which weights* start large: the query and key projections (`qk`: the scores grow
  as `scale²` and the softmax saturates), the value projection (`v`: the scores are
  untouched), or all three (`qkv`, the only setting of the first version);
- *which heads*: all four, or head 0 alone (the article speaks of one head);
- *the optimizer*: AdamW, whose step is about the learning rate per weight whatever the
  gradient's size, or SGD with momentum (no weight decay), whose step is the gradient
  times the learning rate; SGD's learning rate is the fastest of `SGD_LRS` at
  Xavier (the `sgd_lr` part);
- *gradient clipping* to a total norm of `CLIP`, the textbook cure for exploding
  gradients;
- a *matched learning rate*: with `W = scale · W'`, AdamW on `W` at `scale × lr`
  (and `weight_decay / scale`) takes exactly the steps on `W'` that it takes at `lr`,
  SGD at `scale² × lr` too, so the scaled run differs from Xavier only by its
  saturated softmax, not by how far a step moves its weights relative to their size;
- *weight decay on W_q and W_k* (SGD's L2 decay `DECAY`), which shrinks the large
  weights back towards a normal size while training.

Every condition runs with the seeds `SEEDS`; the same seed gives every condition
the same initial weights (before scaling), the same training batches and the same
held-out set, so conditions are compared seed by seed. Each run records its learning
curve; on a fixed probe batch, every sixth of the run, each head's top weight,
entropy, weight on the answer's position, q/k and v gradient (absolute and relative to
the weights) and the gradient reaching its scores; per step on the training batch, the
total gradient norm and each head's q/k gradient (kept as window summaries); at the end,
the accuracy with each head silenced. The floors come first: chance, the best answer that
does not look the key up (the context's most frequent value; exactly and on each held-out
set), and the same model trained with its attention held uniform (`W_q = W_k = 0`).

All of that is one pre-norm layer, where nothing can multiply a gradient up from layer to
layer; `ch7_deep` stacks layers and gives explosion its chance.

Regenerate the committed results (about 15 minutes on 2 quiet cores) with::

    .venv/bin/python -m mha_lib.experiments.studies.ch7_init --processes 2

Runs are seeded and use one thread each, so a rerun on the same CPU and torch build
reproduces the file bit for bit. On another CPU the last bits differ, and a run that
starts saturated turns them into a different curve; `live_checks` therefore
compares what is robust, and the chapter and `tests/results/test_committed_results.py`
re-train runs and assert it. To measure that gap, the study re-runs `KERNEL_SAMPLE`
in a child process on torch's plain-C kernels (`ATEN_CPU_CAPABILITY=default`) and keeps
what the checks compare (the `default_kernels` part, with its own provenance).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from mha_lib.experiments.floors import (
    chance_accuracy,
    context_mode_accuracy,
    expected_context_mode_accuracy,
)
from mha_lib.experiments.head_health import ablation_accuracy
from mha_lib.experiments.reproduce import (
    Check,
    parse_args,
    plain_kernel_sample,
    provenance,
    rounded,
    run_all,
    run_parts,
    save_results,
    threads,
)
from mha_lib.experiments.toy_transformer import scale_attention_
from mha_lib.experiments.training import (
    EVAL_SEED_OFFSET,
    Config,
    build_model,
    make_task,
    train,
)

NAME = "ch7_init.json"
PARTS: tuple[str, ...] = ()  # the study reruns whole: no --only
BASE = Config(task="associative_recall", d_model=32, num_heads=4, num_layers=1, steps=600)
SEEDS = (0, 1, 2, 3, 4)
PROBES = 6  # probe diagnostics at step 0 and 6 more times, evenly spaced
WINDOWS = 12  # per-step training-batch gradients are kept as 12 window summaries
PROBE_SIZE = 256
PROBE_SEED_OFFSET = 2 * EVAL_SEED_OFFSET  # the probe batch: neither training nor held-out
CLIP = 1.0
SGD_LR = 0.3  # SGD with momentum 0.9, no weight decay: the fastest of SGD_LRS at Xavier
SGD_LRS = (0.03, 0.1, 0.3, 1.0)
DECAY = 0.01  # L2 weight decay on W_q and W_k in the decay arm (SGD: 3 % per step)
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
    optimizer: str = "adamw"  # "adamw" or "sgd" (momentum 0.9, no weight decay)
    qk_decay: bool = False  # SGD's L2 weight decay DECAY on W_q and W_k
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
        parts.append("SGD" if self.optimizer == "sgd" else "AdamW")
        if self.qk_decay:
            parts.append("L2 decay on q/k")
        if self.matched_lr:
            parts.append("matched lr")
        if self.clip:
            parts.append("clipped")
        if self.steps != BASE.steps:
            parts.append(f"{self.steps} steps")
        return ", ".join(parts)

    def config(self) -> Config:
        sgd = self.optimizer == "sgd"
        lr = SGD_LR if sgd else BASE.lr
        extra: dict[str, object] = (
            {"optimizer": "sgd", "lr": lr, "weight_decay": 0.0} if sgd else {}
        )
        if self.matched_lr:  # the steps Xavier-sized weights W' = W / scale would take
            extra["projection_lr"] = lr * self.scale ** (2 if sgd else 1)
            if not sgd:  # AdamW decays by lr · weight_decay per step: keep that the same
                extra["projection_weight_decay"] = BASE.weight_decay / self.scale
        if self.qk_decay:
            extra["projection_weight_decay"] = DECAY
        return Config(
            **{
                **BASE.to_dict(),
                "steps": self.steps,
                "init_scale": self.scale,
                "init_projections": self.projections,
                "init_heads": self.heads,
                **extra,
                **({"clip_grad_norm": CLIP} if self.clip else {}),
            }
        )


def sgd(**kwargs: object) -> Condition:
    """The whole model trained by SGD with momentum."""
    return Condition(optimizer="sgd", **kwargs)


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
        sgd(qk_decay=True),
        sgd(scale=BIG, qk_decay=True),
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


def _trained(
    condition: Condition, seed: int, stop_after: int | None = None
) -> tuple[torch.nn.Module, object, tuple[torch.Tensor, ...]]:
    """The model of `condition` and `seed` trained (its first `stop_after` steps, if
    given), the training result with its trace, and the probe batch."""
    config = condition.config()
    task = make_task(config.task, **config.task_args)
    with threads(1):
        model = build_model(config, task, seed)
        if condition.uniform:
            for attention in model.attentions:
                scale_attention_(attention, 0.0, ("q", "k"))
        probe = probe_batch(task, seed)
        every = condition.steps // PROBES
        result = train(
            model, task, config, seed,
            progress=False, record_every=every, probe=probe, stop_after=stop_after,
        )  # fmt: skip
    return model, result, probe


def run_one(condition: Condition, seed: int) -> dict[str, object]:
    """One seeded run of `condition`: its curve, probe diagnostics, gradients, ablation."""
    config = condition.config()
    model, result, probe = _trained(condition, seed)
    with threads(1):
        ablation = ablation_accuracy(model, *probe[:2])
    trace = result.trace
    grad = trace["grad_norm"]
    window = condition.steps // WINDOWS
    windows = range(0, len(grad), window)
    numbers = [key for key in trace["probe"][0] if key != "state"]

    def median_per_head(key: str, start: int) -> list[float]:
        rows = [step[0] for step in trace[key][start : start + window]]  # (W, H)
        return [statistics.median(column) for column in zip(*rows, strict=True)]

    return as_stored(
        {
            "condition": {**asdict(condition), "name": condition.name},
            "seed": seed,
            "config": config.to_dict(),
            "result": {key: value for key, value in result.to_dict().items() if key != "trace"},
            "init_state": trace["probe"][0]["state"][0],
            "probe_steps": trace["probe_steps"],
            # Layer 0 (the only one); each key: one list of per-head values per probe step.
            "probe": {key: [report[key][0] for report in trace["probe"]] for key in numbers},
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


def sgd_lr_run(lr: float, seed: int) -> dict[str, object]:
    """Xavier, the whole model trained by SGD at `lr`: how SGD_LR was chosen."""
    config = Config(**{**BASE.to_dict(), "optimizer": "sgd", "lr": lr, "weight_decay": 0.0})
    task = make_task(config.task, **config.task_args)
    with threads(1):
        model = build_model(config, task, seed)
        probe = probe_batch(task, seed)
        result = train(
            model, task, config, seed, progress=False, record_every=config.steps, probe=probe
        )
    grad = result.trace["grad_norm"]
    return as_stored(
        {
            "lr": lr,
            "seed": seed,
            "config": config.to_dict(),
            "eval_accuracy": result.eval_accuracy,
            "final_accuracy": result.final_accuracy,
            "grad_norm_first": grad[0],
            "grad_norm_max": max((g for g in grad if not math.isnan(g)), default=math.nan),
            "nan_steps": sum(math.isnan(g) for g in grad),
        }
    )


# What a re-trained run must share with the file. Runs are bit-identical on the same CPU
# and torch build; across CPU kernels the chapter states the measured gaps (the
# "default_kernels" part). At initialisation nothing has trained yet: the probe's per-head
# numbers and the first training batch's gradient norm agree far within 1e-3 relative.
INIT_TOLERANCE = 1e-3
# A run that reached the ceiling (at least CEILING) stays there on any CPU: within 1 point.
CEILING = 0.99
LEARNING_TOLERANCE = 0.01
# A run that did not is chaotic: across kernels its final accuracy moved by up to a few
# points; 5 points is far below the gap between "stuck" and "learned".
CHAOTIC_TOLERANCE = 0.05
LIVE_SAMPLE = (
    (Condition(), 0),
    (Condition(scale=BIG), 0),
    (Condition(scale=BIG, heads=ONE_HEAD), 0),
)
KERNEL_SAMPLE = (
    *LIVE_SAMPLE,
    (Condition(scale=BIG), 1),
    (Condition(scale=BIG, projections=("q", "k", "v")), 0),
    (Condition(scale=8.0), 0),
    (Condition(scale=4.0), 0),
    (sgd(), 0),
    (sgd(scale=BIG), 0),
    (sgd(scale=BIG, heads=ONE_HEAD), 0),
)
CHECKED = ("qk_grad", "qk_relative_grad", "top_weight")
CHECKED_LABELS = {
    "qk_grad": "q/k gradient",
    "qk_relative_grad": "relative q/k gradient",
    "top_weight": "top weight",
}


def checked_values(record: dict) -> dict[str, object]:
    """The numbers of a run that `live_checks` compares (and the kernel part keeps)."""
    return {
        "condition": record["condition"],
        "seed": record["seed"],
        "config": record["config"],
        "init": {key: record["probe"][key][0] for key in CHECKED},
        "grad_norm_first": record["train"]["grad_norm_first"],
        "final_accuracy": record["result"]["final_accuracy"],
        "eval_accuracy": record["result"]["eval_accuracy"],
    }


def live_checks(live: dict, committed: dict) -> list[Check]:
    """What a re-trained run must share with the committed one: each a record of `run`
    or of `checked_values` (as the `default_kernels` part keeps them)."""
    if (live["condition"], live["seed"], live["config"]) != (
        committed["condition"],
        committed["seed"],
        committed["config"],
    ):
        raise ValueError("live and committed are not the same configuration and seed")
    name = f"{live['condition']['name']}, seed {live['seed']}"
    new, old = (r if "init" in r else checked_values(r) for r in (live, committed))
    checks = [
        Check(
            f"{name}: {CHECKED_LABELS[key]} of every head at init",
            new["init"][key],
            old["init"][key],
            INIT_TOLERANCE,
            relative=True,
        )
        for key in CHECKED
    ]
    checks.append(
        Check(
            f"{name}: gradient norm on the first training batch",
            new["grad_norm_first"],
            old["grad_norm_first"],
            INIT_TOLERANCE,
            relative=True,
        )
    )
    learned = old["final_accuracy"] >= CEILING
    checks.append(
        Check(
            f"{name}: final accuracy" + ("" if learned else " (a chaotic run)"),
            new["final_accuracy"],
            old["final_accuracy"],
            LEARNING_TOLERANCE if learned else CHAOTIC_TOLERANCE,
        )
    )
    return checks


def initial_checks(
    runs: Sequence[dict], sample: Sequence[tuple[Condition, int]] = LIVE_SAMPLE
) -> list[Check]:
    """Committed runs (records of `run`) of `sample` re-derived at initialisation
    now: every head's q/k gradient (absolute and relative) and top weight on the probe batch,
    and the first training batch's gradient norm. One training step each, so cheap enough
    for every page that shows the study; the finals are `live_checks`' job."""
    checks = []
    for condition, seed in sample:
        record = next(
            (r for r in runs if (r["condition"]["name"], r["seed"]) == (condition.name, seed)),
            None,
        )
        if record is None:
            raise ValueError(f"no committed run of {condition.name!r}, seed {seed}")
        _, result, _ = _trained(condition, seed, stop_after=1)
        trace = result.trace
        now = as_stored(
            {
                "init": {key: trace["probe"][0][key][0] for key in CHECKED},
                "grad_norm_first": trace["grad_norm"][0],
            }
        )
        old = checked_values(record)
        name = f"{condition.name}, seed {seed}"
        checks += [
            Check(f"{name}: {CHECKED_LABELS[key]} of every head at init", now["init"][key],
                  old["init"][key], INIT_TOLERANCE, relative=True)
            for key in CHECKED
        ]  # fmt: skip
        checks.append(
            Check(f"{name}: gradient norm on the first training batch", now["grad_norm_first"],
                  old["grad_norm_first"], INIT_TOLERANCE, relative=True)
        )  # fmt: skip
    return checks


def as_stored(obj: object) -> object:
    """Floats to 5 significant digits and NaN (the relative gradient of weights held at zero)
    as None."""
    return rounded(obj, digits=5)


class Arms(dict):
    """Committed runs by condition name, each a list in seed order: what chapter 7's pages read.

    Built from a part of a result file (a list of run records, each with `condition` and
    `seed`); indexed by name (`arms[condition.name]`) or read through its methods, which
    take a condition (of this study or of `ch7_deep`) and return one row per seed."""

    def __init__(self, runs: Sequence[dict]) -> None:
        super().__init__()
        for record in runs:
            self.setdefault(record["condition"]["name"], []).append(record)
        for records in self.values():
            records.sort(key=lambda record: record["seed"])

    def of(self, condition: object) -> list[dict]:
        """The runs of `condition`, in seed order (KeyError names an arm not committed)."""
        name = condition.name  # type: ignore[attr-defined]
        if name not in self:
            raise KeyError(f"no committed runs of {name!r}")
        return self[name]

    def final(self, condition: object) -> np.ndarray:
        """Final held-out accuracy (%) of each seed."""
        return np.array([100 * r["result"]["final_accuracy"] for r in self.of(condition)])

    def probe(self, condition: object, key: str, step: int = 0) -> np.ndarray:
        """(seeds, heads) values of one probe quantity at a probe step."""
        return np.array([r["probe"][key][step] for r in self.of(condition)], dtype=float)

    def train_stat(self, condition: object, key: str) -> np.ndarray:
        """One training statistic (`record["train"][key]`) of each seed."""
        return np.array([r["train"][key] for r in self.of(condition)], dtype=float)


def glue_values(
    arms: Arms, condition: Condition, against: np.ndarray | None = None
) -> dict[str, float]:
    """What chapter 7's pages glue about one condition, under `key_of` keys: final
    accuracy (%) as mean and sample sd over seeds (`acc_`, `acc_sd_`), and the heads' mean
    top weight and weight on the answer at the end (`top1_`, `ans1_`). With `against`
    (another arm's finals, seed by seed: Xavier's), also the seeds' range (`acc_min_`,
    `acc_max_`), the mean difference from `against` (`diff_`), the top weight at
    initialisation (`top0_`) and the q/k weight norm at initialisation and at the end
    (`qkw0_`, `qkw1_`)."""
    key, acc = key_of(condition), arms.final(condition)

    def probe(name: str, *at: int) -> float:
        return float(arms.probe(condition, name, *at).mean())

    out = {f"acc_{key}": float(np.mean(acc)), f"acc_sd_{key}": float(np.std(acc, ddof=1)),
           f"top1_{key}": probe("top_weight", -1), f"ans1_{key}": probe("answer_weight", -1)}
    if against is not None:
        out |= {f"acc_min_{key}": float(np.min(acc)), f"acc_max_{key}": float(np.max(acc)),
                f"diff_{key}": float(np.mean(acc - against)), f"top0_{key}": probe("top_weight"),
                f"qkw0_{key}": probe("qk_weight"), f"qkw1_{key}": probe("qk_weight", -1)}
    return out


def pm(values: Sequence[float] | np.ndarray) -> str:
    """`mean ± sd` over seeds (sample standard deviation), one decimal: a table cell."""
    values = np.asarray(values, dtype=float)
    return f"{np.mean(values):.1f} ± {np.std(values, ddof=1):.1f}"


def key_of(condition: Condition) -> str:
    """A glue key for a condition: scale, projections, head 0, optimizer, then its flags
    (`16_qk_sgd_clip` for SGD from W_q, W_k × 16 in every head, clipped)."""
    parts = [f"{condition.scale:g}".replace(".", "_"), "".join(condition.projections)]
    if condition.heads is not None:
        parts.append("h0")
    if condition.optimizer == "sgd":
        parts.append("sgd")
    parts += [flag for flag in ("clip", "matched_lr", "qk_decay", "uniform")
              if getattr(condition, flag)]  # fmt: skip
    if condition.steps != BASE.steps:
        parts.append("long")
    return "_".join(parts)


def condition_of(record: dict) -> Condition:
    """The `Condition` a committed run record was made with."""
    fields = {k: v for k, v in record["condition"].items() if k != "name"}
    return Condition(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def _job(item: tuple) -> dict[str, object]:
    part, args = item
    start = time.perf_counter()
    record = (sgd_lr_run if part == "sgd_lr" else run_one)(*args)
    if part == "sgd_lr":
        label, accuracy = f"Xavier, SGD at lr {record['lr']:g}", record["final_accuracy"]
    else:
        label, accuracy = record["condition"]["name"], record["result"]["final_accuracy"]
    seconds = time.perf_counter() - start
    print(f"{label}, seed {record['seed']}: {accuracy:.3f} ({seconds:.0f} s)", flush=True)
    return record


def _steps(job: tuple) -> int:
    part, args = job
    return BASE.steps if part == "sgd_lr" else args[0].steps


def kernel_sample(processes: int) -> list[dict[str, object]]:
    """KERNEL_SAMPLE re-run as the checks compare it: what `main` runs on torch's
    plain-C kernels (`plain_kernel_sample`)."""
    done = run_all(_job, [("runs", job) for job in KERNEL_SAMPLE], processes, longest_first=_steps)
    return [checked_values(record) for record in done]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, argv=argv)
    jobs = {"runs": [("runs", (c, s)) for c in conditions() for s in SEEDS],
            "sgd_lr": [("sgd_lr", (lr, s)) for lr in SGD_LRS for s in SEEDS]}  # fmt: skip
    out = run_parts(_job, jobs, args.processes, longest_first=_steps)
    made = provenance(threads=1)  # every run trains on one thread
    default, default_provenance = plain_kernel_sample(kernel_sample, args.processes)
    parts = {"floors": as_stored(floors()), "runs": out["runs"], "sgd_lr": out["sgd_lr"],
             "default_kernels": default}  # fmt: skip
    provenances = {name: made for name in ("floors", "runs", "sgd_lr")}
    provenances["default_kernels"] = default_provenance
    save_results(args.out, parts, provenances, indent=None)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
