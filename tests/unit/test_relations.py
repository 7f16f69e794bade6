"""Heads scored against known relations (mha_lib.analysis.relations): the template sentences
carry correct gold dependencies, coreference and similarity items are right by construction,
and the scorers count correctly (by hand)."""

import pytest
import torch

from mha_lib.analysis import relations
from mha_lib.data import coreference, similarity, syntax

NOUNS = set(syntax.AGENTS) | set(syntax.THINGS) | set(syntax.PLACES)
VERBS = {past for past, _ in syntax.TRANSITIVE} | {base for _, base in syntax.TRANSITIVE}
VERBS |= set(syntax.INTRANSITIVE)


def test_generation_is_seeded_and_covers_every_template_and_relation():
    a, b, c = syntax.generate(50, seed=3), syntax.generate(50, seed=3), syntax.generate(50, seed=4)
    assert a == b and a != c and len(a) == 50
    assert {s.template for s in a} == {
        "transitive",
        "intransitive+pp",
        "subject+pp",
        "adverb",
        "auxiliary",
    }
    assert {r for s in a for _, _, r in s.arcs()} == set(syntax.RELATIONS)


@pytest.mark.parametrize("sentence", syntax.generate(200, seed=0), ids=lambda s: s.text)
def test_gold_relations_follow_the_grammar(sentence):
    w, heads = sentence.words, sentence.heads
    (root,) = [i for i, h in enumerate(heads) if h == -1]
    assert w[root] in VERBS and w[-1] == "."
    for dep, head, rel in sentence.arcs():
        if rel == "det":
            assert w[dep] in syntax.DETERMINERS and w[head] in NOUNS and 0 < head - dep <= 3
            assert all(w[k] in syntax.ADJECTIVES for k in range(dep + 1, head))
        elif rel == "amod":
            assert w[dep] in syntax.ADJECTIVES and w[head] in NOUNS and head > dep
        elif rel == "nsubj":
            assert w[dep] in syntax.AGENTS and head == root and dep < head
        elif rel == "dobj":
            assert w[dep] in syntax.THINGS and head == root and dep > head
        elif rel == "pobj":
            assert w[dep] in syntax.PLACES and w[head] in syntax.PREPOSITIONS and head < dep
        elif rel == "prep":
            assert w[dep] in syntax.PREPOSITIONS
            # after the verb it modifies the (intransitive) verb; before it, the subject noun
            assert (head == root and w[root] in syntax.INTRANSITIVE) or (
                w[head] in syntax.AGENTS and heads[head] == root and head == dep - 1
            )
        elif rel == "advmod":
            assert w[dep] in syntax.ADVERBS and head == root
        elif rel == "aux":
            assert w[dep] in syntax.AUXILIARIES and head == root and dep < head
        elif rel == "punct":
            assert w[dep] == "." and head == root
        else:
            pytest.fail(f"unexpected relation {rel}")


def test_one_example_by_hand():
    s = syntax.Sentence(
        words=("the", "dog", "slept", "under", "a", "table", "."),
        heads=(1, 2, -1, 2, 5, 3, 2),
        relations=("det", "nsubj", "root", "prep", "det", "pobj", "punct"),
        template="hand",
    )
    assert s.text == "the dog slept under a table."
    assert s.arcs()[0] == (0, 1, "det") and len(s.arcs()) == 6
    base = relations.offset_baseline([s])
    assert base["det"] == (1, 1.0)
    assert base["pobj"] == (-2, 1.0)
    assert base["all"] == (1, 3 / 6)  # det, nsubj, det are all +1


def _oracle_maps(sentence, layers=2, heads=3):
    """Word-level maps with [CLS]/[SEP]: head 0 attends to the gold head (root: itself), head 1
    to the previous word (the first word to the last, never a gold head of it), head 2 mostly
    to [CLS] but then to the gold head."""
    n = len(sentence.words)
    maps = torch.zeros(layers, heads, n + 2, n + 2)
    for i, h in enumerate(sentence.heads):
        target = i if h < 0 else h
        maps[:, 0, i + 1, target + 1] = 1.0
        maps[:, 1, i + 1, (i - 1) % n + 1] = 1.0
        maps[:, 2, i + 1, 0] = 0.7
        maps[:, 2, i + 1, target + 1] += 0.3
    return maps


