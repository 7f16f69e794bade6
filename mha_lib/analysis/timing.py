"""Timing two or more ways of computing the same thing, fairly, on a shared machine.

Chapters compare implementations by the ratio of their times, never by a time alone:
each call is timed in CPU time of this process on one thread (other programs disturb
that far less than a stopwatch), the calls take turns (a slow moment of the machine hits
every call alike), and each median comes with its spread, which bounds the ratio's noise.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

import torch

from mha_lib._checks import check_positive_int

Timing = tuple[float, float]  # (median ms, (max - min) / median)


def interleaved_times(
    calls: Mapping[str, Callable[[], object]], repeats: int
) -> dict[str, Timing]:
    """Median ms and spread (max − min) / median of each call, round-robin.

    One warm-up call each, then `repeats` rounds in which every call runs
    once, on one thread and without autograd; the thread count is restored.
    """
    check_positive_int("repeats", repeats)
    if not calls:
        raise ValueError("calls must name at least one function to time")
    samples: dict[str, list[float]] = {name: [] for name in calls}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            for call in calls.values():  # warm-up
                call()
            for _ in range(repeats):
                for name, call in calls.items():
                    start = time.process_time()
                    call()
                    samples[name].append(1e3 * (time.process_time() - start))
    finally:
        torch.set_num_threads(threads)
    timings = {}
    for name, s in samples.items():
        median = statistics.median(s)
        timings[name] = (median, (max(s) - min(s)) / median if median > 0 else 0.0)
    return timings


def compare(new: Timing, old: Timing) -> Timing:
    """Ratio of two timings (new / old) and the ratio's noise.

    Each median lies inside its samples' range, so the ratio is off by at most about half
    of each spread: their mean, at most the larger, which is what is returned.
    """
    if not (new[0] > 0 and old[0] > 0):
        raise ValueError(f"timings must have positive medians, got {new[0]!r} and {old[0]!r}")
    return new[0] / old[0], max(new[1], old[1])
