"""A labelled sentence-embedding test that needs word order: who did what to whom.

Chapter 6 prunes heads of a pretrained sentence encoder and needs a number that
says what the pruning costs. Topic classification would be a poor choice: a
bag of word embeddings already separates topics, so a model with no attention
at all could pass it. Here every test sentence must retrieve its own
paraphrase among the paraphrases of a *group* of eight events built from the
same few words:

- two noun pairs (x, y) × two verbs × two directions (x → y and y → x);
- the anchor is an active sentence ("the chef praised the pilot."), the
  candidates are the group's eight paraphrases ("the pilot was praised by the chef.");
- among the distractors is the role swap ("the chef was praised by the pilot."),
  which has exactly the anchor's words, so a bag-of-words model can do no better
  than 1/2 and chance is 1/8.

The sentence embedding is the mean of the last hidden states over the real
tokens (the attention mask), as ``all-MiniLM-L6-v2`` is trained to be used.
The loss is a softmax over the cosine similarities to the eight candidates at
a fixed temperature, so Michel et al.'s gradient importance can be taken on it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

GROUP_SIZE = 8
CHANCE = 1.0 / GROUP_SIZE
BAG_OF_WORDS_CEILING = 0.5  # the role swap has the anchor's words: a coin flip at best
TEMPERATURE = 0.05

# People and animals that can sensibly do each verb to each other in either direction.
NOUNS = (
    "chef", "pilot", "teacher", "student", "doctor", "nurse", "lawyer", "judge",
    "farmer", "soldier", "child", "king", "queen", "waiter", "boss", "clerk",
    "thief", "guard", "dog", "cat", "artist", "singer", "captain", "sailor",
    "banker", "dancer", "coach", "player", "baker", "driver", "writer", "priest",
)  # fmt: skip
# (past tense, past participle)
VERBS = (
    ("chased", "chased"), ("praised", "praised"), ("blamed", "blamed"),
    ("helped", "helped"), ("followed", "followed"), ("pushed", "pushed"),
    ("visited", "visited"), ("warned", "warned"), ("thanked", "thanked"),
    ("ignored", "ignored"), ("hired", "hired"), ("rescued", "rescued"),
    ("called", "called"), ("admired", "admired"), ("greeted", "greeted"),
    ("saw", "seen"), ("met", "met"), ("bit", "bitten"), ("hit", "hit"),
    ("forgave", "forgiven"), ("paid", "paid"), ("taught", "taught"),
    ("fought", "fought"), ("caught", "caught"),
)  # fmt: skip
ACTIVE = (
    "the {a} {v} the {p}.",
    "yesterday the {a} {v} the {p}.",
    "the {a} {v} the {p} this morning.",
    "in the story, the {a} {v} the {p}.",
)
# Two paraphrases keep the agent first, two put the patient first (passive voice); the
# full model gets the first kind mostly right and the passive kind often wrong.
PARAPHRASE = (
    "it was the {a} who {v} the {p}.",
    "the {a} was the one who {v} the {p}.",
    "the {p} was {pp} by the {a}.",
    "the {p} got {pp} by the {a}.",
)


@dataclass(frozen=True)
class Event:
    """Who (``agent``) did what (``verb`` index into :data:`VERBS`) to whom (``patient``)."""

    agent: str
    verb: int
    patient: str


@dataclass(frozen=True)
class RetrievalSet:
    """``anchors[i]`` must retrieve ``candidates[i]`` among the candidates of its group.

    Groups are consecutive blocks of :data:`GROUP_SIZE` items; ``events[i]`` is the
    event both sentences describe.
    """

    anchors: list[str]
    candidates: list[str]
    events: list[Event]

    @property
    def num_groups(self) -> int:
        return len(self.anchors) // GROUP_SIZE


def make_retrieval_set(num_groups: int = 32, seed: int = 0) -> RetrievalSet:
    """``num_groups`` groups of eight events, their sentences drawn from templates, seeded."""
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
        raise ValueError(f"num_groups must be a positive int, got {num_groups!r}")
    rng = random.Random(seed)
    anchors: list[str] = []
    candidates: list[str] = []
    events: list[Event] = []
    for _ in range(num_groups):
        x1, y1, x2, y2 = rng.sample(NOUNS, 4)
        verbs = rng.sample(range(len(VERBS)), 2)
        group = [
            Event(a, v, p)
            for x, y in ((x1, y1), (x2, y2))
            for v in verbs
            for a, p in ((x, y), (y, x))
        ]
        rng.shuffle(group)
        for event in group:
            past, participle = VERBS[event.verb]
            words = {"a": event.agent, "p": event.patient, "v": past, "pp": participle}
            anchors.append(rng.choice(ACTIVE).format(**words))
            # The paraphrase template is chosen once per group item; its role swap (another
            # item of the group) draws its own, so template choice gives nothing away.
            candidates.append(rng.choice(PARAPHRASE).format(**words))
            events.append(event)
    return RetrievalSet(anchors, candidates, events)


@dataclass(frozen=True)
class Batch:
    """Tokenised anchors and candidates of whole groups (row ``i`` of each belongs together)."""

    anchor_ids: torch.Tensor  # (B, Ta)
    anchor_mask: torch.Tensor  # (B, Ta)
    candidate_ids: torch.Tensor  # (B, Tc)
    candidate_mask: torch.Tensor  # (B, Tc)

    def __len__(self) -> int:
        return self.anchor_ids.shape[0]


def make_batches(tokenizer: object, data: RetrievalSet, groups_per_batch: int = 8) -> list[Batch]:
    """Tokenise once, in batches of whole groups, so loss and metric never split a group."""
    if isinstance(groups_per_batch, bool) or not isinstance(groups_per_batch, int):
        raise TypeError(f"groups_per_batch must be an int, got {groups_per_batch!r}")
    if groups_per_batch < 1:
        raise ValueError(f"groups_per_batch must be positive, got {groups_per_batch}")
    size = groups_per_batch * GROUP_SIZE
    batches = []
    for start in range(0, len(data.anchors), size):
        a = tokenizer(data.anchors[start : start + size], padding=True, return_tensors="pt")
        c = tokenizer(data.candidates[start : start + size], padding=True, return_tensors="pt")
        batches.append(
            Batch(a["input_ids"], a["attention_mask"], c["input_ids"], c["attention_mask"])
        )
    return batches


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``(B, T, D) → (B, D)``: average of the real tokens' states (padding excluded)."""
    if hidden.dim() != 3 or tuple(attention_mask.shape) != tuple(hidden.shape[:2]):
        raise ValueError(
            f"hidden must be (B, T, D) and attention_mask (B, T), got {tuple(hidden.shape)} "
            f"and {tuple(attention_mask.shape)}"
        )
    weights = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1.0)  # (B, D)


