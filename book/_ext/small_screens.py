"""Pages that read on a phone: a table that stacks its rows, figures never scaled below 9 px text.

The CSS is in `_static/book.css` (section 4); this extension adds, to each page's html body,
what that CSS cannot compute itself:

1. **Tables that become cards.** The tables of the pages that `mha_card_tables` lists
   (`_config.yml`: the claims ledger) get the class `mha-cards` and are shown on a narrow
   screen as one card per row. (A class from the page's source, e.g. a `{container}` around
   the table, would keep Sphinx from translating the table's cells: the Chinese edition showed
   them in English.) Each body cell gets `data-label`, the
   text of its column's header (translated in the Chinese edition, since the header is), which
   the card shows above the cell; the first cell becomes the row's header
   (`<th scope="row">`); and the table's parts carry their ARIA roles (table, rowgroup, row,
   columnheader, rowheader, cell), so that a screen reader still meets a table with its headers
   when CSS displays those parts as blocks (browsers have dropped table semantics for
   `display: block` tables; the roles keep them). A cell's toggle, a `<details>` typed
   in the cell's Markdown after its short text (the ledger's full measurement, behind "The
   full measurement"), comes out of Sphinx inside the cell's paragraph, where html allows no
   block: a browser would end the paragraph there and leave an empty one after the toggle.
   It is moved out, after the paragraph, and what it holds becomes a paragraph of its own.
2. **Figures that fit, and open at full size.** The book's rule (CONTRIBUTING.md,
   tests/book/test_site.py) is that a figure's smallest text is at least 9 px as shown. A figure
   shown through `mha_lib.book.show` carries its smallest text in image pixels
   (`data-min-text-px`); from it and the image's width this module computes the figure's
   *readable width*, at which that text is 9 px. On a phone's 358 px column most figures are
   narrower than that (a 687 px figure whose smallest text is 15 px needs 413 px). Such a figure
   is not widened past the column (it was: then it scrolled inside its output box, cut at the
   column's edge with nothing to say so): it fits the screen, so that the reader sees all of
   it at once, and it is wrapped in `<div class="mha-zoomable" data-readable-width=...>` with
   a button, "Tap to enlarge" (translated), that `_static/small_screens.js` shows whenever the
   figure is shown narrower than its readable width, and that opens the figure at its full
   size (its own pixels, as on a desktop) in a full-screen view that pans. A figure readable at
   the column's width is shown as it is, without a button.
3. **A narrow drawing for a narrow screen.** An SVG image `<name>.svg` (or its translation
   `<name>.zh_CN.svg`) with a sibling `<name>_narrow.svg` (`<name>_narrow.zh_CN.svg`)
   drawn for a phone's column (the layer diagram: scripts/draw_mha_diagram.py) is shown as a
   `<picture>` whose `<source media="(max-width: 44.99em)">` is the narrow file (copied
   into `_images`). Any other SVG image keeps its readable `min-width` and scrolls inside
   its link to the full-size file (`a.image-reference`, given the class `mha-scroll`).
4. **What scrolls says so.** A table, a formula or any figure still cut by the box it scrolls
   in gets a visible hint beside that box ("Scrolls sideways", class `mha-more`), written by
   `_static/small_screens.js` after layout (only the browser knows what overflows); a display
   formula up to a third too wide is set smaller to fit instead. The words of the button, the
   view and the hints are the page's (`<div id="mha-small-screens" data-...>`, written here,
   translated through `locales/zh_CN/LC_MESSAGES/_interface.po`).
"""

from __future__ import annotations

import base64
import html
import math
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.locale import get_translation

