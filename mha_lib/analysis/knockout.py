"""Does the model need a parsing head? Switch it off and ask the layers above what they know.

A head whose strongest weight goes from each direct object to its verb (chapter 5 part 3) shows
a correlation. The test of use is an intervention: switch the head off (a head mask, which the
caller applies) and read the hidden states above it with a probe for the *syntactic role* of
nouns (:data:`ROLES`: subject, direct object, object of a preposition), which a model can only
tell by relating the noun to the words it depends on.

Two read-outs, as in chapter 6: a probe fitted on the intact model and kept *frozen* (is the
role still written where the model wrote it?) and a probe *refitted* on the damaged model
(is it still there to be read at all?). And one baseline: switching off any head moves the
states above it, so a head's effect counts only against switching off as many other heads of
the same layers (:func:`matched_draws`), or of any layers (:func:`random_draws`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from mha_lib._checks import check_positive_int, check_tensor
from mha_lib.analysis.layer_probes import hits_by_layer

ROLES = ("nsubj", "dobj", "pobj")  # subject, direct object, object of a preposition
Head = tuple[int, int]  # (layer, head)


def role_words(
    relations: Sequence[Sequence[str]], sentences: Sequence[int], roles: Sequence[str] = ROLES
) -> list[tuple[int, int]]:
    """``(sentence, word)`` of every word of ``sentences`` whose relation is one of ``roles``,
    in sentence order: the items the role probe is fitted on or scored on."""
    if not roles:
        raise ValueError("roles must not be empty")
    return [(i, j) for i in sentences for j, r in enumerate(relations[i]) if r in roles]


def gather(states: Sequence[torch.Tensor], words: Sequence[tuple[int, int]]) -> torch.Tensor:
    """``(L + 1, N, D)``: every layer's state of each ``(sentence, word)``, from per-sentence
    ``(L + 1, W, D)`` states (:func:`mha_lib.analysis.layer_probes.word_states`)."""
    if not words:
        raise ValueError("words must not be empty")
    return torch.stack([states[i][:, j] for i, j in words], 1)


def ranked_heads(
    hits: torch.Tensor,
    relations: Sequence[str],
    owners: Sequence[int],
    relation: str,
    select: Sequence[int],
) -> list[Head]:
    """Every head, best first, by its accuracy on ``relation``'s arcs of the ``select``
    sentences (``hits``, ``relations``, ``owners`` as from
    :func:`mha_lib.analysis.syntax_probe.arc_hits`); ties keep the lower layer and head."""
    check_tensor(hits, "hits")
    if hits.dim() != 3 or hits.shape[0] != len(relations) or len(relations) != len(owners):
        raise ValueError("hits must be (A, L, H) with one relation and owner per arc")
    keep = set(int(i) for i in select)
    rows = [a for a, (r, o) in enumerate(zip(relations, owners, strict=True))
            if r == relation and o in keep]  # fmt: skip
    if not rows:
        raise ValueError(f"no {relation!r} arc in the selected sentences")
    score = hits[rows].double().mean(0).flatten()
    heads = hits.shape[2]
    order = sorted(range(score.numel()), key=lambda k: (-float(score[k]), k))
    return [divmod(k, heads) for k in order]


def matched_draws(heads: Sequence[Head], num_heads: int, n: int, seed: int = 0) -> list[list[Head]]:
    """``n`` sets of as many heads as ``heads``, each head replaced by another head of its own
    layer (never one of ``heads``, never twice in a set): the control that moves the same
    layers. With one head, the draws cycle through every other head of its layer in a
    seeded order, so ``n = num_heads − 1`` is the exact, complete control."""
    check_positive_int("num_heads", num_heads)
    check_positive_int("n", n)
    chosen = set(heads)
    if len(chosen) != len(heads) or not heads:
        raise ValueError("heads must be distinct and non-empty")
    for layer, head in heads:
        if not 0 <= head < num_heads:
            raise ValueError(f"head {layer}-{head} is outside 0 … {num_heads - 1}")
        same = sum(1 for lh in heads if lh[0] == layer)
        if num_heads - same < same:
            raise ValueError(f"too many heads of layer {layer} to draw others in their place")
    rng = random.Random(seed)
    if len(heads) == 1:
        layer = heads[0][0]
        others = [(layer, h) for h in range(num_heads) if (layer, h) not in chosen]
        rng.shuffle(others)
        return [[others[k % len(others)]] for k in range(n)]
    out = []
    for _ in range(n):
        drawn: list[Head] = []
        for layer, _head in heads:
            free = [(layer, h) for h in range(num_heads)
                    if (layer, h) not in chosen and (layer, h) not in drawn]  # fmt: skip
            drawn.append(rng.choice(free))
        out.append(drawn)
    return out


def random_draws(
    k: int, num_layers: int, num_heads: int, n: int, exclude: Sequence[Head] = (), seed: int = 0
) -> list[list[Head]]:
    """``n`` sets of ``k`` distinct heads drawn from all layers, none of ``exclude``."""
    for name, value in (("k", k), ("num_layers", num_layers), ("num_heads", num_heads), ("n", n)):
        check_positive_int(name, value)
    pool = [(layer, h) for layer in range(num_layers) for h in range(num_heads)
            if (layer, h) not in set(exclude)]  # fmt: skip
    if k > len(pool):
        raise ValueError(f"cannot draw {k} heads from {len(pool)}")
    rng = random.Random(seed)
    return [sorted(rng.sample(pool, k)) for _ in range(n)]


def mask_without(heads: Sequence[Head], num_layers: int, num_heads: int) -> torch.Tensor:
    """``(L, H)`` float head mask, ones with ``heads`` at zero (:func:`mha_lib.bert.head_mask`)."""
    mask = torch.ones(num_layers, num_heads)
    for layer, head in heads:
        mask[layer, head] = 0.0
    return mask


def read_roles(
    train_x: torch.Tensor,
    train_y: Sequence[str],
    test_x: torch.Tensor,
    test_y: Sequence[str],
    frozen: Sequence[object],
) -> dict[str, torch.Tensor]:
    """``{"frozen": (L + 1, N_test), "refit": (L + 1, N_test)}`` bool hits of the role probes on
    states of a (possibly damaged) model: the ``frozen`` probes (one per layer, fitted on the
    intact model by :func:`~mha_lib.analysis.layer_probes.fit_by_layer`) read ``test_x`` as
    they are; the refitted ones are fitted on ``train_x``."""
    return {
        "frozen": hits_by_layer(train_x, train_y, test_x, test_y, probes=frozen),
        "refit": hits_by_layer(train_x, train_y, test_x, test_y),
    }


def accuracy_by_role(hits: torch.Tensor, test_y: Sequence[str]) -> dict[str, list[float]]:
    """Per role (and ``"all"``), the per-layer accuracy of ``hits`` ``(L + 1, N)``."""
    check_tensor(hits, "hits")
    if hits.dim() != 2 or hits.shape[1] != len(test_y):
        raise ValueError("hits must be (L + 1, N) with one label per item")
    out = {"all": hits.double().mean(1).tolist()}
    for role in sorted(set(test_y)):
        cols = torch.tensor([r == role for r in test_y])
        out[role] = hits[:, cols].double().mean(1).tolist()
    return out
