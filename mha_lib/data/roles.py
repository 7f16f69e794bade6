"""Nouns in syntactic roles: which words of parsed sentences are subjects, direct objects or
objects of a preposition (`ROLES`), and "who did what to whom" sentences with their roles
swapped.

Chapter 5 part 3's knockout reads these roles from the hidden states with a probe
(`mha_lib.analysis.knockout`), and asks whether a sentence embedding still tells "the dog
chased the cat" from "the cat chased the dog" (`role_swaps`, `swap_texts`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from mha_lib._checks import check_positive_int
from mha_lib.data.syntax import AGENTS

ROLES = ("nsubj", "dobj", "pobj")  # subject, direct object, object of a preposition
# Verbs whose object can be any of AGENTS, and which are not symmetric ("met" is): swapping
# subject and object changes who did what to whom.
ROLE_VERBS = ("chased", "found", "helped", "called", "followed", "watched", "kicked", "pushed",
              "thanked", "blamed", "praised", "warned")  # fmt: skip


def role_words(
    relations: Sequence[Sequence[str]], sentences: Sequence[int], roles: Sequence[str] = ROLES
) -> list[tuple[int, int]]:
    """`(sentence, word)` of every word of `sentences` whose relation is one of `roles`,
    in sentence order: the items the role probe is fitted on or scored on."""
    if not roles:
        raise ValueError("roles must not be empty")
    return [(i, j) for i in sentences for j, r in enumerate(relations[i]) if r in roles]


def role_swaps(n: int, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """`n` distinct `(subject, verb, object, other)`: two different nouns of
    `AGENTS` around a verb of `ROLE_VERBS`, and a
    third noun to put in the object's place (a change of who, not of roles)."""
    check_positive_int("n", n)
    rng = random.Random(seed)
    out: list[tuple[str, str, str, str]] = []
    possible = len(AGENTS) * (len(AGENTS) - 1) * (len(AGENTS) - 2) * len(ROLE_VERBS)
    if n > possible:
        raise ValueError(f"only {possible} distinct items exist, asked for {n}")
    seen = set()
    while len(out) < n:
        a, b, c = rng.sample(AGENTS, 3)
        item = (a, rng.choice(ROLE_VERBS), b, c)
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def swap_texts(items: Sequence[tuple[str, str, str, str]]) -> dict[str, list[str]]:
    """The sentences of `role_swaps`' items: `"the dog chased the cat."` (`"base"`),
    its role swap `"the cat chased the dog."` (`"swap"`) and the same with another object,
    `"the dog chased the bird."` (`"sub"`)."""
    return {
        "base": [f"the {a} {v} the {b}." for a, v, b, _ in items],
        "swap": [f"the {b} {v} the {a}." for a, v, b, _ in items],
        "sub": [f"the {a} {v} the {c}." for a, v, _, c in items],
    }
