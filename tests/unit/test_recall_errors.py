"""Where a recall model's errors fall (mha_lib.analysis.recall_errors), on cases checked by hand."""

import numpy as np
import pytest
import torch

from mha_lib.analysis.recall_errors import (
    DEAD_ERROR,
    dead_tokens,
    error_rates,
    error_share,
    right_weight,
    token_errors,
)


def test_a_hand_checked_batch():
    # Ten answers over a vocabulary of 4: token 0 asked 4 times (1 wrong), token 1 twice
    # (both wrong), token 2 four times (none wrong), token 3 never.
    tokens = torch.tensor([[0, 0, 1, 2, 2], [0, 1, 2, 2, 0]])
    wrong = torch.tensor([[True, False, True, False, False], [False, True, False, False, False]])
    errors, counts = token_errors(tokens, wrong, 4)
    assert errors.tolist() == [1, 2, 0, 0]
    assert counts.tolist() == [4, 2, 4, 0]
    rates = error_rates(errors, counts)
    assert rates[:3].tolist() == [0.25, 1.0, 0.0] and np.isnan(rates[3])
    # 0.25 > DEAD_ERROR = 0.2: tokens 0 and 1 are dead; with a threshold of 0.3, only 1.
    assert DEAD_ERROR == 0.2
    assert dead_tokens(errors, counts).tolist() == [0, 1]
    assert dead_tokens(errors, counts, threshold=0.3).tolist() == [1]
    # Token 1 carries 2 of the 3 errors but only 2 of the 10 answers.
    assert error_share(errors, counts, [1]) == pytest.approx((2 / 3, 2 / 10))
    assert error_share(errors, counts, []) == (0.0, 0.0)
    assert error_share([0, 0, 0, 0], counts, [1]) == (0.0, 0.2)  # no errors at all


def test_right_weight_reads_the_named_position():
    # One sequence, T = 3, two heads; the query rows are 1 and 2, which must read 0 and 1.
    weights = torch.tensor(
        [
            [[1.0, 0.0, 0.0], [0.7, 0.2, 0.1], [0.1, 0.6, 0.3]],  # head 0
            [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.9, 0.05, 0.05]],  # head 1
        ]
    )[None]  # (1, 2, 3, 3)
    got = right_weight(weights, torch.tensor([[0, 1]]), torch.tensor([1, 2]))
    assert got.shape == (1, 2, 2)
    assert torch.allclose(got[0], torch.tensor([[0.7, 0.6], [0.0, 0.05]]))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="tokens and wrong must have the same shape"):
        token_errors(torch.zeros(3, dtype=torch.long), torch.zeros(2, dtype=torch.bool), 4)
    with pytest.raises(TypeError, match="boolean"):
        token_errors(torch.zeros(3, dtype=torch.long), torch.zeros(3), 4)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        token_errors(torch.tensor([4]), torch.tensor([True]), 4)
    with pytest.raises(ValueError, match="errors <= counts"):
        error_rates([2], [1])
    with pytest.raises(ValueError, match="threshold"):
        dead_tokens([0], [1], threshold=1.0)
    with pytest.raises(ValueError, match="positions"):
        right_weight(torch.ones(1, 1, 3, 3), torch.tensor([[3]]), torch.tensor([1]))
