"""Select on one half, report on the other: the helpers pick and score the right head."""

import pytest
import torch

from mha_lib.analysis import heldout as ho


def test_split_halves_is_seeded_disjoint_and_complete():
    a, b = ho.split_halves(11, seed=3)
    assert (a, b) == ho.split_halves(11, seed=3) and (a, b) != ho.split_halves(11, seed=4)
    assert sorted(a + b) == list(range(11)) and len(a) == 5 and not set(a) & set(b)


def test_best_head_is_chosen_on_one_half_and_scored_on_the_other():
    hits = torch.zeros(8, 2, 3)  # items 0-3 select, 4-7 report
    hits[:4, 1, 2] = 1.0  # head 1-2: perfect on the selection half …
    hits[4:6, 1, 2] = 1.0  # … half right on the report half
    hits[:3, 0, 0] = 1.0  # head 0-0: second best on the selection half, perfect on the other
    hits[4:, 0, 0] = 1.0
    best = ho.best_head(hits, [0, 1, 2, 3], [4, 5, 6, 7])
    assert (best.layer, best.head, best.name) == (1, 2, "1-2")
    assert best.selected == 1.0 and best.reported == 0.5
    lo, hi = best.ci
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    in_layer0 = ho.best_head(hits, [0, 1, 2, 3], [4, 5, 6, 7], layer=0)
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
    best = ho.best_head(hits, [0], [1, 2], groups)
    assert best.head == 1 and best.selected == 1.0 and best.reported == 0.25


def test_selecting_the_best_of_many_heads_on_noise_overstates_it():
    gen = torch.Generator().manual_seed(0)
    hits = torch.rand(400, 6, 12, generator=gen) < 0.5  # coin flips: every head at 50 %
    a, b = ho.split_halves(400, seed=0)
    best = ho.best_head(hits, a, b)
    assert best.selected > 0.55  # the winner of 72 coin-flip heads looks good where it won
    assert abs(best.reported - 0.5) < 0.08  # and is ordinary elsewhere


def test_best_rule_and_paired_gain_by_hand():
    rules = {"first": torch.tensor([1, 1, 0, 0]), "second": torch.tensor([0, 1, 1, 1])}
    name, score, _ = ho.best_rule(rules, [0, 1], [2, 3])
    assert (name, score) == ("first", 0.0)  # tie on the selection half: the first name
    hits = torch.zeros(4, 1, 1)
    hits[[1, 2, 3]] = 1.0
    chosen = ho.best_head(hits, [0, 1], [2, 3])
    gain, (lo, hi) = ho.paired_gain(hits, rules["second"], chosen, [2, 3])
    assert gain == 0.0 and lo == hi == 0.0  # the head and the rule agree on every item
    assert ho.paired_gain_p(hits, rules["second"], chosen, [2, 3]) == 1.0
    # against the first rule the head wins on both items of the report half
    assert ho.paired_gain(hits, rules["first"], chosen, [2, 3])[0] == 1.0
    assert ho.paired_gain_p(hits, rules["first"], chosen, [2, 3]) == pytest.approx(2 / 2001)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ho.split_halves(1), "at least 2"),
        (lambda: ho.best_head(torch.zeros(4, 2), [0], [1]), r"\(N, L, H\)"),
        (lambda: ho.best_head(torch.zeros(4, 1, 1), [], [1]), "both halves"),
        (lambda: ho.best_head(torch.zeros(4, 1, 1), [0], [1], layer=3), "layer"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_percent_formats_a_fraction_and_its_interval():
    assert ho.percent(0.8375, (0.8, 0.873)) == "83.8 [80.0, 87.3]"
    assert ho.percent(0.13, (-0.02, 0.2), signed=True) == "+13.0 [-2.0, +20.0]"
