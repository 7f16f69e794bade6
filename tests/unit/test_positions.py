import math

import pytest
import torch

from mha_lib import MultiHeadAttention
from mha_lib.bert.positions import without_position_embeddings
from mha_lib.core.positions import sinusoidal_positions


def test_sinusoidal_positions_closed_form():
    pe = sinusoidal_positions(50, 16)
    assert pe.shape == (50, 16)
    for pos, i in [(0, 0), (7, 3), (49, 7)]:
        angle = pos / 10000 ** (2 * i / 16)
        assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
        assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    # Every position gets its own code.
    assert torch.cdist(pe, pe).add(torch.eye(50)).min() > 0.1


def test_sinusoidal_positions_rejects_bad_sizes():
    with pytest.raises(ValueError, match="d_model must be even"):
        sinusoidal_positions(4, 7)
    with pytest.raises(ValueError, match="length must be a positive int"):
        sinusoidal_positions(0, 8)


def test_positions_break_permutation_equivariance():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(1, 5, 16)
    perm = torch.tensor([2, 0, 4, 1, 3])
    torch.testing.assert_close(mha(x[:, perm])[0], mha(x)[0][:, perm])
    pe = sinusoidal_positions(5, 16)
    moved = mha(x[:, perm] + pe)[0]
    assert not torch.allclose(moved, mha(x + pe)[0][:, perm], atol=1e-3)


class TinyBert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = torch.nn.Module()
        self.embeddings.position_embeddings = torch.nn.Embedding(8, 4)


def test_without_position_embeddings_restores_weights_even_on_error():
    model = TinyBert()
    before = model.embeddings.position_embeddings.weight.detach().clone()
    with pytest.raises(RuntimeError, match="boom"):
        with without_position_embeddings(model):
            assert model.embeddings.position_embeddings.weight.abs().sum() == 0
            raise RuntimeError("boom")
    assert torch.equal(model.embeddings.position_embeddings.weight, before)
    with pytest.raises(TypeError, match="position_embeddings"):
        with without_position_embeddings(torch.nn.Linear(2, 2)):
            pass
