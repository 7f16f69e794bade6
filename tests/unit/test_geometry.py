"""Geometry helpers against closed forms and scipy."""

import math

import pytest
import torch
from scipy import stats

from mha_lib.analysis.geometry import (
    cosine_pdf,
    cosine_std,
    pairwise_cosines,
    random_attention,
    random_cosines,
    random_scaled_dots,
    random_self_weight,
)
from mha_lib.analysis.head_stats import entropy, max_weight

N = 20_000


@pytest.mark.parametrize("dim", [4, 16, 256])
def test_mean_squared_cosine_is_one_over_dim(dim):
    cos = random_cosines(dim, N, torch.Generator().manual_seed(dim))
    # Standard error of the mean of cos²: Var(cos²) = 3/(d(d+2)) − 1/d².
    se = math.sqrt((3 / (dim * (dim + 2)) - 1 / dim**2) / N)
    assert abs((cos**2).mean().item() - 1 / dim) < 5 * se
    assert abs(cos.mean().item()) < 5 * cosine_std(dim) / math.sqrt(N)
    assert cos.abs().max() <= 1


@pytest.mark.parametrize("dim", [3, 8, 64])
def test_cosine_pdf_matches_scipy_beta_and_samples(dim):
    """(cos + 1)/2 is Beta((d−1)/2, (d−1)/2): an independent closed form."""
    c = torch.linspace(-0.99, 0.99, 199, dtype=torch.float64)
    a = (dim - 1) / 2
    expected = 0.5 * stats.beta.pdf((c.numpy() + 1) / 2, a, a)
    torch.testing.assert_close(cosine_pdf(c, dim), torch.from_numpy(expected))
    assert cosine_pdf(torch.tensor([-1.5, 1.0, 2.0], dtype=torch.float64), dim).eq(0).all()
    sample = random_cosines(dim, 5000, torch.Generator().manual_seed(0))
    ks = stats.kstest((sample.numpy() + 1) / 2, stats.beta(a, a).cdf)
    assert ks.pvalue > 1e-3


def test_scaled_dot_products_have_unit_variance_unscaled_variance_dim():
    for dim in (4, 64, 512):
        gen = torch.Generator().manual_seed(dim)
        scaled = random_scaled_dots(dim, N, gen)
        raw = random_scaled_dots(dim, N, gen, scaled=False)
        # Var(q·k) = d for independent standard normals; Var of the sample variance ≈ 2σ⁴/N
        # plus kurtosis terms, so allow 6 %.
        assert scaled.var().item() == pytest.approx(1.0, rel=0.06)
        assert raw.var().item() == pytest.approx(dim, rel=0.06)


def test_pairwise_cosines_matches_torch():
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8, generator=gen), torch.randn(2, 3, 6, 8, generator=gen)
    expected = torch.nn.functional.cosine_similarity(q[..., :, None, :], k[..., None, :, :], dim=-1)
    torch.testing.assert_close(pairwise_cosines(q, k), expected)
    with pytest.raises(ValueError, match="q and k"):
        pairwise_cosines(q, k[..., :4])


def entropies(scores, dims=(4, 64, 1024), keys=32):
    gen = torch.Generator().manual_seed(0)
    return [
        entropy(random_attention(d, keys, 2000, gen, scores=scores, beta=8.0)).mean() for d in dims
    ]


def test_fixed_temperature_cosine_attention_flattens_with_dimension():
    e = entropies("cosine")
    assert e[0] < e[1] < e[2] < math.log(32)


def test_raw_dot_products_saturate_scaled_ones_do_not_drift():
    raw = entropies("raw")
    assert raw[0] > raw[1] > raw[2]
    scaled = entropies("scaled")
    assert max(scaled) - min(scaled) < 0.1 * math.log(32)


def test_random_attention_rows_are_softmaxes():
    w = random_attention(16, 10, 7, torch.Generator().manual_seed(0), scores="scaled")
    assert w.shape == (7, 10)
    torch.testing.assert_close(w.sum(-1), torch.ones(7, dtype=w.dtype))
    with pytest.raises(ValueError, match="scores"):
        random_attention(16, 10, 7, torch.Generator(), scores="dot")


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="dim"):
        random_cosines(0, 10, torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        random_scaled_dots(4, 10, 0)
    with pytest.raises(ValueError, match="dim"):
        cosine_pdf(torch.zeros(3), 1)
    with pytest.raises(TypeError, match="weights"):
        entropy(torch.ones(3, dtype=torch.long))


def test_random_self_weight_untied_is_near_uniform_and_tied_is_the_planted_closed_form():
    from mha_lib.experiments.planted_match import right_weight_approx

    gen = torch.Generator().manual_seed(0)
    untied = random_self_weight(128, 4, 16, 400, gen, tied=False)  # (H,)
    assert untied.shape == (4,)
    assert (untied - 1 / 16).abs().max() < 0.02
    tied = random_self_weight(128, 4, 16, 400, gen, tied=True)
    # Tied weights are a planted match with every one of the d_head features matched.
    assert (tied - right_weight_approx(32, 32, 16)).abs().max() < 0.03
    assert tied.min() > 10 / 16  # most of the weight on the token itself
    with pytest.raises(ValueError):
        random_self_weight(10, 3, 4, 2, gen, tied=True)


def test_sharpness_over_key_sets_is_one_value_per_independent_draw():
    """Against random_attention called set by set from the same generator, by hand."""
    from mha_lib.analysis.geometry import sharpness_over_key_sets

    ent, top = sharpness_over_key_sets(8, 16, 50, 4, torch.Generator().manual_seed(3),
                                       scores="scaled")  # fmt: skip
    gen = torch.Generator().manual_seed(3)
    for s in range(4):
        w = random_attention(8, 16, 50, gen, scores="scaled")
        assert ent[s].item() == entropy(w).mean().item()
        assert top[s].item() == max_weight(w).mean().item()
    assert ent.shape == top.shape == (4,) and ent.std() > 0  # the sets differ
    with pytest.raises(ValueError, match="num_sets"):
        sharpness_over_key_sets(8, 16, 50, 0, torch.Generator())
