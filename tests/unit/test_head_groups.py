"""Head distances and layer groupings on toy maps and matrices whose answers can be worked out
by hand, and against scipy."""

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon, pdist, squareform

from mha_lib.analysis import head_groups as hg

T = 4
IDENTITY = torch.eye(T)  # every token attends to itself
# every token attends to the previous one; the first has none and attends to itself
PREVIOUS = torch.diag(torch.ones(T - 1), -1)
PREVIOUS[0, 0] = 1.0


def test_js_distance_against_scipy():
    gen = torch.Generator().manual_seed(0)
    p = torch.rand(6, 5, generator=gen, dtype=torch.float64)
    q = torch.rand(6, 5, generator=gen, dtype=torch.float64)
    p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
    q[0] = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0], dtype=torch.float64)  # zeros are fine
    ref = [jensenshannon(a, b, base=2) for a, b in zip(p.numpy(), q.numpy(), strict=True)]
    torch.testing.assert_close(hg.js_distance(p, q), torch.tensor(ref, dtype=torch.float64))
    torch.testing.assert_close(hg.js_distance(p, p), torch.zeros(6, dtype=torch.float64))
    disjoint = hg.js_distance(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(disjoint, torch.tensor(1.0))


def test_head_distances_by_hand_and_against_scipy():
    # heads: identity, identity, previous. Identity vs previous agree only on row 0.
    one = torch.stack([IDENTITY, IDENTITY, PREVIOUS])[None]  # (1, 3, T, T)
    d = hg.head_distances([one])
    expected = torch.tensor([[0, 0, 3 / 4], [0, 0, 3 / 4], [3 / 4, 3 / 4, 0]])
    torch.testing.assert_close(d, expected)

    gen = torch.Generator().manual_seed(1)
    maps = [torch.softmax(torch.randn(2, 2, t, t, generator=gen), -1) for t in (3, 5, 3)]
    rows = [m.reshape(4, t, t) for m, t in zip(maps, (3, 5, 3), strict=True)]
    ref = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            dists = [
                jensenshannon(a, b, base=2) for r in rows for a, b in zip(r[i], r[j], strict=True)
            ]
            ref[i, j] = np.mean(dists)
    np.testing.assert_allclose(hg.head_distances(maps).numpy(), ref, atol=1e-5)


def test_mds_embedding_recovers_points_on_a_plane():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 1.0], [1.0, 1.0]])
    d = squareform(pdist(points))
    xy = hg.mds_embedding(d)
    assert xy.shape == (5, 2)
    np.testing.assert_allclose(squareform(pdist(xy)), d, atol=1e-3)


def test_layer_contrast_and_outliers_by_hand():
    # 2 layers x 4 heads at positions on a line; layer 0 heads at 0, 0, 0, 3 (head 3 is odd)
    pos = torch.tensor([0.0, 0.0, 0.0, 3.0, 10.0, 10.0, 11.0, 10.0])
    d = (pos[:, None] - pos[None, :]).abs()
    within, across = hg.layer_contrast(d, num_layers=2)
    torch.testing.assert_close(within[0], torch.tensor([1.0, 1.0, 1.0, 3.0]))
    torch.testing.assert_close(within[1], torch.tensor([1 / 3, 1 / 3, 1.0, 1 / 3]))
    torch.testing.assert_close(across[0, 0], torch.tensor(41 / 4))
    # each layer has one odd head (layer 1: head 2 at 11); the rest agree exactly
    assert set(hg.outlier_heads(within)) == {(0, 3), (1, 2)}
    flat = torch.ones(3, 5)
    flat[2, 4] = 9.0
    assert hg.outlier_heads(flat) == [(2, 4)]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: hg.head_distances([]), ValueError, "at least one"),
        (lambda: hg.layer_contrast(torch.zeros(6, 6), 4), ValueError, "do not split"),
        (lambda: hg.outlier_heads(torch.zeros(6)), ValueError, "within"),
        (lambda: hg.mds_embedding(np.ones((3, 4))), ValueError, "square"),
        (
            lambda: hg.mds_embedding(np.array([[0, 1, 2], [0, 0, 1], [2, 1, 0]])),
            ValueError,
            "symmetric",
        ),
    ],
)
def test_bad_inputs(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_grouping_chance_matches_the_rules_draw_by_draw():
    """Each draw equals layer_contrast + outlier_heads on the same relabelled matrix."""

    g = torch.Generator().manual_seed(0)
    x = torch.rand(24, 5, generator=g)
    d = torch.cdist(x, x)  # symmetric, zero diagonal
    chance = hg.grouping_chance(d, 4, draws=30, seed=3)
    rng = np.random.default_rng(3)
    for k in range(30):
        order = torch.as_tensor(rng.permutation(24))
        within, across = hg.layer_contrast(d[order][:, order], 4)
        assert chance["outliers"][k] == len(hg.outlier_heads(within, 3.0))
        assert chance["closer"][k] == int((within < across).sum())


def test_grouping_chance_sees_real_layers_above_chance():
    """Heads built in tight layers: every head is closer to its layer, random groups far less."""
    g = torch.Generator().manual_seed(1)
    centres = torch.randn(4, 3, generator=g) * 5
    x = centres.repeat_interleave(6, 0) + 0.1 * torch.randn(24, 3, generator=g)
    d = torch.cdist(x, x)
    within, across = hg.layer_contrast(d, 4)
    assert int((within < across).sum()) == 24
    chance = hg.grouping_chance(d, 4, draws=200)
    assert chance["closer"].max() < 24 and chance["closer"].mean() < 16


def test_layer_grouping_reads_its_parts_and_permutation_p():
    """layer_grouping is layer_contrast, outlier_heads and grouping_chance together; its
    p-values count the real grouping among the random ones."""
    g = torch.Generator().manual_seed(1)
    centres = torch.randn(4, 3, generator=g) * 5
    x = centres.repeat_interleave(6, 0) + 0.1 * torch.randn(24, 3, generator=g)
    d = torch.cdist(x, x)
    grouping = hg.layer_grouping(d, 4, draws=99, seed=2)
    within, across = hg.layer_contrast(d, 4)
    torch.testing.assert_close(grouping.within, within)
    assert grouping.outliers == hg.outlier_heads(within, 3.0) and grouping.closer == 24
    chance = hg.grouping_chance(d, 4, draws=99, seed=2)
    assert (grouping.chance["closer"] == chance["closer"]).all()
    assert grouping.p_closer == pytest.approx(1 / 100)  # no random grouping does as well
    n_out = len(grouping.outliers)
    share = (1 + int((chance["outliers"] >= n_out).sum())) / 100
    assert grouping.p_outliers == pytest.approx(share)


def test_closest_pair_by_hand():
    d = torch.full((6, 6), 5.0)
    d.fill_diagonal_(0.0)
    d[1, 4] = d[4, 1] = 1.0  # layer 0 head 1 and layer 1 head 1: across layers
    d[3, 5] = d[5, 3] = 2.0  # layer 1, heads 0 and 2: within one layer
    assert hg.closest_pair(d, 3) == ((0, 1), (1, 1), 1.0)
    assert hg.closest_pair(d, 3, same_layer=True) == ((1, 0), (1, 2), 2.0)
    with pytest.raises(ValueError, match="H = 4"):
        hg.closest_pair(d, 4)
