"""Pages that read on a phone: a table that stacks its rows, figures never scaled below 9 px text.

The CSS is in ``_static/book.css`` (section 4); this extension adds, to each page's html body,
what that CSS cannot compute itself:

1. **Tables that become cards.** The tables of the pages that ``mha_card_tables`` lists
   (``_config.yml``: the claims ledger) get the class ``mha-cards`` and are shown on a narrow
   screen as one card per row. (A class from the page's source, e.g. a ``{container}`` around
   the table, would keep Sphinx from translating the table's cells: the Chinese edition showed
   them in English.) Each body cell gets ``data-label``, the
   text of its column's header (translated in the Chinese edition, since the header is), which
   the card shows above the cell; the first cell becomes the row's header
   (``<th scope="row">``); and the table's parts carry their ARIA roles (table, rowgroup, row,
   columnheader, rowheader, cell), so that a screen reader still meets a table with its headers
   when CSS displays those parts as blocks (browsers have dropped table semantics for
   ``display: block`` tables; the roles keep them).
2. **Figures at a readable size.** The book's rule (CONTRIBUTING.md, tests/test_site.py) is
   that a figure's smallest text is at least 9 px as shown. A figure shown through
   ``mha_lib.book.show`` carries its smallest text in image pixels (``data-min-text-px``); an
   SVG image's smallest text is read here from the file (``font-size`` of its ``<text>`` and
   ``<tspan>`` elements, inherited and in percent too; sub- and superscripts, i.e.
   ``baseline-shift``, are left out, as matplotlib's mathtext scripts are). Each such image gets
   ``min-width``, the width at which that text is 9 px, so that a narrow column no longer
   shrinks it below that: a notebook figure then scrolls sideways inside its output box (the
   theme's ``.cell_output .output``), and an SVG scrolls inside its link to the full-size file
   (``a.image-reference``, here given the class ``mha-scroll``), which the keyboard can focus.
   In the 688 px column of a 1280 px window every figure is already shown at that width or
   wider, so nothing changes there.
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

MIN_TEXT_PX = 9.0  # as tests/test_site.py requires of every figure, as shown
CARDS_CLASS = "mha-cards"  # the class of a table that stacks on phones
SCROLL_CLASS = "mha-scroll"  # an image's link that scrolls the image sideways

_CARDS_TABLE = re.compile(
    r'<table\b[^>]*\sclass="[^"]*\b' + CARDS_CLASS + r'\b[^"]*"[^>]*>.*?</table>', re.S
)
_TAG = re.compile(r"<[^>]+>")
_IMG = re.compile(r"<img\b[^>]*>")
_LINKED_IMG = re.compile(r'(<a class="([^"]*\bimage-reference\b[^"]*)")([^>]*>\s*)(<img\b[^>]*>)')


def _text(fragment: str) -> str:
    """The text of an html fragment, on one line."""
    return " ".join(html.unescape(_TAG.sub("", fragment)).split())


def _with_attrs(start_tag: str, attrs: str) -> str:
    """``<tag ...>`` with ``attrs`` added after the tag name."""
    name = re.match(r"<\w+", start_tag).group(0)
    return name + " " + attrs + start_tag[len(name) :]


def stack_table(table: str) -> str:
    """One ``<table>`` of Sphinx's html, labelled for display as cards (see the module)."""
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
    """The pixel width of a ``data:image/png;base64,`` image (its IHDR chunk), else None.

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
    """A ``font-size`` (user units, px or percent) given the parent's, in user units."""
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

    Sub- and superscripts (a ``baseline-shift``) are not counted, as in matplotlib figures."""
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
    """The shown width (CSS px) at which text of ``min_text_px`` image pixels is 9 px."""
    return math.ceil(width * MIN_TEXT_PX / min_text_px)


def _add_min_width(img: str, px: int) -> str:
    """``img`` with ``min-width:<px>px`` in its style."""
    style = re.search(r'\sstyle="([^"]*)"', img)
    if style is None:
        return _with_attrs(img, f'style="min-width:{px}px"')
    rule = style.group(1).rstrip().rstrip(";")
    new = f' style="{rule}; min-width:{px}px"' if rule else f' style="min-width:{px}px"'
    return img[: style.start()] + new + img[style.end() :]


def _attr(tag: str, name: str) -> str | None:
    found = re.search(r"\s" + name + r'="([^"]*)"', tag)
    return html.unescape(found.group(1)) if found else None


def readable_figures(body: str, svg_file: Any = None) -> str:
    """Every figure of a page's body with its readable ``min-width`` (see the module).

    ``svg_file`` maps an image's ``src`` to its SVG file (or None)."""

    def png(match: re.Match[str]) -> str:
        img = match.group(0)
        min_px, src = _attr(img, "data-min-text-px"), _attr(img, "src") or ""
        width = png_width(src) if min_px else None
        if not width or float(min_px) <= 0:
            return img
        return _add_min_width(img, readable_width(width, float(min_px)))

    def svg(match: re.Match[str]) -> str:
        img = match.group(4)
        path = svg_file(_attr(img, "src") or "") if svg_file else None
        measured = svg_text_px(path) if path is not None else None
        if measured is None:
            return match.group(0)
        min_px, width = measured
        link = f'{match.group(1)[:-1]} {SCROLL_CLASS}"'
        return link + match.group(3) + _add_min_width(img, readable_width(width, min_px))

    body = _IMG.sub(lambda m: png(m) if "data-min-text-px" in m.group(0) else m.group(0), body)
    return _LINKED_IMG.sub(svg, body)


def small_screen_body(body: str, svg_file: Any = None) -> str:
    """A page's html body with its card tables labelled and its figures kept readable."""
    body = _CARDS_TABLE.sub(lambda m: stack_table(m.group(0)), body)
    return readable_figures(body, svg_file)


def _svg_files(app: Sphinx) -> dict[str, Path]:
    """The book's SVG images by their name in ``_images``, as source files."""
    found = {}
    for source, (_docs, name) in app.env.images.items():
        if name.lower().endswith(".svg"):
            found[name] = Path(app.srcdir) / source
    return found


def _mark_card_tables(app: Sphinx, doctree: nodes.document) -> None:
    """The tables of the pages in ``mha_card_tables`` get the class that stacks them."""
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

    context["body"] = small_screen_body(context["body"], svg_file)


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_config_value("mha_card_tables", [], "env", [list])
    app.connect("doctree-read", _mark_card_tables)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
