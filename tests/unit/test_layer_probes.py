"""Layer probes (mha_lib.analysis.layer_probes) against hand-checked cases."""

from __future__ import annotations

import pytest
import torch

from mha_lib import bert
from mha_lib.analysis import layer_probes as lp


def _toy(n: int, seed: int) -> tuple[torch.Tensor, list[str]]:
    """Two classes whose first feature is +3 or -3, the rest noise: linearly separable."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    y = [("a", "b")[i % 2] for i in range(n)]
    x = torch.randn(n, 8, generator=g, device="cpu")
    x[:, 0] = torch.tensor([3.0 if v == "a" else -3.0 for v in y], device="cpu")
    return x, y


def test_separable_toy_scores_every_item():
    x, y = _toy(200, 0)
    xt, yt = _toy(100, 1)
    assert lp.probe_hits(x, y, xt, yt).all()


def test_shuffled_labels_score_at_chance():
    x, y = _toy(400, 0)
    xt, yt = _toy(2000, 1)
    noise = [
        ("a", "b")[int(v)]
        for v in torch.randint(
            0, 2, (400,), generator=torch.Generator(device="cpu").manual_seed(5), device="cpu"
        )
    ]
    acc = lp.probe_hits(x, noise, xt, yt).float().mean()
    assert abs(float(acc) - 0.5) < 0.06  # 2000 items: one standard error is 1.1 points


def test_unseen_test_label_is_a_miss():
    x, y = _toy(20, 0)
    assert not lp.probe_hits(x, y, x[:1], ["c"]).any()


def test_control_labels_follow_word_types():
    words = ["The", "cat", "the", "dog", "cat", "a"] * 5
    labels = ["DET", "NOUN", "DET", "NOUN", "NOUN", "DET"] * 5
    c = lp.control_labels(words, labels, seed=3)
    table: dict[str, str] = {}
    for w, v in zip(words, c, strict=True):
        assert table.setdefault(w.lower(), v) == v  # one label per type, case folded
    assert set(c) <= set(labels)
    assert lp.control_labels(words, labels, seed=3) == c


def test_expected_layer_by_hand():
    # gains 0.2 at layer 1 and 0.2 at layer 3: centre of gravity (1*0.2 + 3*0.2) / 0.4 = 2
    assert lp.expected_layer([0.5, 0.7, 0.7, 0.9]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        lp.expected_layer([0.5, 0.5])


def test_layer_hits_uses_held_out_sentences():
    states = [torch.randn(3, 4, 8, device="cpu") for _ in range(6)]
    labels = [["x", "y", "x", "y"]] * 6
    with pytest.raises(ValueError):
        lp.layer_hits(states, labels, [0, 1, 2], [2, 3])
    hits = lp.layer_hits(states, labels, [0, 1, 2], [3, 4, 5])
    assert hits.shape == (3, 12)
    assert lp.sentence_ids(labels, [3, 4]) == [3] * 4 + [4] * 4


def test_word_states_match_the_model_for_whole_words():
    model, tokenizer = bert.load()
    words = ["the", "cat", "sat", "on", "the", "mat", "."]  # each one word piece
    states = lp.word_states(model, tokenizer, [words])[0]
    enc = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**enc, output_hidden_states=True).hidden_states
    ref = torch.stack(hidden)[:, 0, 1:-1].float()  # drop [CLS] and [SEP]
    assert states.shape == ref.shape == (model.config.num_hidden_layers + 1, 7, ref.shape[-1])
    torch.testing.assert_close(states, ref)


def test_word_states_average_word_pieces():
    model, tokenizer = bert.load()
    words = ["unbelievably", "tall"]
    states = lp.word_states(model, tokenizer, [words])[0]
    enc = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    n = len(tokenizer.tokenize("unbelievably"))
    assert n > 1
    with torch.inference_mode():
        hidden = torch.stack(model(**enc, output_hidden_states=True).hidden_states)[:, 0]
    torch.testing.assert_close(states[:, 0], hidden[:, 1 : 1 + n].mean(1).float())


def test_sentence_control_labels_keep_the_layout_of_control_labels():
    words = [["The", "cat", "sat"], ["the", "dog"]]
    labels = [["DET", "NOUN", "VERB"], ["DET", "NOUN"]]
    nested = lp.sentence_control_labels(words, labels, seed=3)
    assert [len(x) for x in nested] == [3, 2]
    assert sum(nested, []) == lp.control_labels(sum(words, []), sum(labels, []), seed=3)
    assert nested[0][0] == nested[1][0]  # "The" and "the": one word type, one label
    with pytest.raises(ValueError):
        lp.sentence_control_labels(words, [["DET"], ["DET", "NOUN"]])


def test_hits_by_layer_is_probe_hits_layer_by_layer_fitted_or_frozen():
    x, y = _toy(200, 0)
    xt, yt = _toy(100, 1)
    train = torch.stack([x, -x])  # two "layers"
    test = torch.stack([xt, xt])  # the second layer's test states are not flipped
    hits = lp.hits_by_layer(train, y, test, yt)
    assert hits.shape == (2, 100)
    for k in range(2):
        assert torch.equal(hits[k], lp.probe_hits(train[k], y, test[k], yt))
    assert hits[0].all() and not hits[1].any()  # the flipped layer's probe reads it backwards
    frozen = lp.fit_by_layer(train, y)
    assert torch.equal(lp.hits_by_layer(train, y, test, yt, probes=frozen), hits)
    with pytest.raises(ValueError):
        lp.hits_by_layer(train, y, test, yt, probes=frozen[:1])
