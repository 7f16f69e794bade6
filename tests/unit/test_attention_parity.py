"""mha_lib's attention against torch's own implementations, outputs and gradients."""

import itertools
import zlib

import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention, scaled_dot_product_attention

TOL = {torch.float64: 1e-10, torch.float32: 1e-5}
DTYPES = [torch.float64, torch.float32]


def random_mask(kind, shape, dtype, gen):
    """A mask of `kind` where every row keeps a key (torch and mha_lib agree there)."""
    if kind is None:
        return None
    allowed = torch.rand(shape, generator=gen) < 0.7
    allowed[..., 0] = True
    if kind == "bool":
        return allowed
    noise = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    return noise.masked_fill(~allowed, float("-inf"))


def assert_close(a, b, dtype):
    torch.testing.assert_close(a, b, rtol=TOL[dtype], atol=TOL[dtype])


SDPA_CASES = list(
    itertools.product(
        [(1, 1, 1, 4), (2, 3, 5, 8), (3, 2, 7, 16), (1, 4, 12, 3)],  # (B, H, Tq, d)
        [1, 6, 9],  # Tk
        [None, "bool", "float"],
        DTYPES,
    )
)


def case_seed(*case: object) -> int:
    """A seed fixed by the case's parameters, the same in every process (`hash` of a string
    is randomised per process), so that a failing case can be replayed."""
    return zlib.crc32(repr(case).encode())


@pytest.mark.parametrize(("shape", "k_len", "mask_kind", "dtype"), SDPA_CASES)
def test_sdpa_matches_torch_outputs_and_gradients(shape, k_len, mask_kind, dtype):
    gen = torch.Generator().manual_seed(case_seed(shape, k_len, mask_kind))
    batch, heads, q_len, dim = shape
    tensors = [
        torch.randn(s, generator=gen, dtype=torch.float64).to(dtype).requires_grad_()
        for s in [(batch, heads, q_len, dim), (batch, heads, k_len, dim), (batch, heads, k_len, 5)]
    ]
    mask = random_mask(mask_kind, (batch, 1, q_len, k_len), dtype, gen)
    ours, weights = scaled_dot_product_attention(*tensors, mask=mask)
    ref = F.scaled_dot_product_attention(*tensors, attn_mask=mask)
    assert_close(ours, ref, dtype)
    torch.testing.assert_close(weights.sum(-1), torch.ones(batch, heads, q_len, dtype=dtype))

    upstream = torch.randn(ref.shape, generator=gen, dtype=torch.float64).to(dtype)
    ours_grads = torch.autograd.grad(ours, tensors, upstream)
    ref_grads = torch.autograd.grad(ref, tensors, upstream)
    for g_ours, g_ref in zip(ours_grads, ref_grads, strict=True):
        assert_close(g_ours, g_ref, dtype)


@pytest.mark.parametrize("scale", [0.05, 1.0, 3.0])
def test_sdpa_custom_scale_matches_torch(scale):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 4, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    ours, _ = scaled_dot_product_attention(q, k, v, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, scale=scale)
    assert_close(ours, ref, torch.float64)


def test_fully_masked_rows_give_zeros_and_finite_gradients():
    q = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 5, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 5, 2, dtype=torch.float64, requires_grad=True)
    for mask in (
        torch.tensor([[True] * 5, [False] * 5, [True, False, True, False, False]]),
        torch.zeros(3, 5, dtype=torch.float64).index_fill(0, torch.tensor([1]), float("-inf")),
    ):
        out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        assert torch.equal(out[0, 1], torch.zeros(2, dtype=torch.float64))
        assert torch.equal(weights[0, 1], torch.zeros(5, dtype=torch.float64))
        torch.testing.assert_close(weights[0, [0, 2]].sum(-1), torch.ones(2, dtype=torch.float64))
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        assert all(torch.isfinite(g).all() for g in grads)


def make_pair(d_model, heads, bias, batch_first, dtype, seed):
    torch.manual_seed(seed)
    ref = torch.nn.MultiheadAttention(d_model, heads, bias=bias, batch_first=batch_first)
    ref = ref.to(dtype).eval()
    with torch.no_grad():  # non-zero biases, so a wrong bias copy cannot hide
        for p in ref.parameters():
            if p.dim() == 1:
                p.normal_()
    return ref, MultiHeadAttention.from_torch(ref)


