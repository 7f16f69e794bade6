"""Coreference and similarity items are right by construction; the scorers count by hand."""

import pytest
import torch

from mha_lib.analysis import coref_probe as cp
from mha_lib.analysis import similarity_probe as simp

AGREES = {
    "he": {"m"},
    "him": {"m"},
    "his": {"m"},
    "she": {"f"},
    "her": {"f"},
    "they": {"pl"},
    "them": {"pl"},
    "their": {"pl"},
}
CLASS = {w: "m" for w in cp.MASCULINE} | {w: "f" for w in cp.FEMININE}
CLASS |= {w: "pl" for w in cp.PLURAL}


def test_coref_items_agree_with_exactly_their_antecedent():
    items = cp.generate(60, seed=1)
    assert items == cp.generate(60, seed=1) and len(items) == 120
    assert {it.frame for it in items} == set(range(60))
    for it in items:
        pronoun = it.words[it.pronoun]
        agreeing = [c for c in it.candidates if CLASS[it.words[c]] in AGREES[pronoun]]
        assert agreeing == [it.antecedent], it.text
    # each frame appears twice, once for each person, so position rules score exactly 50 %
    for a, b in zip(items[::2], items[1::2], strict=True):
        assert a.frame == b.frame and {a.antecedent, b.antecedent} == set(a.candidates)
    rules = cp.rule_hits(items)
    assert rules["first noun (the subject)"].float().mean() == 0.5
    assert rules["nearest preceding noun"].float().mean() == 0.5
    assert rules["nearest noun that agrees"].all()


def test_one_item_by_hand():
    it = cp.CorefItem(
        words=tuple("the king told the girls that they would arrive .".split()),
        pronoun=6,
        candidates=(1, 4),
        antecedent=4,
        classes=("m", "pl"),
        pronoun_class="pl",
        frame=0,
    )
    rules = cp.rule_hits([it])
    assert rules["nearest preceding noun"].tolist() == [True]
    assert rules["first noun (the subject)"].tolist() == [False]
    assert rules["nearest noun that agrees"].tolist() == [True]


def _maps(n_words, query, weights, layers=1, heads=2):
    """Word-level maps with [CLS]/[SEP]; head 0's query row gets `weights` on the words,
    head 1 puts everything on [CLS]."""
    t = n_words + 2
    m = torch.full((layers, heads, t, t), 1.0 / t)
    row = torch.zeros(t)
    for word, w in weights.items():
        row[word + 1] = w
    row[0] = 1.0 - row.sum()
    m[:, 0, query + 1] = row
    m[:, 1, query + 1] = torch.eye(t)[0]
    return m


def test_choice_hits_on_a_known_map():
    # words 0 … 5; query 5, candidates 1 and 3; word 4 takes the most weight of all
    m = _maps(6, 5, {1: 0.2, 3: 0.1, 4: 0.5})
    right = cp.choice_hits([m], [5], [(1, 3)], [1])
    wrong = cp.choice_hits([m], [5], [(1, 3)], [3])
    assert right.shape == (1, 1, 2)
    assert right[0, 0].tolist() == [True, False]  # head 1 gives both candidates 0: a tie, a miss
    assert wrong[0, 0].tolist() == [False, False]
    strict = cp.choice_hits([m], [5], [(1, 3)], [1], any_word=True)
    assert strict[0, 0].tolist() == [False, False]  # word 4 beats the answer among all words
    m4 = _maps(6, 5, {1: 0.2, 3: 0.1, 4: 0.15})
    assert cp.choice_hits([m4], [5], [(1, 3)], [1], any_word=True)[0, 0, 0]


def test_lexical_choice_with_a_known_embedding():
    vectors = {"she": [1.0, 0.0], "queen": [0.9, 0.1], "king": [0.1, 0.9], "x": [0.0, 1.0]}

    def embed(word):
        return torch.tensor(vectors[word])

    words = [("king", "queen", "she"), ("queen", "king", "x")]
    hits = cp.lexical_choice(words, [2, 2], [(0, 1), (0, 1)], [1, 0], embed)
    assert hits.tolist() == [True, False]


def test_similarity_items_pair_a_same_category_word_in_both_orders():
    items = simp.generate(40, seed=2)
    assert len(items) == 80 and items == simp.generate(40, seed=2)
    category = {w: c for c, words in simp.CATEGORIES.items() for w in words}
    for it in items:
        target, similar = it.words[it.target], it.words[it.similar]
        other = it.words[next(c for c in it.candidates if c != it.similar)]
        assert target != similar and category[target] == category[similar] != category[other]
        assert it.categories[2] == category[target]
    rules = simp.rule_hits(items)
    assert rules["first candidate"].float().mean() == 0.5
    assert rules["nearest candidate"].float().mean() == 0.5

    names = sorted(simp.CATEGORIES)

    def one_hot(word):  # an embedding that knows the categories: always right
        return torch.eye(len(names))[names.index(category[word])]

    assert simp.lexical_hits(items, one_hot).all()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: cp.generate(0), "positive int"),
        (lambda: cp.choice_hits([], [], [], []), "non-empty"),
        (lambda: cp.choice_hits([torch.ones(1, 1, 5, 5)], [0], [(1, 2)], [0]), "candidate"),
        (lambda: cp.choice_hits([torch.ones(1, 5, 5)], [0], [(0, 1)], [0]), "shape"),
        (
            lambda: cp.CorefItem(("a", "b", "c"), 0, (1, 2), 1, ("m", "f"), "m", 0),
            "precede",
        ),
        (lambda: simp.generate(-1), "positive int"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
