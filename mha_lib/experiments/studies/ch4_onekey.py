"""Chapter 4's one-key puzzle: why one head ends below several heads on one-key recall.

The sweep (`.ch4_sweep`, part `recall`) trains one-key associative recall at d_model 32:
one head ends a few points short of 100 %, four heads reach it. This study trains the same
configuration (`RECALL`) for h = 1, 2 and 4 over `SEEDS` (the sweep's three and
two more; the shared runs are the sweep's, bit for bit) and asks where one head's errors fall.
On `ANALYSIS_SIZE` fresh sequences it records, per run, the error rate of every
(key, value) context token a query can ask for, the tokens that are dead
(`DEAD_ERROR`), the share of errors on them beside the
share of answers that need them, the weight the heads put on the right pair when the answer is
right and when it is wrong, and how far each token's embedding moved from its initial value.
Part `checkpoints` repeats the analysis on the start of the h = 1 and h = 4 runs
(`CHECKPOINTS`, the full run's schedule, bit for bit its first steps): when tokens die.
Part `long` trains h = 1 for `LONG_STEPS` steps (four times as long, its own cosine
schedule) on `LONG_SEEDS`: do dead tokens revive with more training?

Regenerate with::

    .venv/bin/python -m mha_lib.experiments.studies.ch4_onekey --processes 2

(about 15 minutes on 2 free cores, far longer on busy ones; every part records its
provenance). The chapter
retrains the first `LIVE_STEPS` steps of h = 1, seed 0 and checks them against the
`checkpoints` record of that step within `TOLERANCE` (`live_checks`).

The tests, fixed before the runs (`verdicts`):

* **Errors concentrate on few tokens.** Per seed of h = 1, the share of errors on dead tokens
  minus the share of answers that need them (what errors spread evenly would give); a
  one-sample test against 0 with margin `MARGIN_SHARE`.
* **More maps strand fewer tokens.** Dead-token counts paired by seed, h = 1 against 2,
  2 against 4 and 1 against 4, margin `MARGIN_TOKENS`, Holm-corrected over the three.
* **A wrong answer is a missed look-up.** For h = 1, per seed, the mean weight on the right
  pair when right minus when wrong, margin `MARGIN_WEIGHT`.
* **Slowness.** h = 1 after `LONG_STEPS` steps against its `RECALL` run, dead
  tokens paired by seed (margin `MARGIN_TOKENS`) and accuracy (margin
  `MARGIN_POINTS`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

from mha_lib.analysis.differences import Difference, compare, holm
from mha_lib.analysis.recall_errors import dead_tokens, error_share, right_weight, token_errors
from mha_lib.experiments.reproduce import (
    Check,
    parse_args,
    rounded,
    run_jobs,
    save_results,
    start_parts,
    threads,
)
from mha_lib.experiments.studies.ch4_sweep import RECALL, with_heads
from mha_lib.experiments.training import Config, build_model, make_task, run_experiment

NAME = "ch4_onekey.json"
PARTS = ("runs", "checkpoints", "long")
HEADS = (1, 2, 4)
SEEDS = (0, 1, 2, 3, 4)
CHECKPOINTS = (100, 200, 400, 1000)  # steps of the 2000-step runs; the end is in `runs`
CHECKPOINT_HEADS = (1, 4)
LONG_STEPS = 4 * RECALL.steps
LONG_SEEDS = (0, 1, 2)  # the sweep's seeds: the long arm costs as much as all the other runs
# Fresh sequences, from a seed far from every training (0, 1, …) and held-out stream.
ANALYSIS_SEED = 777_777
ANALYSIS_SIZE = 4096
LIVE_STEPS = 400  # the chapter retrains h = 1, seed 0 this far (a checkpoint)
# Accuracy and weights are fractions, error shares too: one flipped answer of the 16 384 moves
# the accuracy by 6e-5. Runs are bit-identical on one CPU; another CPU's last bits, over 400
# steps, move these numbers far less than 1e-3, and any change of code or data far more.
TOLERANCE = 1e-3
# Margins, fixed before the runs: one dead token (of 96) is the smallest count that matters;
# 0.1 of the errors; 0.05 of the attention weight (planted-match chapter's margin); 1 point.
MARGIN_TOKENS = 1.0
MARGIN_SHARE = 0.1
MARGIN_WEIGHT = 0.05
MARGIN_POINTS = 1.0


def onekey(num_heads: int, steps: int | None = None) -> Config:
    """The sweep's one-key configuration with `num_heads` heads (and `steps` if given)."""
    config = with_heads(RECALL, num_heads)
    if steps is None:
        return config
    return Config(**{**config.to_dict(), "steps": steps})