def test_head_accuracy_on_oracle_maps():
    sentences = syntax.generate(30, seed=1)
    acc = relations.head_accuracy([_oracle_maps(s) for s in sentences], sentences)
    base = relations.offset_baseline(sentences)
    for rel, a in acc.items():
        assert a.shape == (2, 3)
        torch.testing.assert_close(a[:, 0], torch.ones(2))  # the oracle is always right
        torch.testing.assert_close(a[:, 2], torch.ones(2))  # [CLS] is not a candidate
        # "previous word" scores exactly like a fixed offset of −1
        arcs = [(d, h) for s in sentences for d, h, r in s.arcs() if rel in (r, "all")]
        expected = sum(h == d - 1 for d, h in arcs) / len(arcs)
        torch.testing.assert_close(a[:, 1], torch.full((2,), expected))
        assert base[rel][1] >= expected


def test_self_is_excluded():
    s = syntax.generate(1, seed=0)[0]
    maps = _oracle_maps(s)
    n = len(s.words)
    maps[:, 0] += 5 * torch.eye(n + 2)  # most attention on itself: ignored
    acc = relations.head_accuracy([maps], [s])
    torch.testing.assert_close(acc["all"][:, 0], torch.ones(2))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: syntax.generate(0), ValueError, "n must"),
        (lambda: syntax.Sentence(("a", "b"), (1, -1), ("det",), "x"), ValueError, "equally long"),
        (lambda: syntax.Sentence(("a", "b"), (-1, -1), ("x", "y"), "x"), ValueError, "root"),
        (lambda: syntax.Sentence(("a", "b"), (0, -1), ("x", "y"), "x"), ValueError, "another word"),
        (
            lambda: relations.head_accuracy([torch.ones(1, 1, 3, 3)], syntax.generate(1)),
            ValueError,
            "must have shape",
        ),
        (lambda: relations.head_accuracy([], []), ValueError, "non-empty"),
        (lambda: relations.offset_baseline([]), ValueError, "empty"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_arc_hits_average_to_head_accuracy_and_offsets_count_by_hand():
    sentences = syntax.generate(20, seed=2)
    maps = [_oracle_maps(s) for s in sentences]
    hits, arc_relations, owners = relations.arc_hits(maps, sentences)
    acc = relations.head_accuracy(maps, sentences)
    assert hits.shape == (sum(len(s.arcs()) for s in sentences), 2, 3)
    assert owners == sorted(owners) and set(owners) == set(range(len(sentences)))
    for rel in set(arc_relations):
        rows = [i for i, r in enumerate(arc_relations) if r == rel]
        torch.testing.assert_close(hits[rows].float().mean(0), acc[rel])
    hand = syntax.Sentence(
        words=("the", "dog", "slept", "under", "a", "table", "."),
        heads=(1, 2, -1, 2, 5, 3, 2),
        relations=("det", "nsubj", "root", "prep", "det", "pobj", "punct"),
        template="hand",
    )
    # arcs in order: det +1, nsubj +1, prep −1, det +1, pobj −2, punct −4
    offsets = relations.offset_hits([hand], [1, -1, -2, 3])
    assert offsets[1].tolist() == [True, True, False, True, False, False]
    assert offsets[-1].tolist() == [False, False, True, False, False, False]
    assert offsets[-2].tolist() == [False, False, False, False, True, False]
    assert not offsets[3].any()


def test_heldout_scores_choose_on_one_half_and_report_on_the_other():
    sentences = syntax.generate(40, seed=3)
    maps = [_oracle_maps(s) for s in sentences]
    hits, arc_relations, owners = relations.arc_hits(maps, sentences)
    offsets = relations.offset_hits(sentences, [o for o in range(-4, 5) if o])
    select, report = list(range(0, 40, 2)), list(range(1, 40, 2))
    score = relations.heldout_scores(hits, arc_relations, owners, offsets, "det", select, report)
    assert score.head.head in (0, 2) and score.head.reported == 1.0  # an oracle head
    assert score.offset == 1  # a determiner's noun is most often the next word
    rows = [i for i, r in enumerate(arc_relations) if r == "det" and owners[i] in set(report)]
    assert score.n_arcs == len(rows)
    expected = float(offsets[1][rows].float().mean())
    assert score.offset_score == pytest.approx(expected)
    assert score.gain == pytest.approx(1.0 - expected)
    assert score.gain_ci[0] <= score.gain <= score.gain_ci[1]
    assert 0 < score.gain_p <= 1 and (score.gain_p < 0.05) == (score.gain_ci[0] > 0)
    with pytest.raises(ValueError, match="no arc"):
        relations.heldout_scores(hits, arc_relations, owners, offsets, "nmod", select, report)


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
CLASS = {w: "m" for w in coreference.MASCULINE} | {w: "f" for w in coreference.FEMININE}
CLASS |= {w: "pl" for w in coreference.PLURAL}


def test_coref_items_agree_with_exactly_their_antecedent():
    items = coreference.generate(60, seed=1)
    assert items == coreference.generate(60, seed=1) and len(items) == 120
    assert {it.frame for it in items} == set(range(60))
    for it in items:
        pronoun = it.words[it.pronoun]
        agreeing = [c for c in it.candidates if CLASS[it.words[c]] in AGREES[pronoun]]
        assert agreeing == [it.antecedent], it.text
    # each frame appears twice, once for each person, so position rules score exactly 50 %
    for a, b in zip(items[::2], items[1::2], strict=True):
        assert a.frame == b.frame and {a.antecedent, b.antecedent} == set(a.candidates)
    rules = relations.coref_rule_hits(items)
    assert rules["first noun (the subject)"].float().mean() == 0.5
    assert rules["nearest preceding noun"].float().mean() == 0.5
    assert rules["nearest noun that agrees"].all()


def test_one_item_by_hand():
    it = coreference.CorefItem(
        words=tuple("the king told the girls that they would arrive .".split()),
        pronoun=6,
        candidates=(1, 4),
        antecedent=4,
        classes=("m", "pl"),
        pronoun_class="pl",
        frame=0,
    )
    rules = relations.coref_rule_hits([it])
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
    right = relations.choice_hits([m], [5], [(1, 3)], [1])
    wrong = relations.choice_hits([m], [5], [(1, 3)], [3])
    assert right.shape == (1, 1, 2)
    assert right[0, 0].tolist() == [True, False]  # head 1 gives both candidates 0: a tie, a miss
    assert wrong[0, 0].tolist() == [False, False]
    strict = relations.choice_hits([m], [5], [(1, 3)], [1], any_word=True)
    assert strict[0, 0].tolist() == [False, False]  # word 4 beats the answer among all words
    m4 = _maps(6, 5, {1: 0.2, 3: 0.1, 4: 0.15})
    assert relations.choice_hits([m4], [5], [(1, 3)], [1], any_word=True)[0, 0, 0]


def test_lexical_choice_with_a_known_embedding():
    vectors = {"she": [1.0, 0.0], "queen": [0.9, 0.1], "king": [0.1, 0.9], "x": [0.0, 1.0]}

    def embed(word):
        return torch.tensor(vectors[word])

    words = [("king", "queen", "she"), ("queen", "king", "x")]
    hits = relations.lexical_choice(words, [2, 2], [(0, 1), (0, 1)], [1, 0], embed)
    assert hits.tolist() == [True, False]


def test_similarity_items_pair_a_same_category_word_in_both_orders():
    items = similarity.generate(40, seed=2)
    assert len(items) == 80 and items == similarity.generate(40, seed=2)
    category = {w: c for c, words in similarity.CATEGORIES.items() for w in words}
    for it in items:
        target, similar = it.words[it.target], it.words[it.similar]
        other = it.words[next(c for c in it.candidates if c != it.similar)]
        assert target != similar and category[target] == category[similar] != category[other]
        assert it.categories[2] == category[target]
    rules = relations.similarity_rule_hits(items)
    assert rules["first candidate"].float().mean() == 0.5
    assert rules["nearest candidate"].float().mean() == 0.5

    names = sorted(similarity.CATEGORIES)

    def one_hot(word):  # an embedding that knows the categories: always right
        return torch.eye(len(names))[names.index(category[word])]

    assert relations.lexical_hits(items, one_hot).all()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: coreference.generate(0), "positive int"),
        (lambda: relations.choice_hits([], [], [], []), "non-empty"),
        (lambda: relations.choice_hits([torch.ones(1, 1, 5, 5)], [0], [(1, 2)], [0]), "candidate"),
        (lambda: relations.choice_hits([torch.ones(1, 5, 5)], [0], [(0, 1)], [0]), "shape"),
        (
            lambda: coreference.CorefItem(("a", "b", "c"), 0, (1, 2), 1, ("m", "f"), "m", 0),
            "precede",
        ),
        (lambda: similarity.generate(-1), "positive int"),
    ],
)
def test_bad_choice_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
