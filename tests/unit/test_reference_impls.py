"""Every alternative implementation computes exactly what `MultiHeadAttention` computes."""

import pytest
import torch

from mha_lib import MultiHeadAttention
from mha_lib.core.reference import loop_over_heads, projections_sdpa

IMPLS = [loop_over_heads, projections_sdpa]


def _module(d_model, num_heads, bias=True):
    torch.manual_seed(0)
    module = MultiHeadAttention(d_model, num_heads, bias=bias).double().eval()
    if bias:  # non-zero biases, so slicing them per head is tested too
        with torch.no_grad():
            for proj in (module.q_proj, module.k_proj, module.v_proj, module.out_proj):
                proj.bias.normal_()
    return module


def _causal(length):
    return torch.ones(length, length, dtype=torch.bool).tril()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    ("d_model", "num_heads", "bias"), [(16, 1, True), (24, 4, True), (32, 8, False)]
)
def test_self_attention_equals_library(impl, causal, d_model, num_heads, bias):
    module = _module(d_model, num_heads, bias)
    x = torch.randn(3, 11, d_model, dtype=torch.float64)
    mask = _causal(11) if causal else None
    expected, _ = module(x, attn_mask=mask, need_weights=True)
    torch.testing.assert_close(impl(module, x, attn_mask=mask), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("impl", IMPLS)
def test_cross_attention_with_padding_mask_equals_library(impl):
    module = _module(24, 3)
    query = torch.randn(2, 5, 24, dtype=torch.float64)
    key = torch.randn(2, 9, 24, dtype=torch.float64)
    value = torch.randn(2, 9, 24, dtype=torch.float64)
    padding = torch.zeros(2, 9, dtype=torch.bool)
    padding[1, 6:] = True
    expected, _ = module(query, key, value, key_padding_mask=padding)
    allowed = (~padding)[:, None, :]  # (B, 1, Tk): the same for every head and query
    got = impl(
        module,
        query,
        key,
        value,
        attn_mask=allowed if impl is loop_over_heads else allowed[:, None],
    )
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-10)


def test_is_causal_flag_equals_causal_mask():
    module = _module(24, 6)
    x = torch.randn(2, 13, 24, dtype=torch.float64)
    expected, _ = module(x, attn_mask=_causal(13))
    torch.testing.assert_close(
        projections_sdpa(module, x, is_causal=True), expected, rtol=0, atol=1e-10
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_gradients_equal_library(impl):
    module = _module(16, 4)
    x = torch.randn(2, 7, 16, dtype=torch.float64, requires_grad=True)
    grad_out = torch.randn(2, 7, 16, dtype=torch.float64)
    mask = _causal(7)
    (expected,) = torch.autograd.grad(module(x, attn_mask=mask)[0], x, grad_out)
    (got,) = torch.autograd.grad(impl(module, x, attn_mask=mask), x, grad_out)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("impl", IMPLS)
def test_rejects_other_modules(impl):
    with pytest.raises(TypeError, match="mha"):
        impl(torch.nn.MultiheadAttention(8, 2), torch.randn(1, 3, 8))