@torch.no_grad()
def analyse(model: torch.nn.Module, config: Config, seed: int) -> dict[str, object]:
    """Where `model`'s answers on `ANALYSIS_SIZE` fresh sequences go wrong.

    Per (key, value) context token: answers that need it and wrong ones; the dead tokens and
    the shares of errors and answers on them; the weight on the right pair (the largest over
    heads: one head reading it is enough) when the answer is right and when wrong, and the
    share of wrong answers whose best head's top weight is on the right pair; the relative
    distance of each token's embedding from its initial value, dead tokens against the rest.
    """
    task = make_task(config.task, **config.task_args)
    n, vocab = task.num_pairs, task.num_keys * task.num_values
    inputs, targets = task.sample(ANALYSIS_SIZE, torch.Generator().manual_seed(ANALYSIS_SEED))
    model.eval()
    logits, maps = model(inputs, need_weights=True)  # (B, T, C), [(B, H, T, T)]
    wrong = logits[:, n:].argmax(-1) != targets[:, n:]  # (B, Q)
    positions = task.answer_positions(inputs)[:, n:, 0]  # (B, Q)
    answer = inputs[:, :n].gather(1, positions)  # (B, Q), the token to read
    errors, counts = token_errors(answer, wrong, vocab)
    dead = dead_tokens(errors, counts)
    on_errors, on_answers = error_share(errors, counts, dead)
    rows = torch.arange(n, task.seq_len)
    right = right_weight(maps[0], positions, rows).max(1).values  # (B, Q), best head
    top = maps[0][:, :, rows, :].argmax(-1) == positions[:, None, :]  # (B, H, Q)
    initial = build_model(config, task, seed).tok_emb.weight[:vocab]  # (V, D)
    learned = model.tok_emb.weight[:vocab]
    moved = ((learned - initial).norm(dim=1) / initial.norm(dim=1)).numpy()  # (V,)
    live = np.setdiff1d(np.arange(vocab), dead)
    return {
        "accuracy": float(1 - wrong.float().mean()),
        "token_errors": errors.tolist(),
        "token_counts": counts.tolist(),
        "dead": dead.tolist(),
        "dead_error_share": on_errors,
        "dead_answer_share": on_answers,
        "weight_right": float(right[~wrong].mean()),
        "weight_wrong": float(right[wrong].mean()) if wrong.any() else None,
        "top_right_when_wrong": float(top.any(1)[wrong].float().mean()) if wrong.any() else None,
        "moved_dead": float(moved[dead].mean()) if dead.size else None,
        "moved_live": float(moved[live].mean()),
    }


def run_one(config: Config, seed: int, stop_after: int | None = None) -> dict[str, object]:
    """Train `config` from `seed` (its first `stop_after` steps, the full schedule) on
    one thread and analyse it: the JSON record."""
    with threads(1):
        model, result = run_experiment(config, seed, progress=False, stop_after=stop_after)
        found = analyse(model, config, seed)
    return {
        "config": config.to_dict(),
        "seed": seed,
        "step": result.steps[-1],
        "result": result.to_dict(),
        **found,
    }


def live_checks(live: dict, committed: dict) -> list[Check]:
    """A retrained record against the committed one: its learning curve, its accuracy and
    weights on the analysis sequences, and every token's error count (exact on one CPU; a
    tolerance of one answer per token elsewhere would still catch a changed token)."""
    keys = ("config", "seed", "step")
    if any(live[k] != committed[k] for k in keys):
        raise ValueError("live and committed are not the same configuration, seed and step")
    name = f"one-key, h = {live['config']['num_heads']}, seed {live['seed']}, step {live['step']}"
    checks = [
        Check(f"{name}: {label} at every evaluation", live["result"][key],
              committed["result"][key], TOLERANCE)
        for key, label in (("eval_loss", "loss"), ("eval_accuracy", "accuracy"))
    ]  # fmt: skip
    checks += [
        Check(f"{name}: {key.replace('_', ' ')}", live[key], committed[key], TOLERANCE)
        for key in ("accuracy", "weight_right", "weight_wrong", "dead_error_share")
    ]
    checks.append(
        Check(
            f"{name}: wrong answers per token", live["token_errors"], committed["token_errors"], 1
        )
    )
    return checks


