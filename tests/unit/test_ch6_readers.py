"""What chapter 6 part 2 reads from the pretrained study's file, on hand-made records."""

import numpy as np
import pytest
import torch

from mha_lib.analysis.differences import DIFFERENT, compare
from mha_lib.experiments.studies import ch6_pretrained as ch6


def _file(full, n=400):
    return {
        "base": {"accuracy": float(np.mean(full)), "items": n},
        "one_head": {"full_correct": ch6.bits(torch.tensor(full))},
        "config": {"items": {"score": 420}},
    }


def test_bits_round_trip():
    x = torch.tensor([True, False, False, True])
    assert ch6.bits(x) == "1001"
    assert torch.equal(ch6.unbits("1001"), x)
    with pytest.raises(ValueError, match="only 0 and 1"):
        ch6.unbits("10x1")


def test_change_is_paired_by_item_in_points():
    rng = np.random.default_rng(0)
    full = rng.random(400) < 0.8
    same = full.copy()
    same[:4] = ~same[:4]  # four items flip: a change well within three points
    worse = np.where(rng.random(400) < 0.3, False, full)  # about a quarter lost
    committed = _file(full)
    near = ch6.change(committed, ch6.bits(torch.tensor(same)))
    assert near.equivalent  # within the margin (shown different or not)
    far = ch6.change(committed, ch6.bits(torch.tensor(worse)))
    assert far.outcome == DIFFERENT and far.high90 < -ch6.MARGIN_POINTS
    expected = compare(100.0 * worse, 100.0 * full, margin=ch6.MARGIN_POINTS, paired=True)
    assert far.difference == pytest.approx(expected.difference)
    assert far.low90 == pytest.approx(expected.low90)


def test_refit_change_reads_the_stored_mean_and_paired_error():
    rng = np.random.default_rng(1)
    full = rng.random(400) < 0.8
    refitted = np.where(rng.random(400) < 0.05, ~full, full)
    committed = _file(full)
    d = refitted.astype(float) - full
    refit = {"pruned": [18, 36], "accuracy": [0.0, float(refitted.mean())],
             "paired_se": [0.0, float(d.std(ddof=1) / np.sqrt(d.size))]}  # fmt: skip
    expected = compare(100.0 * refitted, 100.0 * full, margin=ch6.MARGIN_POINTS, paired=True)
    got = ch6.refit_change(committed, refit, 36)
    assert got.outcome == expected.outcome
    assert (got.low90, got.high90) == pytest.approx((expected.low90, expected.high90))


def test_ablation_survivors_correct_for_every_head():
    committed = _file(np.ones(400, bool))
    # z = 10 survives any correction; z = 2.5 (p ≈ 0.013) survives alone, not among 72
    mean = np.full((6, 12), 0.001)
    mean[0, 0], mean[1, 1] = 0.1, 0.025
    committed["ablation"] = {"mean": mean.tolist(), "stderr": np.full((6, 12), 0.01).tolist()}
    alive = ch6.ablation_survivors(committed)
    assert alive[0, 0] and not alive[1, 1] and alive.sum() == 1
