"""The toy encoder: shapes, equal parameters across head counts, weights that are real softmaxes."""

import math

import pytest
import torch

from mha_lib import MultiHeadAttention
from mha_lib.analysis.cost import parameter_count
from mha_lib.experiments.toy_transformer import ToyTransformer


def make(num_heads=4, **kwargs):
    torch.manual_seed(0)
    defaults = dict(d_model=32, num_layers=2)
    return ToyTransformer(20, 7, 10, num_heads=num_heads, **{**defaults, **kwargs})


def tokens(batch=3, length=10):
    return torch.randint(20, (batch, length), generator=torch.Generator().manual_seed(1))


def test_shapes_per_position_and_pooled():
    logits, maps = make()(tokens())
    assert logits.shape == (3, 10, 7) and maps is None
    logits, _ = make(readout="mean")(tokens())
    assert logits.shape == (3, 7)


def test_parameter_count_does_not_depend_on_heads():
    counts = {h: parameter_count(make(h)) for h in (1, 2, 4, 8, 16, 32)}
    assert len(set(counts.values())) == 1
    # And it is what the layers add up to: embeddings, per block 4 projections + MLP + 2 LN.
    d, v, c, t, layers = 32, 20, 7, 10, 2
    block = 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 2 * 2 * d
    assert counts[1] == v * d + t * d + layers * block + 2 * d + d * c + c


def test_blocks_use_the_library_attention():
    model = make(8)
    assert all(isinstance(a, MultiHeadAttention) for a in model.attentions)
    assert [a.num_heads for a in model.attentions] == [8, 8]


def test_attention_maps_are_row_stochastic_and_match_the_fused_path():
    model = make(4)
    x = tokens()
    maps = model.attention_maps(x)
    assert maps.shape == (2, 3, 4, 10, 10)
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, 3, 4, 10))
    fused, _ = model(x)
    explicit, listed = model(x, need_weights=True)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.stack(listed), maps)


def test_queries_keys_reproduce_the_maps():
    """softmax(q kᵀ/√d_head) recomputed from the returned vectors equals the model's maps."""
    model = make(4)
    x = tokens()
    for layer in range(2):
        q, k = model.queries_keys(x, layer=layer)
        assert q.shape == k.shape == (3, 4, 10, 8)
        expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
        torch.testing.assert_close(model.attention_maps(x)[layer], expected)


def test_init_scale_multiplies_attention_projections():
    base, scaled = make(2), make(2, init_scale=3.0)
    for a, b in zip(base.attentions, scaled.attentions, strict=True):
        torch.testing.assert_close(b.q_proj.weight, 3.0 * a.q_proj.weight)
        torch.testing.assert_close(b.out_proj.weight, a.out_proj.weight)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="num_heads"):
        ToyTransformer(10, 2, 5, num_heads=0)
    with pytest.raises(ValueError, match="divisible"):
        ToyTransformer(10, 2, 5, d_model=32, num_heads=3)
    with pytest.raises(ValueError, match="readout"):
        ToyTransformer(10, 2, 5, readout="cls")
    with pytest.raises(ValueError, match="init_scale"):
        ToyTransformer(10, 2, 5, init_scale=0.0)
    model = make()
    with pytest.raises(TypeError, match="tokens"):
        model(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(2, 11, dtype=torch.long))
    with pytest.raises(ValueError, match="tokens"):
        model(torch.full((2, 5), 20))
    with pytest.raises(ValueError, match="layer"):
        model.queries_keys(tokens(), layer=2)
