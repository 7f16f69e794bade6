"""The template sentences carry correct gold dependencies, and the scorers count correctly."""

import pytest
import torch

from mha_lib.analysis import syntax_probe as sp

NOUNS = set(sp.AGENTS) | set(sp.THINGS) | set(sp.PLACES)
VERBS = {past for past, _ in sp.TRANSITIVE} | {base for _, base in sp.TRANSITIVE}
VERBS |= set(sp.INTRANSITIVE)


def test_generation_is_seeded_and_covers_every_template_and_relation():
    a, b, c = sp.generate(50, seed=3), sp.generate(50, seed=3), sp.generate(50, seed=4)
    assert a == b and a != c and len(a) == 50
    assert {s.template for s in a} == {
        "transitive",
        "intransitive+pp",
        "subject+pp",
        "adverb",
        "auxiliary",
    }
    assert {r for s in a for _, _, r in s.arcs()} == set(sp.RELATIONS)


@pytest.mark.parametrize("sentence", sp.generate(200, seed=0), ids=lambda s: s.text)
def test_gold_relations_follow_the_grammar(sentence):
    w, heads = sentence.words, sentence.heads
    (root,) = [i for i, h in enumerate(heads) if h == -1]
    assert w[root] in VERBS and w[-1] == "."
    for dep, head, rel in sentence.arcs():
        if rel == "det":
            assert w[dep] in sp.DETERMINERS and w[head] in NOUNS and 0 < head - dep <= 3
            assert all(w[k] in sp.ADJECTIVES for k in range(dep + 1, head))
        elif rel == "amod":
            assert w[dep] in sp.ADJECTIVES and w[head] in NOUNS and head > dep
        elif rel == "nsubj":
            assert w[dep] in sp.AGENTS and head == root and dep < head
        elif rel == "dobj":
            assert w[dep] in sp.THINGS and head == root and dep > head
        elif rel == "pobj":
            assert w[dep] in sp.PLACES and w[head] in sp.PREPOSITIONS and head < dep
        elif rel == "prep":
            assert w[dep] in sp.PREPOSITIONS
            # after the verb it modifies the (intransitive) verb; before it, the subject noun
            assert (head == root and w[root] in sp.INTRANSITIVE) or (
                w[head] in sp.AGENTS and heads[head] == root and head == dep - 1
            )
        elif rel == "advmod":
            assert w[dep] in sp.ADVERBS and head == root
        elif rel == "aux":
            assert w[dep] in sp.AUXILIARIES and head == root and dep < head
        elif rel == "punct":
            assert w[dep] == "." and head == root
        else:
            pytest.fail(f"unexpected relation {rel}")


def test_one_example_by_hand():
    s = sp.Sentence(
        words=("the", "dog", "slept", "under", "a", "table", "."),
        heads=(1, 2, -1, 2, 5, 3, 2),
        relations=("det", "nsubj", "root", "prep", "det", "pobj", "punct"),
        template="hand",
    )
    assert s.text == "the dog slept under a table."
    assert s.arcs()[0] == (0, 1, "det") and len(s.arcs()) == 6
    base = sp.offset_baseline([s])
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
    sentences = sp.generate(30, seed=1)
    acc = sp.head_accuracy([_oracle_maps(s) for s in sentences], sentences)
    base = sp.offset_baseline(sentences)
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
    s = sp.generate(1, seed=0)[0]
    maps = _oracle_maps(s)
    n = len(s.words)
    maps[:, 0] += 5 * torch.eye(n + 2)  # most attention on itself: ignored
    acc = sp.head_accuracy([maps], [s])
    torch.testing.assert_close(acc["all"][:, 0], torch.ones(2))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: sp.generate(0), ValueError, "n must"),
        (lambda: sp.Sentence(("a", "b"), (1, -1), ("det",), "x"), ValueError, "equally long"),
        (lambda: sp.Sentence(("a", "b"), (-1, -1), ("x", "y"), "x"), ValueError, "root"),
        (lambda: sp.Sentence(("a", "b"), (0, -1), ("x", "y"), "x"), ValueError, "another word"),
        (
            lambda: sp.head_accuracy([torch.ones(1, 1, 3, 3)], sp.generate(1)),
            ValueError,
            "must have shape",
        ),
        (lambda: sp.head_accuracy([], []), ValueError, "non-empty"),
        (lambda: sp.offset_baseline([]), ValueError, "empty"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_arc_hits_average_to_head_accuracy_and_offsets_count_by_hand():
    sentences = sp.generate(20, seed=2)
    maps = [_oracle_maps(s) for s in sentences]
    hits, relations, owners = sp.arc_hits(maps, sentences)
    acc = sp.head_accuracy(maps, sentences)
    assert hits.shape == (sum(len(s.arcs()) for s in sentences), 2, 3)
    assert owners == sorted(owners) and set(owners) == set(range(len(sentences)))
    for rel in set(relations):
        rows = [i for i, r in enumerate(relations) if r == rel]
        torch.testing.assert_close(hits[rows].float().mean(0), acc[rel])
    hand = sp.Sentence(
        words=("the", "dog", "slept", "under", "a", "table", "."),
        heads=(1, 2, -1, 2, 5, 3, 2),
        relations=("det", "nsubj", "root", "prep", "det", "pobj", "punct"),
        template="hand",
    )
    # arcs in order: det +1, nsubj +1, prep −1, det +1, pobj −2, punct −4
    offsets = sp.offset_hits([hand], [1, -1, -2, 3])
    assert offsets[1].tolist() == [True, True, False, True, False, False]
    assert offsets[-1].tolist() == [False, False, True, False, False, False]
    assert offsets[-2].tolist() == [False, False, False, False, True, False]
    assert not offsets[3].any()


def test_heldout_scores_choose_on_one_half_and_report_on_the_other():
    sentences = sp.generate(40, seed=3)
    maps = [_oracle_maps(s) for s in sentences]
    hits, relations, owners = sp.arc_hits(maps, sentences)
    offsets = sp.offset_hits(sentences, [o for o in range(-4, 5) if o])
    select, report = list(range(0, 40, 2)), list(range(1, 40, 2))
    score = sp.heldout_scores(hits, relations, owners, offsets, "det", select, report)
    assert score.head.head in (0, 2) and score.head.reported == 1.0  # an oracle head
    assert score.offset == 1  # a determiner's noun is most often the next word
    rows = [i for i, r in enumerate(relations) if r == "det" and owners[i] in set(report)]
    assert score.n_arcs == len(rows)
    expected = float(offsets[1][rows].float().mean())
    assert score.offset_score == pytest.approx(expected)
    assert score.gain == pytest.approx(1.0 - expected)
    assert score.gain_ci[0] <= score.gain <= score.gain_ci[1]
    assert 0 < score.gain_p <= 1 and (score.gain_p < 0.05) == (score.gain_ci[0] > 0)
    with pytest.raises(ValueError, match="no arc"):
        sp.heldout_scores(hits, relations, owners, offsets, "nmod", select, report)