MIN_TEXT_PX = 9.0  # as tests/book/test_site.py requires of every figure, as shown
CARDS_CLASS = "mha-cards"  # the class of a table that stacks on phones
SCROLL_CLASS = "mha-scroll"  # an image's link that scrolls the image sideways
ZOOM_CLASS = "mha-zoomable"  # a figure that fits the column and opens at full size on a tap
NARROW = "_narrow"  # <name>_narrow.svg: the drawing for a narrow screen
NARROW_MEDIA = "(max-width: 44.99em)"  # book.css's narrow screens (section 4)
# The words the page's script shows (translated in the Chinese edition: _interface.po).
WORDS = {
    "enlarge": "Tap to enlarge",
    "close": "Close",
    "view-label": "The figure at full size",
    "pan": "Swipe to see all of it",
    "scrolls": "Scrolls sideways: swipe to see the rest",
}

_CARDS_TABLE = re.compile(
    r'<table\b[^>]*\sclass="[^"]*\b' + CARDS_CLASS + r'\b[^"]*"[^>]*>.*?</table>', re.S
)
_TAG = re.compile(r"<[^>]+>")
# A <details> typed inline at the end of a table cell's paragraph (see the module, 1).
_DETAILS_IN_P = re.compile(
    r"<p>((?:(?!</p>).)*?)\s*<details>\s*(<summary>(?:(?!</p>).)*?</summary>)\s*"
    r"((?:(?!</p>).)*?)\s*</details>\s*</p>",
    re.S,
)
_IMG = re.compile(r"<img\b[^>]*>")
_LINKED_IMG = re.compile(r'(<a class="([^"]*\bimage-reference\b[^"]*)")([^>]*>\s*)(<img\b[^>]*>)')


def _text(fragment: str) -> str:
    """The text of an html fragment, on one line."""
    return " ".join(html.unescape(_TAG.sub("", fragment)).split())


def _with_attrs(start_tag: str, attrs: str) -> str:
    """`<tag ...>` with `attrs` added after the tag name."""
    name = re.match(r"<\w+", start_tag).group(0)
    return name + " " + attrs + start_tag[len(name) :]


def details_out_of_paragraphs(html_text: str) -> str:
    """`<p>short <details><summary>S</summary>more</details></p>` as
    `<p>short</p><details><summary>S</summary><p>more</p></details>` (see the module, 1)."""
    return _DETAILS_IN_P.sub(r"<p>\1</p><details>\2<p>\3</p></details>", html_text)


def stack_table(table: str) -> str:
    """One `<table>` of Sphinx's html, labelled for display as cards (see the module)."""
    table = details_out_of_paragraphs(table)
    labels = [_text(cell) for cell in re.findall(r"<th\b[^>]*>(.*?)</th>", table, flags=re.S)]

    def row(match: re.Match[str]) -> str:
        cells = iter(labels)
        first = True

        def cell(m: re.Match[str]) -> str:
            nonlocal first
            label = html.escape(next(cells, ""), quote=True)
            attrs = m.group(2) or ""
            if first:
                first = False
                return f'<th scope="row" role="rowheader" data-label="{label}"{attrs}>'
            return f'<td role="cell" data-label="{label}"{attrs}>'

        body = re.sub(r"<(td)(\s[^>]*)?>", cell, match.group(2))
        body = re.sub(r"</td>", "</th>", body, count=1) if not first else body
        return match.group(1) + body + "</tr>"

    head, sep, rest = table.partition("<tbody")
    if not sep:
        return table
    head = re.sub(r"<table\b", '<table role="table"', head, count=1)
    head = re.sub(r"<thead\b", '<thead role="rowgroup"', head)
    head = re.sub(r"<tr\b", '<tr role="row"', head)
    head = re.sub(r"<th\b", '<th role="columnheader"', head)
    rest = re.sub(r"(<tr\b[^>]*>)(.*?)</tr>", row, rest, flags=re.S)
    rest = re.sub(r"<tr\b", '<tr role="row"', rest)
    return head + '<tbody role="rowgroup"' + rest


