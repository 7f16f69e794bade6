"""`is_causal=True` is the lower-triangular mask, on both paths and combined with other masks."""

import pytest
import torch

from mha_lib import MultiHeadAttention


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize(("q_len", "k_len"), [(9, 9), (5, 9)])
def test_is_causal_equals_lower_triangular_mask(need_weights, q_len, k_len):
    torch.manual_seed(0)
    module = MultiHeadAttention(24, 4).double().eval()
    query = torch.randn(2, q_len, 24, dtype=torch.float64)
    key = torch.randn(2, k_len, 24, dtype=torch.float64)
    tril = torch.ones(q_len, k_len, dtype=torch.bool).tril()
    padding = torch.zeros(2, k_len, dtype=torch.bool)
    padding[1, -2:] = True
    for kwargs in ({}, {"key_padding_mask": padding}):
        expected = module(query, key, attn_mask=tril, need_weights=need_weights, **kwargs)
        got = module(query, key, is_causal=True, need_weights=need_weights, **kwargs)
        torch.testing.assert_close(got[0], expected[0], rtol=0, atol=1e-12)
        if need_weights:
            torch.testing.assert_close(got[1], expected[1], rtol=0, atol=1e-12)


def test_is_causal_combines_with_float_mask():
    torch.manual_seed(0)
    module = MultiHeadAttention(16, 2).double().eval()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    bias = torch.randn(6, 6, dtype=torch.float64)
    tril = torch.ones(6, 6, dtype=torch.bool).tril()
    expected, _ = module(x, attn_mask=bias.masked_fill(~tril, float("-inf")))
    got, _ = module(x, attn_mask=bias, is_causal=True)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)


def test_is_causal_must_be_bool():
    with pytest.raises(TypeError, match="is_causal"):
        MultiHeadAttention(8, 2)(torch.randn(1, 3, 8), is_causal=1)
