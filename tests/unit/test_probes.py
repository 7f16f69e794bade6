"""Linear probes (mha_lib.analysis.probes) against hand-checked cases, and the word-sense
test (mha_lib.data.senses): labels by construction, disjoint vocabularies, the floor.

Sense labels are checked by reading each sentence back against the domain word lists, not
through the generator's own bookkeeping; the sense probe against scikit-learn's own decision
function; the loss against an explicit cross-entropy; the floor against the definition of
attention.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from mha_lib import bert
from mha_lib.analysis import probes
from mha_lib.data import senses


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
    assert probes.probe_hits(x, y, xt, yt).all()


def test_shuffled_labels_score_at_chance():
    x, y = _toy(400, 0)
    xt, yt = _toy(2000, 1)
    noise = [
        ("a", "b")[int(v)]
        for v in torch.randint(
            0, 2, (400,), generator=torch.Generator(device="cpu").manual_seed(5), device="cpu"
        )
    ]
    acc = probes.probe_hits(x, noise, xt, yt).float().mean()
    assert abs(float(acc) - 0.5) < 0.06  # 2000 items: one standard error is 1.1 points


def test_unseen_test_label_is_a_miss():
    x, y = _toy(20, 0)
    assert not probes.probe_hits(x, y, x[:1], ["c"]).any()


def test_control_labels_follow_word_types():
    words = ["The", "cat", "the", "dog", "cat", "a"] * 5
    labels = ["DET", "NOUN", "DET", "NOUN", "NOUN", "DET"] * 5
    c = probes.control_labels(words, labels, seed=3)
    table: dict[str, str] = {}
    for w, v in zip(words, c, strict=True):
        assert table.setdefault(w.lower(), v) == v  # one label per type, case folded
    assert set(c) <= set(labels)
    assert probes.control_labels(words, labels, seed=3) == c


def test_expected_layer_by_hand():
    # gains 0.2 at layer 1 and 0.2 at layer 3: centre of gravity (1*0.2 + 3*0.2) / 0.4 = 2
    assert probes.expected_layer([0.5, 0.7, 0.7, 0.9]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        probes.expected_layer([0.5, 0.5])


def test_layer_hits_uses_held_out_sentences():
    states = [torch.randn(3, 4, 8, device="cpu") for _ in range(6)]
    labels = [["x", "y", "x", "y"]] * 6
    with pytest.raises(ValueError):
        probes.layer_hits(states, labels, [0, 1, 2], [2, 3])
    hits = probes.layer_hits(states, labels, [0, 1, 2], [3, 4, 5])
    assert hits.shape == (3, 12)
    assert probes.sentence_ids(labels, [3, 4]) == [3] * 4 + [4] * 4


def test_word_states_match_the_model_for_whole_words():
    model, tokenizer = bert.load()
    words = ["the", "cat", "sat", "on", "the", "mat", "."]  # each one word piece
    states = probes.word_states(model, tokenizer, [words])[0]
    enc = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**enc, output_hidden_states=True).hidden_states
    ref = torch.stack(hidden)[:, 0, 1:-1].float()  # drop [CLS] and [SEP]
    assert states.shape == ref.shape == (model.config.num_hidden_layers + 1, 7, ref.shape[-1])
    torch.testing.assert_close(states, ref)


def test_word_states_average_word_pieces():
    model, tokenizer = bert.load()
    words = ["unbelievably", "tall"]
    states = probes.word_states(model, tokenizer, [words])[0]
    enc = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    n = len(tokenizer.tokenize("unbelievably"))
    assert n > 1
    with torch.inference_mode():
        hidden = torch.stack(model(**enc, output_hidden_states=True).hidden_states)[:, 0]
    torch.testing.assert_close(states[:, 0], hidden[:, 1 : 1 + n].mean(1).float())


def test_sentence_control_labels_keep_the_layout_of_control_labels():
    words = [["The", "cat", "sat"], ["the", "dog"]]
    labels = [["DET", "NOUN", "VERB"], ["DET", "NOUN"]]
    nested = probes.sentence_control_labels(words, labels, seed=3)
    assert [len(x) for x in nested] == [3, 2]
    assert sum(nested, []) == probes.control_labels(sum(words, []), sum(labels, []), seed=3)
    assert nested[0][0] == nested[1][0]  # "The" and "the": one word type, one label
    with pytest.raises(ValueError):
        probes.sentence_control_labels(words, [["DET"], ["DET", "NOUN"]])


def test_hits_by_layer_is_probe_hits_layer_by_layer_fitted_or_frozen():
    x, y = _toy(200, 0)
    xt, yt = _toy(100, 1)
    train = torch.stack([x, -x])  # two "layers"
    test = torch.stack([xt, xt])  # the second layer's test states are not flipped
    hits = probes.hits_by_layer(train, y, test, yt)
    assert hits.shape == (2, 100)
    for k in range(2):
        assert torch.equal(hits[k], probes.probe_hits(train[k], y, test[k], yt))
    assert hits[0].all() and not hits[1].any()  # the flipped layer's probe reads it backwards
    frozen = probes.fit_by_layer(train, y)
    assert torch.equal(probes.hits_by_layer(train, y, test, yt, probes=frozen), hits)
    with pytest.raises(ValueError):
        probes.hits_by_layer(train, y, test, yt, probes=frozen[:1])


WORD_DOMAIN = {w: d for d, words in senses.DOMAINS.items() for w in words}


@pytest.fixture(scope="module")
def tiny(tiny_bert):
    """A tiny random BERT with MiniLM's vocabulary and MiniLM's tokenizer."""
    _, tokenizer = bert.load()
    return tiny_bert(vocab_size=tokenizer.vocab_size, max_position_embeddings=64), tokenizer


def test_splits_are_disjoint_and_cover_every_domain():
    splits = [senses.vocabulary(s) for s in senses.SPLITS]
    for name in senses.DOMAINS:
        sets = [set(v[name]) for v in splits]
        assert all(len(s) == len(senses.DOMAINS[name]) // len(senses.SPLITS) for s in sets)
        assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert not set(senses.HOMONYMS) & set(WORD_DOMAIN)  # no homonym is a context word
    with pytest.raises(ValueError, match="split"):
        senses.vocabulary("train")


def test_every_label_is_the_majority_of_its_context_words():
    items = senses.make_sense_set("eval", 2 * len(senses.HOMONYMS) * 5, seed=3)
    for it in items:
        words = re.findall(r"[a-z]+", it.text)
        assert sorted(w for w in words if w in WORD_DOMAIN) == sorted(it.context)
        assert words.count(it.target) == 1
        domains = [WORD_DOMAIN[w] for w in words if w in WORD_DOMAIN]
        assert len(domains) == 3
        right, other = it.domains[it.label], it.domains[1 - it.label]
        assert domains.count(right) == 2 and domains.count(other) == 1
        assert all(
            w in senses.vocabulary("eval")[WORD_DOMAIN[w]] for w in words if w in WORD_DOMAIN
        )
    labels = [it.label for it in items]
    assert labels.count(0) == labels.count(1)  # each homonym's senses alternate
    assert senses.make_sense_set("eval", 10, seed=3) == items[:10]
    with pytest.raises(ValueError, match="num_items"):
        senses.make_sense_set("eval", 0, seed=0)


def test_batches_point_at_the_target_word(tiny):
    _, tokenizer = tiny
    items = senses.make_sense_set("probe", 30, seed=0)
    for batch in probes.make_batches(tokenizer, items, batch_size=7):
        for row in range(len(batch)):
            token = tokenizer.convert_ids_to_tokens(
                int(batch.input_ids[row, batch.target_index[row]])
            )
            assert token == tokenizer.tokenize(items.pop(0).target)[0]


def test_probe_loss_and_accuracy_by_hand(tiny):
    from sklearn.linear_model import LogisticRegression

    model, tokenizer = tiny
    batches = probes.make_batches(
        tokenizer, senses.make_sense_set("probe", 44, seed=1), batch_size=16
    )
    probe = probes.sense_probe(model, batches)
    with torch.no_grad():
        states = torch.cat([probes.target_states(model, b) for b in batches])
    labels = torch.cat([b.candidates.gather(1, b.labels[:, None])[:, 0] for b in batches])
    ref = LogisticRegression(max_iter=5000).fit(states.double().numpy(), labels.numpy())
    logits = probe(states).double()
    for i, c in enumerate(ref.classes_):
        torch.testing.assert_close(
            logits[:, c], torch.as_tensor(ref.decision_function(states.double().numpy())[:, i]),
            rtol=1e-4, atol=1e-4,
        )  # fmt: skip
    batch = batches[0]
    two = logits[: len(batch)].gather(1, batch.candidates)
    expected = F.cross_entropy(two, batch.labels)
    torch.testing.assert_close(
        probes.sense_loss(model, batch, probe).double(), expected, rtol=1e-5, atol=1e-5
    )
    right = (two.argmax(-1) == batch.labels).float().mean()
    assert probes.sense_accuracy(model, batches[:1], probe) == pytest.approx(float(right))
    with pytest.raises(ValueError, match="reduction"):
        probes.sense_loss(model, batch, probe, reduction="sum")


def test_without_attention_the_target_state_ignores_its_context(tiny):
    """The floor: with every head masked a token's state depends on the token and its
    position only, so two senses of one word at one position are indistinguishable."""
    model, tokenizer = tiny
    text = "the bat was there with the {}, the {} and the {}."
    (a,) = probes.make_batches(tokenizer, [
        senses.SenseItem(text.format("owl", "deer", "tennis"), "bat", ("animals", "sport"), 0,
                     ("owl", "deer", "tennis")),
        senses.SenseItem(text.format("racket", "golf", "wolf"), "bat", ("animals", "sport"), 1,
                     ("racket", "golf", "wolf")),
    ])  # fmt: skip
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    with torch.no_grad(), bert.head_mask(model, torch.zeros(layers, heads)):
        states = probes.target_states(model, a)
    torch.testing.assert_close(states[0], states[1])
    with torch.no_grad():
        states = probes.target_states(model, a)
    assert not torch.allclose(states[0], states[1])


def test_lexical_baselines_learn_words_but_cannot_transfer_them():
    train = senses.make_sense_set("probe", 440, seed=0)
    same_words = senses.make_sense_set("probe", 220, seed=9)
    other_words = senses.make_sense_set("eval", 440, seed=9)
    seen = probes.lexical_baselines(train, same_words)
    unseen = probes.lexical_baselines(train, other_words)
    # The baselines work when words carry over (the overlap vote is the weakest) ...
    assert seen["bag of words"] > 0.9 and seen["TF-IDF"] > 0.9 and seen["word overlap"] > 0.65
    assert all(abs(v - senses.CHANCE) < 0.1 for v in unseen.values())  # ... and sit at chance here


def test_embedding_bags_average_the_input_embeddings_by_hand(tiny):
    model, tokenizer = tiny
    items = senses.make_sense_set("eval", 3, seed=4)
    table = model.embeddings.word_embeddings.weight.detach().double()
    sentence = probes.embedding_bags(model, tokenizer, items, words="sentence")
    context = probes.embedding_bags(model, tokenizer, items, words="context")
    for row, it in enumerate(items):
        pieces = tokenizer.tokenize(it.text)  # no [CLS] or [SEP]
        ids = tokenizer.convert_tokens_to_ids(pieces)
        torch.testing.assert_close(sentence[row], table[ids].mean(0))
        pieces = [p for w in it.context for p in tokenizer.tokenize(w)]
        ids = tokenizer.convert_tokens_to_ids(pieces)
        torch.testing.assert_close(context[row], table[ids].mean(0))
    with pytest.raises(ValueError, match="words"):
        probes.embedding_bags(model, tokenizer, items, words="target")


def test_bag_baseline_picks_c_on_the_scoring_items_and_reads_the_two_candidates(tiny):
    from sklearn.linear_model import LogisticRegression

    model, tokenizer = tiny
    train = senses.make_sense_set("probe", 84, seed=0)
    score = senses.make_sense_set("score", 42, seed=1)
    test = senses.make_sense_set("eval", 42, seed=2)
    out = probes.bag_baseline(
        model, tokenizer, train, score, test, words="context", grid=(0.1, 10.0)
    )
    assert set(out["score"]) == {"0.1", "10.0"}
    assert out["score"][str(out["C"])] == max(out["score"].values())
    x = probes.embedding_bags(model, tokenizer, train, words="context").numpy()
    y = [senses.DOMAIN_NAMES.index(it.domains[it.label]) for it in train]
    ref = LogisticRegression(C=out["C"], max_iter=5000).fit(x, y)
    bags = probes.embedding_bags(model, tokenizer, test, words="context")
    proba = ref.predict_proba(bags.numpy())
    hits = []
    for row, it in zip(proba, test, strict=True):
        p = [row[list(ref.classes_).index(senses.DOMAIN_NAMES.index(d))] for d in it.domains]
        hits.append(int(p[1] > p[0]) == it.label)
    assert out["correct"].tolist() == hits
    assert out["accuracy"] == pytest.approx(sum(hits) / len(hits))
