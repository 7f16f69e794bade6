"""Chapter 9's comparisons of the committed runs: paired by seed whatever the records' order,
each decided with `compare` at the study's margin, Holm-corrected over a family."""

import numpy as np
import pytest

from mha_lib.analysis.differences import DIFFERENT, EQUIVALENT, compare, holm
from mha_lib.experiments.studies import ch9_sharing as study

SEEDS = range(8)
# Per seed a shared "luck" that every arm inherits: paired tests must cancel it.
LUCK = np.array([-6.0, 4.0, -2.0, 7.0, 0.0, -5.0, 3.0, 1.0])
WOBBLE = np.array([0.3, -0.2, 0.1, -0.3, 0.2, 0.0, -0.1, 0.1])
SHIFT = {"multi_head": 0.0, "grouped": 0.0, "multi_query": -1.0, "shared_query": -20.0,
         "one_head": -12.0}  # fmt: skip


def hard_data():
    records = [
        {"arm": name, "seed": seed,
         "result": {"final_accuracy": (80 + LUCK[seed] + shift + WOBBLE[(seed + i) % 8]) / 100}}
        for i, (name, shift) in enumerate(SHIFT.items())
        for seed in SEEDS
    ]  # fmt: skip
    return {"hard": records[::-1]}  # the file's order is not the seeds' order


def test_arms_are_paired_by_seed_and_decided_at_the_margin():
    data = hard_data()
    acc = study.hard_accuracy(data)
    assert np.allclose(acc["multi_head"], 80 + LUCK + WOBBLE)
    tests = study.arm_differences(data)
    assert set(tests) == set(SHIFT) - {"multi_head"}
    assert tests["grouped"].outcome == EQUIVALENT  # the luck cancels; an unpaired test fails
    unpaired = compare(acc["grouped"], acc["multi_head"], margin=study.MARGIN)
    assert not unpaired.equivalent
    for name in ("shared_query", "one_head"):
        assert tests[name].outcome == DIFFERENT
        assert tests[name].difference == pytest.approx(SHIFT[name], abs=0.5)
    raw = {n: compare(acc[n], acc["multi_head"], margin=study.MARGIN, paired=True) for n in tests}
    names = list(raw)
    expected = holm([raw[n].p_difference for n in names])
    for name, p in zip(names, expected, strict=True):
        assert tests[name].p_difference == pytest.approx(p)
        assert tests[name].p_equivalence >= raw[name].p_equivalence
        assert tests[name].difference == raw[name].difference


def test_arms_with_different_seeds_are_refused():
    data = hard_data()
    data["hard"] = [r for r in data["hard"] if not (r["arm"] == "grouped" and r["seed"] == 3)]
    with pytest.raises(ValueError, match="do not share their seeds"):
        study.arm_differences(data)


def test_uptraining_is_compared_with_its_own_multi_head_model_and_with_scratch():
    records = []
    for task in study.UPTRAIN_TASKS:
        for seed in SEEDS:
            mha = (90 + LUCK[seed]) / 100
            rows = [{"num_kv_heads": g, "pooled": 0.2,
                     "uptrained": mha - (0.001 if g == 2 else 0.2) + WOBBLE[seed] / 100,
                     "scratch_short": 0.2 + WOBBLE[seed] / 100}
                    for g in study.UPTRAIN_KV]  # fmt: skip
            records.append({"task_name": task, "seed": seed, "multi_head": mha, "rows": rows})
    tests = study.uptrain_differences({"uptrain": records[::-1]})
    assert len(tests) == 4 * len(study.UPTRAIN_TASKS)
    for task in study.UPTRAIN_TASKS:
        assert tests["multi_head", task, 2].outcome == EQUIVALENT
        assert tests["multi_head", task, 1].outcome == DIFFERENT
        assert tests["scratch", task, 1].difference > 40
    col = study.uptrain_accuracy({"uptrain": records}, "hard")
    assert np.allclose(col["multi_head"], 90 + LUCK)
    with pytest.raises(ValueError, match="no uptraining runs"):
        study.uptrain_accuracy({"uptrain": records}, "nothing")
