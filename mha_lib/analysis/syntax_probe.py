"""Do attention heads find syntax? Sentences with exactly known dependencies, and a scorer.

Clark et al. (2019) scored each BERT head as a tiny parser: a word's predicted
syntactic head is the word it attends to most. They used a treebank; we have
none offline, so sentences are generated from a few templates whose
dependencies are known by construction (Universal-Dependencies-style labels,
as in their Table 1). Each head is compared with the best *fixed-offset*
baseline ("the head is always 2 words to the right"), which is strong on short
template sentences, so only the gap above it counts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mha_lib._checks import check_floating, check_positive_int
from mha_lib.analysis import statistics
from mha_lib.analysis.statistics import HeldOut

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

    def done(self, template: str) -> Sentence:
        heads = tuple(-1 if h is None else self.names[h] for h in self.heads)
        return Sentence(tuple(self.words), heads, tuple(self.relations), template)


def _transitive(rng: random.Random) -> Sentence:
    # the (adj) farmer painted the (adj) box .
    b = _Builder()
    b.noun_phrase(rng, AGENTS, "subj", "nsubj", "verb")
    b.add(rng.choice(TRANSITIVE)[0], "root", None, "verb")
    b.noun_phrase(rng, THINGS, "obj", "dobj", "verb")
    b.add(".", "punct", "verb")
    return b.done("transitive")


def _intransitive_pp(rng: random.Random) -> Sentence:
    # the (adj) dog slept (quietly) under the (adj) table .   An intransitive verb: the
    # PP can only attach to the verb; the optional adverb moves it one word further away.
    b = _Builder()
    b.noun_phrase(rng, AGENTS, "subj", "nsubj", "verb")
    b.add(rng.choice(INTRANSITIVE), "root", None, "verb")
    if rng.random() < 0.5:
        b.add(rng.choice(ADVERBS), "advmod", "verb")
    b.add(rng.choice(PREPOSITIONS), "prep", "verb", "prep")
    b.noun_phrase(rng, PLACES, "pobj", "pobj", "prep")
    b.add(".", "punct", "verb")
    return b.done("intransitive+pp")


def _subject_pp(rng: random.Random) -> Sentence:
    # the (adj) cat near the river found the (adj) ball .   (a PP between subject and
    # verb can only modify the subject noun)
    b = _Builder()
    b.noun_phrase(rng, AGENTS, "subj", "nsubj", "verb")
    b.add(rng.choice(PREPOSITIONS), "prep", "subj", "prep")
    b.add(rng.choice(DETERMINERS), "det", "pobj")
    b.add(rng.choice(PLACES), "pobj", "prep", "pobj")
    b.add(rng.choice(TRANSITIVE)[0], "root", None, "verb")
    b.noun_phrase(rng, THINGS, "obj", "dobj", "verb")
    b.add(".", "punct", "verb")
    return b.done("subject+pp")


def _adverb(rng: random.Random) -> Sentence:
    # the (adj) pilot quickly opened the (adj) door .
    b = _Builder()
    b.noun_phrase(rng, AGENTS, "subj", "nsubj", "verb")
    b.add(rng.choice(ADVERBS), "advmod", "verb")
    b.add(rng.choice(TRANSITIVE)[0], "root", None, "verb")
    b.noun_phrase(rng, THINGS, "obj", "dobj", "verb")
    b.add(".", "punct", "verb")
    return b.done("adverb")


def _auxiliary(rng: random.Random) -> Sentence:
    # the (adj) child will (carefully) carry the (adj) book .
    b = _Builder()
    b.noun_phrase(rng, AGENTS, "subj", "nsubj", "verb")
    b.add(rng.choice(AUXILIARIES), "aux", "verb")
    if rng.random() < 0.3:
        b.add(rng.choice(ADVERBS), "advmod", "verb")
    b.add(rng.choice(TRANSITIVE)[1], "root", None, "verb")
    b.noun_phrase(rng, THINGS, "obj", "dobj", "verb")
    b.add(".", "punct", "verb")
    return b.done("auxiliary")


TEMPLATES = (_transitive, _intransitive_pp, _subject_pp, _adverb, _auxiliary)


def generate(n: int, seed: int = 0) -> list[Sentence]:
    """`n` template sentences, cycling through the templates, reproducible from `seed`."""
    check_positive_int("n", n)
    rng = random.Random(seed)
    return [TEMPLATES[i % len(TEMPLATES)](rng) for i in range(n)]


def head_accuracy(
    word_maps: Sequence[torch.Tensor], sentences: Sequence[Sentence], *, specials: int = 1
) -> dict[str, torch.Tensor]:
    """Per relation, the `(L, H)` fraction of dependents whose most-attended word is their head.

    `word_maps[i]` is sentence `i`'s word-level map `(L, H, W + 2·specials,
    W + 2·specials)` with `specials` tokens ([CLS], [SEP]) at each end, which
    are excluded as candidates, as is the word itself. Adds `"all"` for every arc.
    """
    hits, relations, _ = arc_hits(word_maps, sentences, specials=specials)  # (A, L, H)
    keys = list(dict.fromkeys(key for rel in relations for key in (rel, "all")))
    return {
        key: hits[[i for i, r in enumerate(relations) if key in (r, "all")]].float().mean(0)
        for key in keys
    }


def offset_baseline(sentences: Sequence[Sentence]) -> dict[str, tuple[int, float]]:
    """Per relation, the best fixed offset (head index − dependent index) and its accuracy."""
    if not sentences:
        raise ValueError("sentences must not be empty")
    offsets: dict[str, list[int]] = {}
    for s in sentences:
        for dep, head, rel in s.arcs():
            for key in (rel, "all"):
                offsets.setdefault(key, []).append(head - dep)
    best: dict[str, tuple[int, float]] = {}
    for key, values in offsets.items():
        # Ties go to the smaller |offset|, then to the left, so the result is deterministic.
        offset = max(set(values), key=lambda o: (values.count(o), -abs(o), -o))
        best[key] = (offset, values.count(offset) / len(values))
    return best


def arc_hits(
    word_maps: Sequence[torch.Tensor], sentences: Sequence[Sentence], *, specials: int = 1
) -> tuple[torch.Tensor, list[str], list[int]]:
    """Per arc, whether each head's most-attended other word is the arc's head word.

    Returns `(hits (A, L, H) bool, relation of each arc, sentence index of each arc)`,
    so that arcs can be split and resampled by sentence (see `mha_lib.analysis.statistics`);
    `head_accuracy` is the mean of these hits per relation.
    """
    if len(word_maps) != len(sentences) or not sentences:
        raise ValueError(
            f"word_maps and sentences must be non-empty and equally long, "
            f"got {len(word_maps)} and {len(sentences)}"
        )
    hits: list[torch.Tensor] = []
    relations: list[str] = []
    owners: list[int] = []
    for i, (m, s) in enumerate(zip(word_maps, sentences, strict=True)):
        check_floating(m, f"word_maps[{i}]")
        n = len(s.words)
        if m.dim() != 4 or m.shape[-1] != m.shape[-2] or m.shape[-1] != n + 2 * specials:
            raise ValueError(
                f"word_maps[{i}] must have shape (L, H, {n + 2 * specials}, {n + 2 * specials}) "
                f"for {n} words and {specials} special token(s) at each end, got {tuple(m.shape)}"
            )
        inner = m[..., specials : specials + n, specials : specials + n]  # (L, H, W, W)
        itself = torch.eye(n, dtype=torch.bool, device=inner.device)  # (W, W)
        predicted = inner.masked_fill(itself, float("-inf")).argmax(-1)  # (L, H, W)
        for dep, head, rel in s.arcs():
            hits.append(predicted[..., dep] == head)  # (L, H)
            relations.append(rel)
            owners.append(i)
    return torch.stack(hits), relations, owners


def offset_hits(sentences: Sequence[Sentence], offsets: Sequence[int]) -> dict[int, torch.Tensor]:
    """Per fixed offset, `(A,)` booleans over the arcs (order of `arc_hits`): is the
    head word exactly `offset` words from the dependent (head index − dependent index)?"""
    if not sentences:
        raise ValueError("sentences must not be empty")
    gaps = torch.tensor([h - d for s in sentences for d, h, _ in s.arcs()])  # (A,)
    return {int(o): gaps == int(o) for o in offsets}


@dataclass(frozen=True)
class RelationScore:
    """One relation's best head and best fixed offset, both chosen on one half and scored on the
    other (fractions), and the head's paired gain over the offset with its interval."""

    relation: str
    n_arcs: int  # arcs of this relation in the reporting half
    head: HeldOut
    offset: int
    offset_score: float
    offset_ci: tuple[float, float]
    gain: float
    gain_ci: tuple[float, float]
    gain_p: float  # two-sided bootstrap p-value of the gain (the interval's resamples)


def heldout_scores(
    hits: torch.Tensor,
    relations: Sequence[str],
    owners: Sequence[int],
    offsets: dict[int, torch.Tensor],
    relation: str,
    select: Sequence[int],
    report: Sequence[int],
    *,
    layer: int | None = None,
    seed: int = 0,
) -> RelationScore:
    """Score `relation` (or `"all"`) from `arc_hits` and `offset_hits` outputs.

    `select` and `report` are sentence indices (from `statistics.split_halves`); the
    arcs of a sentence stay together, and intervals resample whole sentences.
    """
    rows = [i for i, r in enumerate(relations) if relation in (r, "all")]
    if not rows:
        raise ValueError(f"no arc has relation {relation!r}")
    groups = [owners[i] for i in rows]
    sub = hits[rows]  # (A_rel, L, H)
    head = statistics.best_head(sub, select, report, groups, layer=layer, seed=seed)
    rules = {o: v[rows] for o, v in offsets.items()}
    name, score, ci = statistics.best_rule(
        {str(o): v for o, v in rules.items()}, select, report, groups, seed=seed
    )
    gain, gain_ci = statistics.paired_gain(sub, rules[int(name)], head, report, groups, seed=seed)
    gain_p = statistics.paired_gain_p(sub, rules[int(name)], head, report, groups, seed=seed)
    keep = set(int(r) for r in report)
    return RelationScore(
        relation=relation,
        n_arcs=sum(g in keep for g in groups),
        head=head,
        offset=int(name),
        offset_score=score,
        offset_ci=ci,
        gain=gain,
        gain_ci=gain_ci,
        gain_p=gain_p,
    )
