"""A link on every page to the same page in the book's other language.

The English site is at the root and the Chinese one under `zh/` (scripts/build_book.py), with
the same page names and the same section ids (Sphinx keeps a section's id when it translates
its title), so the other edition of `notebooks/01_qkv_lookup.html#a-soft-lookup` is
`zh/notebooks/01_qkv_lookup.html#a-soft-lookup`. The link sits in the page's header, before
the theme's buttons; a click carries the section the reader is at over to the other edition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from translated_outputs import is_translated

ZH_FOLDER = "zh"
SWITCHED = ("page.html", "search.html", "genindex.html")
EDITIONS = {
    # language of this build: (link text, its language, what the link says to a screen reader)
    "en": ("中文", "zh-CN", "本页的中文版"),
    "zh_CN": ("English", "en", "This page in English"),
}


def other_edition_url(pagename: str, chinese: bool) -> str:
    """The relative URL of `pagename` in the other edition, from `pagename` itself."""
    up = "../" * pagename.count("/")
    return f"{up}../{pagename}.html" if chinese else f"{up}{ZH_FOLDER}/{pagename}.html"


def _context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    # Every page a reader lands on: the pages, the search page and the index.
    if templatename not in SWITCHED or app.builder.format != "html":
        return
    chinese = is_translated(app.config)  # the book's one translation is the Chinese edition
    label, lang, title = EDITIONS["zh_CN" if chinese else "en"]
    url = other_edition_url(pagename, chinese)
    context["mha_other_edition"] = {"url": url, "label": label, "lang": lang, "title": title}
    context["metatags"] = context.get("metatags", "") + (
        f'\n<link rel="alternate" hreflang="{lang}" href="{url}">'
    )


def _add_to_header(app: Sphinx, config: Config) -> None:
    config.templates_path.append(str(Path(__file__).parent / "templates"))
    options = config.html_theme_options
    end = options.get("article_header_end", ["article-header-buttons.html"])
    options["article_header_end"] = ["language-switcher.html", *end]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _add_to_header)
    app.connect("html-page-context", _context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
