import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from mha_lib.notebook import html_table, show  # noqa: E402


def test_html_table_escapes_and_formats():
    table = html_table(["name", "value"], [["<b>", 0.123456], ["x", 3]]).data
    assert "&lt;b&gt;" in table and "<b>" not in table
    assert ">0.123<" in table  # default float format .3g
    assert 'text-align:right">3<' in table
    # A scrollable region must be reachable from the keyboard (axe: scrollable-region-focusable).
    assert 'tabindex="0"' in table


def test_show_requires_alt_text_and_emits_it(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    with pytest.raises(ValueError, match="alt must describe"):
        show(fig, alt="  ")
    show(fig, alt='a "diagonal" line')
    (html,) = shown
    assert 'alt="a &quot;diagonal&quot; line"' in html.data
    assert "data:image/png;base64," in html.data
