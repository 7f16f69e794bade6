"""Accuracy on recall *without* looking the key up: the floors an accuracy is read against.

"Chance" is the accuracy of a guess that knows nothing. A model that cannot find the
queried key can still do better than that: in `associative_recall` every
context holds `num_pairs` values drawn uniformly from `num_values`, so answering the
value that occurs most often in the context is right whenever the queried key holds one
of the most frequent values. Given only which values occur (not which key holds which),
no strategy does better: by symmetry the queried key is equally likely to be any slot,
so the answer is value `v` with probability `count(v) / num_pairs`, highest for the
most frequent value. That is the floor a model must beat to show that it looks the key up.

`context_mode_accuracy` measures it on a batch (ties split evenly, so it is the
expected accuracy of a random tie-break); `expected_context_mode_accuracy` gives
its exact expectation, `E[max_v count(v)] / num_pairs` over the multinomial counts.
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from mha_lib._checks import check_positive_int
from mha_lib.experiments.tasks import IGNORE, KeyValueRecall


def chance_accuracy(task: KeyValueRecall) -> float:
    """The accuracy of a uniform guess among the task's classes."""
    return 1.0 / task.num_classes


def context_mode_accuracy(
    task: KeyValueRecall, inputs: torch.Tensor, targets: torch.Tensor
) -> float:
    """Accuracy, over the answered positions of a batch, of answering the context's most
    frequent value (a tie among `m` values counts `1/m` for each of them).

    Only for one key per query (`keys_per_query == 1`), where the answer is a value.
    """
    if not isinstance(task, KeyValueRecall) or task.keys_per_query != 1:
        raise ValueError("context_mode_accuracy needs a KeyValueRecall with one key per query")
    if inputs.shape != targets.shape or inputs.dim() != 2 or inputs.shape[1] != task.seq_len:
        raise ValueError(
            f"inputs and targets must both be (B, {task.seq_len}), got "
            f"{tuple(inputs.shape)} and {tuple(targets.shape)}"
        )
    values = inputs[:, : task.num_pairs] % task.num_values  # (B, N)
    counts = torch.nn.functional.one_hot(values, task.num_values).sum(1)  # (B, V)
    modes = counts == counts.amax(-1, keepdim=True)  # (B, V)
    answered = targets != IGNORE  # (B, T)
    rows = answered.nonzero()[:, 0]  # one entry per answered position
    answer = targets[answered]  # (A,)
    hit = modes[rows, answer].double() / modes[rows].sum(-1)  # (A,)
    return float(hit.mean())


def expected_context_mode_accuracy(num_values: int, num_pairs: int) -> Fraction:
    """`E[max_v count(v)] / num_pairs` for `num_pairs` values drawn uniformly from
    `num_values`, exactly, by summing over every way of splitting the pairs into counts."""
    check_positive_int("num_values", num_values)
    check_positive_int("num_pairs", num_pairs)
    total = Fraction(0)
    for counts in _compositions(num_pairs, num_values):
        ways = math.factorial(num_pairs)
        for c in counts:
            ways //= math.factorial(c)
        total += Fraction(ways * max(counts), num_values**num_pairs)
    return total / num_pairs


def _compositions(total: int, parts: int):  # noqa: ANN202 - a generator of tuples
    """Every tuple of `parts` non-negative ints that sums to `total`."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)
