"""Every bad input fails loudly, naming the argument, instead of broadcasting or making NaN."""

import pytest
import torch

from mha_lib import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads


def t(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((t(2, 3, 4), t(2, 5, 4), t(2, 5, 6)), {}, None, None),  # valid, for contrast
        ((t(4), t(5, 4), t(5, 4)), {}, ValueError, "q must have at least 2"),
        ((t(2, 3, 4), t(5, 4), t(5, 4)), {}, ValueError, "same number of dimensions"),
        ((t(2, 3, 4), t(3, 5, 4), t(3, 5, 4)), {}, ValueError, "leading"),
        ((t(2, 3, 4), t(2, 5, 3), t(2, 5, 4)), {}, ValueError, "same feature size"),
        ((t(2, 3, 4), t(2, 5, 4), t(2, 6, 4)), {}, ValueError, "k and v must have the same length"),
        ((t(2, 3, 4), t(2, 5, 4, dtype=torch.float64), t(2, 5, 4)), {}, TypeError, "dtype"),
        ((torch.ones(2, 3, 4, dtype=torch.long),) * 3, {}, TypeError, "q must be a floating"),
        (([[1.0]], t(1, 1), t(1, 1)), {}, TypeError, "q must be a torch.Tensor"),
        (
            (t(2, 3, 4), t(2, 5, 4), t(2, 5, 4)),
            {"mask": torch.ones(3, 4, dtype=torch.bool)},
            ValueError,
            "mask has shape",
        ),
        (
            (t(2, 3, 4), t(2, 5, 4), t(2, 5, 4)),
            {"mask": torch.ones(7, 2, 3, 5, dtype=torch.bool)},
            ValueError,
            "does not broadcast",
        ),
        (
            (t(2, 3, 4), t(2, 5, 4), t(2, 5, 4)),
            {"mask": torch.ones(3, 5, dtype=torch.long)},
            TypeError,
            "mask must be bool or floating",
        ),
        (
            (t(2, 3, 4), t(2, 5, 4), t(2, 5, 4)),
            {"mask": torch.zeros(3, 5, dtype=torch.float64)},
            TypeError,
            "same dtype",
        ),
    ],
)
def test_sdpa_rejects_bad_input(args, kwargs, error, match):
    if error is None:
        scaled_dot_product_attention(*args, **kwargs)
        return
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(*args, **kwargs)


def test_split_and_merge_reject_bad_input():
    with pytest.raises(ValueError, match="not divisible by num_heads=4"):
        split_heads(t(2, 3, 6), 4)
    with pytest.raises(ValueError, match="x must have 3 dimensions"):
        split_heads(t(3, 6), 2)
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        split_heads(t(2, 3, 6), 0)
    with pytest.raises(ValueError, match="x must have 4 dimensions"):
        merge_heads(t(2, 3, 6))


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((10, 3), {}, "d_model=10 is not divisible by num_heads=3"),
        ((0, 1), {}, "d_model must be a positive int"),
        ((8, 0), {}, "num_heads must be a positive int"),
        ((8, 2.0), {}, "num_heads must be a positive int"),
        ((8, 2), {"dropout": 1.0}, "dropout must be in"),
    ],
)
def test_mha_constructor_rejects_bad_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        MultiHeadAttention(*args, **kwargs)


@pytest.fixture
def mha():
    return MultiHeadAttention(8, 2)


@pytest.mark.parametrize(
    ("inputs", "kwargs", "error", "match"),
    [
        ((t(2, 5, 8),), {}, None, None),  # valid, for contrast
        ((t(5, 8),), {}, ValueError, "query must have 3 dimensions"),
        ((t(2, 5, 6),), {}, ValueError, "query has last dimension 6, expected d_model=8"),
        ((t(2, 5, 8), t(3, 4, 8)), {}, ValueError, "share the batch size"),
        (
            (t(2, 5, 8), t(2, 4, 8), t(2, 3, 8)),
            {},
            ValueError,
            "key and value must have the same length",
        ),
        ((torch.ones(2, 5, 8, dtype=torch.long),), {}, TypeError, "query must be a floating"),
        (
            (t(2, 5, 8),),
            {"attn_mask": torch.ones(5, 4, dtype=torch.bool)},
            ValueError,
            "attn_mask has shape",
        ),
        (
            (t(2, 5, 8),),
            {"attn_mask": torch.ones(5, 5, dtype=torch.int32)},
            TypeError,
            "attn_mask must be bool",
        ),
        (
            (t(2, 5, 8),),
            {"key_padding_mask": torch.zeros(5, 2, dtype=torch.bool)},
            ValueError,
            r"key_padding_mask must have shape \(batch, Tk\) = \(2, 5\)",
        ),
        (
            (t(2, 5, 8),),
            {"key_padding_mask": torch.zeros(2, 5, dtype=torch.int64)},
            TypeError,
            "key_padding_mask must be bool",
        ),
        (
            (t(2, 5, 8),),
            {"head_mask": torch.ones(3)},
            ValueError,
            r"head_mask must have shape \(2,\) or \(2, 2\)",
        ),
        (
            (t(2, 5, 8),),
            {"head_mask": torch.ones(2, dtype=torch.bool)},
            TypeError,
            "head_mask must be a floating",
        ),
    ],
)
def test_mha_forward_rejects_bad_input(mha, inputs, kwargs, error, match):
    if error is None:
        mha(*inputs, **kwargs)
        return
    with pytest.raises(error, match=match):
        mha(*inputs, **kwargs)


def test_prune_heads_rejects_bad_indices(mha):
    with pytest.raises(ValueError, match="head index 2 is out of range for 2 heads"):
        mha.prune_heads([2])
    with pytest.raises(ValueError, match="head index -1 is out of range"):
        mha.prune_heads([-1])
    with pytest.raises(TypeError, match="heads must contain ints"):
        mha.prune_heads([0.0])
    with pytest.raises(ValueError, match="cannot prune all 2 heads"):
        mha.prune_heads([0, 1])
    assert mha.num_heads == 2  # a refused call changes nothing
    mha.prune_heads([])
    assert mha.num_heads == 2


def test_from_torch_rejects_unsupported_modules():
    with pytest.raises(TypeError, match="must be a torch.nn.MultiheadAttention"):
        MultiHeadAttention.from_torch(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="kdim/vdim"):
        MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, kdim=4))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True))
