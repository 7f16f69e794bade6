"""How sure a number is (mha_lib.analysis.statistics): the library's one bootstrap interval
against hand-checked cases, and select on one half, report on the other: the helpers pick and
score the right head.

References for the bootstrap: a constant sample (no spread to resample), the binomial standard
error of a proportion, and two identities: grouping every item alone is no grouping at all, and
groups of identical items behave like fewer, heavier items (a wider interval).
"""

import math

import pytest
import torch

from mha_lib.analysis import statistics
from mha_lib.analysis.statistics import (
    best_head,
    best_rule,
    bootstrap_ci,
    bootstrap_p,
    paired_gain,
    paired_stderr,
    percent,
    split_halves,
)


def test_every_interval_of_the_library_is_this_one():
    from mha_lib.experiments.studies import ch5_knockout, ch6_pretrained

    assert statistics.bootstrap_ci is bootstrap_ci
    assert ch5_knockout.bootstrap_ci is bootstrap_ci  # the knockout's role accuracies
    assert ch6_pretrained.bootstrap_ci is bootstrap_ci  # the word-sense accuracy


def test_a_constant_sample_has_no_spread():
    assert bootstrap_ci(torch.full((10,), 0.3)) == pytest.approx((0.3, 0.3))
    assert bootstrap_ci(torch.ones(5, dtype=torch.bool)) == (1.0, 1.0)


@pytest.mark.parametrize("hits", [70, 50])
def test_a_proportion_gets_about_the_binomial_interval(hits):
    values = torch.tensor([True] * hits + [False] * (100 - hits))
    p = hits / 100
    low, high = bootstrap_ci(values, n_boot=4000)
    half = 1.96 * math.sqrt(p * (1 - p) / 100)  # normal approximation of the binomial
    assert low == pytest.approx(p - half, abs=0.03) and high == pytest.approx(p + half, abs=0.03)


