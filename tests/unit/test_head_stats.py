"""Head statistics on toy attention maps whose answers can be worked out by hand."""

import math

import pytest
import torch

from mha_lib.analysis import head_stats as hs

T = 4
IDENTITY = torch.eye(T)  # every token attends to itself
UNIFORM = torch.full((T, T), 1.0 / T)
# every token attends to the previous one; the first has none and attends to itself
PREVIOUS = torch.diag(torch.ones(T - 1), -1)
PREVIOUS[0, 0] = 1.0
# every token attends to the first one ([CLS])
FIRST = torch.zeros(T, T)
FIRST[:, 0] = 1.0


def test_entropy_extremes():
    torch.testing.assert_close(hs.mean_entropy(UNIFORM), torch.tensor(math.log(T)))
    torch.testing.assert_close(hs.mean_entropy(IDENTITY), torch.tensor(0.0))
    half = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    torch.testing.assert_close(hs.mean_entropy(half), torch.tensor(math.log(2) / 2))


def test_entropy_keeps_leading_dimensions():
    maps = torch.stack([torch.stack([IDENTITY, UNIFORM]), torch.stack([FIRST, PREVIOUS])])
    assert hs.mean_entropy(maps).shape == (2, 2)


def test_mass_on_marked_keys():
    keys = torch.tensor([True, False, False, False])
    torch.testing.assert_close(hs.mass_on(FIRST, keys), torch.tensor(1.0))
    torch.testing.assert_close(hs.mass_on(UNIFORM, keys), torch.tensor(0.25))
    torch.testing.assert_close(hs.mass_on(IDENTITY, keys), torch.tensor(0.25))  # only row 0


def test_offset_mass():
    torch.testing.assert_close(hs.offset_mass(IDENTITY, 0), torch.tensor(1.0))
    torch.testing.assert_close(hs.offset_mass(PREVIOUS, -1), torch.tensor(1.0))  # rows 1..T-1
    torch.testing.assert_close(hs.offset_mass(PREVIOUS, 1), torch.tensor(0.0))
    torch.testing.assert_close(hs.offset_mass(PREVIOUS, 0), torch.tensor(1.0 / T))
    assert torch.isnan(hs.offset_mass(IDENTITY, T))


def test_local_mass():
    torch.testing.assert_close(hs.local_mass(PREVIOUS, 1), torch.tensor(1.0))
    torch.testing.assert_close(hs.local_mass(FIRST, 0), torch.tensor(1.0 / T))
    torch.testing.assert_close(hs.local_mass(FIRST, 1), torch.tensor(2.0 / T))  # rows 0, 1
    torch.testing.assert_close(hs.local_mass(UNIFORM, 1), torch.tensor((2 + 3 + 3 + 2) / 16))
    with pytest.raises(ValueError, match="width"):
        hs.local_mass(UNIFORM, -1)


def test_mean_distance():
    torch.testing.assert_close(hs.mean_distance(IDENTITY), torch.tensor(0.0))
    torch.testing.assert_close(hs.mean_distance(PREVIOUS), torch.tensor((T - 1) / T))
    three = torch.full((3, 3), 1.0 / 3)  # rows: (0+1+2)/3, (1+0+1)/3, (2+1+0)/3
    torch.testing.assert_close(hs.mean_distance(three), torch.tensor(8.0 / 9.0))


def test_token_masks():
    masks = hs.token_masks(["[CLS]", "hello", ",", "world", "...", "[SEP]"])
    assert masks["cls"].tolist() == [True, False, False, False, False, False]
    assert masks["sep"].tolist() == [False, False, False, False, False, True]
    assert masks["punct"].tolist() == [False, False, True, False, True, False]


def test_head_statistics_weights_every_token_equally():
    # sentence A: 4 tokens, one head attends to [CLS]; sentence B: 2 tokens, it attends to itself
    a = FIRST[None, None]  # (L=1, H=1, 4, 4)
    b = torch.eye(2)[None, None]
    stats = hs.head_statistics([a, b], [["[CLS]", "x", ".", "[SEP]"], ["[CLS]", "[SEP]"]])
    assert set(stats) == set(hs.STATISTICS)
    # [CLS] mass: 4 rows with 1 in A, 1 of 2 rows (the [CLS] row) in B → 5/6
    torch.testing.assert_close(stats["cls"], torch.tensor([[5 / 6]]))
    torch.testing.assert_close(stats["sep"], torch.tensor([[1 / 6]]))  # B's [SEP] row
    torch.testing.assert_close(stats["self"], torch.tensor([[3 / 6]]))  # A row 0, B both rows
    # previous: of A's rows 1..3 only row 1 (→ token 0) looks one back; B's row 1 does not
    torch.testing.assert_close(stats["previous"], torch.tensor([[1 / 4]]))
    # distance: A rows 0..3 look 0, 1, 2, 3 back; B looks 0 → 6 / 6
    torch.testing.assert_close(stats["distance"], torch.tensor([[1.0]]))
    # local (|i - j| <= 1): A's rows 0 and 1 reach token 0, B's rows both → 4 / 6
    torch.testing.assert_close(stats["local"], torch.tensor([[4 / 6]]))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: hs.mean_entropy(torch.ones(3, 4)), ValueError, "maps must have shape"),
        (lambda: hs.mean_entropy(torch.ones(3, 3, dtype=torch.long)), TypeError, "maps"),
        (lambda: hs.mass_on(UNIFORM, [True, False]), ValueError, "keys"),
        (lambda: hs.offset_mass(UNIFORM, 1.5), TypeError, "offset"),
        (
            lambda: hs.head_statistics([UNIFORM[None, None]], [["a", "b"]]),
            ValueError,
            "tokens\\[0\\]",
        ),
        (lambda: hs.head_statistics([], []), ValueError, "non-empty"),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()