MHA_CASES = list(
    itertools.product(
        [(8, 1), (8, 2), (12, 3), (16, 8)],  # (d_model, heads)
        [True, False],  # bias
        [True, False],  # batch_first of the torch module
        ["none", "causal", "padding", "both", "float"],
        DTYPES,
    )
)


@pytest.mark.parametrize(("dims", "bias", "batch_first", "masks", "dtype"), MHA_CASES)
def test_mha_matches_torch_on_loaded_weights(dims, bias, batch_first, masks, dtype):
    d_model, heads = dims
    seed = case_seed(dims, bias, batch_first, masks)
    ref, ours = make_pair(d_model, heads, bias, batch_first, dtype, seed)
    gen = torch.Generator().manual_seed(seed)
    batch, q_len, k_len = 3, 5, 7
    query = torch.randn(batch, q_len, d_model, generator=gen, dtype=torch.float64).to(dtype)
    key = torch.randn(batch, k_len, d_model, generator=gen, dtype=torch.float64).to(dtype)
    value = torch.randn(batch, k_len, d_model, generator=gen, dtype=torch.float64).to(dtype)
    for x in (query, key, value):
        x.requires_grad_()

    allowed = torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len)
    padding = torch.zeros(batch, k_len, dtype=torch.bool)
    padding[1, -2:] = True
    padding[2, -4:] = True
    ours_kwargs, ref_kwargs = {}, {}
    if masks in ("causal", "both"):  # torch's boolean attn_mask means "blocked"
        ours_kwargs["attn_mask"], ref_kwargs["attn_mask"] = allowed, ~allowed
    if masks in ("padding", "both"):
        ours_kwargs["key_padding_mask"] = ref_kwargs["key_padding_mask"] = padding
    if masks == "float":
        bias_mask = torch.randn(q_len, k_len, generator=gen, dtype=torch.float64).to(dtype)
        ours_kwargs["attn_mask"] = ref_kwargs["attn_mask"] = bias_mask

    def to_ref(x):
        return x if batch_first else x.transpose(0, 1)

    ref_out, ref_w = ref(
        to_ref(query),
        to_ref(key),
        to_ref(value),
        need_weights=True,
        average_attn_weights=False,
        **ref_kwargs,
    )
    ref_out = to_ref(ref_out)
    fused_out, none = ours(query, key, value, **ours_kwargs)
    explicit_out, weights = ours(query, key, value, need_weights=True, **ours_kwargs)
    assert none is None
    assert weights.shape == (batch, heads, q_len, k_len)
    assert_close(fused_out, ref_out, dtype)
    assert_close(explicit_out, ref_out, dtype)
    assert_close(weights, ref_w, dtype)

    upstream = torch.randn(ref_out.shape, generator=gen, dtype=torch.float64).to(dtype)
    inputs = (query, key, value)
    ref_grads = torch.autograd.grad(ref_out, inputs + tuple(ref.parameters()), upstream)
    for out in (fused_out, explicit_out):
        grads = torch.autograd.grad(out, inputs, upstream, retain_graph=True)
        for g_ours, g_ref in zip(grads, ref_grads[:3], strict=True):
            assert_close(g_ours, g_ref, dtype)
    # Parameter gradients: torch packs q/k/v into one in_proj matrix.
    grads = torch.autograd.grad(fused_out, [ours.q_proj.weight, ours.out_proj.weight], upstream)
    ref_named = dict(zip([n for n, _ in ref.named_parameters()], ref_grads[3:], strict=True))
    assert_close(grads[0], ref_named["in_proj_weight"][:d_model], dtype)
    assert_close(grads[1], ref_named["out_proj.weight"], dtype)


def test_self_attention_defaults_key_and_value_to_query():
    ref, ours = make_pair(16, 4, True, True, torch.float64, 0)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    assert_close(ours(x)[0], ref(x, x, x)[0], torch.float64)


def test_dropout_is_used_in_training_and_off_in_eval():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 6, 16)
    mha.eval()
    assert torch.equal(mha(x)[0], mha(x)[0])
    mha.train()
    for need_weights in (False, True):
        torch.manual_seed(1)
        a = mha(x, need_weights=need_weights)[0]
        torch.manual_seed(2)
        b = mha(x, need_weights=need_weights)[0]
        assert not torch.allclose(a, b)
