"""Equivalence and difference tests (mha_lib.analysis.differences) against scipy.stats.

References: scipy's one-sample, paired and Welch t tests run on shifted samples (the two
one-sided tests of TOST are ordinary one-sided tests against -margin and +margin) and
their confidence intervals; a hand-checked three-value case; a textbook Holm example;
simulated power for the smallest detectable difference.
"""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from mha_lib.analysis.differences import (
    DIFFERENT,
    EQUIVALENT,
    NOT_DETECTED,
    TRIVIAL,
    benjamini_hochberg,
    compare,
    from_intervals,
    from_stderr,
    holm,
)

RNG = np.random.default_rng(0)


def test_a_hand_checked_case():
    # differences 1, 2, 3: mean 2, sd 1, se 1/sqrt(3), 2 degrees of freedom
    r = compare([1.0, 2.0, 3.0], margin=5.0)
    assert r.difference == 2 and r.stderr == pytest.approx(1 / math.sqrt(3)) and r.df == 2
    t90 = 2.919985580  # t_{0.95, 2}, from a table
    assert r.low90 == pytest.approx(2 - t90 / math.sqrt(3))
    assert r.high90 == pytest.approx(2 + t90 / math.sqrt(3))
    assert r.low95 == pytest.approx(2 - 4.302652730 / math.sqrt(3))  # t_{0.975, 2}
    # 90 % interval (0.31, 3.69) inside +-5; the 95 % one (-0.48, 4.48) includes 0
    assert r.low95 < 0 < r.high95 and r.outcome == EQUIVALENT


@pytest.mark.parametrize("margin", [0.2, 0.5, 1.5])
def test_one_sample_tost_is_two_one_sided_scipy_tests(margin):
    d = RNG.normal(0.3, 1.0, size=12)
    r = compare(d, margin=margin)
    lower = stats.ttest_1samp(d, -margin, alternative="greater").pvalue
    upper = stats.ttest_1samp(d, margin, alternative="less").pvalue
    assert r.p_equivalence == pytest.approx(max(lower, upper))
    assert r.p_difference == pytest.approx(stats.ttest_1samp(d, 0).pvalue)
    ci90 = stats.ttest_1samp(d, 0).confidence_interval(0.90)
    ci95 = stats.ttest_1samp(d, 0).confidence_interval(0.95)
    assert (r.low90, r.high90) == pytest.approx((ci90.low, ci90.high))
    assert (r.low95, r.high95) == pytest.approx((ci95.low, ci95.high))
    # TOST at 0.05 is the 90 % interval inside +-margin
    assert r.equivalent == (-margin < ci90.low and ci90.high < margin)


def test_paired_is_the_one_sample_test_of_the_differences():
    a = RNG.normal(70, 3, size=8)
    b = a + RNG.normal(0.5, 0.8, size=8)  # shares the seeds' spread: pairing removes it
    r = compare(a, b, paired=True, margin=2.0)
    assert r.p_difference == pytest.approx(stats.ttest_rel(a, b).pvalue)
    lower = stats.ttest_rel(a + 2.0, b, alternative="greater").pvalue
    upper = stats.ttest_rel(a - 2.0, b, alternative="less").pvalue
    assert r.p_equivalence == pytest.approx(max(lower, upper))
    unpaired = compare(a, b, margin=2.0)
    assert r.stderr < unpaired.stderr / 2


def test_from_stderr_is_compare_on_the_differences():
    # right-or-wrong items, as a pruned and a full model score them
    full = RNG.random(300) < 0.8
    pruned = np.where(RNG.random(300) < 0.1, ~full, full)
    d = pruned.astype(float) - full.astype(float)
    se = d.std(ddof=1) / np.sqrt(d.size)
    for margin in (1.0, 3.0):
        r = from_stderr(100 * d.mean(), 100 * se, d.size, margin=margin)
        expected = compare(100 * pruned.astype(float), 100 * full.astype(float),
                           paired=True, margin=margin)  # fmt: skip
        assert r.outcome == expected.outcome and (r.n, r.df) == (expected.n, expected.df)
        for field in ("difference", "stderr", "low90", "high90", "p_equivalence", "detectable"):
            assert getattr(r, field) == pytest.approx(getattr(expected, field), rel=1e-9)
    assert r.p_difference == pytest.approx(stats.ttest_rel(1.0 * pruned, 1.0 * full).pvalue)
    with pytest.raises(ValueError, match="n must be"):
        from_stderr(0.1, 0.2, 1, margin=1.0)
    with pytest.raises(ValueError, match="stderr"):
        from_stderr(0.1, -0.2, 10, margin=1.0)