def test_groups_of_one_are_items_and_groups_of_equal_items_widen_the_interval():
    values = torch.rand(60, generator=torch.Generator().manual_seed(0))
    assert bootstrap_ci(values, groups=list(range(60))) == bootstrap_ci(values)
    halves = torch.tensor([0.0, 1.0] * 50).sort().values
    alone = bootstrap_ci(halves)
    tens = bootstrap_ci(halves, groups=[i // 10 for i in range(100)])  # ten groups of ten
    assert tens[1] - tens[0] > 2 * (alone[1] - alone[0])  # about sqrt(10) times wider


def test_the_seed_draws_the_resamples():
    values = torch.rand(40, generator=torch.Generator().manual_seed(1))
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: bootstrap_ci([0.5, 1.0]), TypeError, "values must be a torch.Tensor"),
        (lambda: bootstrap_ci(torch.zeros(0)), ValueError, r"\(N,\) with N > 0"),
        (lambda: bootstrap_ci(torch.zeros(3, 2)), ValueError, r"\(N,\) with N > 0"),
        (lambda: bootstrap_ci(torch.zeros(3), groups=[0, 1]), ValueError, "one group per item"),
        (lambda: bootstrap_ci(torch.zeros(3), level=1.5), ValueError, "level"),
        (lambda: bootstrap_ci(torch.zeros(3), n_boot=0), ValueError, "n_boot must be a positive"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_paired_stderr_by_hand():
    a = torch.tensor([1.0, 1.0, 0.0, 0.0])
    b = torch.tensor([1.0, 0.0, 0.0, 0.0])
    # differences 0, 1, 0, 0: mean 1/4, sample sd sqrt((3/16 + 9/16) / 3) = 1/2, over sqrt(4)
    assert paired_stderr(a, b) == pytest.approx(0.25)
    assert paired_stderr(a, a) == 0.0  # the same answers: no noise in the difference
    with pytest.raises(ValueError, match="same shape"):
        paired_stderr(a, b[:3])


def test_the_bootstrap_p_value_reads_the_intervals_resamples():
    assert bootstrap_p(torch.zeros(10)) == 1.0  # every resampled mean is 0: both sides
    assert bootstrap_p(torch.ones(10), n_boot=999) == pytest.approx(2 / 1000)  # never below
    values = torch.rand(60, generator=torch.Generator().manual_seed(2))
    for shift, groups in ((0.0, None), (-0.45, None), (-0.5, [i // 3 for i in range(60)])):
        v = values + shift
        p = bootstrap_p(v, groups, seed=5)
        low, high = bootstrap_ci(v, groups, seed=5)
        assert (p < 0.05) == (low > 0 or high < 0), (shift, p, low, high)
    # the two sides are symmetric: a sample and its negative get one p
    centred = values - 0.45
    assert bootstrap_p(centred, seed=5) == bootstrap_p(-centred, seed=5)


def test_split_halves_is_seeded_disjoint_and_complete():
    a, b = split_halves(11, seed=3)
    assert (a, b) == split_halves(11, seed=3) and (a, b) != split_halves(11, seed=4)
    assert sorted(a + b) == list(range(11)) and len(a) == 5 and not set(a) & set(b)


def test_best_head_is_chosen_on_one_half_and_scored_on_the_other():
    hits = torch.zeros(8, 2, 3)  # items 0-3 select, 4-7 report
    hits[:4, 1, 2] = 1.0  # head 1-2: perfect on the selection half …
    hits[4:6, 1, 2] = 1.0  # … half right on the report half
    hits[:3, 0, 0] = 1.0  # head 0-0: second best on the selection half, perfect on the other
    hits[4:, 0, 0] = 1.0
    best = best_head(hits, [0, 1, 2, 3], [4, 5, 6, 7])
    assert (best.layer, best.head, best.name) == (1, 2, "1-2")
    assert best.selected == 1.0 and best.reported == 0.5
    lo, hi = best.ci
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    in_layer0 = best_head(hits, [0, 1, 2, 3], [4, 5, 6, 7], layer=0)
    assert (in_layer0.layer, in_layer0.head, in_layer0.selected, in_layer0.reported) == (
        0,
        0,
        0.75,
        1.0,
    )


def test_groups_keep_an_items_arcs_together():
    hits = torch.zeros(6, 1, 2)
    hits[[0, 1, 4], 0, 1] = 1.0
    groups = [0, 0, 1, 1, 2, 2]  # three sentences of two arcs each
    best = best_head(hits, [0], [1, 2], groups)
    assert best.head == 1 and best.selected == 1.0 and best.reported == 0.25


def test_selecting_the_best_of_many_heads_on_noise_overstates_it():
    gen = torch.Generator().manual_seed(0)
    hits = torch.rand(400, 6, 12, generator=gen) < 0.5  # coin flips: every head at 50 %
    a, b = split_halves(400, seed=0)
    best = best_head(hits, a, b)
    assert best.selected > 0.55  # the winner of 72 coin-flip heads looks good where it won
    assert abs(best.reported - 0.5) < 0.08  # and is ordinary elsewhere


def test_best_rule_and_paired_gain_by_hand():
    rules = {"first": torch.tensor([1, 1, 0, 0]), "second": torch.tensor([0, 1, 1, 1])}
    name, score, _ = best_rule(rules, [0, 1], [2, 3])
    assert (name, score) == ("first", 0.0)  # tie on the selection half: the first name
    hits = torch.zeros(4, 1, 1)
    hits[[1, 2, 3]] = 1.0
    chosen = best_head(hits, [0, 1], [2, 3])
    gain, (lo, hi), p = paired_gain(hits, rules["second"], chosen, [2, 3])
    assert gain == 0.0 and lo == hi == 0.0  # the head and the rule agree on every item
    assert p == 1.0
    # against the first rule the head wins on both items of the report half
    gain, _, p = paired_gain(hits, rules["first"], chosen, [2, 3])
    assert gain == 1.0
    assert p == pytest.approx(2 / 2001)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: split_halves(1), "at least 2"),
        (lambda: best_head(torch.zeros(4, 2), [0], [1]), r"\(N, L, H\)"),
        (lambda: best_head(torch.zeros(4, 1, 1), [], [1]), "both halves"),
        (lambda: best_head(torch.zeros(4, 1, 1), [0], [1], layer=3), "layer"),
    ],
)
def test_bad_held_out_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_percent_formats_a_fraction_and_its_interval():
    assert percent(0.8375, (0.8, 0.873)) == "83.8 [80.0, 87.3]"
    assert percent(0.13, (-0.02, 0.2), signed=True) == "+13.0 [-2.0, +20.0]"