def records(data: dict, part: str, num_heads: int, step: int | None = None) -> list[dict]:
    """The records of `part` with `num_heads` heads (at `step` for checkpoints), one per
    seed of the part (`LONG_SEEDS` for `long`, else `SEEDS`), in seed order
    (ValueError if one is missing)."""
    seeds = LONG_SEEDS if part == "long" else SEEDS
    found = {
        r["seed"]: r
        for r in data[part]
        if r["config"]["num_heads"] == num_heads and (step is None or r["step"] == step)
    }
    if sorted(found) != list(seeds):
        raise ValueError(f"{part!r} lacks seeds for h = {num_heads}, step {step}: {sorted(found)}")
    return [found[s] for s in seeds]


def per_seed(
    data: dict, part: str, num_heads: int, key: str, step: int | None = None
) -> np.ndarray:
    """One number per seed: `key` of each record (`"dead"` gives the dead-token count)."""
    rows = records(data, part, num_heads, step)
    if key == "dead":
        return np.array([len(r["dead"]) for r in rows], dtype=float)
    return np.array([r[key] for r in rows], dtype=float)


def verdicts(data: dict) -> dict[str, object]:
    """The tests fixed in the module's docstring, as `Difference` objects.

    `concentration`: h = 1, share of errors on dead tokens minus share of answers on them.
    `maps`: dead counts paired by seed, keys `(a, b)` for a − b heads' counts, with
    `maps_holm` their Holm-adjusted p-values. `weight`: right minus wrong, h = 1.
    `long_dead`, `long_points`: h = 1 at `LONG_STEPS` minus at `RECALL`'s
    steps (tokens, accuracy points)."""
    share = per_seed(data, "runs", 1, "dead_error_share") - per_seed(
        data, "runs", 1, "dead_answer_share"
    )
    pairs = ((1, 2), (2, 4), (1, 4))
    dead = {h: per_seed(data, "runs", h, "dead") for h in HEADS}
    maps: dict[tuple[int, int], Difference] = {
        (a, b): compare(dead[a], dead[b], margin=MARGIN_TOKENS, paired=True) for a, b in pairs
    }
    adjusted = holm([maps[p].p_difference for p in pairs])
    return {
        "concentration": compare(share, margin=MARGIN_SHARE),
        "maps": maps,
        "maps_holm": dict(zip(pairs, (float(p) for p in adjusted), strict=True)),
        "weight": compare(
            per_seed(data, "runs", 1, "weight_right"),
            per_seed(data, "runs", 1, "weight_wrong"),
            margin=MARGIN_WEIGHT,
            paired=True,
        ),
        "long_dead": compare(
            per_seed(data, "long", 1, "dead"),
            dead[1][: len(LONG_SEEDS)],
            margin=MARGIN_TOKENS,
            paired=True,
        ),
        "long_points": compare(
            100 * per_seed(data, "long", 1, "accuracy"),
            100 * per_seed(data, "runs", 1, "accuracy")[: len(LONG_SEEDS)],
            margin=MARGIN_POINTS,
            paired=True,
        ),
    }


def _job(item: tuple[str, tuple[Config, int, int | None]]) -> tuple[str, dict[str, object]]:
    name, (config, seed, stop_after) = item
    start = time.perf_counter()
    record = run_one(config, seed, stop_after)
    print(
        f"{name} h={config.num_heads} steps={record['step']} seed={seed}: "
        f"acc={record['accuracy']:.4f} dead={len(record['dead'])} "
        f"({time.perf_counter() - start:.0f} s)",
        flush=True,
    )
    return name, record


def _key(record: dict) -> tuple[int, int, int]:
    return (record["config"]["num_heads"], record["step"], record["seed"])


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, parts=PARTS, argv=argv)
    jobs = {
        "runs": [(onekey(h), s, None) for h in HEADS for s in SEEDS],
        "checkpoints": [
            (onekey(h), s, k) for h in CHECKPOINT_HEADS for s in SEEDS for k in CHECKPOINTS
        ],
        "long": [(onekey(1, LONG_STEPS), s, None) for s in LONG_SEEDS],
    }
    out, provs, jobs = start_parts(args.out, jobs, args.only)
    flat = [(name, job) for name, group in jobs.items() for job in group]
    # The final runs first (seed before h: a partial file covers every head count), then the
    # checkpoints, the long arm last.
    flat.sort(key=lambda item: (PARTS.index(item[0]), item[1][1], item[1][0].num_heads))
    for _, (name, record) in run_jobs(_job, flat, args.processes):
        out[name].append(record)
        out[name].sort(key=_key)
        save_results(args.out, rounded(out, decimals=6), provs, indent=None)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
