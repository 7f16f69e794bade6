"""The article's words stay its exact characters: no smart quotes inside 「…」.

The book quotes the Chinese article in 「」, character for character. Sphinx's smart quotes
would turn a straight quote inside such a quote into a curly one (「…给点积结果"降温"…」
became …”降温”…, two closing marks), so the quote would no longer be the article's. This
marks every 「…」 within one run of text as not smart-quotable before that transform runs.
(The Chinese edition turns smart quotes off altogether: Chinese prose writes its own.)
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from docutils.transforms import Transform
from sphinx.application import Sphinx

_QUOTE = re.compile(r"「[^「」]*」")


class KeepArticleQuotes(Transform):
    """Wrap each 「…」 of a text node in an inline that smart quotes leave alone."""

    default_priority = 740  # after translation (20), before Sphinx's smart quotes (750)

    def apply(self, **kwargs: Any) -> None:
        for text in list(self.document.findall(nodes.Text)):
            source = str(text)
            if "「" not in source or isinstance(text.parent, nodes.FixedTextElement):
                continue
            pieces: list[nodes.Node] = []
            last = 0
            for match in _QUOTE.finditer(source):
                if match.start() > last:
                    pieces.append(nodes.Text(source[last : match.start()]))
                quote = nodes.inline(match.group(0), match.group(0), classes=["mha-quote"])
                quote["support_smartquotes"] = False
                pieces.append(quote)
                last = match.end()
            if not pieces:
                continue
            if last < len(source):
                pieces.append(nodes.Text(source[last:]))
            text.parent.replace(text, pieces)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(KeepArticleQuotes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
