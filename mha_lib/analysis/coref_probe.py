"""Does some head point a pronoun at its antecedent? Items whose answer is known by construction.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from mha_lib._checks import check_floating, check_positive_int

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
            words = template.format(A=a, B=b, P=pronoun, **fill).split()
            i_a, i_b, i_p = words.index(a), words.index(b), words.index(pronoun)
            items.append(
                CorefItem(
                    words=tuple(words),
                    pronoun=i_p,
                    candidates=(i_a, i_b),
                    antecedent=i_a if target == ca else i_b,
                    classes=(ca, cb),
                    pronoun_class=target,
                    frame=k,
                )
            )
    return items


def choice_hits(
    word_maps: Sequence[torch.Tensor],
    queries: Sequence[int],
    candidates: Sequence[Sequence[int]],
    answers: Sequence[int],
    *,
    specials: int = 1,
    any_word: bool = False,
) -> torch.Tensor:
    """`(N, L, H)` booleans: does the query word attend more to the answer than to the rest?

    `word_maps[i]` is item i's word-level map `(L, H, W + 2·specials, W + 2·specials)`;
    indices are word indices (`[CLS]` excluded). By default only the item's candidates
    compete (ties count as misses); with `any_word` every other word does (Clark et al.'s
    stricter "most-attended word"), the query word itself and the specials excluded.
    """
    n = len(word_maps)
    if not (n == len(queries) == len(candidates) == len(answers)) or n == 0:
        raise ValueError(
            "word_maps, queries, candidates and answers must be non-empty, equal length"
        )
    rows = []
    for i, m in enumerate(word_maps):
        check_floating(m, f"word_maps[{i}]")
        if m.dim() != 4 or m.shape[-1] != m.shape[-2] or m.shape[-1] <= 2 * specials:
            raise ValueError(f"word_maps[{i}] must have shape (L, H, T, T), got {tuple(m.shape)}")
        w = m.shape[-1] - 2 * specials
        q, ans, cands = queries[i], answers[i], list(candidates[i])
        if ans not in cands or not all(0 <= j < w for j in (q, *cands)):
            raise ValueError(f"item {i}: answer must be a candidate; indices must be < {w} words")
        row = m[..., specials + q, specials : specials + w]  # (L, H, W): from the query word
        if any_word:
            others = [j for j in range(w) if j not in (q, ans)]
        else:
            others = [j for j in cands if j != ans]
        best_other = row[..., others].max(-1).values  # (L, H)
        rows.append(row[..., ans] > best_other)
    return torch.stack(rows)  # (N, L, H)


def lexical_choice(
    words: Sequence[Sequence[str]],
    queries: Sequence[int],
    candidates: Sequence[Sequence[int]],
    answers: Sequence[int],
    embed: Callable[[str], torch.Tensor],
) -> torch.Tensor:
    """`(N,)` booleans: is the answer the candidate whose `embed(word)` is most cosine-similar
    to the query word's? A baseline that sees words, not context (e.g. input embeddings)."""
    n = len(words)
    if not (n == len(queries) == len(candidates) == len(answers)) or n == 0:
        raise ValueError("words, queries, candidates and answers must be non-empty, equal length")
    hits = []
    for w, q, cands, ans in zip(words, queries, candidates, answers, strict=True):
        if ans not in cands:
            raise ValueError("every answer must be one of its candidates")
        t = embed(w[q])
        cos = {
            c: float(torch.nn.functional.cosine_similarity(t, embed(w[c]), dim=0)) for c in cands
        }
        hits.append(all(cos[ans] > cos[c] for c in cands if c != ans))
    return torch.tensor(hits)


def rule_hits(items: Sequence[CorefItem]) -> dict[str, torch.Tensor]:
    """`(N,)` booleans for the rule baselines: first noun, nearest noun, nearest agreeing noun."""
    if not items:
        raise ValueError("items must not be empty")
    first = [it.candidates[0] == it.antecedent for it in items]
    nearest = [it.candidates[1] == it.antecedent for it in items]
    agreeing = []
    for it in items:
        matches = [
            c for c, k in zip(it.candidates, it.classes, strict=True) if k == it.pronoun_class
        ]
        agreeing.append(bool(matches) and max(matches) == it.antecedent)
    return {
        "first noun (the subject)": torch.tensor(first),
        "nearest preceding noun": torch.tensor(nearest),
        "nearest noun that agrees": torch.tensor(agreeing),
    }