def png_width(src: str) -> int | None:
    """The pixel width of a `data:image/png;base64,` image (its IHDR chunk), else None.

    The SVG copy of a figure in the Chinese edition (mha_lib.book.show) gives its width in
    pixels too: the PNG's."""
    svg = "data:image/svg+xml;base64,"
    if src.startswith(svg):
        text = base64.b64decode(src[len(svg) :]).decode()
        root = re.search(r'<svg\b[^>]*\swidth="(\d+)px"', text)
        return int(root.group(1)) if root else None
    prefix = "data:image/png;base64,"
    if not src.startswith(prefix):
        return None
    head = base64.b64decode(src[len(prefix) : len(prefix) + 32])
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">I", head[16:20])[0]


def _font_px(value: str | None, parent: float) -> float:
    """A `font-size` (user units, px or percent) given the parent's, in user units."""
    if not value:
        return parent
    value = value.strip()
    try:
        if value.endswith("%"):
            return parent * float(value[:-1]) / 100
        if value.endswith("em"):
            return parent * float(value[:-2])
        return float(value.removesuffix("px"))
    except ValueError:  # a keyword (small, larger ...): not drawn by the book's diagrams
        return parent


def svg_text_px(svg: Path) -> tuple[float, float] | None:
    """(smallest text in the image's own pixels, its intrinsic width) of an SVG file, or None.

    Sub- and superscripts (a `baseline-shift`) are not counted, as in matplotlib figures."""
    root = ET.parse(svg).getroot()
    box = (root.get("viewBox") or "").replace(",", " ").split()
    view_width = float(box[2]) if len(box) == 4 else None
    width = root.get("width")
    if width is None or not width.removesuffix("px").replace(".", "", 1).isdigit():
        if view_width is None:
            return None
        width = view_width
    width = float(str(width).removesuffix("px"))
    scale = width / (view_width or width)
    sizes: list[float] = []

    def walk(el: ET.Element, inherited: float, style: dict[str, str]) -> None:
        css = dict(style)
        for decl in (el.get("style") or "").split(";"):
            key, _, val = decl.partition(":")
            if val:
                css[key.strip()] = val.strip()
        size = _font_px(css.get("font-size") or el.get("font-size"), inherited)
        tag = el.tag.rsplit("}", 1)[-1]
        shifted = el.get("baseline-shift") or css.get("baseline-shift")
        if tag in ("text", "tspan") and not shifted and (el.text or "").strip():
            sizes.append(size)
        for child in el:
            if not (tag == "tspan" and shifted):
                walk(child, size, {k: v for k, v in css.items() if k != "font-size"})

    walk(root, 16.0, {})
    return (min(sizes) * scale, width) if sizes else None


def readable_width(width: float, min_text_px: float) -> int:
    """The shown width (CSS px) at which text of `min_text_px` image pixels is 9 px."""
    return math.ceil(width * MIN_TEXT_PX / min_text_px)


def _add_min_width(img: str, px: int) -> str:
    """`img` with `min-width:<px>px` in its style."""
    style = re.search(r'\sstyle="([^"]*)"', img)
    if style is None:
        return _with_attrs(img, f'style="min-width:{px}px"')
    rule = style.group(1).rstrip().rstrip(";")
    new = f' style="{rule}; min-width:{px}px"' if rule else f' style="min-width:{px}px"'
    return img[: style.start()] + new + img[style.end() :]


def _attr(tag: str, name: str) -> str | None:
    found = re.search(r"\s" + name + r'="([^"]*)"', tag)
    return html.unescape(found.group(1)) if found else None


def zoomable(img: str, readable: int, words: dict[str, str] | None = None) -> str:
    """A figure `img` that fits the column, with its button to enlarge it (see the module)."""
    w = {**WORDS, **(words or {})}
    return (
        f'<div class="{ZOOM_CLASS}" data-readable-width="{readable}">{img}'
        f'<button type="button" class="mha-more mha-zoom" hidden>'
        f"{html.escape(w['enlarge'])}</button></div>"
    )


def narrow_name(name: str) -> str:
    """`mha_layer_light.zh_CN.svg` → `mha_layer_light_narrow.zh_CN.svg`."""
    stem, dot, rest = name.partition(".")
    return stem + NARROW + dot + rest


