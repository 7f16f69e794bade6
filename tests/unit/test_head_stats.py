"""Head statistics on toy attention maps whose answers can be worked out by hand, and
against closed forms and scipy."""

import math

import pytest
import torch
from scipy import stats

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


@pytest.mark.parametrize("t", [1, 2, 5, 31])
def test_uniform_distance_is_the_mean_distance_of_a_uniform_map(t):
    uniform = torch.full((t, t), 1.0 / t, dtype=torch.float64)
    assert hs.uniform_distance(t) == pytest.approx(float(hs.mean_distance(uniform)))


def test_distance_ratio_on_known_maps():
    t = 9
    uniform = torch.full((2, t, t), 1.0 / t)
    local = torch.eye(t).expand(2, t, t)  # every token on itself: distance 0
    ratio = hs.distance_ratio([uniform, local], drop_specials=False)
    assert ratio.shape == (2, 2)
    torch.testing.assert_close(ratio[0], torch.ones(2))
    torch.testing.assert_close(ratio[1], torch.zeros(2))
    # all weight on [CLS] looks "far" from the late tokens; half of it on [CLS] and the rest
    # spread over the words is a uniform head once [CLS] and [SEP] are dropped and renormalised
    cls = torch.zeros(t, t)
    cls[:, 0] = 1.0
    assert float(hs.distance_ratio([cls], drop_specials=False)) > 1.0
    half = torch.full((t, t), 0.5 / (t - 2))
    half[:, 0] = 0.5
    half[:, -1] = 0.0
    torch.testing.assert_close(hs.distance_ratio([half]), torch.ones(1))


def test_far_mass_by_hand():
    t = 6  # without specials: 4 words, distances up to 3
    m = torch.zeros(t, t)
    m[1:-1, 1] = 1.0  # every word row looks at the first word
    measured, uniform = hs.far_mass([m], 2)
    # words 0 … 3 look at word 0: distances 0, 1, 2, 3 → two of four rows are ≥ 2 away
    assert float(measured) == pytest.approx(0.5)
    # uniform over 4 words: pairs at distance ≥ 2 are (0,2),(0,3),(1,3) and mirror: 6 of 16
    assert float(uniform) == pytest.approx(6 / 16)


def test_distance_statistics_stay_on_the_maps_device():
    """Maps on another device (here "meta", where a GPU's maps would be) are measured there:
    no distance matrix is built on the default device beside them."""
    maps = torch.softmax(torch.randn(2, 3, 6, 6), -1).to("meta")
    assert hs.distance_ratio([maps, maps]).device.type == "meta"
    measured, uniform = hs.far_mass([maps], 2)
    assert measured.device.type == "meta" and uniform.device.type == "meta"
    assert measured.shape == (1, 2, 3)


def test_distance_ratio_bad_inputs():
    with pytest.raises(ValueError, match="positive int"):
        hs.uniform_distance(0)
    with pytest.raises(ValueError, match="at least one"):
        hs.distance_ratio([])
    with pytest.raises(ValueError, match="shape"):
        hs.distance_ratio([torch.ones(3, 4)])
    with pytest.raises(ValueError, match="besides"):
        hs.distance_ratio([torch.ones(2, 2) / 2])


def test_decay_map_ends_and_rows():
    t = 7
    m = hs.decay_map(t, torch.tensor([1e-3, 2.0, float("inf")]))  # (3, t, t)
    torch.testing.assert_close(m.sum(-1), torch.ones(3, t, dtype=torch.float64))
    torch.testing.assert_close(m[0], torch.eye(t, dtype=torch.float64))  # all on itself
    torch.testing.assert_close(m[2], torch.full((t, t), 1 / t, dtype=torch.float64))
    # by hand: row 0 with τ = 2 is e^{-j/2} over j = 0 … t−1, normalised
    row = torch.exp(-torch.arange(t, dtype=torch.float64) / 2)
    torch.testing.assert_close(m[1, 0], row / row.sum())
    with pytest.raises(ValueError, match="tau"):
        hs.decay_map(3, 0.0)


