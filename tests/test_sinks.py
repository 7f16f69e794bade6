"""What a head moves: the per-key vectors of ``moved_norms`` rebuild the layer's output."""

import pytest
import torch

from mha_lib import MultiHeadAttention
from mha_lib.analysis.sinks import moved_norms, norm_weighted
from mha_lib.core.heads import split_heads


def test_weighted_moved_vectors_sum_to_the_layer_output():
    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3).double()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    out, w = mha(x, need_weights=True)  # (B, T, D), (B, H, T, T)
    v = split_heads(mha.v_proj(x), 3)  # (B, H, T, Dh)
    w_o = mha.out_proj.weight.view(12, 3, 4)
    f = torch.einsum("bhtd,ohd->bhto", v, w_o)  # what each head moves from each key
    rebuilt = torch.einsum("bhij,bhjo->bio", w, f) + mha.out_proj.bias
    torch.testing.assert_close(rebuilt, out)
    torch.testing.assert_close(moved_norms(mha, x), f.norm(dim=-1))


def test_norm_weighting_with_equal_norms_changes_nothing():
    w = torch.softmax(torch.randn(1, 2, 3, 4), -1)
    torch.testing.assert_close(norm_weighted(w, torch.full((1, 2, 4), 3.0)), w)
    moved = norm_weighted(w, torch.tensor([1.0, 0.0, 0.0, 0.0]).expand(1, 2, 4))
    torch.testing.assert_close(moved[..., 0], torch.ones(1, 2, 3))


def test_shared_kv_layers_are_refused():
    with pytest.raises(ValueError, match="multi-head"):
        moved_norms(MultiHeadAttention(8, 4, num_kv_heads=2), torch.zeros(1, 2, 8))
