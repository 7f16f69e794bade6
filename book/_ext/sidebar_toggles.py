"""Name the sidebar's expand/collapse toggles, so that screen readers can say what they open.

pydata-sphinx-theme 0.17 draws a chapter that has parts (`sections:` in `_toc.yml`) as a
link followed by `<details><summary>` holding only a chevron icon, and an empty summary
has no accessible name (axe-core: `summary-name`, serious). After the html build, each such
toggle gets the label "Parts of <chapter title>". The site test runs axe-core on every page.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.locale import get_translation

# The label, translated in the Chinese edition (locales/zh_CN/LC_MESSAGES/_interface.po).
LABEL = "Parts of {title}"
# The theme's markup for a page link with children: <a ...>Title</a><details><summary>.
_TOGGLE = re.compile(
    r'(<a class="(?:current )?reference internal" href="[^"]*">)([^<]*)'
    r'(</a>\s*<details(?: open="open")?>\s*)<summary>'
)


def name_toggles(page: str, label_format: str = LABEL) -> str:
    """Give every nameless sidebar `<summary>` after a chapter link an aria-label."""

    def label(match: re.Match[str]) -> str:
        title = html.unescape(match.group(2)).strip()
        name = html.escape(label_format.format(title=title), quote=True)
        return f'{match.group(1)}{match.group(2)}{match.group(3)}<summary aria-label="{name}">'

    return _TOGGLE.sub(label, page)


def build_finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    label_format = get_translation("sphinx")(LABEL)
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        named = name_toggles(text, label_format)
        if named != text:
            page.write_text(named, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("build-finished", build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
