"""A translated build warns on every message its catalogue does not translate.

Sphinx shows the English text of a message that has no translation, silently: a paragraph
added to the English page after the catalogues were last updated would appear in English on the
Chinese page and nobody would know. With warnings as errors this makes the Chinese build fail
instead, naming the page and the message; `make catalogues` then brings the message in.
"""

from __future__ import annotations

from typing import Any

from docutils.transforms import Transform
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.nodes import extract_messages
from translated_outputs import is_translated, page_catalogue

logger = logging.getLogger(__name__)


class WarnUntranslated(Transform):
    """Before Sphinx translates a page: every message must be in the page's catalogue."""

    default_priority = 19  # just before sphinx.transforms.i18n.Locale (priority 20)

    def apply(self, **kwargs: Any) -> None:
        env = self.document.settings.env
        app = env.app
        if not is_translated(app.config) or app.builder.name == "gettext":
            return
        catalogue = page_catalogue(app, env.docname)
        for node, message in extract_messages(self.document):
            if message.strip() and message not in catalogue:
                short = message if len(message) < 70 else message[:67] + "..."
                logger.warning(
                    "untranslated message (run `make catalogues`, then translate it): %r",
                    short,
                    location=node,
                    type="i18n",
                    subtype="untranslated",
                )


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(WarnUntranslated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
