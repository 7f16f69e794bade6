"""Chapter 6's measurements on the pretrained model, too slow for the notebook's 90 s budget.

Run from the repository root (tens of minutes; the single-head ablation is the slow part):

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/ch6_pretrained.py

writes ``scripts/results/ch6_pretrained.json``: Michel et al. (2019) importance
and single-head ablation on the paraphrase-retrieval test of
`mha_lib.analysis.sentence_eval`, pruning curves (by importance, in reverse, at random
over several seeds) with the retrieval accuracy and the embedding fidelity
after every step, and the one-head-per-layer test. ``--only PART`` recomputes
one part and keeps the others from the existing file; every part records its own
provenance (commit, torch, CPU capability, threads), and the script prints where
each kept part came from. :func:`live_checks` recomputes a sample (the base
accuracy, the largest single-head ablation, the first pruning step) for the
chapter and ``tests/test_ch6_pretrained.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from mha_lib import bert, pruning
from mha_lib.analysis import sentence_eval
from mha_lib.experiments.reproduce import (
    Check,
    kept_parts,
    load_results,
    provenance,
    save_results,
    threads,
)

OUT = Path(__file__).resolve().parent / "results" / "ch6_pretrained.json"
SCORE_GROUPS, SCORE_SEED = 16, 0  # importance: 16 groups = 128 anchors + 128 candidates
EVAL_GROUPS, EVAL_SEED = 24, 1  # metric: 192 held-out anchors, other words and templates
STEP = 18  # heads per pruning step: 25 % of 72, so 25 / 50 / 75 % are on the grid
RANDOM_SEEDS = (0, 1, 2)
PARTS = ("base", "importance", "ablation", "curves", "one_head")
# Tolerances of the live sample against the file. Evaluations of the frozen model agree
# to 1e-6 across CPU kernels (AVX-512, AVX2, none): losses, importance scores and cosines
# are checked to 1e-4, and an accuracy to one item (a near-tie may flip on another CPU).
TOLERANCE = 1e-4


def setup() -> tuple[pruning.BertHeads, list, list, torch.Tensor]:
    model, tokenizer = bert.load()
    score = sentence_eval.make_batches(
        tokenizer, sentence_eval.make_retrieval_set(SCORE_GROUPS, SCORE_SEED)
    )
    evaluation = sentence_eval.make_batches(
        tokenizer, sentence_eval.make_retrieval_set(EVAL_GROUPS, EVAL_SEED)
    )
    heads = pruning.BertHeads(
        model,
        lambda m, b: sentence_eval.retrieval_loss(m, b, reduction="none"),
        sentence_eval.retrieval_accuracy,
        rows_per_example=sentence_eval.GROUP_SIZE,
    )
    reference = sentence_eval.anchor_embeddings(model, evaluation)
    return heads, score, evaluation, reference


def fidelity(heads: pruning.BertHeads, evaluation: list, reference: torch.Tensor) -> float:
    """Cosine of the (pruned) model's anchor embeddings to the unpruned ones."""
    with heads.as_pruned():
        return sentence_eval.embedding_fidelity(heads.model, evaluation, reference)


def masked_loss(heads: pruning.BertHeads, batches: list, layer: int, head: int) -> float:
    """Mean loss over ``batches`` with one head masked (one entry of the ablation scores)."""
    mask = torch.ones(heads.num_layers, heads.num_heads)
    mask[layer, head] = 0.0
    with heads.masked(mask), torch.inference_mode():
        return statistics.fmean(float(heads.loss_fn(heads.model, b).mean()) for b in batches)


