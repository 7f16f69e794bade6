"""Pronouns with two possible antecedents, of which agreement picks one: items known by
construction.

Clark et al. (2019) scored coreference as: for each pronoun, does the head's
most-attended candidate mention head word belong to its antecedent? They needed
an annotated corpus (CoNLL-2012); we have none offline, so each sentence names two
people of different grammatical gender or number ("the king told the girls that
they …") and a pronoun that agrees with exactly one of them. Every frame is used
twice, once with a pronoun agreeing with each person, so the rules "first noun"
and "nearest noun" score exactly 50 % and only agreement decides.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from mha_lib._checks import check_positive_int

# Singular nouns of fixed grammatical gender, and plurals ("they"), all one word.
MASCULINE = (
    "king", "actor", "waiter", "man", "boy", "father", "brother", "uncle",
    "husband", "son", "grandfather", "gentleman", "monk", "prince", "nephew", "groom",
)  # fmt: skip
FEMININE = (
    "queen", "actress", "waitress", "woman", "girl", "mother", "sister", "aunt",
    "wife", "daughter", "grandmother", "lady", "nun", "princess", "niece", "bride",
)  # fmt: skip
PLURAL = (
    "boys", "girls", "men", "women", "children", "students", "players", "soldiers",
    "farmers", "workers", "guests", "teachers", "doctors", "pilots", "tourists", "neighbours",
)  # fmt: skip
PRONOUNS = {
    "subject": {"m": "he", "f": "she", "pl": "they"},
    "object": {"m": "him", "f": "her", "pl": "them"},
    "possessive": {"m": "his", "f": "her", "pl": "their"},
}
THINGS = ("keys", "map", "letter", "ticket", "camera", "umbrella", "wallet", "phone", "recipe")
PLACES = ("station", "market", "library", "harbour", "museum", "cafe", "hospital", "park")

# Frames: {A} and {B} are the two people, {P} the pronoun (its case in the second field).
FRAMES = (
    ("the {A} told the {B} that {P} would arrive at the {place} before noon .", "subject"),
    ("the {A} called the {B} because {P} had lost the {thing} again .", "subject"),
    ("after the {A} met the {B} at the {place} , {P} walked home alone .", "subject"),
    ("the {A} asked the {B} whether {P} could borrow the {thing} .", "subject"),
    ("when the {A} saw the {B} , {P} smiled and pointed at the {place} .", "subject"),
    ("the {A} waved at the {B} , but nobody at the {place} noticed {P} .", "object"),
    ("the {A} visited the {B} , and the {place} staff recognised {P} at once .", "object"),
    ("the {A} thanked the {B} and returned {P} {thing} the next day .", "possessive"),
    ("the {A} followed the {B} into the {place} , holding {P} {thing} tightly .", "possessive"),
)


@dataclass(frozen=True)
class CorefItem:
    """A sentence as words, the pronoun's index, its two candidates and which one it refers to."""

    words: tuple[str, ...]
    pronoun: int
    candidates: tuple[int, int]  # word indices of the two people, in sentence order
    antecedent: int  # the word index of the candidate the pronoun agrees with
    classes: tuple[str, str]  # "m", "f" or "pl" for each candidate
    pronoun_class: str
    frame: int

    def __post_init__(self) -> None:
        n = len(self.words)
        if not all(0 <= i < n for i in (self.pronoun, *self.candidates)):
            raise ValueError("pronoun and candidates must be word indices of the sentence")
        if self.antecedent not in self.candidates:
            raise ValueError("the antecedent must be one of the candidates")
        if not self.candidates[0] < self.candidates[1] < self.pronoun:
            raise ValueError("both candidates must precede the pronoun, in order")

    @property
    def text(self) -> str:
        return " ".join(self.words)


def fill_frame(
    frame: str, find: Sequence[str], **fields: str
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The words of `frame` with its `fields` filled in, and the index of each word of `find`
    (its first occurrence): how the item generators here and in `mha_lib.data.similarity`
    place their words."""
    words = tuple(frame.format(**fields).split())
    return words, tuple(words.index(w) for w in find)


def _pick(rng: random.Random) -> tuple[tuple[str, str], tuple[str, str]]:
    """Two people whose agreement classes differ: m/f, or a singular and a plural."""
    kinds = {"m": MASCULINE, "f": FEMININE, "pl": PLURAL}
    a, b = rng.sample(("m", "f", "pl"), 2)
    return (rng.choice(kinds[a]), a), (rng.choice(kinds[b]), b)


def generate(n_frames: int, seed: int = 0) -> list[CorefItem]:
    """`2 · n_frames` items: each filled frame with a pronoun for each of its two people."""
    check_positive_int("n_frames", n_frames)
    rng = random.Random(seed)
    items: list[CorefItem] = []
    for k in range(n_frames):
        f = k % len(FRAMES)
        template, case = FRAMES[f]
        (a, ca), (b, cb) = _pick(rng)
        fill = {"place": rng.choice(PLACES), "thing": rng.choice(THINGS)}
        for target in (ca, cb):
            pronoun = PRONOUNS[case][target]
            fields = {"A": a, "B": b, "P": pronoun, **fill}
            words, (i_a, i_b, i_p) = fill_frame(template, (a, b, pronoun), **fields)
            items.append(
                CorefItem(
                    words=words,
                    pronoun=i_p,
                    candidates=(i_a, i_b),
                    antecedent=i_a if target == ca else i_b,
                    classes=(ca, cb),
                    pronoun_class=target,
                    frame=k,
                )
            )
    return items