def test_unpaired_is_welch():
    a, b = RNG.normal(1.0, 1.0, size=10), RNG.normal(0.0, 3.0, size=25)
    r = compare(a, b, margin=1.5)
    welch = stats.ttest_ind(a, b, equal_var=False)
    assert r.p_difference == pytest.approx(welch.pvalue)
    assert r.df == pytest.approx(welch.df)
    ci = welch.confidence_interval(0.90)
    assert (r.low90, r.high90) == pytest.approx((ci.low, ci.high))
    lower = stats.ttest_ind(a + 1.5, b, equal_var=False, alternative="greater").pvalue
    upper = stats.ttest_ind(a - 1.5, b, equal_var=False, alternative="less").pvalue
    assert r.p_equivalence == pytest.approx(max(lower, upper))


def test_the_four_outcomes():
    tight = RNG.normal(0, 0.1, size=50)
    assert compare(tight - tight.mean(), margin=1.0).outcome == EQUIVALENT
    assert compare(tight - tight.mean() + 0.3, margin=1.0).outcome == TRIVIAL
    assert compare(tight - tight.mean() + 3.0, margin=1.0).outcome == DIFFERENT
    assert compare([-3.0, 2.0, 1.0], margin=1.0).outcome == NOT_DETECTED


def test_three_seeds_within_three_points_do_not_show_equivalence():
    # the disputed case: three paired differences spread over +-3 points, margin 2 points
    r = compare([-2.9, 0.4, 2.6], margin=2.0)
    assert r.outcome == NOT_DETECTED and r.detectable > 2.0


def test_the_detectable_difference_is_detected_at_the_stated_power():
    n, sd = 10, 2.0
    probe = compare(RNG.normal(0, sd, size=n), margin=1.0)
    se = sd / math.sqrt(n)  # the design's standard error, known here
    detectable = probe.detectable / probe.stderr * se
    rng = np.random.default_rng(1)
    samples = rng.normal(detectable, sd, size=(4000, n))
    hits = stats.ttest_1samp(samples, 0, axis=1).pvalue < 0.05
    assert hits.mean() == pytest.approx(0.8, abs=0.03)


def test_every_field_is_a_python_number():  # glue formats Python numbers, not NumPy's
    r = compare(RNG.normal(size=5), RNG.normal(size=5), margin=1.0)
    assert all(type(v) in (float, int) for v in vars(r).values())


def test_constant_samples_and_tensors():
    assert compare([0.0, 0.0, 0.0], margin=1.0).outcome == EQUIVALENT
    assert compare([5.0, 5.0], margin=1.0).outcome == DIFFERENT
    t = torch.tensor([0.1, -0.2, 0.05, 0.0])
    assert compare(t, margin=1.0) == compare(t.tolist(), margin=1.0)


def test_from_intervals():
    assert from_intervals((-0.5, 0.4), (-0.6, 0.5), margin=1.0) == EQUIVALENT
    assert from_intervals((0.2, 0.7), (0.1, 0.8), margin=1.0) == TRIVIAL
    assert from_intervals((0.2, 1.7), (0.1, 1.8), margin=1.0) == DIFFERENT
    assert from_intervals((-0.5, 1.7), (-0.6, 1.8), margin=1.0) == NOT_DETECTED
    # a 90 % interval off zero whose 95 % interval touches it shows no difference
    assert from_intervals((0.1, 2.0), (-0.1, 2.2), margin=1.0) == NOT_DETECTED


def test_interval_detectable_agrees_with_a_t_interval_of_many_items():
    from mha_lib.analysis.differences import interval_detectable

    assert interval_detectable((-1.96, 1.96)) == pytest.approx(1.96 + 0.8416, abs=1e-3)
    assert interval_detectable((3.0, 3.0)) == 0.0  # a point: every difference shows
    r = compare(RNG.normal(size=4000), margin=1.0)  # df so large that t is normal
    assert interval_detectable((r.low95, r.high95)) == pytest.approx(r.detectable, rel=1e-3)
    with pytest.raises(ValueError, match="low end"):
        interval_detectable((1.0, 0.0))


def test_holm_on_a_textbook_case():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    many = RNG.uniform(size=40)
    adjusted = holm(many)
    assert (adjusted >= many).all() and (adjusted <= np.minimum(1, 40 * many)).all()


