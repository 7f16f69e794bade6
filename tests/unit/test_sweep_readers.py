"""What chapter 4 reads from the sweep's learning-rate grid, on hand-made records."""

import numpy as np
import pytest

from mha_lib.experiments.studies import ch4_sweep as sweep


def test_plateau_step_is_where_the_curve_stays_near_its_end():
    steps = [0, 100, 200, 300, 400]
    assert sweep.plateau_step([0.1, 0.95, 0.5, 0.96, 0.97], steps, 0.02) == 300  # dip at 200
    assert sweep.plateau_step([0.9, 0.9, 0.9, 0.9, 0.9], steps, 0.01) == 0
    assert sweep.plateau_step([0.1, 0.2, 0.3, 0.4, 0.9], steps, 0.01) == 400
    with pytest.raises(ValueError, match="equally long"):
        sweep.plateau_step([0.1], steps, 0.01)


def _record(h, lr, seed, final):
    return {"config": {"num_heads": h, "lr": lr}, "seed": seed,
            "result": {"eval_accuracy": [0.0, final]}}  # fmt: skip


def test_lr_curves_groups_the_grid_with_the_sweeps_own_runs_in_seed_order():
    pair = [_record(1, 3e-3, s, 0.5 + s / 10) for s in (2, 0, 1, 4)]  # seed 4 is not in the grid
    pair += [_record(32, 3e-3, 0, 0.1)]  # h = 32 is not in the grid
    lr = [_record(1, 1e-2, s, 0.8) for s in (1, 0, 2)]
    curves = sweep.lr_curves({"pair": pair, "lr": lr})
    assert sorted(curves) == [(1, 3e-3), (1, 1e-2)]
    np.testing.assert_allclose(curves[1, 3e-3][:, -1], [0.5, 0.6, 0.7])  # seeds 0, 1, 2
    assert curves[1, 1e-2].shape == (3, 2)


def test_steps_to_level_reads_between_evaluations():
    steps = [0, 100, 200, 300]
    # 0.5 → 0.9 between steps 100 and 200: 0.8 is three quarters of the way
    assert sweep.steps_to_level([0.1, 0.5, 0.9, 0.95], steps, 0.8) == pytest.approx(175.0)
    assert sweep.steps_to_level([0.1, 0.5, 0.9, 0.95], steps, 0.9) == 200.0  # an evaluation
    assert sweep.steps_to_level([0.85, 0.9, 0.9, 0.9], steps, 0.8) == 0.0  # already there
    assert sweep.steps_to_level([0.1, 0.2, 0.3, 0.4], steps, 0.8) == float("inf")  # never
    assert sweep.steps_to_level([0.1, 0.9, 0.5, 0.95], steps, 0.8) == pytest.approx(87.5)
    with pytest.raises(ValueError, match="equally long"):
        sweep.steps_to_level([0.1, 0.2], steps, 0.5)


def _planted(k, h, seed, head_weight, curve):
    return {"config": {"signal_dims": k, "num_heads": h, "seed": seed},
            "result": {"head_weight": head_weight, "right_weight": curve,
                       "steps": [0, 50]}}  # fmt: skip


def test_planted_comparisons_pair_the_seeds():
    from mha_lib.analysis.differences import DIFFERENT, TRIVIAL
    from mha_lib.experiments.studies import ch4_planted as planted

    seeds = planted.SEEDS
    wide = [_planted(64, 1, s, [0.99 + 0.001 * s], [0.03, 0.7 + 0.01 * s]) for s in seeds]
    narrow = [_planted(64, 8, s, [0.98 + 0.001 * s, 0.98 + 0.0012 * s], [0.03, 0.2])
              for s in reversed(seeds)]  # fmt: skip
    data = {"trained": wide + narrow}
    np.testing.assert_allclose(planted.weights(data, 64, 8), [0.98, 0.9811, 0.9822])
    np.testing.assert_allclose(planted.weights(data, 64, 1, step=50), [0.7, 0.71, 0.72])
    final = planted.compare_heads(data, 64, (1, 8))  # paired: the seeds' shift cancels
    assert final.outcome == TRIVIAL and final.difference == pytest.approx(0.01 - 0.0001)
    assert planted.compare_heads(data, 64, (1, 8), step=50).outcome == DIFFERENT
    with pytest.raises(ValueError, match="lacks a seed"):
        planted.weights({"trained": wide[:2]}, 64, 1)