def readable_figures(
    body: str, svg_file: Any = None, narrow: Any = None, words: dict[str, str] | None = None
) -> str:
    """Every figure of a page's body fitted or kept readable (see the module).

    `svg_file` maps an image's `src` to its SVG file (or None); `narrow` maps it to the
    `src` of its narrow drawing (or None)."""

    def png(match: re.Match[str]) -> str:
        img = match.group(0)
        min_px, src = _attr(img, "data-min-text-px"), _attr(img, "src") or ""
        width = png_width(src) if min_px else None
        if not width or float(min_px) <= 0:
            return img
        return zoomable(img, readable_width(width, float(min_px)), words)

    def svg(match: re.Match[str]) -> str:
        img = match.group(4)
        small = narrow(_attr(img, "src") or "") if narrow else None
        if small is not None:
            source = f'<source media="{NARROW_MEDIA}" srcset="{html.escape(small, quote=True)}">'
            return match.group(1) + match.group(3) + f"<picture>{source}{img}</picture>"
        path = svg_file(_attr(img, "src") or "") if svg_file else None
        measured = svg_text_px(path) if path is not None else None
        if measured is None:
            return match.group(0)
        min_px, width = measured
        link = f'{match.group(1)[:-1]} {SCROLL_CLASS}"'
        return link + match.group(3) + _add_min_width(img, readable_width(width, min_px))

    body = _IMG.sub(lambda m: png(m) if "data-min-text-px" in m.group(0) else m.group(0), body)
    return _LINKED_IMG.sub(svg, body)


def small_screen_body(
    body: str, svg_file: Any = None, narrow: Any = None, words: dict[str, str] | None = None
) -> str:
    """A page's html body with its card tables labelled and its figures kept readable."""
    body = _CARDS_TABLE.sub(lambda m: stack_table(m.group(0)), body)
    return readable_figures(body, svg_file, narrow, words)


def words_div(words: dict[str, str]) -> str:
    """The words of small_screens.js, as the page's data (see the module)."""
    attrs = " ".join(f'data-{k}="{html.escape(v, quote=True)}"' for k, v in words.items())
    return f'<div id="mha-small-screens" hidden {attrs}></div>'



def _svg_files(app: Sphinx) -> dict[str, Path]:
    """The book's SVG images by their name in `_images`, as source files."""
    found = {}
    for source, (_docs, name) in app.env.images.items():
        if name.lower().endswith(".svg"):
            found[name] = Path(app.srcdir) / source
    return found


def _mark_card_tables(app: Sphinx, doctree: nodes.document) -> None:
    """The tables of the pages in `mha_card_tables` get the class that stacks them."""
    if app.env.docname in app.config.mha_card_tables:
        for table in doctree.findall(nodes.table):
            table["classes"].append(CARDS_CLASS)


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any):
    if app.builder.format != "html" or "body" not in context:
        return
    svgs = _svg_files(app)

    def svg_file(src: str) -> Path | None:
        path = svgs.get(src.rsplit("/", 1)[-1])
        return path if path is not None and path.is_file() else None

    def narrow(src: str) -> str | None:
        path = svg_file(src)
        if path is None:
            return None
        drawn = path.with_name(narrow_name(path.name))
        if not drawn.is_file():
            return None
        name = narrow_name(src.rsplit("/", 1)[-1])
        target = Path(app.outdir) / "_images" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != drawn.read_bytes():
            target.write_bytes(drawn.read_bytes())
        return src.rsplit("/", 1)[0] + "/" + name if "/" in src else name

    translate = get_translation("sphinx")
    words = {key: translate(text) for key, text in WORDS.items()}
    body = small_screen_body(context["body"], svg_file, narrow, words)
    context["body"] = body + words_div(words)


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_config_value("mha_card_tables", [], "env", [list])
    app.connect("doctree-read", _mark_card_tables)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
