"""Citations in Chinese running text: "Voita 等人 [2019]", not "Voita et al. [2019]".

The Chinese edition (book/zh.yml) selects the reference style registered here: the book's
author-year style with the words between names in Chinese ("等人" for three or more authors,
"和" between two). The citation roles stay as they are in the catalogues, so that a
translation keeps its roles character for character (scripts/catalogues.py checks that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pybtex.richtext import Text
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

STYLE = "author_year_zh"


def chinese_persons() -> PersonStyle:
    """Author lists as Chinese text names them: "A 和 B", "A 等人"."""
    return PersonStyle(sep2=" 和 ", last_sep="、", other=Text(" 等人"))


@dataclass
class ChineseAuthorYearStyle(AuthorYearReferenceStyle):
    """The book's author-year references with the joining words in Chinese."""

    person: PersonStyle = field(default_factory=chinese_persons)


def setup(app: Sphinx) -> dict[str, Any]:
    register_plugin("sphinxcontrib.bibtex.style.referencing", STYLE, ChineseAuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