def embed(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean-pooled sentence embeddings ``(B, D)`` on the model's device (gradients flow if on).

    The tokenised batches live on the CPU; they move to the model's device here.
    """
    device = next(model.parameters()).device
    input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
    hidden = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return mean_pool(hidden, attention_mask)  # (B, D)


def group_similarities(anchors: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """``(B, 8)`` cosine similarity of each anchor to the eight candidates of its group."""
    b, d = anchors.shape
    if b % GROUP_SIZE or tuple(candidates.shape) != (b, d):
        raise ValueError(
            f"anchors and candidates must both be (B, D) with B a multiple of {GROUP_SIZE}, "
            f"got {tuple(anchors.shape)} and {tuple(candidates.shape)}"
        )
    a = F.normalize(anchors, dim=-1).view(-1, GROUP_SIZE, d)  # (G, 8, D)
    c = F.normalize(candidates, dim=-1).view(-1, GROUP_SIZE, d)  # (G, 8, D)
    return (a @ c.transpose(1, 2)).reshape(b, GROUP_SIZE)  # (B, 8)


def _targets(sims: torch.Tensor) -> torch.Tensor:
    """``(B,)``: item ``i``'s paraphrase is slot ``i mod 8`` of its group (on ``sims``' device)."""
    return torch.arange(sims.shape[0], device=sims.device) % GROUP_SIZE


def retrieval_loss(
    model: nn.Module, batch: Batch, temperature: float = TEMPERATURE, *, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy of softmax(cos / temperature) over each anchor's group: differentiable.

    ``reduction="none"`` gives one loss per anchor ``(B,)`` (pruning's per-example
    importance groups them by :data:`GROUP_SIZE`, since a group's anchors share candidates).
    """
    if reduction not in ("mean", "none"):
        raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    sims = _batch_similarities(model, batch)  # (B, 8)
    return F.cross_entropy(sims / temperature, _targets(sims), reduction=reduction)


def _batch_similarities(model: nn.Module, batch: Batch) -> torch.Tensor:
    """Cosine of each anchor to the candidates of its group, ``(B, 8)``."""
    return group_similarities(
        embed(model, batch.anchor_ids, batch.anchor_mask),
        embed(model, batch.candidate_ids, batch.candidate_mask),
    )


def retrieval_accuracy(model: nn.Module, batches: Sequence[Batch]) -> float:
    """Fraction of anchors whose most similar group candidate is their own paraphrase."""
    correct = total = 0
    with torch.inference_mode():
        for batch in batches:
            sims = _batch_similarities(model, batch)  # (B, 8)
            correct += int((sims.argmax(-1) == _targets(sims)).sum())
            total += len(batch)
    return correct / total


def swap_error_rate(model: nn.Module, batches: Sequence[Batch], data: RetrievalSet) -> float:
    """Among the wrong answers, the fraction that picked the role swap (same words, swapped)."""
    swaps = errors = 0
    start = 0
    with torch.inference_mode():
        for batch in batches:
            sims = _batch_similarities(model, batch)  # (B, 8)
            picked = sims.argmax(-1).tolist()
            for i, slot in enumerate(picked):
                item = start + i
                if slot == item % GROUP_SIZE:
                    continue
                errors += 1
                chosen = data.events[item - item % GROUP_SIZE + slot]
                mine = data.events[item]
                swaps += (chosen.agent, chosen.verb, chosen.patient) == (
                    mine.patient,
                    mine.verb,
                    mine.agent,
                )
            start += len(batch)
    return swaps / errors if errors else 0.0


def anchor_embeddings(model: nn.Module, batches: Sequence[Batch]) -> torch.Tensor:
    """``(N, D)`` embeddings of every anchor, in order (the reference for fidelity)."""
    with torch.inference_mode():
        return torch.cat([embed(model, b.anchor_ids, b.anchor_mask) for b in batches])


def embedding_fidelity(
    model: nn.Module, batches: Sequence[Batch], reference: torch.Tensor
) -> float:
    """Mean cosine between a (pruned) model's anchor embeddings and the unpruned ``reference``."""
    ours = anchor_embeddings(model, batches)  # (N, D)
    if ours.shape != reference.shape:
        raise ValueError(
            f"reference must have shape {tuple(ours.shape)} (one row per anchor), "
            f"got {tuple(reference.shape)}"
        )
    return float(F.cosine_similarity(ours, reference, dim=-1).mean())
