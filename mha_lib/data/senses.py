"""Sentences in which the context decides which sense of an ambiguous word is meant: chapter
6's items, with three disjoint vocabularies.

Each item puts a homonym (*bat*: animals or sport) in a sentence with three context words,
two from the domain of one of its senses and one from the other's; the majority decides the
label ("the bat was there with the owl, the racket and the squirrel." → animals). Context
words come from three disjoint vocabularies (`SPLITS`), for the probe's training items, for
the items that score heads and for the evaluation items: word identity cannot transfer from
training to test, meaning can. A reader picks one of the word's two domains: chance is one
half (`CHANCE`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from mha_lib._checks import check_positive_int

CHANCE = 0.5
SPLITS = ("probe", "score", "eval")
# Eight domains, 27 unambiguous words each (none is a homonym below): 9 per split.
DOMAINS: dict[str, tuple[str, ...]] = {
    "food": (
        "bread", "cheese", "soup", "salad", "pasta", "rice", "butter", "flour", "sugar",
        "garlic", "onion", "noodle", "pizza", "sandwich", "omelette", "pancake", "yogurt",
        "sausage", "lettuce", "carrot", "potato", "tomato", "cucumber", "vinegar", "honey",
        "muffin", "dumpling",
    ),
    "sport": (
        "football", "tennis", "soccer", "basketball", "hockey", "golf", "rugby", "cricket",
        "baseball", "volleyball", "marathon", "stadium", "referee", "goalkeeper", "racket",
        "tournament", "trophy", "athlete", "sprinter", "cyclist", "boxer", "swimmer", "skier",
        "wrestler", "league", "championship", "jersey",
    ),
    "music": (
        "guitar", "piano", "violin", "drum", "trumpet", "flute", "ukulele", "saxophone",
        "orchestra", "choir", "melody", "rhythm", "chord", "concert", "symphony", "opera",
        "album", "song", "lyrics", "harmony", "tempo", "banjo", "clarinet", "harp", "pianist",
        "drummer", "trombone",
    ),
    "medicine": (
        "doctor", "nurse", "hospital", "clinic", "surgeon", "patient", "fever", "vaccine",
        "pill", "injection", "diagnosis", "therapy", "surgery", "ambulance", "bandage",
        "prescription", "antibiotic", "infection", "allergy", "symptom", "pharmacy", "dentist",
        "stethoscope", "wound", "illness", "physician", "medication",
    ),
    "nature": (
        "river", "lake", "forest", "meadow", "valley", "hill", "mountain", "stream", "shore",
        "cliff", "waterfall", "pond", "swamp", "island", "canyon", "glacier", "desert",
        "jungle", "prairie", "creek", "riverbed", "pebble", "mud", "moss", "fern", "reeds",
        "estuary",
    ),
    "computing": (
        "computer", "keyboard", "laptop", "software", "database", "server", "algorithm",
        "processor", "browser", "website", "password", "printer", "compiler", "programmer",
        "network", "router", "smartphone", "download", "upload", "cursor", "spreadsheet",
        "email", "backup", "firewall", "robot", "hacker", "screen",
    ),
    "money": (
        "loan", "mortgage", "salary", "budget", "invoice", "tax", "dollar", "coin", "wallet",
        "payment", "banker", "debt", "investor", "profit", "savings", "cheque", "credit",
        "cashier", "currency", "pension", "wage", "receipt", "accountant", "auditor",
        "inflation", "dividend", "fortune",
    ),
    "animals": (
        "dog", "cat", "horse", "tiger", "lion", "elephant", "rabbit", "wolf", "fox", "bear",
        "monkey", "giraffe", "zebra", "kangaroo", "penguin", "dolphin", "whale", "eagle", "owl",
        "parrot", "snake", "frog", "turtle", "squirrel", "deer", "camel", "goat",
    ),
}  # fmt: skip
# Homonyms and the domains of their two senses.
HOMONYMS: dict[str, tuple[str, str]] = {
    "bat": ("animals", "sport"), "bass": ("animals", "music"), "mouse": ("animals", "computing"),
    "bank": ("nature", "money"), "pitch": ("sport", "music"), "organ": ("medicine", "music"),
    "virus": ("medicine", "computing"), "bug": ("animals", "computing"),
    "chip": ("food", "computing"), "jam": ("food", "music"), "roll": ("food", "music"),
    "note": ("music", "money"), "record": ("music", "sport"), "score": ("music", "sport"),
    "punch": ("food", "sport"), "pitcher": ("food", "sport"), "batter": ("food", "sport"),
    "bill": ("animals", "money"), "stock": ("food", "money"), "crash": ("computing", "money"),
    "cell": ("medicine", "computing"),
}  # fmt: skip
TEMPLATES = (
    "the {t} was there with the {a}, the {b} and the {c}.",
    "we saw the {a}, the {b} and the {c}, and then the {t}.",
    "after the {a} and the {b}, the {t} stood next to the {c}.",
    "she talked about the {t}, the {a}, the {b} and the {c}.",
    "the {a}, the {t}, the {b} and the {c} were all in the story.",
    "nobody mentioned the {t} until the {a}, the {b} and the {c} came up.",
)
DOMAIN_NAMES = tuple(DOMAINS)
_VOCAB_SEED = 2019


@dataclass(frozen=True)
class SenseItem:
    """One sentence: its homonym, the two domains it can mean, and the right one (0 or 1)."""

    text: str
    target: str
    domains: tuple[str, str]
    label: int
    context: tuple[str, str, str]  # (majority, majority, other), in sentence order shuffled


def vocabulary(split: str) -> dict[str, tuple[str, ...]]:
    """Each domain's context words for one split; the three splits are disjoint."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rng = random.Random(_VOCAB_SEED)
    out = {}
    for name, words in DOMAINS.items():
        shuffled = list(words)
        rng.shuffle(shuffled)
        third = len(shuffled) // len(SPLITS)
        i = SPLITS.index(split)
        out[name] = tuple(shuffled[i * third : (i + 1) * third])
    return out


def make_sense_set(split: str, num_items: int, seed: int) -> list[SenseItem]:
    """`num_items` items (homonyms in turn, senses alternating) from one split's words."""
    check_positive_int("num_items", num_items)
    words = vocabulary(split)
    rng = random.Random(seed)
    targets = list(HOMONYMS)
    items = []
    for i in range(num_items):
        target = targets[i % len(targets)]
        domains = HOMONYMS[target]
        label = (i // len(targets)) % 2  # each homonym's senses alternate
        right, other = domains[label], domains[1 - label]
        a, b = rng.sample(words[right], 2)
        context = [a, b, rng.choice(words[other])]
        rng.shuffle(context)
        text = rng.choice(TEMPLATES).format(t=target, a=context[0], b=context[1], c=context[2])
        items.append(SenseItem(text, target, domains, label, (context[0], context[1], context[2])))
    return items
