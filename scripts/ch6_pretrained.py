"""Chapter 6's measurements on the pretrained model, too slow for the notebook's 90 s budget.

Run from the repository root (tens of minutes; the single-head ablation is the slow part):

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/ch6_pretrained.py

writes ``scripts/results/ch6_pretrained.json``: Michel et al. (2019) importance
and single-head ablation on the paraphrase-retrieval test of
`mha_lib.sentence_eval`, pruning curves (by importance, in reverse, at random
over several seeds) with the retrieval accuracy and the embedding fidelity
after every step, and the one-head-per-layer test. ``--only PART`` recomputes
one part and keeps the others from the existing file.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from mha_lib import bert, pruning, sentence_eval

OUT = Path(__file__).resolve().parent / "results" / "ch6_pretrained.json"
SCORE_GROUPS, SCORE_SEED = 16, 0  # importance: 16 groups = 128 anchors + 128 candidates
EVAL_GROUPS, EVAL_SEED = 24, 1  # metric: 192 held-out anchors, other words and templates
STEP = 18  # heads per pruning step: 25 % of 72, so 25 / 50 / 75 % are on the grid
RANDOM_SEEDS = (0, 1, 2)
PARTS = ("base", "importance", "ablation", "curves", "one_head")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, action="append")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    parts = args.only or list(PARTS)
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    heads, score, evaluation, reference = setup()

    def fidelity(h: pruning.BertHeads) -> float:
        with h._as_is():
            return sentence_eval.embedding_fidelity(h.model, evaluation, reference)

    def save() -> None:
        result["config"] = {
            "score_groups": SCORE_GROUPS,
            "score_seed": SCORE_SEED,
            "eval_groups": EVAL_GROUPS,
            "eval_seed": EVAL_SEED,
            "step": STEP,
            "random_seeds": list(RANDOM_SEEDS),
            "temperature": sentence_eval.TEMPERATURE,
            "chance": sentence_eval.CHANCE,
            "torch": torch.__version__,
            "machine": platform.machine(),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")

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
        save()
    if "importance" in parts:
        imp = timed("importance", lambda: pruning.head_importance(heads, score))
        imp_batch = pruning.head_importance(heads, score, per_example=False)
        result["importance"] = imp.tolist()
        result["importance_per_batch"] = imp_batch.tolist()
        save()
    if "ablation" in parts:
        result["ablation"] = timed(
            "ablation", lambda: pruning.ablation_scores(heads, score)
        ).tolist()
        save()
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
                    extra={"fidelity": fidelity},
                ),
            )
            curves.append(curve.to_dict())
            result["curves"] = curves
            save()
    if "one_head" in parts:
        imp = torch.tensor(result["importance"])
        keep = imp.nan_to_num(-1.0).argmax(-1).tolist()
        result["one_head"] = {
            "keep": keep,
            "accuracy": timed(
                "one head", lambda: pruning.one_head_per_layer(heads, evaluation, keep)
            ),
        }
        save()


if __name__ == "__main__":
    main()
