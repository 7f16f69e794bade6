"""The shared plotting helpers draw exactly the numbers they are given (checked with numpy)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mha_lib.book.plotting import COLUMN_INCHES, heatmap, runs_band  # noqa: E402


def test_runs_band_draws_the_mean_and_the_lowest_to_highest_run():
    x = [1.0, 2.0, 3.0]
    runs = [[1.0, 4.0, 2.0], [3.0, 0.0, 2.0], [2.0, 2.0, 8.0]]
    fig, ax = plt.subplots()
    line = runs_band(ax, x, runs, label="three seeds", marker="o")
    np.testing.assert_allclose(line.get_ydata(), [2.0, 2.0, 4.0])
    assert line.get_label() == "three seeds" and line.get_marker() == "o"
    (band,) = ax.collections
    # The band's outline runs along the top (highest run) and the bottom (lowest run).
    vertices = band.get_paths()[0].vertices
    for xi, low, high in zip(x, [1.0, 0.0, 2.0], [3.0, 4.0, 8.0], strict=True):
        ys = vertices[np.isclose(vertices[:, 0], xi), 1]
        assert ys.min() == pytest.approx(low) and ys.max() == pytest.approx(high)
    np.testing.assert_allclose(band.get_facecolor()[0][:3], matplotlib.colors.to_rgb(
        line.get_color()))  # fmt: skip
    plt.close(fig)


def test_runs_band_refuses_runs_that_do_not_match_x():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="runs must be"):
        runs_band(ax, [1, 2, 3], [[1, 2]], label="short")
    with pytest.raises(ValueError, match="runs must be"):
        runs_band(ax, [1, 2], [1, 2], label="one run, not nested")
    plt.close(fig)


def test_heatmap_shows_the_grid_with_a_tick_per_head_and_a_colour_bar():
    grid = np.arange(6.0).reshape(2, 3)
    fig, ax = plt.subplots()
    heatmap(ax, grid, title="importance", colorbar_label="I_h")
    (image,) = ax.images
    np.testing.assert_array_equal(image.get_array(), grid)
    assert list(ax.get_xticks()) == [0, 1, 2] and list(ax.get_yticks()) == [0, 1]
    assert ax.get_title() == "importance" and ax.get_xlabel() == "head"
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "I_h"
    fixed, axis = plt.subplots()
    heatmap(axis, grid / 10, title="weights", colorbar_label="weight", vmin=0.0, vmax=1.0)
    assert axis.images[0].get_clim() == (0.0, 1.0)  # not the data's range 0 to 0.5
    plt.close(fixed)
    with pytest.raises(ValueError, match="2-D grid"):
        heatmap(ax, [1.0, 2.0], title="t", colorbar_label="c")
    plt.close(fig)


def test_column_width_is_the_text_column_at_the_saved_dpi():
    assert COLUMN_INCHES * 110 == pytest.approx(688)
