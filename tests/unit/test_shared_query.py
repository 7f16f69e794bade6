"""One query projection shared by every head (`shared_query=True`) against independent
references.

Two references that share no code with the layer: the heads written out one by one, each
with its own rows of `W_k` and `W_v` and the same projected query, with an explicit
softmax; and torch's fused kernel given that query copied to every head. Outputs and the
gradients of inputs and parameters, in float32 and float64, on both of the layer's paths;
masks, head masks, pruning, the KV cache and the toy model that carries the option.
"""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from mha_lib import MultiHeadAttention
from mha_lib.core.reference import projections_sdpa
from mha_lib.experiments.decoding import forward_cached, new_cache
from mha_lib.experiments.kv_sharing import pooled_attention
from mha_lib.experiments.toy_transformer import ToyTransformer, scale_attention_
from mha_lib.experiments.training import Config, build_model, make_task

TOL = {torch.float64: 1e-10, torch.float32: 2e-5}
DTYPES = [torch.float64, torch.float32]
HEADS = [1, 2, 4, 8]


def close(a, b, dtype):
    torch.testing.assert_close(a, b, rtol=TOL[dtype], atol=TOL[dtype])


def layer(num_heads, dtype, seed=0, d_model=16):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model, num_heads, shared_query=True, dtype=dtype)
    with torch.no_grad():  # non-zero biases, so that a bias slicing mistake shows
        for p in mha.parameters():
            if p.dim() == 1:
                p.normal_()
    return mha


def head_by_head(mha, x, allowed=None, head_mask=None):
    """Each head on its own: the one query against this head's keys, this head's values."""
    q = x @ mha.q_proj.weight.T + mha.q_proj.bias  # (B, T, Dh): one query for all heads
    outs, maps = [], []
    for h in range(mha.num_heads):
        rows = slice(h * mha.d_head, (h + 1) * mha.d_head)
        k = x @ mha.k_proj.weight[rows].T + mha.k_proj.bias[rows]  # (B, T, Dh)
        v = x @ mha.v_proj.weight[rows].T + mha.v_proj.bias[rows]  # (B, T, Dh)
        scores = q @ k.transpose(-2, -1) / math.sqrt(mha.d_head)  # (B, T, T)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = weights @ v
        if head_mask is not None:
            out = out * head_mask[h]
        outs.append(out)
        maps.append(weights)
    return mha.out_proj(torch.cat(outs, dim=-1)), torch.stack(maps, dim=1)


def torch_copied_query(mha, x, allowed=None, is_causal=False):
    """torch's fused kernel, the projected query repeated for every head."""
    b, t, _ = x.shape
    q = (x @ mha.q_proj.weight.T + mha.q_proj.bias).unsqueeze(1)  # (B, 1, T, Dh)
    q = q.repeat(1, mha.num_heads, 1, 1)  # (B, H, T, Dh), real copies
    k = (x @ mha.k_proj.weight.T + mha.k_proj.bias).view(b, t, -1, mha.d_head).transpose(1, 2)
    v = (x @ mha.v_proj.weight.T + mha.v_proj.bias).view(b, t, -1, mha.d_head).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=is_causal)
    return mha.out_proj(out.transpose(1, 2).reshape(b, t, -1))


@pytest.mark.parametrize(
    ("heads", "dtype", "need_weights"), list(itertools.product(HEADS, DTYPES, [False, True]))
)
def test_outputs_and_gradients_match_both_references(heads, dtype, need_weights):
    mha = layer(heads, dtype)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, 16, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    allowed = torch.rand(7, 7, generator=g) < 0.6
    allowed[:, 0] = True
    ours, weights = mha(x, attn_mask=allowed, need_weights=need_weights)
    ref, ref_weights = head_by_head(mha, x, allowed)
    close(ours, ref, dtype)
    close(ours, torch_copied_query(mha, x, allowed), dtype)
    if need_weights:
        assert weights.shape == (2, heads, 7, 7)  # one map per head
        close(weights, ref_weights, dtype)
    params = [x, *mha.parameters()]
    probe = torch.randn(ours.shape, generator=g, dtype=torch.float64).to(dtype)
    ours_g, ref_g = (torch.autograd.grad((y * probe).sum(), params) for y in (ours, ref))
    for a, b in zip(ours_g, ref_g, strict=True):
        close(a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_padding_and_head_mask(dtype):
    mha = layer(4, dtype, seed=2)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 6, 16, generator=g, dtype=torch.float64).to(dtype)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    close(mha(x, is_causal=True)[0], torch_copied_query(mha, x, is_causal=True), dtype)
    close(mha(x, is_causal=True, need_weights=True)[0], head_by_head(mha, x, causal)[0], dtype)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, 4:] = True
    allowed = (~padding)[:, None, :]  # (B, 1, Tk) for the head-by-head reference
    head_mask = torch.rand(4, generator=g, dtype=torch.float64).to(dtype)
    for need in (False, True):
        close(mha(x, key_padding_mask=padding, need_weights=need)[0],
              head_by_head(mha, x, allowed)[0], dtype)  # fmt: skip
        close(mha(x, head_mask=head_mask, need_weights=need)[0],
              head_by_head(mha, x, head_mask=head_mask)[0], dtype)  # fmt: skip


