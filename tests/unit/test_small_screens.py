"""book/_ext/small_screens.py on hand-checked html: the ledger's labels and roles, and the
readable width of a figure (PNG and SVG). tests/book/test_site.py checks the result in a browser."""

from __future__ import annotations

import base64
import io
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "book" / "_ext"))
import small_screens  # noqa: E402

# Sphinx's html for a MyST table of class mha-cards (pydata-sphinx-theme's wrapper around it).
LEDGER = """<div class="pst-scrollable-table-container"><table class="table mha-cards">
<thead>
<tr class="row-odd"><th class="head"><p>#</p></th>
<th class="head"><p>the article&#8217;s words, and <em>what</em> they claim</p></th>
<th class="head"><p>verdict</p></th>
</tr>
</thead>
<tbody>
<tr class="row-even"><td><p>1</p></td>
<td><p>「对」<br><em>“cools”</em></p></td>
<td><p>supported</p></td>
</tr>
<tr class="row-odd"><td><p>5b</p></td>
<td><p>「想象」</p></td>
<td class="text-center"><p>not supported</p></td>
</tr>
</tbody>
</table>
</div>"""


def test_ledger_cells_get_their_column_names_and_the_table_its_roles() -> None:
    out = small_screens.small_screen_body(LEDGER)
    assert out.count('<th scope="row" role="rowheader" data-label="#">') == 2
    assert '<th scope="row" role="rowheader" data-label="#"><p>1</p></th>' in out
    label = "the article’s words, and what they claim"
    assert out.count(f'<td role="cell" data-label="{label}">') == 2
    assert '<td role="cell" data-label="verdict"><p>supported</p></td>' in out
    assert '<td role="cell" data-label="verdict" class="text-center">' in out
    assert '<table role="table" class="table mha-cards">' in out
    assert out.count('role="rowgroup"') == 2
    assert out.count('<tr role="row"') == 3
    assert out.count('<th role="columnheader" class="head">') == 3
    # Nothing but attributes and the row headers' tag changed: the text is the same.
    text = re.sub(r"<[^>]+>", "", LEDGER)
    assert re.sub(r"<[^>]+>", "", out) == text


def test_labels_are_escaped_and_other_tables_are_left_alone() -> None:
    quoted = LEDGER.replace("<p>verdict</p>", '<p>the "verdict" &amp; more</p>')
    out = small_screens.small_screen_body(quoted)
    assert 'data-label="the &quot;verdict&quot; &amp; more"' in out
    plain = LEDGER.replace(" mha-cards", "")
    assert small_screens.small_screen_body(plain) == plain


def _png(width: int, height: int) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def test_a_figure_fits_and_gets_its_readable_width_and_a_button() -> None:
    src = _png(687, 300)
    assert small_screens.png_width(src) == 687
    style = "max-width:100%;height:auto"
    img = f'<img src="{src}" alt="a plot" data-min-text-px="15.28" style="{style}">'
    out = small_screens.small_screen_body(f"<div>{img}</div>")
    # 687 px at 15.28 px text: 9 px text at 687 * 9 / 15.28 = 404.6 px, so 405 px. The image
    # keeps its style (it fits the column); the wrapper records the width, the button waits.
    assert f'<div class="mha-zoomable" data-readable-width="405">{img}<button' in out
    assert '<button type="button" class="mha-more mha-zoom" hidden>' in out
    assert "hidden>Tap to enlarge</button></div>" in out
    assert "min-width" not in out
    # Translated words reach the button.
    words = {"enlarge": "点击放大"}
    assert 'hidden>点击放大</button>' in small_screens.small_screen_body(img, words=words)
    # Without the size, or not a PNG, nothing changes.
    bare = img.replace(' data-min-text-px="15.28"', "")
    assert small_screens.small_screen_body(bare) == bare
    assert small_screens.png_width("data:image/jpeg;base64,AAAA") is None


