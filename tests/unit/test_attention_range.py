"""Attention distance against a uniform head, checked on maps whose answer is known."""

import pytest
import torch

from mha_lib.analysis import attention_range as ar
from mha_lib.analysis import head_stats


@pytest.mark.parametrize("t", [1, 2, 5, 31])
def test_uniform_distance_is_the_mean_distance_of_a_uniform_map(t):
    uniform = torch.full((t, t), 1.0 / t, dtype=torch.float64)
    assert ar.uniform_distance(t) == pytest.approx(float(head_stats.mean_distance(uniform)))


def test_distance_ratio_on_known_maps():
    t = 9
    uniform = torch.full((2, t, t), 1.0 / t)
    local = torch.eye(t).expand(2, t, t)  # every token on itself: distance 0
    ratio = ar.distance_ratio([uniform, local], drop_specials=False)
    assert ratio.shape == (2, 2)
    torch.testing.assert_close(ratio[0], torch.ones(2))
    torch.testing.assert_close(ratio[1], torch.zeros(2))
    # all weight on [CLS] looks "far" from the late tokens; half of it on [CLS] and the rest
    # spread over the words is a uniform head once [CLS] and [SEP] are dropped and renormalised
    cls = torch.zeros(t, t)
    cls[:, 0] = 1.0
    assert float(ar.distance_ratio([cls], drop_specials=False)) > 1.0
    half = torch.full((t, t), 0.5 / (t - 2))
    half[:, 0] = 0.5
    half[:, -1] = 0.0
    torch.testing.assert_close(ar.distance_ratio([half]), torch.ones(1))


def test_far_mass_by_hand():
    t = 6  # without specials: 4 words, distances up to 3
    m = torch.zeros(t, t)
    m[1:-1, 1] = 1.0  # every word row looks at the first word
    measured, uniform = ar.far_mass([m], 2)
    # words 0 … 3 look at word 0: distances 0, 1, 2, 3 → two of four rows are ≥ 2 away
    assert float(measured) == pytest.approx(0.5)
    # uniform over 4 words: pairs at distance ≥ 2 are (0,2),(0,3),(1,3) and mirror: 6 of 16
    assert float(uniform) == pytest.approx(6 / 16)


def test_bad_inputs():
    with pytest.raises(ValueError, match="positive int"):
        ar.uniform_distance(0)
    with pytest.raises(ValueError, match="at least one"):
        ar.distance_ratio([])
    with pytest.raises(ValueError, match="shape"):
        ar.distance_ratio([torch.ones(3, 4)])
    with pytest.raises(ValueError, match="besides"):
        ar.distance_ratio([torch.ones(2, 2) / 2])


def test_decay_map_ends_and_rows():
    t = 7
    m = ar.decay_map(t, torch.tensor([1e-3, 2.0, float("inf")]))  # (3, t, t)
    torch.testing.assert_close(m.sum(-1), torch.ones(3, t, dtype=torch.float64))
    torch.testing.assert_close(m[0], torch.eye(t, dtype=torch.float64))  # all on itself
    torch.testing.assert_close(m[2], torch.full((t, t), 1 / t, dtype=torch.float64))
    # by hand: row 0 with τ = 2 is e^{-j/2} over j = 0 … t−1, normalised
    row = torch.exp(-torch.arange(t, dtype=torch.float64) / 2)
    torch.testing.assert_close(m[1, 0], row / row.sum())
    with pytest.raises(ValueError, match="tau"):
        ar.decay_map(3, 0.0)


def test_matched_decay_recovers_a_decay_head():
    lengths = [5, 9, 9, 14]
    taus = torch.tensor([0.5, 1.5, 4.0])
    maps = [ar.decay_map(t, taus).float() for t in lengths]  # (3, t, t) each
    tokens = [["w"] * t for t in lengths]
    stats = head_stats.head_statistics(maps, tokens)
    tau, self_w = ar.matched_decay(lengths, stats["distance"])
    torch.testing.assert_close(tau, taus, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(self_w, stats["self"], rtol=1e-4, atol=1e-5)
    # per sentence, pooled over query tokens, it is the statistic's self-weight
    per = ar.decay_self_weight(lengths, tau)  # (S, 3)
    pooled = (per * torch.tensor(lengths)[:, None]).sum(0) / sum(lengths)
    torch.testing.assert_close(pooled, stats["self"], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ar.self_weight(maps), per, rtol=1e-4, atol=1e-5)


def test_matched_decay_uniform_and_beyond():
    lengths = [6, 10]
    uniform = sum(t * ar.uniform_distance(t) for t in lengths) / sum(lengths)
    tau, self_w = ar.matched_decay(lengths, torch.tensor([uniform, uniform * 1.3, 0.0]))
    assert torch.isinf(tau[:2]).all()  # as far as a uniform head, or further: uniform
    expected = len(lengths) / sum(lengths)  # a uniform head's pooled self-weight
    torch.testing.assert_close(self_w[:2], torch.full((2,), expected))
    assert float(self_w[2]) > 0.999  # distance 0: all weight on itself
    with pytest.raises(ValueError, match="lengths"):
        ar.matched_decay([], torch.tensor([1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        ar.matched_decay([4], torch.tensor([-1.0]))
