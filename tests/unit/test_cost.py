"""Closed-form costs in `mha_lib.analysis.cost` against what torch measures, and its timing
harness: every call timed in turns, the thread count restored, ratios exact.

No test here times anything against a threshold (timings are for bench/); the harness is
checked for what it does with the calls it is given.
"""

import math
import time

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from mha_lib import MultiHeadAttention
from mha_lib.analysis.cost import (
    attention_cost,
    attention_map_bytes,
    compare,
    elementwise_work,
    interleaved_samples,
    interleaved_times,
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


# ---------------------------------------------------------------- the timing harness


def test_every_call_runs_once_to_warm_up_then_once_per_round_in_turn():
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    threads = torch.get_num_threads()
    seen_threads = []
    calls["c"] = lambda: seen_threads.append(torch.get_num_threads())
    timings = interleaved_times(calls, repeats=3)
    # warm-up, then three rounds taking turns, the order rotated by one each round
    assert order == ["a", "b"] + ["a", "b"] + ["b", "a"] + ["a", "b"]
    assert seen_threads == [1] * 4  # timed on one thread ...
    assert torch.get_num_threads() == threads  # ... and restored afterwards
    assert set(timings) == {"a", "b", "c"}
    assert all(median >= 0 and spread >= 0 for median, spread in timings.values())


def test_the_thread_count_is_restored_when_a_call_fails():
    threads = torch.get_num_threads()

    def broken():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        interleaved_times({"broken": broken}, repeats=2)
    assert torch.get_num_threads() == threads


def test_compare_is_the_ratio_of_medians_with_the_larger_spread():
    assert compare((30.0, 0.1), (10.0, 0.25)) == (pytest.approx(3.0), 0.25)
    with pytest.raises(ValueError, match="positive medians"):
        compare((1.0, 0.0), (0.0, 0.0))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="repeats"):
        interleaved_times({"a": lambda: None}, repeats=0)
    with pytest.raises(ValueError, match="at least one"):
        interleaved_times({}, repeats=1)
    with pytest.raises(ValueError, match="warmup"):
        interleaved_samples({"a": lambda: None}, repeats=1, warmup=0)


def test_samples_on_both_clocks_with_calls_per_sample_sized_by_min_sample():
    linear = nn.Linear(8, 5)
    x = torch.randn(3, 8)
    runs = {"a": 0, "b": 0}

    def call(name):
        runs[name] += 1
        time.sleep(0.002)  # wall time passes, so a 10 ms sample holds several calls
        return linear(x)

    samples = interleaved_samples(
        {"a": lambda: call("a"), "b": lambda: call("b")}, repeats=3, min_sample=0.01, warmup=2
    )
    assert set(samples) == {"wall", "cpu"}
    for clock in samples.values():
        assert set(clock) == {"a", "b"}
        assert all(len(s) == 3 and all(t >= 0 for t in s) for s in clock.values())
    assert all(t > 0 for s in samples["wall"].values() for t in s)
    assert runs["a"] > 2 + 3 and runs["b"] > 2 + 3  # more than one call per sample
