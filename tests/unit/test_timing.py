"""The timing harness: every call timed in turns, the thread count restored, ratios exact.

No test here times anything against a threshold (timings are for bench/); the harness is
checked for what it does with the calls it is given.
"""

import pytest
import torch

from mha_lib.analysis.timing import compare, interleaved_times


def test_every_call_runs_once_to_warm_up_then_once_per_round_in_turn():
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    threads = torch.get_num_threads()
    seen_threads = []
    calls["c"] = lambda: seen_threads.append(torch.get_num_threads())
    timings = interleaved_times(calls, repeats=3)
    assert order == ["a", "b"] * 4  # warm-up, then three rounds taking turns
    assert seen_threads == [1] * 4  # timed on one thread ...
    assert torch.get_num_threads() == threads  # ... and restored afterwards
    assert set(timings) == {"a", "b", "c"}
    assert all(median >= 0 and spread >= 0 for median, spread in timings.values())


def test_the_thread_count_is_restored_when_a_call_fails():
    threads = torch.get_num_threads()

    def broken():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        interleaved_times({"broken": broken}, repeats=2)
    assert torch.get_num_threads() == threads


def test_compare_is_the_ratio_of_medians_with_the_larger_spread():
    assert compare((30.0, 0.1), (10.0, 0.25)) == (pytest.approx(3.0), 0.25)
    with pytest.raises(ValueError, match="positive medians"):
        compare((1.0, 0.0), (0.0, 0.0))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="repeats"):
        interleaved_times({"a": lambda: None}, repeats=0)
    with pytest.raises(ValueError, match="at least one"):
        interleaved_times({}, repeats=1)