def test_matched_decay_recovers_a_decay_head():
    lengths = [5, 9, 9, 14]
    taus = torch.tensor([0.5, 1.5, 4.0])
    maps = [hs.decay_map(t, taus).float() for t in lengths]  # (3, t, t) each
    tokens = [["w"] * t for t in lengths]
    stats = hs.head_statistics(maps, tokens)
    tau, self_w = hs.matched_decay(lengths, stats["distance"])
    torch.testing.assert_close(tau, taus, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(self_w, stats["self"], rtol=1e-4, atol=1e-5)
    # per sentence, pooled over query tokens, it is the statistic's self-weight
    per = hs.decay_self_weight(lengths, tau)  # (S, 3)
    pooled = (per * torch.tensor(lengths)[:, None]).sum(0) / sum(lengths)
    torch.testing.assert_close(pooled, stats["self"], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(hs.self_weight(maps), per, rtol=1e-4, atol=1e-5)


def test_matched_decay_uniform_and_beyond():
    lengths = [6, 10]
    uniform = sum(t * hs.uniform_distance(t) for t in lengths) / sum(lengths)
    tau, self_w = hs.matched_decay(lengths, torch.tensor([uniform, uniform * 1.3, 0.0]))
    assert torch.isinf(tau[:2]).all()  # as far as a uniform head, or further: uniform
    expected = len(lengths) / sum(lengths)  # a uniform head's pooled self-weight
    torch.testing.assert_close(self_w[:2], torch.full((2,), expected))
    assert float(self_w[2]) > 0.999  # distance 0: all weight on itself
    with pytest.raises(ValueError, match="lengths"):
        hs.matched_decay([], torch.tensor([1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        hs.matched_decay([4], torch.tensor([-1.0]))


def test_entropy_closed_forms():
    uniform = torch.full((3, 8), 1 / 8, dtype=torch.float64)
    expected = torch.full((3,), math.log(8), dtype=torch.float64)
    torch.testing.assert_close(hs.entropy(uniform), expected)
    one_hot = torch.eye(5, dtype=torch.float64)
    assert torch.equal(hs.entropy(one_hot), torch.zeros(5, dtype=torch.float64))
    p = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    torch.testing.assert_close(hs.entropy(p), torch.tensor(1.5 * math.log(2), dtype=torch.float64))


def test_softmax_jacobian_matches_autograd():
    scores = torch.randn(4, 6, dtype=torch.float64)
    for row in scores:
        expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), row)
        torch.testing.assert_close(hs.softmax_jacobian(torch.softmax(row, -1)), expected)
    batched = hs.softmax_jacobian(torch.softmax(scores, -1))
    assert batched.shape == (4, 6, 6)


def test_reject_integer_weights():
    with pytest.raises(TypeError, match="weights must be a floating"):
        hs.entropy(torch.ones(3, dtype=torch.long))


def test_entropy_closed_forms_and_scipy():
    t = 7
    uniform = torch.full((3, t), 1 / t)
    torch.testing.assert_close(hs.entropy(uniform), torch.full((3,), math.log(t)))
    one_hot = torch.eye(t)
    torch.testing.assert_close(hs.entropy(one_hot), torch.zeros(t))
    w = torch.softmax(torch.randn(5, t, generator=torch.Generator().manual_seed(0)), -1)
    expected = torch.tensor(stats.entropy(w.numpy(), axis=-1), dtype=w.dtype)
    torch.testing.assert_close(hs.entropy(w), expected)


def test_max_weight_and_diagonal_mass():
    t = 5
    assert hs.max_weight(torch.full((t,), 1 / t)).item() == pytest.approx(1 / t)
    assert hs.diagonal_mass(torch.eye(t)).item() == 1.0
    assert hs.diagonal_mass(torch.full((2, t, t), 1 / t)).tolist() == pytest.approx([1 / t] * 2)
    with pytest.raises(ValueError, match="square"):
        hs.diagonal_mass(torch.ones(3, 4))


def test_head_sharpness_on_a_hand_built_map():
    t = 4
    self_head = torch.eye(t)  # all mass on the diagonal
    prev_head = torch.roll(torch.eye(t), shifts=-1, dims=1)  # all mass on another key
    uniform = torch.full((t, t), 1 / t)
    maps = torch.stack([self_head, prev_head, uniform])[None]  # (1, 3, T, T)
    s = hs.head_sharpness(maps)
    assert s["diagonal"] == pytest.approx([1.0, 0.0, 1 / t])
    assert s["entropy"] == pytest.approx([0.0, 0.0, math.log(t)])
    assert s["max_weight"] == pytest.approx([1.0, 1.0, 1 / t])
    # The diagonal is linear in the map: averaging heads gives the mean of their masses.
    assert s["diagonal_of_mean"] == pytest.approx(sum(s["diagonal"]) / 3)
    rows = torch.tensor([True, False, False, False])
    assert hs.head_sharpness(maps, rows)["diagonal"] == pytest.approx([1.0, 0.0, 1 / t])
    with pytest.raises(ValueError, match="rows"):
        hs.head_sharpness(maps, torch.ones(3, dtype=torch.bool))
