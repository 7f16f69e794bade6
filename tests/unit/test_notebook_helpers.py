import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from mha_lib.book import (  # noqa: E402
    html_table,
    put,
    show,
    smallest_text_px,
)


def test_html_table_escapes_and_formats():
    table = html_table(["name", "value"], [["<b>", 0.123456], ["x", 3]]).data
    assert "&lt;b&gt;" in table and "<b>" not in table
    assert ">0.123<" in table  # default float format .3g
    assert 'text-align:right">3<' in table
    # A scrollable region must be reachable from the keyboard (axe: scrollable-region-focusable).
    assert 'tabindex="0"' in table


def test_show_requires_alt_text_and_emits_it(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda bundle, raw: shown.append(bundle))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    with pytest.raises(ValueError, match="alt must describe"):
        show(fig, alt="  ")
    show(fig, alt='a "diagonal" line')
    (bundle,) = shown
    html = bundle["text/html"]  # what Jupyter and the English site show
    assert 'alt="a &quot;diagonal&quot; line"' in html
    assert "data:image/png;base64," in html
    assert "data:image/svg+xml;base64," in bundle["text/markdown"]  # the translatable copy


def test_show_glues_the_very_output_it_displays(monkeypatch):
    """Another page shows a glued figure: the SVG copy the page displays, as HTML (what a
    page pasting from another renders, and what the Chinese build translates)."""
    shown, glued = [], {}
    monkeypatch.setattr("IPython.display.display", lambda bundle, raw: shown.append(bundle))
    monkeypatch.setattr(
        "myst_nb.glue", lambda name, obj, display: glued.update({name: (obj, display)})
    )
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    show(fig, alt="a line", glue_as="curves")
    obj, displayed = glued["curves"]
    assert displayed is False  # shown once on its own page, by show itself
    pasted = obj._repr_mimebundle_()
    assert pasted["text/html"] == shown[0]["text/markdown"]
    assert 'alt="a line"' in pasted["text/html"]


def test_checks_and_provenance_tables_show_what_was_compared():
    from mha_lib.book import checks_table, provenance_table
    from mha_lib.experiments.reproduce import Check, provenance

    table = checks_table(
        [Check("loss", 0.5, 0.5004, 1e-3), Check("curve", [1, 2], [1, 3], 0.1)]
    ).data
    assert "loss" in table and ">yes<" in table and ">NO<" in table and "2 values, last 2" in table
    record = {**provenance(threads=1), "git_dirty": True}
    table = provenance_table({"part": [], "provenance": {"part": record}}).data
    assert record["git_commit"][:10] in table and "uncommitted" in table
    assert record["cpu_capability"] in table


def test_glue_cited_refuses_a_value_without_its_source():
    from mha_lib.book import glue_cited

    with pytest.raises(ValueError, match="BibTeX key"):
        glue_cited("gain", 17.5, source=" ")
    with pytest.raises(TypeError, match="number"):
        glue_cited("gain", "17.5", source="michel2019")


def test_smallest_text_is_the_smallest_drawn_font_in_image_pixels(monkeypatch):
    """8 pt at 110 dpi is 8 * 110 / 72 = 12.22 px; hidden axes and empty labels do not count."""
    fig, (ax, hidden) = plt.subplots(1, 2, dpi=110)
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=11)
    ax.set_title("title", fontsize=14)
    ax.text(0.5, 0.5, "note", fontsize=8)
    ax.set_xlabel("", fontsize=3)  # empty: draws nothing
    hidden.text(0.5, 0.5, "invisible", fontsize=4)
    hidden.set_visible(False)
    with matplotlib.rc_context({"savefig.dpi": 220}):  # the image is saved at 220 dpi
        assert smallest_text_px(fig) == pytest.approx(8 * 220 / 72)
    with matplotlib.rc_context({"savefig.dpi": "figure"}):  # saved at the figure's 110 dpi
        assert smallest_text_px(fig) == pytest.approx(8 * 110 / 72)
        shown = []
        monkeypatch.setattr("IPython.display.display", lambda bundle, raw: shown.append(bundle))
        show(fig, alt="a line")
        assert 'data-min-text-px="12.22"' in shown[0]["text/html"]

    empty = plt.figure()
    assert smallest_text_px(empty) == float("inf")
    plt.close(empty)


def test_put_glues_plain_numbers_by_key_or_keyword(monkeypatch):
    import numpy as np
    import torch

    glued = {}
    monkeypatch.setattr(
        "myst_nb.glue", lambda name, value, display: glued.update({name: (value, display)})
    )
    put("ratio", torch.tensor(0.5))
    put(n=np.int64(3), label="h = 4")
    assert glued == {"ratio": (0.5, False), "n": (3, False), "label": ("h = 4", False)}
    assert type(glued["ratio"][0]) is float and type(glued["n"][0]) is int
    with pytest.raises(TypeError, match="key and a value"):
        put("only a key")
    with pytest.raises(TypeError, match="at least one"):
        put()