def test_the_heads_share_one_query():
    mha = layer(4, torch.float64)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    q = mha.project_queries(x)
    assert q.shape == (2, 4, 5, 4)
    for h in range(1, 4):
        assert torch.equal(q[:, h], q[:, 0])


def test_the_default_path_is_unchanged():
    """`shared_query=False` builds the same weights and computes bit for bit what the
    plain layer and the shortest fused version compute."""
    torch.manual_seed(5)
    plain = MultiHeadAttention(16, 4)
    torch.manual_seed(5)
    same = MultiHeadAttention(16, 4, shared_query=False)
    x = torch.randn(2, 5, 16)
    for a, b in zip(plain.state_dict().values(), same.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    for need in (False, True):
        assert torch.equal(plain(x, need_weights=need)[0], same(x, need_weights=need)[0])
    assert torch.equal(plain(x)[0], projections_sdpa(plain, x))


def test_parameters():
    d, h, dh = 32, 8, 4
    mha = MultiHeadAttention(d, h, shared_query=True)
    assert mha.q_proj.weight.shape == (dh, d)
    assert mha.k_proj.weight.shape == mha.v_proj.weight.shape == (d, d)
    count = sum(p.numel() for p in mha.parameters())
    assert count == (dh * d + dh) + 3 * (d * d + d)
    assert "shared_query=True" in repr(mha)


def test_refused_arguments():
    with pytest.raises(ValueError, match="shared_query=True needs a key/value head per query"):
        MultiHeadAttention(16, 4, num_kv_heads=2, shared_query=True)
    with pytest.raises(TypeError, match="shared_query must be a bool"):
        MultiHeadAttention(16, 4, shared_query=1)
    mha = MultiHeadAttention(16, 4, shared_query=True)
    with pytest.raises(ValueError, match="pooling needs"):
        pooled_attention(mha, 2)
    with pytest.raises(ValueError, match="query is shared"):
        scale_attention_(mha, 2.0, ("q",), heads=(0,))
    scale_attention_(mha, 2.0, ("k", "v"), heads=(0,))  # a head's own keys and values: fine


@pytest.mark.parametrize("need_weights", [False, True])
def test_pruning_a_head_equals_masking_it(need_weights):
    """A removed head takes its keys, values and output columns; the shared query stays."""
    mha = layer(8, torch.float64, seed=7)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = torch.ones(8, dtype=torch.float64)
    mask[[0, 5]] = 0.0
    masked = mha(x, head_mask=mask, need_weights=need_weights)[0]
    q_weight = mha.q_proj.weight.clone()
    mha.prune_heads([0, 5])
    assert mha.kept_heads == mha.kept_kv_heads == [1, 2, 3, 4, 6, 7]
    assert torch.equal(mha.q_proj.weight, q_weight)
    assert mha.k_proj.weight.shape == mha.v_proj.weight.shape == (6 * 2, 16)
    close(mha(x, need_weights=need_weights)[0], masked, torch.float64)


def test_the_toy_model_carries_it_and_decodes_from_a_cache():
    config = Config(task="associative_recall", d_model=16, num_heads=4, shared_query=True)
    assert config.to_dict()["shared_query"] is True
    assert "shared_query" not in Config(task="associative_recall").to_dict()
    task = make_task(config.task)
    model = build_model(config, task, 0)
    assert all(a.shared_query for a in model.attentions)
    torch.manual_seed(0)
    m = ToyTransformer(11, 11, 16, d_model=16, num_heads=4, num_layers=2,
                       causal=True, shared_query=True).double().eval()  # fmt: skip
    tokens = torch.randint(0, 11, (2, 10), generator=torch.Generator().manual_seed(1))
    full, _ = m(tokens)
    cache = new_cache(m, 2, 10)
    steps = [forward_cached(m, tokens[:, :4], cache)]
    steps += [forward_cached(m, tokens[:, t : t + 1], cache) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-10, atol=1e-10)
    q, k = m.queries_keys(tokens)
    maps = m.attention_maps(tokens)[0]
    scores = q @ k.transpose(-2, -1) / math.sqrt(4)
    causal = torch.ones(10, 10, dtype=torch.bool).tril()
    expected = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    torch.testing.assert_close(maps, expected, rtol=1e-10, atol=1e-10)
