"""Draw the multi-head attention layer as two SVGs (light and dark theme) for the book.

    .venv/bin/python scripts/draw_mha_diagram.py          # writes book/figures/mha_layer_*.svg

It draws the Chinese edition's copies too, `mha_layer_<theme>.zh_CN.svg`, with the same
shapes and the words from `ZH` below: Sphinx shows a `<name>.<language><ext>` image in
place of `<name><ext>` in a translated build (its `figure_language_filename`).

The picture is drawn by code so that it stays consistent with the text (one colour per head,
the shapes of every tensor); `tests/unit/test_diagram.py` checks that the committed files are what
this script writes. Pages show the light file in the light theme and the dark file in the dark
one (pydata-sphinx-theme's `only-light`/`only-dark` classes).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from xml.sax.saxutils import escape

OUT = Path(__file__).resolve().parents[1] / "book" / "figures"
WIDTH, HEIGHT = 980, 430
# The phone's copy (`mha_layer_<theme>_narrow[.zh_CN].svg`): the same layer drawn top to
# bottom, as wide as a phone's column (358 px at a 390 px window), so that Concat, W_o and the
# output are on screen and its text stays at 12 px or more. book/_ext/small_screens.py shows it
# on narrow screens in place of the wide one (a <picture> whose source says so).
NARROW_WIDTH, NARROW_HEIGHT = 360, 752
THEMES = {  # per theme: text, secondary text, box fill, lines, and heads 1, 2 and h
    "light": {
        "ink": "#1f2328",
        "muted": "#57606a",
        "box": "#f6f8fa",
        "line": "#57606a",
        "heads": ("#3b528b", "#21918c", "#b8860b"),
    },
    "dark": {
        "ink": "#e6edf3",
        "muted": "#9da7b3",
        "box": "#161b22",
        "line": "#9da7b3",
        "heads": ("#8fa8e8", "#3cc4bc", "#e3b341"),
    },
}
_SUB = re.compile(r"_\{([^}]*)\}")
# The diagram's words in the Chinese edition (symbols and formulas stay as they are).
ZH = {
    "input": "输入",
    "one projection each; their": "Q、K、V 各一个投影，",
    "columns are cut into h slices": "其列切成 h 片",
    "head 1": "头 1",
    "head 2": "头 2",
    "head h": "头 h",
    "every head attends over all T tokens,": "每个头都关注全部 T 个词元，",
    "each with its own d_{head} = d_{model} / h features": (
        "各用自己的 d_{head} = d_{model} / h 个特征"
    ),
    "h heads in parallel: h maps of T × T weights,": "h 个头并行：h 张 T × T 的权重图，",
    "each head's output T × d_{head}": "每个头输出 T × d_{head}",
    "concat": "拼接",
    "mix": "混合",
    "output": "输出",
    "W_{o} mixes the heads: every": "W_{o} 混合各个头：",
    "output feature reads all of them": "每个输出特征都读取全部头",
    # the narrow copy's lines
    "every head attends over all T tokens": "每个头都关注全部 T 个词元，",
    "with its own d_{head} = d_{model} / h features": "各用自己的 d_{head} = d_{model} / h 个特征",
    "h heads in parallel: h maps of T × T weights": "h 个头并行：h 张 T × T 的权重图",
    "W_{o} mixes the heads: every output": "W_{o} 混合各个头：",
    "feature reads all of them": "每个输出特征都读取全部头",
}
LANGUAGES = {"": {}, ".zh_CN": ZH}  # file suffix: words
FONTS = {"": "DejaVu Sans, Helvetica, Arial, sans-serif",
         ".zh_CN": "DejaVu Sans, Noto Sans CJK SC, Source Han Sans SC, PingFang SC, "
                   "Microsoft YaHei, WenQuanYi Zen Hei, sans-serif"}


def _markup(s: str) -> str:
    """Escape text; `_{i}` becomes a subscript."""
    return _SUB.sub(
        lambda m: f'<tspan baseline-shift="sub" font-size="85%">{m.group(1)}</tspan>', escape(s)
    )


class Canvas:
    """A few SVG primitives in one theme."""

    def __init__(self, theme: dict, words: dict[str, str] | None = None) -> None:
        self.t = theme
        self.words = words or {}
        self.fonts = FONTS[".zh_CN" if words else ""]
        self.heads: tuple[str, str, str] = theme["heads"]
        self.parts: list[str] = []

    def text(
        self,
        x: float,
        y: float,
        s: str,
        size: int = 15,
        anchor: str = "middle",
        color: str | None = None,
        weight: str = "normal",
        italic: bool = False,
    ) -> None:
        s = self.words.get(s, s)
        # Chinese text is never set in italics (the edition's typography): only English is.
        style = ' font-style="italic"' if italic and not self.words else ""
        self.parts.append(
            f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{color or self.t["ink"]}"{style}>{_markup(s)}</text>'
        )

    def box(
        self,
        x: float,
        y: float,
        w: float,
        h: float,
        fill: str | None = None,
        stroke: str | None = None,
    ) -> None:
        self.parts.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="5" '
            f'fill="{fill or self.t["box"]}" stroke="{stroke or self.t["line"]}" '
            'stroke-width="1.5"/>'
        )

    def striped(self, x: float, y: float, w: float, h: float) -> None:
        """A T × d_model tensor whose features are cut into one slice per head."""
        self.box(x, y, w, h)
        slice_w = w / 4
        for i, color in enumerate((self.heads[0], self.heads[1], None, self.heads[2])):
            if color is None:
                self.text(x + slice_w * (i + 0.5), y + h / 2 + 5, "…", 16, color=self.t["muted"])
                continue
            self.parts.append(
                f'<rect x="{x + slice_w * i + 2}" y="{y + 2}" width="{slice_w - 4}" '
                f'height="{h - 4}" rx="3" fill="{color}" fill-opacity="0.85"/>'
            )

    def arrow(self, x1: float, y1: float, x2: float, y2: float, color: str | None = None) -> None:
        c = color or self.t["line"]
        self.parts.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{c}" stroke-width="1.6" '
            f'marker-end="url(#head-{c.lstrip("#")})"/>'
        )

    def svg(self, width: int = WIDTH, height: int = HEIGHT) -> str:
        colors = {self.t["line"], *self.heads}
        markers = "".join(
            f'<marker id="head-{c.lstrip("#")}" viewBox="0 0 10 10" refX="9" refY="5" '
            f'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
            for c in sorted(colors)
        )
        body = "\n".join(self.parts)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" font-family="{self.fonts}" '
            f'role="img">\n<defs>{markers}</defs>\n{body}\n</svg>\n'
        )


def draw(theme_name: str, words: dict[str, str] | None = None) -> str:
    """The whole layer: input, projections, heads side by side, concatenation, output."""
    c = Canvas(THEMES[theme_name], words)
    muted = c.t["muted"]
    # input: features not yet divided among heads
    c.box(20, 185, 80, 60)
    c.text(60, 220, "X", 18, weight="bold")
    c.text(60, 173, "input", 15, weight="bold")
    c.text(60, 267, "T × d_{model}", 14, color=muted)
    # projections, each cut into one slice of columns per head
    for row, name in enumerate(("Q = X W_{q}", "K = X W_{k}", "V = X W_{v}")):
        y = 95 + row * 95
        c.arrow(102, 215, 146, y + 25)
        c.striped(150, y, 100, 50)
        c.text(200, y - 11, name, 14)
    c.parts.append(
        f'<path d="M256,95 C266,95 262,120 268,120 L268,310 C262,310 266,335 256,335" '
        f'fill="none" stroke="{c.t["line"]}" stroke-width="1.5"/>'
    )
    c.text(200, 395, "one projection each; their", 14, color=muted)
    c.text(200, 413, "columns are cut into h slices", 14, color=muted)
    # heads: slice i of Q, K and V goes to head i
    h1, h2, hh = c.heads
    lanes = (("head 1", h1, 60), ("head 2", h2, 170), ("head h", hh, 300))
    for n, (label, color, y) in enumerate(lanes):
        c.arrow(270, 215, 315, y + 31, color)
        c.box(320, y, 310, 62, stroke=color)
        c.text(332, y + 22, label, 14, anchor="start", color=color, weight="bold")
        c.text(332, y + 46, "softmax(Q_{i} K_{i}ᵀ / √d_{head}) V_{i}", 14, anchor="start")
        for r in range(4):  # a small T × T map: every query row spans every key
            for k in range(4):
                opacity = 0.25 + 0.6 * ((r * 3 + k * (n + 1)) % 4) / 3
                c.parts.append(
                    f'<rect x="{578 + k * 12}" y="{y + 8 + r * 12}" width="11" height="11" '
                    f'fill="{color}" fill-opacity="{opacity:.2f}"/>'
                )
        c.arrow(632, y + 31, 676, 215, color)
    c.text(475, 258, "⋮", 22, color=muted)
    c.text(475, 30, "every head attends over all T tokens,", 14, color=muted, italic=True)
    c.text(
        475, 48, "each with its own d_{head} = d_{model} / h features", 14, color=muted, italic=True
    )
    c.text(475, 395, "h heads in parallel: h maps of T × T weights,", 14, color=muted)
    c.text(475, 413, "each head's output T × d_{head}", 14, color=muted)
    # concatenation, output projection, output
    c.striped(680, 185, 80, 60)
    c.text(720, 173, "concat", 15, weight="bold")
    c.text(720, 267, "T × d_{model}", 14, color=muted)
    c.arrow(762, 215, 786, 215)
    c.box(790, 185, 64, 60)
    c.text(822, 221, "W_{o}", 15, weight="bold")
    c.text(822, 173, "mix", 15, weight="bold")
    c.arrow(856, 215, 880, 215)
    c.box(884, 185, 80, 60)
    c.text(924, 220, "Y", 18, weight="bold")
    c.text(924, 173, "output", 15, weight="bold")
    c.text(924, 267, "T × d_{model}", 14, color=muted)
    c.text(964, 395, "W_{o} mixes the heads: every", 14, anchor="end", color=muted)
    c.text(964, 413, "output feature reads all of them", 14, anchor="end", color=muted)
    return c.svg()


def draw_narrow(theme_name: str, words: dict[str, str] | None = None) -> str:
    """The same layer for a phone's column: top to bottom, every stage on screen."""
    c = Canvas(THEMES[theme_name], words)
    muted = c.t["muted"]
    mid = NARROW_WIDTH / 2
    # input
    c.text(mid, 22, "input", 15, weight="bold")
    c.box(mid - 50, 32, 100, 44)
    c.text(mid, 60, "X", 18, weight="bold")
    c.text(mid, 94, "T × d_{model}", 13, color=muted)
    # projections side by side, each cut into one slice of columns per head
    for col, name in enumerate(("Q = X W_{q}", "K = X W_{k}", "V = X W_{v}")):
        x = 15 + col * 115
        c.arrow(mid, 100, x + 50, 124)
        c.text(x + 50, 142, name, 13)
        c.striped(x, 150, 100, 40)
    c.text(mid, 212, "one projection each; their", 13, color=muted)
    c.text(mid, 229, "columns are cut into h slices", 13, color=muted)
    # heads, one lane each, one under the other
    h1, h2, hh = c.heads
    lanes = (("head 1", h1, 262), ("head 2", h2, 336), ("head h", hh, 430))
    for n, (label, color, y) in enumerate(lanes):
        c.box(10, y, 340, 62, stroke=color)
        c.text(20, y + 22, label, 14, anchor="start", color=color, weight="bold")
        c.text(20, y + 47, "softmax(Q_{i} K_{i}ᵀ / √d_{head}) V_{i}", 13, anchor="start")
        for r in range(4):
            for k in range(4):
                opacity = 0.25 + 0.6 * ((r * 3 + k * (n + 1)) % 4) / 3
                c.parts.append(
                    f'<rect x="{292 + k * 12}" y="{y + 8 + r * 12}" width="11" height="11" '
                    f'fill="{color}" fill-opacity="{opacity:.2f}"/>'
                )
    c.arrow(mid, 236, mid, 258)
    c.text(mid, 418, "⋮", 22, color=muted)
    c.text(mid, 512, "every head attends over all T tokens", 13, color=muted, italic=True)
    c.text(mid, 529, "with its own d_{head} = d_{model} / h features", 13, color=muted, italic=True)
    c.text(mid, 549, "h heads in parallel: h maps of T × T weights", 13, color=muted)
    c.text(mid, 566, "each head's output T × d_{head}", 13, color=muted)
    c.arrow(mid, 576, 56, 600)
    # concatenation, output projection, output in a row, each named under its box
    c.striped(10, 604, 80, 44)
    c.text(50, 668, "concat", 15, weight="bold")
    c.text(50, 687, "T × d_{model}", 13, color=muted)
    c.arrow(92, 626, 136, 626)
    c.box(140, 604, 64, 44)
    c.text(172, 632, "W_{o}", 15, weight="bold")
    c.text(172, 668, "mix", 15, weight="bold")
    c.arrow(206, 626, 250, 626)
    c.box(254, 604, 80, 44)
    c.text(294, 632, "Y", 18, weight="bold")
    c.text(294, 668, "output", 15, weight="bold")
    c.text(294, 687, "T × d_{model}", 13, color=muted)
    c.text(mid, 722, "W_{o} mixes the heads: every output", 13, color=muted)
    c.text(mid, 739, "feature reads all of them", 13, color=muted)
    return c.svg(NARROW_WIDTH, NARROW_HEIGHT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in THEMES:
        for suffix, words in LANGUAGES.items():
            (args.out / f"mha_layer_{name}{suffix}.svg").write_text(draw(name, words))
            narrow = draw_narrow(name, words)
            (args.out / f"mha_layer_{name}_narrow{suffix}.svg").write_text(narrow)


if __name__ == "__main__":
    main()