def live_checks(
    heads: pruning.BertHeads,
    score: list,
    evaluation: list,
    reference: torch.Tensor,
    committed: dict,
    importance: torch.Tensor,
) -> list[Check]:
    """Recompute a sample of the committed file: base accuracy and loss, the importance scores
    (``importance``, computed by the caller on ``score``), the largest single-head ablation,
    and the first step of the importance pruning curve."""
    item = 1.0 / sum(len(b) for b in evaluation)
    base_loss = pruning.mean_loss(heads, score)
    ablation = torch.tensor(committed["ablation"])
    layer, head = divmod(int(ablation.abs().flatten().nan_to_num(-1).argmax()), heads.num_heads)
    curve = next(c for c in committed["curves"] if c["rule"] == "importance")
    first = pruning.select_heads(importance, heads.present(), curve["pruned"][1])
    removed = {tuple(p) for p in curve["order"][: curve["pruned"][1]]}
    step = heads.clone()
    plan: dict[int, list[int]] = {}
    for lh in first:
        plan.setdefault(lh[0], []).append(lh[1])
    step.prune(plan)
    return [
        Check(
            "full model: retrieval accuracy",
            heads.metric(evaluation),
            committed["base"]["accuracy"],
            item,
        ),
        Check(
            "full model: mean loss on the scoring set (nats)",
            base_loss,
            committed["base"]["score_loss"],
            TOLERANCE,
        ),
        Check(
            "importance of all heads",
            importance.flatten().tolist(),
            torch.tensor(committed["importance"]["per_example"]).flatten().tolist(),
            TOLERANCE,
        ),
        Check(
            f"ablation of layer {layer}, head {head} (nats)",
            masked_loss(heads, score, layer, head) - base_loss,
            float(ablation[layer, head]),
            TOLERANCE,
        ),
        Check("first pruning step: heads removed that differ", len(removed ^ set(first)), 0, 0),
        Check(
            "first pruning step: retrieval accuracy",
            step.metric(evaluation),
            curve["metric"][1],
            item,
        ),
        Check(
            "first pruning step: embedding fidelity",
            fidelity(step, evaluation, reference),
            curve["extra"]["fidelity"][1],
            TOLERANCE,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, action="append")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with threads(args.threads):
        run(args)


def run(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    parts = args.only or list(PARTS)
    made = provenance()
    result, provs = {}, {}
    if args.out.exists() and args.only:
        result, provs, lines = kept_parts(
            load_results(args.out), [p for p in (*PARTS, "config") if p not in parts]
        )
        print("\n".join(lines))
    heads, score, evaluation, reference = setup()

    def save(part: str) -> None:
        provs[part] = made
        result["config"] = {
            "score_groups": SCORE_GROUPS,
            "score_seed": SCORE_SEED,
            "eval_groups": EVAL_GROUPS,
            "eval_seed": EVAL_SEED,
            "step": STEP,
            "random_seeds": list(RANDOM_SEEDS),
            "temperature": sentence_eval.TEMPERATURE,
            "chance": sentence_eval.CHANCE,
        }
        provs["config"] = made
        save_results(args.out, result, provs)

    def timed(name: str, fn):  # noqa: ANN202
        start = time.perf_counter()
        value = fn()
        print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
        return value

    if "base" in parts:
        data = sentence_eval.make_retrieval_set(EVAL_GROUPS, EVAL_SEED)
        result["base"] = {
            "accuracy": heads.metric(evaluation),
            "swap_share_of_errors": sentence_eval.swap_error_rate(heads.model, evaluation, data),
            "score_loss": pruning.mean_loss(heads, score),
        }
        save("base")
    if "importance" in parts:
        imp = timed("importance", lambda: pruning.head_importance(heads, score))
        imp_batch = pruning.head_importance(heads, score, per_example=False)
        result["importance"] = {"per_example": imp.tolist(), "per_batch": imp_batch.tolist()}
        save("importance")
    if "ablation" in parts:
        result["ablation"] = timed(
            "ablation", lambda: pruning.ablation_scores(heads, score)
        ).tolist()
        save("ablation")
    if "curves" in parts:
        curves = []
        runs = [("importance", 0), ("reverse", 0)] + [("random", s) for s in RANDOM_SEEDS]
        for rule, seed in runs:
            curve = timed(
                f"curve {rule} {seed}",
                lambda rule=rule, seed=seed: pruning.pruning_curve(
                    heads,
                    score,
                    rule=rule,
                    step=STEP,
                    eval_batches=evaluation,
                    seed=seed,
                    extra={"fidelity": lambda h: fidelity(h, evaluation, reference)},
                ),
            )
            curves.append(curve.to_dict())
            result["curves"] = curves
            save("curves")
    if "one_head" in parts:
        imp = torch.tensor(result["importance"]["per_example"])
        keep = imp.nan_to_num(-1.0).argmax(-1).tolist()
        result["one_head"] = {
            "keep": keep,
            "accuracy": timed(
                "one head", lambda: pruning.one_head_per_layer(heads, evaluation, keep)
            ),
        }
        save("one_head")


if __name__ == "__main__":
    main()