def test_benjamini_hochberg_on_a_textbook_case():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04: times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert (benjamini_hochberg(p) <= holm(p)).all()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: compare([1.0, 2.0], margin=0), ValueError, "margin must be a positive"),
        (lambda: compare([1.0, 2.0], margin=True), ValueError, "margin must be a positive"),
        (lambda: compare([1.0], margin=1.0), ValueError, "at least 2 values"),
        (lambda: compare([1, 2, 3], [1, 2], paired=True, margin=1), ValueError, "one len"),
        (lambda: compare([1.0, 2.0], paired=True, margin=1.0), ValueError, "needs b"),
        (lambda: compare([1.0, float("nan")], margin=1.0), ValueError, "finite"),
        (lambda: compare("12", margin=1.0), TypeError, "sequence of numbers"),
        (lambda: compare([1.0, 2.0], margin=1.0, alpha=0.6), ValueError, "alpha"),
        (lambda: from_intervals((1.0, 0.0), (0.0, 1.0), margin=1.0), ValueError, "low end"),
        (lambda: from_intervals((-1.0, 1.0), (0.0, 0.5), margin=1.0), ValueError, "inside"),
        (lambda: holm([0.5, 1.5]), ValueError, r"\[0, 1\]"),
        (lambda: holm([]), ValueError, "not empty"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_best_of_by_hand():
    from mha_lib.analysis.differences import best_of

    rng = np.random.default_rng(1)
    base = rng.normal(size=200)
    wobble = 0.01 + 0.5 * np.resize([1.0, -1.0], 200)  # mean 0.01, sd 0.5
    noise = rng.normal(0, 0.3, size=(2, 200))
    values = np.stack([base + noise[0], base + 1.0 - wobble, base + 1.0, base - 1 + noise[1]])
    r = best_of(values, margin=0.5)
    assert r.best == 2 and r.comparisons[2] is None and r.adjusted[2] == 0
    assert r.tied == (1, 2)  # arm 1 is 0.01 below: not shown lower; 0 and 3 are
    assert r.beaten == 2
    # the Holm-adjusted p-values are Holm's of the paired t tests against the best
    raw = [stats.ttest_rel(values[2], values[k]).pvalue for k in (0, 1, 3)]
    np.testing.assert_allclose([r.adjusted[k] for k in (0, 1, 3)], holm(raw))
    # with groups, the items of a group are averaged first: pairs are groups
    groups = np.repeat(np.arange(50), 4)
    g = best_of(values, groups.tolist(), margin=0.5)
    means = values.reshape(4, 50, 4).mean(-1)
    assert g.comparisons[0].n == 50
    assert g.comparisons[0].difference == pytest.approx(float((means[2] - means[0]).mean()))
    with pytest.raises(ValueError, match="K >= 2"):
        best_of(values[:1], margin=1.0)


def test_group_means_by_hand():
    from mha_lib.analysis.differences import group_means

    values = torch.tensor([[1.0, 2.0, 3.0, 10.0], [0.0, 0.0, 1.0, 1.0]])
    out = group_means(values, [7, 3, 7, 3])  # groups in sorted order: 3, then 7
    np.testing.assert_allclose(out, [[6.0, 2.0], [0.5, 0.5]])
    with pytest.raises(ValueError, match="one group per item"):
        group_means(values, [1, 2])


def test_permutation_p_and_detectable_by_hand():
    from mha_lib.analysis.differences import permutation_detectable, permutation_p

    null = np.arange(19)  # 19 relabellings scoring 0 … 18
    assert permutation_p(18, null) == pytest.approx(2 / 20)  # itself and one draw
    assert permutation_p(19, null) == pytest.approx(1 / 20)  # only itself
    assert permutation_p(-5, null) == 1.0
    with pytest.raises(ValueError, match="cannot give"):  # 1 / 20 is not below 0.05
        permutation_detectable(null)
    assert permutation_detectable(null, alpha=0.1) == 19  # 18 gives (1 + 1) / 20 = 0.1
    # 99 draws 0 … 98: (1 + k) / 100 < 0.05 needs k <= 3 draws at least as large: 96
    assert permutation_detectable(np.arange(99)) == 96


def test_compare_many_is_compare_then_holm():
    from mha_lib.analysis.differences import compare_many

    rng = np.random.default_rng(2)
    a = rng.normal(size=(40, 2, 3))
    b = a - np.array([[0.0, 0.5, -0.5], [0.01, 2.0, 0.0]]) + rng.normal(0, 0.3, (40, 2, 3))
    many = compare_many(a, b, margin=0.2)
    assert many.difference.shape == (2, 3) and many.adjusted.shape == (2, 3)
    single = [compare(a[:, i, j], b[:, i, j], margin=0.2, paired=True) for i in range(2)
              for j in range(3)]  # fmt: skip
    np.testing.assert_allclose(many.adjusted.ravel(), holm([t.p_difference for t in single]))
    np.testing.assert_allclose(many.difference.ravel(), [t.difference for t in single])
    assert many.equivalent.ravel().tolist() == [t.equivalent for t in single]
    assert bool(many.higher[1, 1]) and bool(many.lower[0, 2]) and not many.higher[0, 0]
    with pytest.raises(ValueError, match="one shape"):
        compare_many(a, b[:, :1], margin=1.0)
