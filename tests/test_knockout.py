"""Knocking heads out (mha_lib.analysis.knockout, studies.ch5_knockout) on hand-checked cases."""

from __future__ import annotations

import pytest
import torch

from mha_lib import bert
from mha_lib.analysis import knockout as ko
from mha_lib.analysis import layer_probes
from mha_lib.experiments.studies import ch5_knockout


def test_role_words_and_gather_by_hand():
    relations = [["det", "nsubj", "root", "dobj"], ["nsubj", "root", "prep", "pobj"]]
    assert ko.role_words(relations, [0, 1]) == [(0, 1), (0, 3), (1, 0), (1, 3)]
    assert ko.role_words(relations, [1], roles=("pobj",)) == [(1, 3)]
    states = [torch.arange(2 * 4 * 3.0).reshape(2, 4, 3), -torch.ones(2, 4, 3)]
    x = ko.gather(states, [(0, 3), (1, 0)])
    assert x.shape == (2, 2, 3)
    torch.testing.assert_close(x[:, 0], states[0][:, 3])
    torch.testing.assert_close(x[:, 1], -torch.ones(2, 3))
    with pytest.raises(ValueError):
        ko.role_words(relations, [0], roles=())


def test_ranked_heads_counts_the_selected_sentences_only():
    # 3 arcs, 1 layer of 3 heads: two dobj arcs in sentence 0, one in sentence 1.
    hits = torch.tensor([[[1, 0, 1]], [[1, 0, 0]], [[0, 1, 1]]], dtype=torch.bool)
    relations, owners = ["dobj", "dobj", "dobj"], [0, 0, 1]
    assert ko.ranked_heads(hits, relations, owners, "dobj", [0]) == [(0, 0), (0, 2), (0, 1)]
    assert ko.ranked_heads(hits, relations, owners, "dobj", [1]) == [(0, 1), (0, 2), (0, 0)]
    # a tie (heads 0 and 2 over all arcs: 2 of 3) keeps the lower head first
    assert ko.ranked_heads(hits, relations, owners, "dobj", [0, 1])[:2] == [(0, 0), (0, 2)]
    with pytest.raises(ValueError):
        ko.ranked_heads(hits, relations, owners, "nsubj", [0])


def test_matched_draws_stay_in_their_layers():
    heads = [(2, 0), (3, 8), (2, 1)]
    draws = ko.matched_draws(heads, 12, 50, seed=3)
    assert draws == ko.matched_draws(heads, 12, 50, seed=3)
    for d in draws:
        assert [lh[0] for lh in d] == [2, 3, 2]
        assert len(set(d)) == 3 and not set(d) & set(heads)
    # one head: the draws go through every other head of its layer once
    single = ko.matched_draws([(2, 0)], 12, 11)
    assert sorted(h for (d,) in single for h in [d]) == [(2, h) for h in range(1, 12)]
    with pytest.raises(ValueError):
        ko.matched_draws([(0, 0), (0, 1)], 3, 5)  # one other head for two


def test_random_draws_and_masks():
    draws = ko.random_draws(3, 2, 4, 40, exclude=[(0, 0)], seed=1)
    assert all(len(set(d)) == 3 and (0, 0) not in d and d == sorted(d) for d in draws)
    every = {(layer, h) for layer in range(2) for h in range(4)}
    assert {lh for d in draws for lh in d} == every - {(0, 0)}
    with pytest.raises(ValueError):
        ko.random_draws(8, 2, 4, 1, exclude=[(0, 0)])
    mask = ko.mask_without([(1, 2)], 2, 4)
    assert mask.sum() == 7 and mask[1, 2] == 0


def test_a_frozen_probe_loses_what_a_refitted_one_finds():
    """Features permuted under the probe: a refitted probe reads the roles as well as before,
    the frozen one no longer can; unchanged states give both the same hits."""
    g = torch.Generator(device="cpu").manual_seed(0)
    y = [("nsubj", "dobj")[i % 2] for i in range(300)]
    x = torch.randn(1, 300, 6, generator=g, device="cpu")
    x[0, :, 0] += torch.tensor([4.0 if v == "dobj" else -4.0 for v in y], device="cpu")
    train, test = x[:, :200], x[:, 200:]
    frozen = layer_probes.fit_by_layer(train, y[:200])
    same = ko.read_roles(train, y[:200], test, y[200:], frozen)
    assert same["frozen"].all() and torch.equal(same["frozen"], same["refit"])
    perm = torch.tensor([3, 1, 2, 0, 4, 5], device="cpu")  # the role moves to feature 3
    moved = ko.read_roles(train[..., perm], y[:200], test[..., perm], y[200:], frozen)
    assert moved["refit"].all()
    assert abs(float(moved["frozen"].float().mean()) - 0.5) < 0.15
    acc = ko.accuracy_by_role(torch.tensor([[1, 0, 1, 1]], dtype=torch.bool), ["a", "b", "a", "b"])
    assert acc == {"all": [0.75], "a": [1.0], "b": [0.5]}


