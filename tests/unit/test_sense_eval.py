"""mha_lib.analysis.sense_eval: labels by construction, disjoint vocabularies, the floor.

Labels are checked by reading each sentence back against the domain word lists, not through
the generator's own bookkeeping; the probe against scikit-learn's own decision function; the
loss against an explicit cross-entropy; the floor against the definition of attention.
"""

import re

import pytest
import torch
import torch.nn.functional as F

from mha_lib import bert
from mha_lib.analysis import sense_eval as se

WORD_DOMAIN = {w: d for d, words in se.DOMAINS.items() for w in words}


@pytest.fixture(scope="module")
def tiny(tiny_bert):
    """A tiny random BERT with MiniLM's vocabulary and MiniLM's tokenizer."""
    _, tokenizer = bert.load()
    return tiny_bert(vocab_size=tokenizer.vocab_size, max_position_embeddings=64), tokenizer


def test_splits_are_disjoint_and_cover_every_domain():
    splits = [se.vocabulary(s) for s in se.SPLITS]
    for name in se.DOMAINS:
        sets = [set(v[name]) for v in splits]
        assert all(len(s) == len(se.DOMAINS[name]) // len(se.SPLITS) for s in sets)
        assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert not set(se.HOMONYMS) & set(WORD_DOMAIN)  # no homonym is a context word
    with pytest.raises(ValueError, match="split"):
        se.vocabulary("train")


def test_every_label_is_the_majority_of_its_context_words():
    items = se.make_sense_set("eval", 2 * len(se.HOMONYMS) * 5, seed=3)
    for it in items:
        words = re.findall(r"[a-z]+", it.text)
        assert sorted(w for w in words if w in WORD_DOMAIN) == sorted(it.context)
        assert words.count(it.target) == 1
        domains = [WORD_DOMAIN[w] for w in words if w in WORD_DOMAIN]
        assert len(domains) == 3
        right, other = it.domains[it.label], it.domains[1 - it.label]
        assert domains.count(right) == 2 and domains.count(other) == 1
        assert all(w in se.vocabulary("eval")[WORD_DOMAIN[w]] for w in words if w in WORD_DOMAIN)
    labels = [it.label for it in items]
    assert labels.count(0) == labels.count(1)  # each homonym's senses alternate
    assert se.make_sense_set("eval", 10, seed=3) == items[:10]
    with pytest.raises(ValueError, match="num_items"):
        se.make_sense_set("eval", 0, seed=0)


def test_batches_point_at_the_target_word(tiny):
    _, tokenizer = tiny
    items = se.make_sense_set("probe", 30, seed=0)
    for batch in se.make_batches(tokenizer, items, batch_size=7):
        for row in range(len(batch)):
            token = tokenizer.convert_ids_to_tokens(
                int(batch.input_ids[row, batch.target_index[row]])
            )
            assert token == tokenizer.tokenize(items.pop(0).target)[0]


def test_probe_loss_and_accuracy_by_hand(tiny):
    from sklearn.linear_model import LogisticRegression

    model, tokenizer = tiny
    batches = se.make_batches(tokenizer, se.make_sense_set("probe", 44, seed=1), batch_size=16)
    probe = se.fit_probe(model, batches)
    with torch.no_grad():
        states = torch.cat([se.target_states(model, b) for b in batches])
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
        se.sense_loss(model, batch, probe).double(), expected, rtol=1e-5, atol=1e-5
    )
    right = (two.argmax(-1) == batch.labels).float().mean()
    assert se.sense_accuracy(model, batches[:1], probe) == pytest.approx(float(right))
    with pytest.raises(ValueError, match="reduction"):
        se.sense_loss(model, batch, probe, reduction="sum")


def test_without_attention_the_target_state_ignores_its_context(tiny):
    """The floor: with every head masked a token's state depends on the token and its
    position only, so two senses of one word at one position are indistinguishable."""
    model, tokenizer = tiny
    text = "the bat was there with the {}, the {} and the {}."
    (a,) = se.make_batches(tokenizer, [
        se.SenseItem(text.format("owl", "deer", "tennis"), "bat", ("animals", "sport"), 0,
                     ("owl", "deer", "tennis")),
        se.SenseItem(text.format("racket", "golf", "wolf"), "bat", ("animals", "sport"), 1,
                     ("racket", "golf", "wolf")),
    ])  # fmt: skip
    layers, heads = model.config.num_hidden_layers, model.config.num_attention_heads
    with torch.no_grad(), bert.head_mask(model, torch.zeros(layers, heads)):
        states = se.target_states(model, a)
    torch.testing.assert_close(states[0], states[1])
    with torch.no_grad():
        states = se.target_states(model, a)
    assert not torch.allclose(states[0], states[1])


def test_lexical_baselines_learn_words_but_cannot_transfer_them():
    train = se.make_sense_set("probe", 440, seed=0)
    same_words = se.make_sense_set("probe", 220, seed=9)
    other_words = se.make_sense_set("eval", 440, seed=9)
    seen = se.lexical_baselines(train, same_words)
    unseen = se.lexical_baselines(train, other_words)
    # The baselines work when words carry over (the overlap vote is the weakest) ...
    assert seen["bag of words"] > 0.9 and seen["TF-IDF"] > 0.9 and seen["word overlap"] > 0.65
    assert all(abs(v - se.CHANCE) < 0.1 for v in unseen.values())  # ... and sit at chance here


def test_embedding_bags_average_the_input_embeddings_by_hand(tiny):
    model, tokenizer = tiny
    items = se.make_sense_set("eval", 3, seed=4)
    table = model.embeddings.word_embeddings.weight.detach().double()
    sentence = se.embedding_bags(model, tokenizer, items, words="sentence")
    context = se.embedding_bags(model, tokenizer, items, words="context")
    for row, it in enumerate(items):
        pieces = tokenizer.tokenize(it.text)  # no [CLS] or [SEP]
        ids = tokenizer.convert_tokens_to_ids(pieces)
        torch.testing.assert_close(sentence[row], table[ids].mean(0))
        pieces = [p for w in it.context for p in tokenizer.tokenize(w)]
        ids = tokenizer.convert_tokens_to_ids(pieces)
        torch.testing.assert_close(context[row], table[ids].mean(0))
    with pytest.raises(ValueError, match="words"):
        se.embedding_bags(model, tokenizer, items, words="target")


def test_bag_baseline_picks_c_on_the_scoring_items_and_reads_the_two_candidates(tiny):
    from sklearn.linear_model import LogisticRegression

    model, tokenizer = tiny
    train = se.make_sense_set("probe", 84, seed=0)
    score = se.make_sense_set("score", 42, seed=1)
    test = se.make_sense_set("eval", 42, seed=2)
    out = se.bag_baseline(model, tokenizer, train, score, test, words="context", grid=(0.1, 10.0))
    assert set(out["score"]) == {"0.1", "10.0"}
    assert out["score"][str(out["C"])] == max(out["score"].values())
    x = se.embedding_bags(model, tokenizer, train, words="context").numpy()
    y = [se.DOMAIN_NAMES.index(it.domains[it.label]) for it in train]
    ref = LogisticRegression(C=out["C"], max_iter=5000).fit(x, y)
    proba = ref.predict_proba(se.embedding_bags(model, tokenizer, test, words="context").numpy())
    hits = []
    for row, it in zip(proba, test, strict=True):
        p = [row[list(ref.classes_).index(se.DOMAIN_NAMES.index(d))] for d in it.domains]
        hits.append(int(p[1] > p[0]) == it.label)
    assert out["correct"].tolist() == hits
    assert out["accuracy"] == pytest.approx(sum(hits) / len(hits))
