"""Knocking heads out (mha_lib.analysis.knockout, studies.ch5_knockout) on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mha_lib import bert
from mha_lib.analysis import knockout as ko
from mha_lib.analysis import probes
from mha_lib.data import roles
from mha_lib.experiments.studies import ch5_knockout


def test_role_words_and_gather_by_hand():
    relations = [["det", "nsubj", "root", "dobj"], ["nsubj", "root", "prep", "pobj"]]
    assert roles.role_words(relations, [0, 1]) == [(0, 1), (0, 3), (1, 0), (1, 3)]
    assert roles.role_words(relations, [1], roles=("pobj",)) == [(1, 3)]
    states = [torch.arange(2 * 4 * 3.0).reshape(2, 4, 3), -torch.ones(2, 4, 3)]
    x = ko.gather(states, [(0, 3), (1, 0)])
    assert x.shape == (2, 2, 3)
    torch.testing.assert_close(x[:, 0], states[0][:, 3])
    torch.testing.assert_close(x[:, 1], -torch.ones(2, 3))
    with pytest.raises(ValueError):
        roles.role_words(relations, [0], roles=())


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
    # below: only the heads that can reach that layer's states (those of the layers under it)
    low = ko.random_draws(2, 3, 4, 40, exclude=[(1, 0)], seed=2, below=2)
    assert {lh for d in low for lh in d} == {(b, h) for b in range(2) for h in range(4)} - {(1, 0)}
    with pytest.raises(ValueError):
        ko.random_draws(2, 3, 4, 1, below=4)
    assert ko.reaching([(1, 0)], 2, 3) == [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2)]
    assert ko.reaching([], 0, 3) == []
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
    frozen = probes.fit_by_layer(train, y[:200])
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
    intact = probes.word_states(model, tokenizer, words)[0]
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
        by_hand = probes.word_states(model, tokenizer, words)[0]
    finally:
        handle.remove()
    torch.testing.assert_close(off, by_hand)


def test_controls_of_one_head_are_its_layer_or_all_others():
    single = [{"heads": [[layer, h]], "result": None, "ablation": "zero"}
              for layer in range(3) for h in range(3)]  # fmt: skip
    data = {
        "chosen": [{"relation": "dobj", "k": 1, "heads": [[1, 2]], "ablation": "zero"},
                   {"relation": "dobj", "k": 3, "heads": [[0, 0], [1, 0], [1, 1]],
                    "ablation": "zero"}],
        "single": single + [{"heads": [[1, 0]], "ablation": "mean"}],
        "matched": [{"relation": "dobj", "k": 3, "draw": 0, "ablation": "zero"},
                    {"relation": "dobj", "k": 3, "draw": 0, "ablation": "mean"},
                    {"relation": "nsubj", "k": 3, "ablation": "zero"}],
        "random": [],
    }  # fmt: skip
    same = ch5_knockout.controls(data, "dobj", 1)
    assert [e["heads"][0] for e in same] == [[1, 0], [1, 1]]
    # the heads that can reach layer 2 (those of layers 0 and 1), not those of layer 2
    reach = ch5_knockout.controls(data, "dobj", 1, "random")
    assert [e["heads"][0] for e in reach] == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]]
    assert ch5_knockout.controls(data, "dobj", 3) == [data["matched"][0]]
    with pytest.raises(ValueError):
        ch5_knockout.controls(data, "dobj", 1, "other")


def test_compare_an_arm_with_its_controls_by_hand():
    def result(v):  # one role, one read-out, two layers
        return {"refit": {"dobj": [0.5, v]}}

    def run(layer, h, v, swap):
        return {"heads": [[layer, h]], "result": result(v), "ablation": "zero",
                "output": {"swap": swap}}  # fmt: skip

    data = {
        "intact": result(0.60),
        "intact_output": {"swap": 0.02},
        "chosen": [{"relation": "dobj", "k": 1, "heads": [[0, 1]], "result": result(0.40),
                    "ablation": "zero",
                    "drop": {"refit": {"dobj": [[0, 0, 0, 0, 0],
                                                [-0.2, -0.3, -0.1, -0.28, -0.12]]}},
                    "output_change": {"swap": [-25.0, -30.0, -20.0, -29.0, -21.0]}}],
        "single": [run(0, 0, 0.55, 0.019), run(0, 1, 0.40, 0.015), run(0, 2, 0.65, 0.021),
                   run(1, 0, 0.30, 0.01)],
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
    # the heads that can reach layer 1 are layer 0's: head 1-0 is not among them
    assert got["random"]["worst"] == pytest.approx(-5.0)
    assert (got["random"]["as_large"], got["random"]["n"]) == (0, 2)
    assert got["random"]["p"] == pytest.approx(1 / 3)
    assert (got["low90"], got["high90"]) == pytest.approx((-28.0, -12.0))
    # the output: -25 % of the intact distance; the other heads -5 %, +5 % and -50 % (1-0)
    out = ch5_knockout.compare_output(data, "dobj")
    assert out["own"] == -25.0 and (out["low90"], out["high90"]) == (-29.0, -21.0)
    assert out["matched"]["worst"] == pytest.approx(-5.0)
    assert (out["all"]["as_large"], out["all"]["n"]) == (1, 3)


def _words():
    return [["the", "farmer", "painted", "the", "old", "box", "."], ["a", "dog", "slept", "."]]


def test_head_means_average_every_real_token_and_no_padding():
    model, tokenizer = bert.load()
    means = ko.head_means(model, tokenizer, _words())
    cfg = model.config
    width = cfg.hidden_size // cfg.num_attention_heads
    assert means.shape == (cfg.num_hidden_layers, cfg.num_attention_heads, width)
    # by hand: each sentence alone (no padding), every token's context of layer 3, averaged
    layer = model.encoder.layer[3].attention.self
    seen = []
    handle = layer.register_forward_hook(lambda m, a, out: seen.append(out[0][0]))
    try:
        for words in _words():
            enc = tokenizer([words], is_split_into_words=True, return_tensors="pt")
            with torch.inference_mode():
                model(**enc)
    finally:
        handle.remove()
    by_hand = torch.cat(seen).mean(0).reshape(cfg.num_attention_heads, width)
    torch.testing.assert_close(means[3], by_hand, atol=1e-5, rtol=1e-4)


def test_mean_ablation_puts_the_mean_in_place_and_zero_means_equal_zeroing():
    model, tokenizer = bert.load()
    words = _words()
    cfg = model.config
    zeros = torch.zeros(cfg.num_hidden_layers, cfg.num_attention_heads, 32)
    zeroed = ch5_knockout.knockout_states(model, tokenizer, words, [(2, 0), (4, 5)])
    by_means = ch5_knockout.knockout_states(model, tokenizer, words, [(2, 0), (4, 5)], zeros)
    for a, b in zip(zeroed, by_means, strict=True):
        torch.testing.assert_close(a, b)
    # with any values, the head's slice of the context is that value at every token
    values = torch.randn(zeros.shape, generator=torch.Generator().manual_seed(0))
    seen = []
    layer = model.encoder.layer[2].attention.self
    handle = layer.register_forward_hook(lambda m, a, out: seen.append(out[0]))
    try:
        with ko.heads_replaced(model, [(2, 0)], values):
            enc = tokenizer("the dog chased the cat.", return_tensors="pt")
            with torch.inference_mode():
                model(**enc)
    finally:
        handle.remove()
    # the hook registered first sees the context before the replacement: run it again after
    with ko.heads_replaced(model, [(2, 0)], values):
        seen.clear()
        captured = []
        late = model.encoder.layer[2].attention.output.dense.register_forward_pre_hook(
            lambda m, a: captured.append(a[0])
        )
        try:
            with torch.inference_mode():
                model(**enc)
        finally:
            late.remove()
    context = captured[0][0].unflatten(-1, (cfg.num_attention_heads, 32))  # (T, H, Dh)
    torch.testing.assert_close(context[:, 0], values[2, 0].expand(context.shape[0], 32))
    assert not torch.allclose(context[:, 1], values[2, 1].expand(context.shape[0], 32))
    with pytest.raises(ValueError):
        with ko.heads_replaced(model, [(2, 0)], values[:, :, :4]):
            pass


def test_sentence_embeddings_and_swap_distances():
    model, tokenizer = bert.load()
    texts = ["the dog chased the cat.", "the cat chased the dog."]
    e = ko.sentence_embeddings(model, tokenizer, texts, batch_size=1)
    torch.testing.assert_close(e.norm(dim=-1), torch.ones(2, dtype=torch.float64))
    _, _, lab = bert.lab_outputs(model, tokenizer, texts[1])  # the mean pool, not normalised
    torch.testing.assert_close(e[1].float(), lab / lab.norm(), atol=1e-5, rtol=1e-4)
    # padded in one batch: the same embeddings
    padded = ko.sentence_embeddings(model, tokenizer, texts)
    torch.testing.assert_close(padded, e, atol=1e-6, rtol=0)
    d = ko.swap_distances(model, tokenizer, [("dog", "chased", "cat", "bird")])
    torch.testing.assert_close(d["swap"], 1 - (e[0] * e[1]).sum(-1, keepdim=True))
    assert 0 < float(d["swap"][0]) < float(d["sub"][0]) < 1  # a swap keeps every word


def test_role_contrast_by_hand_and_against_a_loop():
    change = torch.tensor([-1.0, 0.0, 0.0, -1.0, 1.0, 0.0])
    roles = ["dobj", "nsubj", "dobj", "dobj", "nsubj", "pobj"]
    groups = [0, 0, 1, 2, 2, 2]
    d, ((lo95, hi95), (lo90, hi90)) = ko.role_contrast_ci(change, roles, groups, "dobj", "nsubj")
    assert d == pytest.approx(-2 / 3 - 0.5)
    assert lo95 <= lo90 <= d <= hi90 <= hi95
    # the same draws, one by one
    rng = np.random.default_rng(0)
    draws = rng.integers(0, 3, size=(2000, 3))
    diffs = []
    for row in draws:
        items = [k for g in row for k in range(6) if groups[k] == g]
        a = [float(change[k]) for k in items if roles[k] == "dobj"]
        b = [float(change[k]) for k in items if roles[k] == "nsubj"]
        if a and b:
            diffs.append(np.mean(a) - np.mean(b))
    assert (lo95, hi95) == pytest.approx(tuple(np.percentile(diffs, [2.5, 97.5])))
    with pytest.raises(ValueError):
        ko.role_contrast_ci(change, roles, groups, "dobj", "amod")


def _synthetic_file():
    """A committed file's layout for 3 layers of 3 heads: every head both ways, the chosen
    arms (dobj: head 1-0, then 1-0, 0-1, 1-1; nsubj: 1-2, then 1-2, 0-0, 0-2), two draws."""
    roles = ("nsubj", "dobj", "pobj")

    def result(v):  # the same accuracy v for every role, read-out and layer
        return {ro: {r: [v] * 4 for r in (*roles, "all")} for ro in ("frozen", "refit")}

    def interval(v):
        return [v, v - 0.04, v + 0.04, v - 0.02, v + 0.02]

    single = [{"heads": [[layer, h]], "ablation": ab, "result": result(0.5 - 0.01 * h),
               "output": {"swap": 0.02 - 0.001 * h, "sub": 0.3}}
              for ab in ("zero", "mean") for layer in range(3) for h in range(3)]  # fmt: skip
    chosen = []
    for rel, heads in (("dobj", [[1, 0], [0, 1], [1, 1]]), ("nsubj", [[1, 2], [0, 0], [0, 2]])):
        for k in (1, 3):
            for ab in ("zero", "mean") if k == 1 else ("zero",):
                chosen.append({
                    "relation": rel, "k": k, "ablation": ab, "heads": heads[:k],
                    "result": result(0.4), "output": {"swap": 0.015, "sub": 0.3},
                    "drop": {ro: {r: [interval(-0.1)] * 4 for r in roles}
                             for ro in ("frozen", "refit")},
                    "specificity": {ro: [interval(-0.02)] * 4 for ro in ("frozen", "refit")},
                    "output_change": {m: interval(-25.0 if m == "swap" else 0.0)
                                      for m in ("swap", "sub", "specific")},
                })  # fmt: skip
    draws = [{"relation": rel, "k": 3, "draw": d, "ablation": "zero",
              "heads": [[0, 2], [1, 1], [0, 1]], "result": result(0.45)}
             for rel in ("dobj", "nsubj") for d in range(2)]  # fmt: skip
    config = {"layers": 3, "margin_points": 5.0, "margin_output": 10.0, "items": 4, "draws": 2}
    return {"config": config, "intact": result(0.5),
            "intact_output": {"swap": 0.02, "sub": 0.3},
            "single": single, "chosen": chosen, "matched": draws, "random": draws}  # fmt: skip


def test_readings_glue_and_strips_of_a_synthetic_file():
    data = _synthetic_file()
    r = ch5_knockout.readings(data)
    assert r.read_at == {("dobj", 1): 2, ("dobj", 3): 2, ("nsubj", 1): 2, ("nsubj", 3): 2}
    one = r.probes["dobj", 1, "mean", "frozen", "next"]
    assert one["own"] == pytest.approx(-10.0)  # 0.4 against 0.5
    # the heads that can reach layer 2: layers 0 and 1 but the arm's own head, 5 of them
    assert one["random"]["n"] == 5 and one["random"]["as_large"] == 0
    assert one["matched"]["n"] == 2  # heads 1-1 and 1-2
    assert one["outcome"] == "different"  # [-12, -8] at 90 %: outside ±5, without 0
    spec = r.roles["dobj", 1, "zero", "refit", "next"]["specificity"]
    assert spec["own"] == pytest.approx(-2.0) and spec["outcome"] == "equivalent"
    out = r.outputs["nsubj", "zero"]
    assert out["own"] == -25.0 and out["all"]["n"] == 8 and out["all"]["as_large"] == 0
    assert out["outcome"] == "different"
    glue = ch5_knockout.glue_values(data, r)
    assert glue["ko_dobj1_mean_frozen_next_loss"] == pytest.approx(10.0)
    assert glue["ko_obj_head"] == "1-0" and glue["ko_subj3_heads"] == "1-2, 0-0, 0-2"
    assert glue["ko_n_reach"] == 5 and glue["ko_nsubj1_out_sub"] == 0.0
    assert (glue["ko_margin_points"], glue["ko_n_items"], glue["ko_draws"]) == (5.0, 4, 2)
    # the 90 % interval -12 to -8; the 95 % one (-14, -6) is 1.96 standard errors either side
    assert (glue["ko_dobj1_frozen_next_low90"], glue["ko_dobj1_frozen_next_high90"]) == (
        pytest.approx(-12.0), pytest.approx(-8.0))
    assert glue["ko_dobj1_frozen_next_detectable"] == pytest.approx(4 / 1.96 * 2.8016, rel=1e-4)
    assert glue["ko_dobj1_frozen_next_spec_detectable"] == pytest.approx(
        glue["ko_dobj1_frozen_next_detectable"])  # its 95 % interval as wide: (-6, +2)
    tables = ch5_knockout.table_rows(data, r)
    assert len(tables["roles"]) == 8 and len(tables["output"]) == 4  # 2 heads, 2 ways
    assert tables["roles"][2] == ["1-0", "mean-ablated", "frozen", "-10.0 [-14.0, -6.0]",
                                  "-10.0 [-14.0, -6.0]", "-10.0 [-14.0, -6.0]",
                                  "-2.0 [-4.0, +0.0]", "0 / 5"]  # fmt: skip
    assert tables["output"][3] == ["1-2", "mean-ablated", "-25.0 [-25.0, -25.0]",
                                   "+0.0 [-0.0, +0.0]", "0 / 2", "0 / 8"]  # fmt: skip
    strips = ch5_knockout.strip_values(data, 2)
    assert list(strips["probe"]) == [("frozen", "zero"), ("frozen", "mean"),
                                     ("refit", "zero"), ("refit", "mean")]  # fmt: skip
    column = strips["probe"]["frozen", "zero"]
    assert len(column["others"]) == 4 and column["own"] == pytest.approx([-10.0, -10.0])
    assert len(strips["output"]["mean"]["others"]) == 7  # every head but the two best
