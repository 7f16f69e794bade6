"""The teaching version (mha_lib.core.teaching) computes what the library and PyTorch compute."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention, pruning, scaled_dot_product_attention
from mha_lib.core.teaching import attention, head_importance, multi_head_attention


def test_attention_is_the_librarys_and_pytorchs():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=g, dtype=torch.float64) for _ in range(3))
    out = attention(q, k, v)
    torch.testing.assert_close(out, scaled_dot_product_attention(q, k, v)[0])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_multi_head_attention_is_the_librarys_and_pytorchs(num_heads):
    d_model = 16
    torch_mha = torch.nn.MultiheadAttention(
        d_model, num_heads, bias=False, batch_first=True, dtype=torch.float64
    )
    ours = MultiHeadAttention.from_torch(torch_mha)
    x = torch.randn(3, 7, d_model, generator=torch.Generator().manual_seed(num_heads),
                    dtype=torch.float64)  # fmt: skip
    weights = [p.weight.T for p in (ours.q_proj, ours.k_proj, ours.v_proj, ours.out_proj)]
    out = multi_head_attention(x, *weights, num_heads=num_heads)
    torch.testing.assert_close(out, ours(x)[0])
    torch.testing.assert_close(out, ours(x, need_weights=True)[0])
    torch.testing.assert_close(out, torch_mha(x, x, x, need_weights=False)[0])


def test_heads_are_not_one_wide_head():
    """The split is what makes it multi-head: with one head the same weights give another
    output (so the comparison above could fail)."""
    torch_mha = torch.nn.MultiheadAttention(16, 4, bias=False, batch_first=True,
                                            dtype=torch.float64)  # fmt: skip
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    w_q, w_k, w_v = torch_mha.in_proj_weight.T.chunk(3, dim=1)
    four = multi_head_attention(x, w_q, w_k, w_v, torch_mha.out_proj.weight.T, num_heads=4)
    one = multi_head_attention(x, w_q, w_k, w_v, torch_mha.out_proj.weight.T, num_heads=1)
    assert (four - one).abs().max() > 1e-3
    torch.testing.assert_close(four, torch_mha(x, x, x, need_weights=False)[0])


def test_head_importance_is_the_librarys():
    """One layer's importance in four lines equals the library's (unnormalised, per example),
    and a head whose output is never read scores exactly zero."""
    torch.manual_seed(0)
    layer = MultiHeadAttention(24, 4).double().eval()
    with torch.no_grad():
        layer.out_proj.weight[:, :6] = 0.0  # head 0's output is never read
    x = torch.randn(5, 7, 24, dtype=torch.float64)

    def loss(out):  # one loss per sequence
        return out.pow(2).mean((1, 2))

    ours = head_importance(layer, x, loss)
    heads = pruning.MHAHeads(layer, lambda m, batch: loss(m(batch)[0]), lambda m, b: 0.0)
    library = pruning.head_importance(heads, [x], normalize=False)  # (1, h)
    torch.testing.assert_close(ours.float(), library[0])
    assert ours[0] == 0.0 and ours[1:].min() > 0
