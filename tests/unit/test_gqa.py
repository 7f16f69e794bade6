"""Grouped-query and multi-query attention (`num_kv_heads`) against independent references.

Two references that share no code with the layer: torch's fused kernel with
`enable_gqa=True`, and the same computation written out with each key/value head
repeated for its group (`repeat_interleave`) and an explicit softmax. Outputs and the
gradients of inputs and parameters, in float32 and float64, on both of the layer's paths.
"""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention

TOL = {torch.float64: 1e-10, torch.float32: 2e-5}
DTYPES = [torch.float64, torch.float32]
# (num_heads, num_kv_heads): multi-head, grouped (two sizes of group), multi-query.
LAYOUTS = [(4, 4), (4, 2), (8, 2), (4, 1)]


def close(a, b, dtype):
    torch.testing.assert_close(a, b, rtol=TOL[dtype], atol=TOL[dtype])


def projections(mha, x):
    """q `(B, H, T, Dh)` and k, v `(B, Hkv, T, Dh)` from the layer's weights, by hand."""
    b, t, _ = x.shape
    dh = mha.d_head

    def heads(w, bias, n):
        return (x @ w.T + bias).view(b, t, n, dh).transpose(1, 2)

    q = heads(mha.q_proj.weight, mha.q_proj.bias, mha.num_heads)
    k = heads(mha.k_proj.weight, mha.k_proj.bias, mha.num_kv_heads)
    v = heads(mha.v_proj.weight, mha.v_proj.bias, mha.num_kv_heads)
    return q, k, v


def explicit_repeat(mha, x, allowed=None, head_mask=None):
    """Every K/V head copied for the query heads of its group, then plain attention."""
    q, k, v = projections(mha, x)
    group = mha.num_heads // mha.num_kv_heads
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(mha.d_head)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v  # (B, H, T, Dh)
    if head_mask is not None:
        out = out * head_mask.view(1, -1, 1, 1)
    b, h, t, dh = out.shape
    return mha.out_proj(out.transpose(1, 2).reshape(b, t, h * dh)), weights


def torch_gqa(mha, x, allowed=None, is_causal=False):
    """torch's fused kernel with `enable_gqa=True` on the layer's projections."""
    q, k, v = projections(mha, x)
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed, is_causal=is_causal, enable_gqa=True
    )
    b, h, t, dh = out.shape
    return mha.out_proj(out.transpose(1, 2).reshape(b, t, h * dh))


def layer(num_heads, num_kv_heads, dtype, seed=0, d_model=16):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, dtype=dtype)
    with torch.no_grad():  # non-zero biases, so that a bias slicing mistake shows
        for p in mha.parameters():
            if p.dim() == 1:
                p.normal_()
    return mha


def grads(loss, tensors):
    return torch.autograd.grad(loss, tensors)


@pytest.mark.parametrize(
    ("layout", "dtype", "need_weights"), list(itertools.product(LAYOUTS, DTYPES, [False, True]))
)
def test_outputs_and_gradients_match_both_references(layout, dtype, need_weights):
    mha = layer(*layout, dtype)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, 16, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    allowed = torch.rand(7, 7, generator=g) < 0.6
    allowed[:, 0] = True
    ours, weights = mha(x, attn_mask=allowed, need_weights=need_weights)
    ref, ref_weights = explicit_repeat(mha, x, allowed)
    close(ours, ref, dtype)
    close(ours, torch_gqa(mha, x, allowed), dtype)
    if need_weights:
        assert weights.shape == (2, layout[0], 7, 7)  # one map per query head
        close(weights, ref_weights, dtype)
    params = [x, *mha.parameters()]
    probe = torch.randn(ours.shape, generator=g, dtype=torch.float64).to(dtype)
    ours_g, ref_g = grads((ours * probe).sum(), params), grads((ref * probe).sum(), params)
    for a, b in zip(ours_g, ref_g, strict=True):
        close(a, b, dtype)


