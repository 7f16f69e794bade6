"""Chapter 6's toy model over several seeds: which heads matter, and what pruning costs.

The chapter trains one seed live; this study trains every seed of `SEEDS` and, for
each, records head importance, single-head ablation (with its standard error), pruning
curves (by importance, in reverse and in random orders), one head per layer (by importance
and the best one, found by trying each), what each head does (the attention its queries put on
the context slot that holds the key they name, per named key), each single-head ablation's
change of held-out accuracy, and, at every step of every pruning curve, whether the pruned
model is shown to stay within `MARGIN_POINTS` of the full one (an equivalence test
paired by held-out sequence, `mha_lib.analysis.differences.compare`). Run from the
repository root (a few minutes on 2 cores):

    .venv/bin/python -m mha_lib.experiments.studies.ch6_toy

writes `scripts/results/ch6_toy.json` with its provenance. `live_checks` compares a
retrained seed with the file for the chapter and `tests/results/test_committed_results.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_lib import pruning
from mha_lib.analysis.differences import EQUIVALENT, TRIVIAL, compare
from mha_lib.analysis.head_stats import mean_entropy
from mha_lib.experiments.reproduce import (
    Check,
    parse_args,
    provenance,
    run_jobs,
    save_results,
    threads,
)
from mha_lib.experiments.training import (
    Config,
    make_task,
    run_experiment,
    toy_accuracy,
    toy_loss,
    toy_sequence_accuracy,
)

NAME = "ch6_toy.json"
PARTS: tuple[str, ...] = ()  # the study reruns whole: no --only
CONFIG = Config(
    task="associative_recall",
    d_model=64,
    num_heads=8,
    num_layers=2,
    steps=300,
    batch_size=64,
    eval_every=100,
)
SEEDS = (0, 1, 2, 3, 4)
RANDOM_SEEDS = (0, 1, 2, 3, 4)
DATA_SEED = 123  # one scoring and evaluation set for every seed: the runs are paired
SCORE_BATCHES, SCORE_SIZE = 4, 256
EVAL_BATCHES, EVAL_SIZE = 2, 512
# Tolerance of a retrained seed against the file. Training this model for 300 steps from
# Xavier weights agreed across CPU kernels (AVX-512, AVX2, none) to about 1e-6 in chapter 4's
# runs; 1e-3 in accuracy and in the l2-normalised scores leaves room for other CPUs.
TOLERANCE = 1e-3
# "Within a point", the chapter's cut-off, as an equivalence margin fixed before these runs:
# one point of held-out accuracy is one query in a hundred answered wrongly where the full
# model answers every one, Michel et al.'s yardstick for a layer cut to one head, and ten times
# the accuracy's standard error over the held-out sequences, so the test can pass.
MARGIN_POINTS = 1.0
# The interval's ends are means over 1024 held-out sequences of per-sequence accuracies, which
# move only if an answer flips: one flipped query of 4 × 1024 moves them by 0.024 points, and
# 0.05 allows two.
EQUIVALENCE_TOLERANCE = 0.05


def masked_sequence_accuracy(
    heads: pruning.HeadAdapter, batches: list, removed: Sequence[Sequence[int]] = ()
) -> torch.Tensor:
    """`(N,)` per-sequence accuracy in points with the `(layer, head)` pairs of `removed`
    masked (masking gives the pruned model's outputs)."""
    mask = heads.ones()
    for layer, head in removed:
        mask[layer, head] = 0.0
    with heads.masked(mask):
        return 100 * toy_sequence_accuracy(heads.model, batches)


def curve_equivalence(
    heads: pruning.HeadAdapter, curve: dict, batches: list, full: torch.Tensor
) -> dict[str, object]:
    """At every step of `curve` (a `PruningCurve.to_dict`), the pruned model against the full
    one (`full`, per-sequence accuracy in points), paired by sequence, margin
    `MARGIN_POINTS`: the outcome and the 90 % interval of the change (points), and
    `within`, the heads removed before the first step not shown within the margin."""
    outcomes, low, high = [], [], []
    within = 0
    for k in curve["pruned"]:
        d = compare(
            masked_sequence_accuracy(heads, batches, curve["order"][:k]), full,
            margin=MARGIN_POINTS, paired=True,
        )  # fmt: skip
        outcomes.append(d.outcome)
        low.append(float(d.low90))
        high.append(float(d.high90))
        if all(o in (EQUIVALENT, TRIVIAL) for o in outcomes):
            within = k
    return {"outcome": outcomes, "low90": low, "high90": high, "within": within}


def data() -> tuple[list, list]:
    """The scoring batches (importance) and the held-out evaluation batches."""
    task = make_task(CONFIG.task, **CONFIG.task_args)
    g = torch.Generator().manual_seed(DATA_SEED)
    score = [task.sample(SCORE_SIZE, g) for _ in range(SCORE_BATCHES)]
    evaluation = [task.sample(EVAL_SIZE, g) for _ in range(EVAL_BATCHES)]
    return score, evaluation


def named_key_attention(model: torch.nn.Module, batch: tuple) -> dict[str, list]:
    """Per head, the attention a query puts on the slot holding the key it names `(L, H)`,
    and the same per named key `(L, H, num_keys)`; and each head's mean entropy."""
    task = make_task(CONFIG.task, **CONFIG.task_args)
    inputs, _ = batch
    maps = model.attention_maps(inputs)  # (L, B, H, T, T)
    n = task.num_pairs
    slot = task.answer_positions(inputs)[:, n:, 0]  # (B, Q): slot of the named key
    rows = maps[:, :, :, n:, :]  # (L, B, H, Q, T)
    on_named = rows.gather(-1, slot[None, :, None, :, None].expand(*rows.shape[:-1], 1))[..., 0]
    named_key = inputs[:, :n].gather(1, slot) // task.num_values  # (B, Q)
    per_key = torch.stack(
        [on_named.transpose(1, 2)[..., named_key == k].mean(-1) for k in range(task.num_keys)],
        dim=-1,
    )  # (L, H, K)
    return {
        "on_named": on_named.mean((1, 3)).tolist(),
        "on_named_by_key": per_key.tolist(),
        "entropy": mean_entropy(maps).mean(1).tolist(),
    }


def run_one(seed: int) -> dict[str, object]:
    """Train one seed and measure everything the chapter shows about its heads."""
    score, evaluation = data()
    with threads(1):
        model, result = run_experiment(CONFIG, seed, progress=False)
        model.eval()
        heads = pruning.MHAHeads(model, toy_loss, toy_accuracy)
        importance = pruning.head_importance(heads, score)
        mean, stderr = pruning.ablation_effects(heads, score)
        curves = [
            pruning.pruning_curve(
                heads, score, rule=rule, step=1, eval_batches=evaluation, seed=r
            ).to_dict()
            for rule, r in [("importance", 0), ("reverse", 0)]
            + [("random", r) for r in RANDOM_SEEDS]
        ]
        keep = importance.argmax(-1).tolist()
        oracle, oracle_accuracy = pruning.best_single_heads(heads, evaluation)
        full = masked_sequence_accuracy(heads, evaluation)
        for c in curves:
            c["equivalence"] = curve_equivalence(heads, c, evaluation, full)
        change = [
            [float((masked_sequence_accuracy(heads, evaluation, [(layer, head)]) - full).mean())
             for head in range(CONFIG.num_heads)]
            for layer in range(CONFIG.num_layers)
        ]  # fmt: skip
        return {
            "seed": seed,
            "config": CONFIG.to_dict(),
            "final_accuracy": result.final_accuracy,
            "accuracy": heads.metric(evaluation),
            "importance": importance.tolist(),
            "ablation": {
                "mean": mean.tolist(),
                "stderr": stderr.tolist(),
                "accuracy_change": change,
            },
            "curves": curves,
            "one_head": {
                "keep": keep,
                "accuracy": pruning.one_head_per_layer(heads, evaluation, keep),
                "oracle": oracle,
                "oracle_accuracy": oracle_accuracy,
            },
            "heads": named_key_attention(model, evaluation[0]),
        }


def live_checks(live: dict, committed: dict) -> list[Check]:
    """A retrained seed against the file: accuracy, importance, the first pruning steps."""
    name = f"toy model, seed {live['seed']}"
    first = [c for c in live["curves"] if c["rule"] == "importance"][0]
    theirs = [c for c in committed["curves"] if c["rule"] == "importance"][0]
    return [
        Check(f"{name}: held-out accuracy", live["accuracy"], committed["accuracy"], TOLERANCE),
        Check(f"{name}: importance of every head", sum(live["importance"], []),
              sum(committed["importance"], []), TOLERANCE),
        Check(f"{name}: accuracy along the importance curve", first["metric"],
              theirs["metric"], TOLERANCE),
        *([Check(f"{name}: importance curve, low end of the 90 % interval of the change "
                 "at every step (points)", first["equivalence"]["low90"],
                 theirs["equivalence"]["low90"], EQUIVALENCE_TOLERANCE)]
          if "equivalence" in first else []),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, argv=argv)
    made = provenance(threads=1)  # every seed trains on one thread
    runs = [record for _, record in sorted(run_jobs(run_one, SEEDS, args.processes))]
    save_results(args.out, {"runs": runs}, {"runs": made})
    for r in runs:
        print(r["seed"], r["accuracy"])


if __name__ == "__main__":
    main()
