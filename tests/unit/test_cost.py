"""Closed-form costs in `mha_lib.analysis.cost` against what torch measures."""

import math

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from mha_lib import MultiHeadAttention
from mha_lib.analysis.cost import (
    attention_cost,
    attention_map_bytes,
    elementwise_work,
    mha_flops,
    mha_parameter_count,
    score_elements,
)

SHAPES = [  # (batch, q_len, k_len, d_model, num_heads)
    (1, 5, 5, 8, 1),
    (2, 7, 7, 12, 3),
    (3, 4, 9, 16, 4),
    (2, 6, 3, 24, 8),
]


def _numel(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(("d_model", "num_heads"), [(8, 1), (12, 3), (32, 4), (48, 16)])
def test_parameter_count_matches_numel(d_model, num_heads, bias):
    expected = mha_parameter_count(d_model, num_heads, bias=bias)
    assert _numel(MultiHeadAttention(d_model, num_heads, bias=bias)) == expected
    # torch's module is an independent implementation of the same layer.
    assert _numel(nn.MultiheadAttention(d_model, num_heads, bias=bias)) == expected


def test_parameters_do_not_depend_on_heads():
    counts = {_numel(MultiHeadAttention(48, h)) for h in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)}
    assert len(counts) == 1


def _measured_flops(module, query, key, backward):
    with FlopCounterMode(display=False) as counter:
        out, _ = module(query, key, need_weights=True)  # explicit path: the counter sees bmm
        if backward:
            out.backward(torch.randn_like(out))
    return counter.get_total_flops()


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(("batch", "q_len", "k_len", "d_model", "num_heads"), SHAPES)
def test_flops_match_flop_counter(batch, q_len, k_len, d_model, num_heads, backward):
    torch.manual_seed(0)
    module = MultiHeadAttention(d_model, num_heads)
    query = torch.randn(batch, q_len, d_model, requires_grad=backward)
    key = torch.randn(batch, k_len, d_model, requires_grad=backward)
    measured = _measured_flops(module, query, key, backward)
    expected = mha_flops(batch, q_len, d_model, num_heads, k_len, backward=backward)
    assert measured == expected


def test_flops_do_not_depend_on_heads():
    x = torch.randn(2, 10, 24)
    measured = {_measured_flops(MultiHeadAttention(24, h), x, x, False) for h in (1, 2, 4, 8, 24)}
    assert len(measured) == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("batch", "q_len", "k_len", "d_model", "num_heads"), SHAPES)
def test_attention_map_bytes_match_returned_weights(batch, q_len, k_len, d_model, num_heads, dtype):
    module = MultiHeadAttention(d_model, num_heads).to(dtype)
    query = torch.randn(batch, q_len, d_model, dtype=dtype)
    key = torch.randn(batch, k_len, d_model, dtype=dtype)
    _, weights = module(query, key, need_weights=True)
    expected = attention_map_bytes(batch, num_heads, q_len, k_len, dtype)
    assert weights.numel() * weights.element_size() == expected


def test_attention_map_grows_linearly_with_heads():
    one = attention_map_bytes(2, 1, 16)
    assert [attention_map_bytes(2, h, 16) for h in (2, 4, 8)] == [2 * one, 4 * one, 8 * one]


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: mha_parameter_count(10, 3), "num_heads"),
        (lambda: mha_parameter_count(0, 1), "d_model"),
        (lambda: mha_flops(0, 4, 8, 2), "batch"),
        (lambda: mha_flops(1, 4, 8, 2, k_len=-1), "k_len"),
        (lambda: mha_flops(1, 4.0, 8, 2), "q_len"),
        (lambda: attention_map_bytes(1, True, 4), "num_heads"),
    ],
)
def test_bad_input_raises_value_error_naming_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_bad_dtype_raises_type_error():
    with pytest.raises(TypeError, match="dtype"):
        attention_map_bytes(1, 2, 4, dtype="float32")


def _map_elements(records, batch, num_heads, q_len, k_len):
    shape = (batch, num_heads, q_len, k_len)
    return sum(math.prod(s) for _, s in records if s == shape)


@pytest.mark.parametrize("masked", [False, True])
def test_elementwise_work_on_the_scores_grows_with_heads_at_fixed_width(masked):
    batch, length, d_model = 2, 7, 24
    x = torch.randn(batch, length, d_model)
    mask = torch.ones(length, length, dtype=torch.bool).tril() if masked else None
    passes = set()
    for h in (1, 2, 4, 8):
        layer = MultiHeadAttention(d_model, h).eval()
        records = elementwise_work(lambda layer=layer: layer(x, attn_mask=mask, need_weights=True))
        elements = _map_elements(records, batch, h, length, length)
        assert elements % score_elements(batch, h, length) == 0
        passes.add(elements // score_elements(batch, h, length))
    # Scale, (mask,) softmax and the guards for fully masked rows: the same passes for every h.
    assert passes == {6 if masked else 5}


def test_elementwise_work_skips_matrix_products_and_views():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert elementwise_work(lambda: a @ b) == []
    assert elementwise_work(lambda: a.t()[1:].unsqueeze(0).expand(2, -1, -1)) == []
    assert elementwise_work(lambda: torch.softmax(a, -1)) == [("_softmax", (3, 4))]


def test_score_elements_hand_case_and_bad_input():
    assert score_elements(2, 3, 4, 5) == 2 * 3 * 4 * 5
    assert score_elements(1, 2, 6) == 72
    with pytest.raises(ValueError, match="num_heads"):
        score_elements(1, 0, 4)


@pytest.mark.parametrize(("d_head", "num_heads"), [(4, 1), (4, 3), (8, 2)])
def test_attention_cost_at_a_fixed_head_width_matches_the_polynomials_in_h(d_head, num_heads):
    batch, length = 2, 5
    width = d_head * num_heads
    layer = MultiHeadAttention(width, num_heads).eval()
    x = torch.randn(batch, length, width)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    cost = attention_cost(layer, x, attn_mask=causal)
    h = num_heads  # the closed forms written out by hand, as polynomials in h
    assert cost["params"] == 4 * d_head**2 * h**2 + 4 * d_head * h
    assert cost["projection_flops"] == 8 * batch * length * d_head**2 * h**2
    assert cost["attention_flops"] == 4 * batch * length**2 * d_head * h
    assert cost["flops"] == cost["projection_flops"] + cost["attention_flops"]
    assert cost["flops"] == mha_flops(batch, length, width, num_heads)
    # scale, mask, the guard for fully masked rows (isneginf, masked_fill), softmax, and
    # the zeroing of blocked rows: six passes over the scores
    assert cost["score_work"] == 6 * score_elements(batch, h, length)


def test_attention_cost_rejects_a_flat_input():
    with pytest.raises(ValueError, match="x must have shape"):
        attention_cost(MultiHeadAttention(4, 2), torch.randn(3, 4))
