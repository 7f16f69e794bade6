"""Things of one category, one of which is named again later: items for semantic similarity,
known by construction.

The source article says some heads track semantic similarity. We test the
narrowest reading we can label without annotators: a sentence names two things
from different categories ("the violin and the hammer") and later a third thing
from one of them ("the cello"); the similar word is the one of the same category.
Each frame is used twice with the two earlier things swapped, so position alone
scores exactly 50 %.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from mha_lib._checks import check_positive_int
from mha_lib.data.coreference import fill_frame

CATEGORIES = {
    "animal": ("horse", "cow", "sheep", "rabbit", "lion", "tiger", "wolf", "fox", "goat", "bear"),
    "fruit": ("apple", "banana", "pear", "cherry", "grape", "lemon", "peach", "plum", "mango"),
    "vehicle": ("car", "bus", "truck", "bicycle", "van", "tractor", "motorcycle", "taxi"),
    "tool": ("hammer", "saw", "drill", "wrench", "screwdriver", "chisel", "shovel", "rake"),
    "instrument": ("piano", "violin", "guitar", "drum", "flute", "trumpet", "cello", "harp"),
    "furniture": ("chair", "sofa", "bed", "desk", "bench", "wardrobe", "stool", "shelf"),
    "clothing": ("shirt", "jacket", "coat", "scarf", "hat", "sweater", "dress", "glove"),
    "kitchenware": ("cup", "plate", "bowl", "spoon", "fork", "pan", "kettle", "jug"),
}

# {X} and {Y} are the two earlier things (one similar, one not), {T} the later one.
FRAMES = (
    "we packed the {X} and the {Y} , and later we also found the {T} in the shed .",
    "the shop sold the {X} and the {Y} , but every customer asked about the {T} .",
    "next to the {X} and the {Y} , the children drew a picture of the {T} .",
    "the list mentioned the {X} first , then the {Y} , and finally the {T} .",
    "my aunt kept the {X} near the {Y} and hid the {T} behind the door .",
    "someone left the {X} beside the {Y} , so nobody could find the {T} that morning .",
)


@dataclass(frozen=True)
class SimilarityItem:
    """Words, the later word's index, the two earlier candidates and the similar one."""

    words: tuple[str, ...]
    target: int
    candidates: tuple[int, int]
    similar: int
    categories: tuple[str, str, str]  # of the two candidates and of the target
    frame: int

    def __post_init__(self) -> None:
        if self.similar not in self.candidates:
            raise ValueError("the similar word must be one of the candidates")
        if not self.candidates[0] < self.candidates[1] < self.target < len(self.words):
            raise ValueError("both candidates must precede the target, in order")

    @property
    def text(self) -> str:
        return " ".join(self.words)


def generate(n_frames: int, seed: int = 0) -> list[SimilarityItem]:
    """`2 · n_frames` items: each filled frame with the two earlier things in both orders."""
    check_positive_int("n_frames", n_frames)
    rng = random.Random(seed)
    names = sorted(CATEGORIES)
    items: list[SimilarityItem] = []
    for k in range(n_frames):
        f = k % len(FRAMES)
        same, other = rng.sample(names, 2)
        similar, target = rng.sample(CATEGORIES[same], 2)
        unrelated = rng.choice(CATEGORIES[other])
        for x, y, cx, cy in ((similar, unrelated, same, other), (unrelated, similar, other, same)):
            words, (i_x, i_y, i_t) = fill_frame(FRAMES[f], (x, y, target), X=x, Y=y, T=target)
            items.append(
                SimilarityItem(
                    words=words,
                    target=i_t,
                    candidates=(i_x, i_y),
                    similar=i_x if x == similar else i_y,
                    categories=(cx, cy, same),
                    frame=k,
                )
            )
    return items
