"""Glued negative numbers with a minus sign (U+2212), as text typesetting writes them.

Python's formatting gives a hyphen: "-2.9". In both editions, a glued number's sign is printed
as a minus sign, "−2.9"; a hyphen that is not a sign ("2-0", "BERT-base", "1e-05") stays.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

MINUS = "\u2212"
# A hyphen that is a sign: before a digit (or ".5"), not after a letter, digit or point ("2-0",
# "BERT-base", "1e-05" keep theirs).
_SIGN = re.compile(r"(?<![\w.])-(?=\.?\d)")


def with_minus_signs(text: str) -> str:
    """`text` with each negative number's hyphen as a minus sign."""
    return _SIGN.sub(MINUS, text)


class GluedMinusSigns(SphinxPostTransform):
    """Glued text (myst-nb's `pasted-text`, in-page or from another page) with minus signs."""

    default_priority = 700  # after myst-nb has resolved glue from other pages (5)

    def run(self, **kwargs: Any) -> None:
        for node in self.document.findall(nodes.inline):
            if "pasted-text" not in node["classes"]:
                continue
            for text in list(node.findall(nodes.Text)):
                signed = with_minus_signs(text.astext())
                if signed != text.astext():
                    text.parent.replace(text, nodes.Text(signed))


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("myst_nb")
    app.add_post_transform(GluedMinusSigns)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
