"""The library's one bootstrap interval (mha_lib.analysis.bootstrap), against hand-checked cases.

References: a constant sample (no spread to resample), the binomial standard error of a
proportion, and two identities: grouping every item alone is no grouping at all, and groups
of identical items behave like fewer, heavier items (a wider interval).
"""

import math

import pytest
import torch

from mha_lib.analysis import heldout, probes
from mha_lib.analysis.bootstrap import bootstrap_ci, bootstrap_p


def test_every_interval_of_the_library_is_this_one():
    assert heldout.bootstrap_ci is bootstrap_ci
    assert probes.bootstrap_interval is bootstrap_ci


def test_a_constant_sample_has_no_spread():
    assert bootstrap_ci(torch.full((10,), 0.3)) == pytest.approx((0.3, 0.3))
    assert bootstrap_ci(torch.ones(5, dtype=torch.bool)) == (1.0, 1.0)


@pytest.mark.parametrize("hits", [70, 50])
def test_a_proportion_gets_about_the_binomial_interval(hits):
    values = torch.tensor([True] * hits + [False] * (100 - hits))
    p = hits / 100
    low, high = bootstrap_ci(values, n_boot=4000)
    half = 1.96 * math.sqrt(p * (1 - p) / 100)  # normal approximation of the binomial
    assert low == pytest.approx(p - half, abs=0.03) and high == pytest.approx(p + half, abs=0.03)


def test_groups_of_one_are_items_and_groups_of_equal_items_widen_the_interval():
    values = torch.rand(60, generator=torch.Generator().manual_seed(0))
    assert bootstrap_ci(values, groups=list(range(60))) == bootstrap_ci(values)
    halves = torch.tensor([0.0, 1.0] * 50).sort().values
    alone = bootstrap_ci(halves)
    tens = bootstrap_ci(halves, groups=[i // 10 for i in range(100)])  # ten groups of ten
    assert tens[1] - tens[0] > 2 * (alone[1] - alone[0])  # about sqrt(10) times wider


def test_the_seed_draws_the_resamples():
    values = torch.rand(40, generator=torch.Generator().manual_seed(1))
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: bootstrap_ci([0.5, 1.0]), TypeError, "values must be a torch.Tensor"),
        (lambda: bootstrap_ci(torch.zeros(0)), ValueError, r"\(N,\) with N > 0"),
        (lambda: bootstrap_ci(torch.zeros(3, 2)), ValueError, r"\(N,\) with N > 0"),
        (lambda: bootstrap_ci(torch.zeros(3), groups=[0, 1]), ValueError, "one group per item"),
        (lambda: bootstrap_ci(torch.zeros(3), level=1.5), ValueError, "level"),
        (lambda: bootstrap_ci(torch.zeros(3), n_boot=0), ValueError, "n_boot must be a positive"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_paired_stderr_by_hand():
    from mha_lib.analysis.bootstrap import paired_stderr

    a = torch.tensor([1.0, 1.0, 0.0, 0.0])
    b = torch.tensor([1.0, 0.0, 0.0, 0.0])
    # differences 0, 1, 0, 0: mean 1/4, sample sd sqrt((3/16 + 9/16) / 3) = 1/2, over sqrt(4)
    assert paired_stderr(a, b) == pytest.approx(0.25)
    assert paired_stderr(a, a) == 0.0  # the same answers: no noise in the difference
    with pytest.raises(ValueError, match="same shape"):
        paired_stderr(a, b[:3])


def test_the_bootstrap_p_value_reads_the_intervals_resamples():
    assert bootstrap_p(torch.zeros(10)) == 1.0  # every resampled mean is 0: both sides
    assert bootstrap_p(torch.ones(10), n_boot=999) == pytest.approx(2 / 1000)  # never below
    values = torch.rand(60, generator=torch.Generator().manual_seed(2))
    for shift, groups in ((0.0, None), (-0.45, None), (-0.5, [i // 3 for i in range(60)])):
        v = values + shift
        p = bootstrap_p(v, groups, seed=5)
        low, high = bootstrap_ci(v, groups, seed=5)
        assert (p < 0.05) == (low > 0 or high < 0), (shift, p, low, high)
    # the two sides are symmetric: a sample and its negative get one p
    centred = values - 0.45
    assert bootstrap_p(centred, seed=5) == bootstrap_p(-centred, seed=5)