def test_the_diagram_is_measured_from_its_svg() -> None:
    diagram = REPO / "book" / "figures" / "mha_layer_light.svg"
    text_px, width = small_screens.svg_text_px(diagram)
    # Drawn by scripts/draw_mha_diagram.py: 980 wide, its smallest text 14 (subscripts aside).
    sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', diagram.read_text())]
    assert (text_px, width) == (min(sizes), 980.0)
    link = (
        '<a class="only-light reference internal image-reference" href="../_images/x.svg">'
        '<img alt="Diagram" class="only-light" src="../_images/x.svg" style="width: 100%;" />\n</a>'
    )
    out = small_screens.small_screen_body(link, lambda src: diagram)
    assert 'class="only-light reference internal image-reference mha-scroll"' in out
    assert f'style="width: 100%; min-width:{-(-980 * 9 // min(sizes)):.0f}px"' in out
    # An image that is not an SVG of the book's is left as it is.
    assert small_screens.small_screen_body(link, lambda src: None) == link
    # With a narrow drawing: a <picture> that shows it on narrow screens, no min-width.
    out = small_screens.small_screen_body(
        link, lambda src: diagram, lambda src: "../_images/x_narrow.svg"
    )
    assert (
        '<picture><source media="(max-width: 44.99em)" srcset="../_images/x_narrow.svg">'
        '<img alt="Diagram" class="only-light" src="../_images/x.svg" style="width: 100%;" />'
        "</picture>" in out
    )
    assert "mha-scroll" not in out and "min-width" not in out


def test_narrow_names() -> None:
    assert small_screens.narrow_name("mha_layer_light.svg") == "mha_layer_light_narrow.svg"
    assert (
        small_screens.narrow_name("mha_layer_light.zh_CN.svg")
        == "mha_layer_light_narrow.zh_CN.svg"
    )
    for name in ("mha_layer_light", "mha_layer_dark"):
        for lang in ("", ".zh_CN"):
            narrow = REPO / "book" / "figures" / small_screens.narrow_name(f"{name}{lang}.svg")
            assert narrow.is_file(), narrow


def test_the_words_reach_the_page() -> None:
    div = small_screens.words_div({"close": 'Close "it"', "pan": "平移"})
    assert div == (
        '<div id="mha-small-screens" hidden data-close="Close &quot;it&quot;" '
        'data-pan="平移"></div>'
    )


@pytest.mark.parametrize(
    ("svg", "expected"),
    [
        # inherited from a group, in percent, in a style attribute, scaled by the viewBox
        ('<g font-size="20"><text>a<tspan font-size="50%">b</tspan></text></g>', (10.0, 200.0)),
        ('<text style="font-size: 12px">a</text><text font-size="1.5em">b</text>', (12.0, 200.0)),
        # a subscript does not count, nor does text without characters
        (
            '<text font-size="14">d<tspan baseline-shift="sub" font-size="50%">k</tspan></text>'
            '<text font-size="4"> </text>',
            (14.0, 200.0),
        ),
    ],
)
def test_svg_text_sizes(tmp_path: Path, svg: str, expected: tuple[float, float]) -> None:
    path = tmp_path / "x.svg"
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50" width="200">{svg}</svg>'
    )
    text_px, width = small_screens.svg_text_px(path)
    # the viewBox is drawn 2x: 200 px for 100 units
    assert (text_px, width) == (expected[0] * 2, expected[1])


def test_the_listed_pages_tables_get_the_class() -> None:
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.core import publish_doctree

    for docname, classes in (("book/claims", ["mha-cards"]), ("book/intro", [])):
        doctree = publish_doctree("=  =\na  b\n=  =\n")
        app = SimpleNamespace(
            env=SimpleNamespace(docname=docname),
            config=SimpleNamespace(mha_card_tables=["book/claims"]),
        )
        small_screens._mark_card_tables(app, doctree)
        assert [t["classes"] for t in doctree.findall(nodes.table)] == [classes]


def test_a_cells_toggle_leaves_its_paragraph() -> None:
    """A <details> typed after a cell's short text (the ledger's full measurement) is no longer
    inside the paragraph, where a browser would cut the paragraph and leave an empty one."""
    cell = (
        '<td><p>short <span class="x">0.93</span> <details><summary>The full measurement'
        '</summary>all <a href="#r">of it</a>, 0.93 and more</details></p></td>'
    )
    row = LEDGER.replace("<td><p>supported</p></td>", cell)
    out = small_screens.small_screen_body(row)
    assert (
        '<p>short <span class="x">0.93</span></p><details><summary>The full measurement'
        '</summary><p>all <a href="#r">of it</a>, 0.93 and more</p></details></td>'
    ) in out
    assert small_screens.details_out_of_paragraphs("<p>no toggle</p>") == "<p>no toggle</p>"
