"""The interface strings that the themes' own Chinese catalogues lack, from ours.

Sphinx, pydata-sphinx-theme and sphinx-book-theme ship zh_CN catalogues, but newer strings
("Toggle primary sidebar", "Color mode", "Link to this heading", the book theme's launch
buttons, ...) are missing from them and would appear in English on every Chinese page. Our own
catalogue ``locales/zh_CN/LC_MESSAGES/_interface.po`` supplies them (and the labels our own
extensions write): it is added as the fallback of every loaded catalogue, so a string the theme
translates keeps the theme's translation. The catalogue check covers it like any page.
"""

from __future__ import annotations

import gettext
import io
from typing import Any

from sphinx import locale
from sphinx.application import Sphinx
from sphinx.config import Config
from translated_outputs import catalogue_path, is_translated

CATALOGUE = "_interface.po"


def _ours(app: Sphinx) -> gettext.GNUTranslations | None:
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    path = catalogue_path(app, CATALOGUE)
    if path is None:
        return None
    with path.open("rb") as fh:
        catalogue = read_po(fh)
    buffer = io.BytesIO()
    write_mo(buffer, catalogue)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def _add_fallbacks(app: Sphinx) -> None:
    if not is_translated(app.config):
        return
    ours = _ours(app)
    if ours is None:
        return
    for translator in locale.translators.values():
        if translator is not ours:
            translator.add_fallback(ours)


def _translate_theme_options(app: Sphinx, config: Config) -> None:
    """Jupyter Book sets the search field's text as a theme option, which no theme translates."""
    if not is_translated(config):
        return
    ours = _ours(app)
    options = config.html_theme_options
    if ours is not None and "search_bar_text" in options:
        options["search_bar_text"] = ours.gettext(options["search_bar_text"])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _translate_theme_options)
    # After the themes have loaded their catalogues (builder-inited, default priority 500).
    app.connect("builder-inited", _add_fallbacks, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