@pytest.mark.parametrize(("layout", "dtype"), list(itertools.product(LAYOUTS, DTYPES)))
def test_causal_padding_and_head_mask(layout, dtype):
    mha = layer(*layout, dtype, seed=2)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 6, 16, generator=g, dtype=torch.float64).to(dtype)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    close(mha(x, is_causal=True)[0], torch_gqa(mha, x, is_causal=True), dtype)
    close(mha(x, is_causal=True, need_weights=True)[0], explicit_repeat(mha, x, causal)[0], dtype)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, 4:] = True  # the second sequence has two padded keys
    allowed = (~padding)[:, None, None, :]
    for need in (False, True):
        close(mha(x, key_padding_mask=padding, need_weights=need)[0],
              explicit_repeat(mha, x, allowed)[0], dtype)  # fmt: skip
    head_mask = torch.rand(layout[0], generator=g, dtype=torch.float64).to(dtype)
    for need in (False, True):
        close(mha(x, head_mask=head_mask, need_weights=need)[0],
              explicit_repeat(mha, x, head_mask=head_mask)[0], dtype)  # fmt: skip


def test_default_is_bit_identical_to_multi_head():
    """`num_kv_heads=num_heads` builds and computes exactly what the plain layer does."""
    torch.manual_seed(5)
    plain = MultiHeadAttention(16, 4)
    torch.manual_seed(5)
    same = MultiHeadAttention(16, 4, num_kv_heads=4)
    x = torch.randn(2, 5, 16)
    for a, b in zip(plain.state_dict().values(), same.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    for need in (False, True):
        assert torch.equal(plain(x, need_weights=need)[0], same(x, need_weights=need)[0])


def test_parameters_shrink_with_the_key_value_heads():
    d, h, dh = 32, 8, 4
    for kv in (8, 4, 2, 1):
        mha = MultiHeadAttention(d, h, num_kv_heads=kv)
        assert mha.k_proj.weight.shape == mha.v_proj.weight.shape == (kv * dh, d)
        count = sum(p.numel() for p in mha.parameters())
        assert count == 2 * (d * d + d) + 2 * (kv * dh * d + kv * dh)


@pytest.mark.parametrize("bad", [3, 5, 16])
def test_a_num_kv_heads_that_does_not_divide_is_refused(bad):
    with pytest.raises(ValueError, match="num_kv_heads=.* must divide num_heads=8"):
        MultiHeadAttention(16, 8, num_kv_heads=bad)


@pytest.mark.parametrize("bad", [0, -2, 2.0, True])
def test_a_num_kv_heads_that_is_not_a_positive_int_is_refused(bad):
    with pytest.raises((ValueError, TypeError), match="num_kv_heads"):
        MultiHeadAttention(16, 8, num_kv_heads=bad)


@pytest.mark.parametrize("need_weights", [False, True])
def test_pruning_a_query_head_equals_masking_it(need_weights):
    """A removed query head is a zero head mask; its K/V head stays for its group."""
    mha = layer(8, 2, torch.float64, seed=7)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = torch.ones(8, dtype=torch.float64)
    mask[[0, 5]] = 0.0
    masked = mha(x, head_mask=mask, need_weights=need_weights)[0]
    mha.prune_heads([0, 5])
    assert mha.kept_heads == [1, 2, 3, 4, 6, 7] and mha.kept_kv_heads == [0, 1]
    assert mha.k_proj.weight.shape[0] == 2 * mha.d_head  # both K/V heads are still read
    close(mha(x, need_weights=need_weights)[0], masked, torch.float64)
    # Uneven groups after pruning: the fused path falls back to an explicit repeat.
    assert mha.kv_slot_of_heads() == [0, 0, 0, 1, 1, 1]


def test_a_key_value_head_goes_with_its_last_query_head():
    mha = layer(8, 2, torch.float64, seed=8)
    x = torch.randn(1, 4, 16, dtype=torch.float64)
    mask = torch.ones(8, dtype=torch.float64)
    mask[[0, 1, 2, 3, 6]] = 0.0
    masked = mha(x, head_mask=mask)[0]
    mha.prune_heads([0, 1])
    assert mha.kept_kv_heads == [0, 1]
    mha.prune_heads([2, 3, 6])  # the whole first group: its K/V head is removed too
    assert mha.kept_kv_heads == [1] and mha.num_kv_heads == 1
    assert mha.k_proj.weight.shape[0] == mha.v_proj.weight.shape[0] == mha.d_head
    assert mha.kv_slot_of_heads() == [0, 0, 0]
    for need in (False, True):
        close(mha(x, need_weights=need)[0], masked, torch.float64)
    # head masks still name original query heads
    assert mha(x, head_mask=torch.ones(8, dtype=torch.float64))[0].shape == (1, 4, 16)
