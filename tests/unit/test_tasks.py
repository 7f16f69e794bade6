"""The task generators against a slow, loop-by-loop reference decoder."""

import itertools

import pytest
import torch

from mha_lib.experiments.tasks import (
    IGNORE,
    AbsentRecall,
    KeyValueRecall,
    absent_recall,
    associative_recall,
    lookback,
    pair_recall,
)


def reference_recall_targets(task: KeyValueRecall, inputs: torch.Tensor) -> torch.Tensor:
    """Decode every token by hand and work out the answers, one sequence at a time."""
    tuples = list(itertools.permutations(range(task.num_keys), task.keys_per_query))
    context_vocab = task.num_keys * task.num_values
    targets = torch.full(inputs.shape, IGNORE, dtype=torch.long)
    for b, row in enumerate(inputs.tolist()):
        store = {}
        for t, token in enumerate(row):
            if token < context_vocab:
                key, value = divmod(token, task.num_values)
                assert key not in store, "a key appears twice in one context"
                store[key] = value
            else:
                answer = 0
                for key in tuples[token - context_vocab]:
                    answer = answer * task.num_values + store[key]
                targets[b, t] = answer
    return targets


@pytest.mark.parametrize("maker", [associative_recall, pair_recall])
@pytest.mark.parametrize(
    "sizes", [dict(), dict(num_keys=12, num_values=5, num_pairs=7, num_queries=3)]
)
def test_recall_answers_match_reference(maker, sizes):
    task = maker(**sizes)
    inputs, targets = task.sample(64, torch.Generator().manual_seed(3))
    assert inputs.shape == targets.shape == (64, task.seq_len)
    assert inputs.dtype == targets.dtype == torch.long
    assert 0 <= inputs.min() and inputs.max() < task.vocab_size
    assert torch.equal(targets, reference_recall_targets(task, inputs))
    answered = targets[targets != IGNORE]
    assert answered.numel() == 64 * task.num_queries
    assert 0 <= answered.min() and answered.max() < task.num_classes


def test_pair_recall_queries_name_two_distinct_context_keys():
    task = pair_recall(num_keys=10, num_values=4, num_pairs=6, num_queries=5)
    inputs, _ = task.sample(128, torch.Generator().manual_seed(0))
    tuples = task.tuples
    for row in inputs.tolist():
        keys_here = {token // task.num_values for token in row[: task.num_pairs]}
        for token in row[task.num_pairs :]:
            a, b = tuples[token - task.num_keys * task.num_values]
            assert a != b and a in keys_here and b in keys_here


def test_pair_recall_uses_both_roles():
    """Swapping the two keys of a query changes the answer's digits' order."""
    task = pair_recall()
    inputs, targets = task.sample(512, torch.Generator().manual_seed(1))
    answers = targets[targets != IGNORE]
    first, second = answers // task.num_values, answers % task.num_values
    # Both digits are spread over all values, and they differ in most answers.
    assert set(first.tolist()) == set(range(task.num_values))
    assert set(second.tolist()) == set(range(task.num_values))
    assert (first != second).float().mean() > 0.5


def test_lookback_matches_reference():
    task = lookback(vocab_size=5, seq_len=9, offset=3)
    inputs, targets = task.sample(16, torch.Generator().manual_seed(0))
    for row, target in zip(inputs.tolist(), targets.tolist(), strict=True):
        for t in range(task.seq_len):
            assert target[t] == (row[t - 3] if t >= 3 else IGNORE)


def test_same_seed_same_batch_other_seed_other_batch():
    task = pair_recall()
    a = task.sample(8, torch.Generator().manual_seed(7))
    b = task.sample(8, torch.Generator().manual_seed(7))
    c = task.sample(8, torch.Generator().manual_seed(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_sizes():
    task = pair_recall(num_keys=8, num_values=8, num_pairs=8, num_queries=4)
    assert task.vocab_size == 8 * 8 + 8 * 7
    assert task.num_classes == 64
    assert task.seq_len == 12


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_keys=0),
        dict(num_pairs=9, num_keys=8),
        dict(num_values=2.5),
        dict(num_queries=True),
    ],
)
def test_bad_sizes_raise(kwargs):
    with pytest.raises(ValueError):
        pair_recall(**kwargs)


def test_bad_sample_arguments_raise():
    task = associative_recall()
    with pytest.raises(ValueError, match="batch_size"):
        task.sample(0, torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        task.sample(4, 0)
    with pytest.raises(ValueError, match="offset"):
        lookback(seq_len=4, offset=4)


def test_absent_recall_without_absent_keys_or_start_is_plain_recall():
    task = absent_recall(num_keys=12, num_values=5, num_pairs=7, num_queries=3, absent=0.0)
    got = task.sample(32, torch.Generator().manual_seed(4))
    plain = associative_recall(12, 5, 7, 3).sample(32, torch.Generator().manual_seed(4))
    assert torch.equal(got[0], plain[0]) and torch.equal(got[1], plain[1])
    assert task.num_classes == 6 and task.context_slots == 7


@pytest.mark.parametrize("start", [False, True])
def test_absent_recall_answers_absent_exactly_when_the_key_is_missing(start):
    task = absent_recall(absent=0.5, start_token=start)
    inputs, targets = task.sample(256, torch.Generator().manual_seed(2))
    assert inputs.shape == targets.shape == (256, task.seq_len)
    assert 0 <= inputs.min() and inputs.max() < task.vocab_size
    if start:  # one constant token with no answer, then the task without it
        assert bool((inputs[:, 0] == task.vocab_size - 1).all())
        assert bool((targets[:, 0] == IGNORE).all())
        inputs, targets = inputs[:, 1:], targets[:, 1:]
    nk, nv, n = task.num_keys, task.num_values, task.num_pairs
    missing = 0
    for row, target in zip(inputs.tolist(), targets.tolist(), strict=True):
        store = dict(divmod(token, nv) for token in row[:n])
        assert len(store) == n and all(t == IGNORE for t in target[:n])
        for token, answer in zip(row[n:], target[n:], strict=True):
            key = token - nk * nv
            assert 0 <= key < nk
            assert answer == store.get(key, nv)  # nv: "absent"
            missing += key not in store
    share = missing / (256 * task.num_queries)
    assert abs(share - 0.5) < 0.05


def test_absent_recall_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="num_keys > num_pairs"):
        AbsentRecall(8, 8, 8, 4, absent=0.5)
    with pytest.raises(ValueError, match="absent"):
        absent_recall(absent=1.5)
    with pytest.raises(TypeError, match="start_token"):
        absent_recall(start_token=1)
    with pytest.raises(ValueError, match="num_pairs"):
        absent_recall(num_keys=4, num_pairs=8)
