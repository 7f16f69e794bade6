import math

import pytest
import torch

from mha_lib.analysis.softmax_stats import entropy, softmax_jacobian


def test_entropy_closed_forms():
    uniform = torch.full((3, 8), 1 / 8, dtype=torch.float64)
    torch.testing.assert_close(entropy(uniform), torch.full((3,), math.log(8), dtype=torch.float64))
    one_hot = torch.eye(5, dtype=torch.float64)
    assert torch.equal(entropy(one_hot), torch.zeros(5, dtype=torch.float64))
    p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    torch.testing.assert_close(entropy(p), torch.tensor(1.5 * math.log(2), dtype=torch.float64))


def test_softmax_jacobian_matches_autograd():
    scores = torch.randn(4, 6, dtype=torch.float64)
    for row in scores:
        expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), row)
        torch.testing.assert_close(softmax_jacobian(torch.softmax(row, -1)), expected)
    batched = softmax_jacobian(torch.softmax(scores, -1))
    assert batched.shape == (4, 6, 6)


def test_reject_integer_weights():
    with pytest.raises(TypeError, match="weights must be a floating"):
        entropy(torch.ones(3, dtype=torch.long))
