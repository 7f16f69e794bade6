"""Properties that hold for any input: checked on many random cases with hypothesis."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_lib import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads

SETTINGS = settings(max_examples=40, deadline=None)
dims = st.integers(min_value=1, max_value=6)
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@SETTINGS
@given(batch=dims, q_len=dims, k_len=dims, d=dims, seed=seeds, p_mask=st.floats(0.0, 1.0))
def test_weights_are_distributions_or_zero_rows(batch, q_len, k_len, d, seed, p_mask):
    q, k, v = (
        randn(batch, q_len, d, seed=seed),
        randn(batch, k_len, d, seed=seed + 1),
        randn(batch, k_len, d, seed=seed + 2),
    )
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(batch, q_len, k_len, generator=gen) >= p_mask
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert torch.isfinite(out).all()
    assert (weights >= 0).all()
    assert (weights[~mask] == 0).all()
    row_sums = weights.sum(-1)
    has_key = mask.any(-1)
    torch.testing.assert_close(row_sums[has_key], torch.ones_like(row_sums[has_key]))
    assert (row_sums[~has_key] == 0).all()


@SETTINGS
@given(batch=dims, time=dims, heads=st.integers(1, 4), d_head=dims, seed=seeds)
def test_merge_inverts_split(batch, time, heads, d_head, seed):
    x = randn(batch, time, heads * d_head, seed=seed)
    parts = split_heads(x, heads)
    assert parts.shape == (batch, heads, time, d_head)
    assert torch.equal(merge_heads(parts), x)
    # Head h holds the h-th contiguous slice of features.
    for h in range(heads):
        assert torch.equal(parts[:, h], x[..., h * d_head : (h + 1) * d_head])


@SETTINGS
@given(time=st.integers(2, 7), heads=st.integers(1, 4), seed=seeds)
def test_self_attention_without_masks_is_permutation_equivariant(time, heads, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(4 * heads, heads).double()
    x = randn(2, time, 4 * heads, seed=seed)
    perm = torch.randperm(time, generator=torch.Generator().manual_seed(seed))
    out, weights = mha(x, need_weights=True)
    out_p, weights_p = mha(x[:, perm], need_weights=True)
    torch.testing.assert_close(out_p, out[:, perm])
    torch.testing.assert_close(weights_p, weights[:, :, perm][:, :, :, perm])


@SETTINGS
@given(
    heads=st.integers(2, 6),
    seed=seeds,
    data=st.data(),
)
def test_pruning_heads_equals_masking_them(heads, seed, data):
    drop = data.draw(st.sets(st.integers(0, heads - 1), min_size=1, max_size=heads - 1))
    torch.manual_seed(seed)
    mha = MultiHeadAttention(3 * heads, heads).double()
    x = randn(2, 5, 3 * heads, seed=seed)
    mask = torch.ones(heads, dtype=torch.float64)
    mask[list(drop)] = 0.0
    masked, masked_w = mha(x, head_mask=mask, need_weights=True)
    mha.prune_heads(drop)
    pruned, pruned_w = mha(x, need_weights=True)
    kept = [h for h in range(heads) if h not in drop]
    assert mha.num_heads == len(kept)
    assert mha.q_proj.weight.shape == (len(kept) * 3, 3 * heads)
    torch.testing.assert_close(pruned, masked, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(pruned_w, masked_w[:, kept], rtol=1e-12, atol=1e-12)


@SETTINGS
@given(batch=st.integers(1, 3), time=st.integers(1, 6), seed=seeds)
def test_fused_and_explicit_paths_agree_even_with_blocked_rows(batch, time, seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(8, 2).double()
    x = randn(batch, time, 8, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    allowed = torch.rand(batch, 1, time, time, generator=gen) < 0.5
    for mask in (
        allowed,
        torch.zeros(allowed.shape, dtype=torch.float64).masked_fill(~allowed, float("-inf")),
    ):
        fused, _ = mha(x, attn_mask=mask)
        explicit, _ = mha(x, attn_mask=mask, need_weights=True)
        assert torch.isfinite(fused).all()
        torch.testing.assert_close(fused, explicit, rtol=1e-10, atol=1e-10)


def test_head_mask_gradient_is_the_heads_contribution():
    """d out / d mask_h is head h's contribution: masking is linear in each entry."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 4).double()
    x = randn(2, 5, 8, seed=0)
    mask = torch.ones(4, dtype=torch.float64, requires_grad=True)
    out, _ = mha(x, head_mask=mask)
    (grad,) = torch.autograd.grad(out.sum(), mask)
    for h in range(4):
        without = torch.ones(4, dtype=torch.float64)
        without[h] = 0.0
        contribution = out.sum() - mha(x, head_mask=without)[0].sum()
        torch.testing.assert_close(grad[h], contribution.detach())


def test_per_example_head_mask():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).double()
    x = randn(2, 4, 8, seed=1)
    mask = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    out, _ = mha(x, head_mask=mask)
    for b in range(2):
        torch.testing.assert_close(out[b : b + 1], mha(x[b : b + 1], head_mask=mask[b])[0])
