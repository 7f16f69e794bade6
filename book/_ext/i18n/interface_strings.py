"""The theme's own words in the Chinese edition: from our catalogue where the themes' fall short.

Sphinx, pydata-sphinx-theme and sphinx-book-theme ship zh_CN catalogues, but they fall short in
three ways, and each would leave English (or another Chinese) on every Chinese page:

- newer strings are missing from them ("Repository", "Open issue", "Link to this term", the
  footer's "© Copyright ..."): our catalogue `locales/zh_CN/LC_MESSAGES/_interface.po`
  answers for every loaded catalogue;
- some translations are not the mainland's: the book theme prints "列印成 PDF" (Taiwan's word
  for print), where zh-CN says 打印: where our catalogue has a message, ours is used, before the
  theme's own;
- the themes and myst-nb write some words straight into their templates and HTML, past gettext
  (the sidebar buttons' "Toggle primary sidebar", the navigation's aria-label "Main", myst-nb's
  "Toggle hidden content"): as a page is rendered, an attribute (title, aria-label, ...) whose
  whole value is one of our messages is replaced by its translation; and so, in the reader's
  browser, is such an attribute of what a script adds later (sphinx-togglebutton's buttons).

The catalogue holds the labels our own extensions write too; the catalogue check covers it like
any page, and tests/book/test_site.py fails on any English interface string of a Chinese page.
"""

from __future__ import annotations

import gettext
import html
import io
import json
import re
from pathlib import Path
from typing import Any

from sphinx import locale
from sphinx.application import Sphinx
from sphinx.config import Config
from translated_outputs import catalogue_path, is_translated

CATALOGUE = "_interface.po"
TEMPLATES = Path(__file__).parent / "templates"
# Attributes a reader meets (as a tooltip or through a screen reader) whose words a template,
# a writer or a script may have typed in English.
ATTRIBUTES = ("title", "aria-label", "placeholder", "data-bs-title", "alt")
_ATTRIBUTE = re.compile(r"\b(" + "|".join(ATTRIBUTES) + r')="([^"<>]*)"')
# The same, for elements that scripts add once the page is there.
_SCRIPT = """(() => {
  const messages = %s, names = %s;
  const selector = names.map(n => `[${n}]`).join(', ');
  const translate = (root) => {
    for (const el of [root, ...root.querySelectorAll(selector)])
      for (const name of names) {
        const value = el.getAttribute(name);
        if (value && Object.hasOwn(messages, value)) el.setAttribute(name, messages[value]);
      }
  };
  new MutationObserver((changes) => changes.forEach((change) => change.addedNodes.forEach(
    (node) => { if (node.nodeType === 1) translate(node); }
  ))).observe(document.documentElement, {childList: true, subtree: true});
})();"""


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


def messages(translations: gettext.GNUTranslations) -> dict[str, str]:
    """The catalogue's translated messages, msgid to msgstr (the header aside)."""
    return {k: v for k, v in translations._catalog.items() if isinstance(k, str) and k and v}


def put_first(translator: gettext.NullTranslations, ours: gettext.GNUTranslations) -> None:
    """Make `ours` answer first for `translator`: its messages replace the translator's own
    (the object stays the same, so every template and module holding it sees the change), and
    `ours` answers what the translator lacks."""
    own = getattr(translator, "_catalog", None)
    if own is not None:
        own.update(messages(ours))
    translator.add_fallback(ours)


def translate_attributes(page: str, catalogue: dict[str, str]) -> str:
    """`page` with every listed attribute whose whole value is a message of `catalogue`
    replaced by that message's translation."""

    def one(match: re.Match[str]) -> str:
        name, value = match.groups()
        translated = catalogue.get(html.unescape(value))
        if translated is None:
            return match.group(0)
        return f'{name}="{html.escape(translated, quote=True)}"'

    return _ATTRIBUTE.sub(one, page)


def _install(app: Sphinx) -> None:
    if not is_translated(app.config):
        return
    ours = _ours(app)
    if ours is None:
        return
    for translator in list(locale.translators.values()):
        if translator is not ours:
            put_first(translator, ours)
    catalogue = messages(ours)
    templates = getattr(app.builder, "templates", None)
    if templates is None:
        return
    render = templates.render

    def render_translated(template: str, context: dict[str, Any]) -> str:
        return translate_attributes(render(template, context), catalogue)

    templates.render = render_translated
    app.add_js_file(None, body=_SCRIPT % (json.dumps(catalogue), json.dumps(ATTRIBUTES)))


def _translate_theme_options(app: Sphinx, config: Config) -> None:
    """Jupyter Book sets the search field's text as a theme option, which no theme translates.

    And the footer's author line comes from our template (`templates/author.html`): the
    catalogue's "作者：" takes no space after it."""
    if not is_translated(config):
        return
    config.templates_path.insert(0, str(TEMPLATES))
    ours = _ours(app)
    options = config.html_theme_options
    if ours is not None and "search_bar_text" in options:
        options["search_bar_text"] = ours.gettext(options["search_bar_text"])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _translate_theme_options)
    # After the themes have loaded their catalogues (builder-inited, default priority 500).
    app.connect("builder-inited", _install, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
