"""The planted-match task and heads against hand-checked cases and Monte Carlo."""

import math

import pytest
import torch

from mha_lib.experiments.planted_match import (
    PlantedHeads,
    fixed_head_weights,
    oracle_top1,
    planted_batch,
    right_weight_approx,
    right_weights,
    score_gap,
    train_planted,
)


def test_planted_batch_copies_exactly_the_signal_coordinates():
    queries, keys, target = planted_batch(50, 7, 12, 5, torch.Generator().manual_seed(0))
    assert queries.shape == (50, 12) and keys.shape == (50, 7, 12) and target.shape == (50,)
    right = keys[torch.arange(50), target]  # (B, d)
    assert torch.equal(queries[:, :5], right[:, :5])
    assert not torch.isclose(queries[:, 5:], right[:, 5:]).any()
    q0, k0, t0 = planted_batch(3, 4, 6, 0, torch.Generator().manual_seed(1))
    assert not torch.isclose(q0, k0[torch.arange(3), t0]).any()


@pytest.mark.parametrize(
    ("args", "error"),
    [((2, 3, 4, 5), ValueError), ((2, 3, 4, -1), ValueError), ((0, 3, 4, 1), ValueError)],
)
def test_planted_batch_rejects_bad_sizes(args, error):
    with pytest.raises(error):
        planted_batch(*args, torch.Generator())
    with pytest.raises(TypeError):
        planted_batch(2, 3, 4, 1, generator=0)


def test_fixed_head_by_hand():
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])  # (1, 3, 2)
    query = torch.tensor([[2.0, 0.0]])  # (1, 2)
    scores = torch.tensor([2.0, 0.0, 2.0]) / math.sqrt(2)
    torch.testing.assert_close(fixed_head_weights(query, keys)[0], torch.softmax(scores, 0))
    # Reading the first coordinate only: scores 2·1/√1, 0, 2.
    first = torch.tensor([[1.0, 0.0]])
    expected = torch.softmax(torch.tensor([2.0, 0.0, 2.0]), 0)
    torch.testing.assert_close(fixed_head_weights(query, keys, first)[0], expected)
    with pytest.raises(ValueError):
        fixed_head_weights(query, keys[:, :, :1])
    with pytest.raises(ValueError):
        fixed_head_weights(query, keys, torch.ones(1, 3))


@pytest.mark.parametrize(("dim", "k"), [(64, 16), (512, 64)])
def test_score_gap_and_approximation_against_monte_carlo(dim, k):
    n, num_keys = 20_000, 32
    queries, keys, target = planted_batch(
        n, num_keys, dim, k, torch.Generator().manual_seed(dim), dtype=torch.float64
    )
    scores = (keys @ queries[:, :, None])[..., 0] / math.sqrt(dim)  # (B, T)
    rows = torch.arange(n)
    right = scores[rows, target]
    wrong = scores[rows, (target + 1) % num_keys]
    gap = (right - wrong).mean().item()
    se = (right - wrong).std().item() / math.sqrt(n)
    assert abs(gap - score_gap(dim, k)) < 5 * se
    sampled = fixed_head_weights(queries, keys)[rows, target].mean().item()
    # The approximation ignores the spread of the other keys' summed exponentials.
    assert abs(sampled - right_weight_approx(dim, k, num_keys)) < 0.01


def test_approximation_limits():
    assert right_weight_approx(8, 0, 1) == pytest.approx(1.0)
    assert right_weight_approx(64, 64, 32) > 0.95  # gap 8 over 31 other keys
    assert right_weight_approx(4096, 1, 32) < 1.5 / 32  # no usable signal: near 1/T
    assert score_gap(512, 64) == pytest.approx(64 / math.sqrt(512))


def test_right_weights_picks_each_rows_target():
    weights = torch.tensor([[[0.1, 0.9], [0.6, 0.4]], [[0.3, 0.7], [0.2, 0.8]]])  # (2, 2, 2)
    got = right_weights(weights, torch.tensor([1, 0]))
    torch.testing.assert_close(got, torch.tensor([[0.9, 0.4], [0.3, 0.2]]))
    with pytest.raises(ValueError):
        right_weights(weights, torch.tensor([0]))


def test_planted_heads_same_parameters_and_each_head_uses_its_slice():
    counts = {h: sum(p.numel() for p in PlantedHeads(16, h).parameters()) for h in (1, 4, 16)}
    assert len(set(counts.values())) == 1
    torch.manual_seed(0)
    model = PlantedHeads(16, 4)
    queries, keys, _ = planted_batch(5, 6, 16, 4, torch.Generator().manual_seed(0))
    weights = model(queries, keys)  # (B, H, T)
    assert weights.shape == (5, 4, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, 4))
    # Head 1 is one head of width 4 on rows 4..7 of W_q and W_k.
    wq, wk = model.q_proj.weight[4:8], model.k_proj.weight[4:8]
    scores = (keys @ wk.T @ (wq @ queries.T)).diagonal(dim1=0, dim2=2).T / 2  # (B, T)
    torch.testing.assert_close(weights[:, 1], torch.softmax(scores, -1))
    with pytest.raises(ValueError):
        PlantedHeads(16, 3)


def test_training_finds_the_match_and_is_deterministic():
    kwargs = {"num_keys": 8, "steps": 60, "eval_every": 30, "eval_size": 256, "seed": 3}
    first = train_planted(16, 2, 16, **kwargs)
    assert first == train_planted(16, 2, 16, **kwargs)
    assert first["steps"] == [0, 30, 60]
    assert first["right_weight"][-1] > 3 / 8  # well above uniform 1/8
    assert len(first["head_weight"]) == 2 and len(first["head_top1"]) == 2
    assert first["averaged_weight"] == pytest.approx(sum(first["head_weight"]) / 2, abs=1e-6)
    noise = train_planted(16, 2, 0, **kwargs)  # nothing planted: nothing to find
    assert noise["right_weight"][-1] < 2 / 8


def test_oracle_top1_grows_with_the_dimensions_read():
    gen = torch.Generator().manual_seed(0)
    rates = [oracle_top1(m, 32, 4000, gen) for m in (1, 8, 64)]
    assert rates[0] < rates[1] < rates[2] == 1.0
    # One matched coordinate: the right key scores s², the others s·n; by hand, well above 1/T.
    assert 1 / 32 < rates[0] < 0.5