def test_a_head_switched_off_changes_only_the_layers_above_it():
    model, tokenizer = bert.load()
    words = [["the", "farmer", "painted", "the", "old", "box", "."]]
    intact = layer_probes.word_states(model, tokenizer, words)[0]
    assert torch.equal(ch5_knockout.knockout_states(model, tokenizer, words, [])[0], intact)
    off = ch5_knockout.knockout_states(model, tokenizer, words, [(2, 0)])[0]
    assert torch.equal(off[:3], intact[:3])  # embeddings and layers 0-1: before head 2-0
    assert not torch.allclose(off[3], intact[3], atol=1e-3)
    # the same as zeroing the head's slice of the context by hand
    layer = model.encoder.layer[2].attention.self
    width = layer.attention_head_size

    def zero_head(module, args, output):
        context = output[0].clone()
        context[..., :width] = 0.0
        return (context, *output[1:])

    handle = layer.register_forward_hook(zero_head)
    try:
        by_hand = layer_probes.word_states(model, tokenizer, words)[0]
    finally:
        handle.remove()
    torch.testing.assert_close(off, by_hand)


def test_controls_of_one_head_are_its_layer_or_all_others():
    single = [{"heads": [[layer, h]], "result": None} for layer in range(2) for h in range(3)]
    data = {
        "chosen": [{"relation": "dobj", "k": 1, "heads": [[1, 2]]},
                   {"relation": "dobj", "k": 3, "heads": [[0, 0], [1, 0], [1, 1]]}],
        "single": single,
        "matched": [{"relation": "dobj", "k": 3, "draw": 0}, {"relation": "nsubj", "k": 3}],
        "random": [],
    }  # fmt: skip
    same = ch5_knockout.controls(data, "dobj", 1)
    assert [e["heads"][0] for e in same] == [[1, 0], [1, 1]]
    assert len(ch5_knockout.controls(data, "dobj", 1, "random")) == 5
    assert ch5_knockout.controls(data, "dobj", 3) == [data["matched"][0]]
    with pytest.raises(ValueError):
        ch5_knockout.controls(data, "dobj", 1, "other")


def test_compare_an_arm_with_its_controls_by_hand():
    def result(v):  # one role, one read-out, two layers
        return {"refit": {"dobj": [0.5, v]}}

    data = {
        "intact": result(0.60),
        "chosen": [{"relation": "dobj", "k": 1, "heads": [[0, 1]], "result": result(0.40),
                    "drop": {"refit": [[0, 0, 0], [-0.2, -0.3, -0.1]]}}],
        "single": [{"heads": [[0, h]], "result": result(v)}
                   for h, v in ((0, 0.55), (1, 0.40), (2, 0.65))]
        + [{"heads": [[1, 0]], "result": result(0.30)}],
    }  # fmt: skip
    assert ch5_knockout.arm(data, "dobj", 1)["heads"] == [[0, 1]]
    assert ch5_knockout.first_layer_above(data, "dobj", 1) == 1
    got = ch5_knockout.compare(data, "dobj", 1, "refit", 1)
    assert got["own"] == pytest.approx(-20.0)
    assert (got["low"], got["high"]) == pytest.approx((-30.0, -10.0))
    # the other heads of layer 0: -5 and +5 points; none drops as much as -20
    assert got["matched"]["median"] == pytest.approx(0.0)
    assert got["matched"]["worst"] == pytest.approx(-5.0)
    assert (got["matched"]["as_large"], got["matched"]["n"]) == (0, 2)
    # every other head: head 1-0 drops by 30 points, more than the arm
    assert got["random"]["worst"] == pytest.approx(-30.0)
    assert (got["random"]["as_large"], got["random"]["n"]) == (1, 3)
