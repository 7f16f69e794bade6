"""Citations in Chinese running text: "Voita 等人 [2019]", not "Voita et al. [2019]".

The Chinese edition (book/zh.yml) selects the reference style registered here: the book's
author-year style with its English words in Chinese:

- between names, "等人" for three or more authors and "和" between two;
- a work without a year says 年份不详 (GB/T 7714's 出版年不详, shortened), not "n.d.";
- a work without an author is named by its title in 书名号, 《…》, not in italics (Chinese has
  none): the source article, which names no author, is cited as [《Multi-Head Attention
  为什么有效？》, 年份不详].

The citation roles stay as they are in the catalogues, so that a translation keeps its roles
character for character (scripts/catalogues.py checks that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pybtex.richtext import Text
from pybtex.style.template import field as bib_field
from pybtex.style.template import first_of, join, node, optional
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import GroupReferenceStyle, PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.referencing.extra_author import ExtraAuthorReferenceStyle
from sphinxcontrib.bibtex.style.referencing.extra_empty import ExtraEmptyReferenceStyle
from sphinxcontrib.bibtex.style.referencing.extra_label import ExtraLabelReferenceStyle
from sphinxcontrib.bibtex.style.referencing.extra_year import ExtraYearReferenceStyle
from sphinxcontrib.bibtex.style.template import join2, names, post_text, pre_text, reference

STYLE = "author_year_zh"
NO_YEAR = "年份不详"


@node
def year_zh(children: list[Any], data: dict[str, Any]) -> Text:
    """The entry's year, or 年份不详."""
    assert not children
    return first_of[optional[bib_field("year")], NO_YEAR].format_data(data)


@node
def author_or_editor_or_title_zh(children: list[Any], data: dict[str, Any], **kwargs: Any) -> Text:
    """The authors, else the editors, else the title in 书名号."""
    assert not children
    return first_of[
        optional[names("author", **kwargs)],
        optional[names("editor", **kwargs)],
        join["《", bib_field("title"), "》"],
    ].format_data(data)


@dataclass
class ChinesePersonStyle(PersonStyle):
    """Author lists as Chinese text names them: "A 和 B", "A 等人"; a title in 《》."""

    sep2: Any = " 和 "
    last_sep: Any = "、"
    other: Any = field(default_factory=lambda: Text(" 等人"))

    def author_or_editor_or_title(self, full: bool) -> Any:
        return author_or_editor_or_title_zh(
            sep=self.sep, sep2=self.sep2, last_sep=self.last_sep,
            other=None if full else self.other,
        )  # fmt: skip


def chinese_persons() -> PersonStyle:
    return ChinesePersonStyle()


@dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text,
            reference[
                join(sep=self.author_year_sep)[
                    self.person.author_or_editor_or_title(full="s" in role_name), year_zh
                ]
            ],
            post_text,
        ]


@dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[
                self.bracket.left,
                join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                    pre_text, reference[year_zh], post_text
                ],
                self.bracket.right,
            ],
        ]


@dataclass
class _Year(ExtraYearReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return reference[year_zh]


@dataclass
class ChineseAuthorYearStyle(AuthorYearReferenceStyle):
    """The book's author-year references with their words in Chinese."""

    person: PersonStyle = field(default_factory=chinese_persons)

    def __post_init__(self) -> None:
        # AuthorYearReferenceStyle's own styles, each with the Chinese year and title.
        self.styles.extend([
            _Parenthetical(
                bracket=self.bracket_parenthetical, person=self.person,
                author_year_sep=self.author_year_sep, pre_text_sep=self.pre_text_sep,
                post_text_sep=self.post_text_sep,
            ),
            _Textual(
                bracket=self.bracket_textual, person=self.person,
                text_reference_sep=self.text_reference_sep, pre_text_sep=self.pre_text_sep,
                post_text_sep=self.post_text_sep,
            ),
            ExtraAuthorReferenceStyle(bracket=self.bracket_author, person=self.person),
            ExtraLabelReferenceStyle(bracket=self.bracket_label),
            _Year(bracket=self.bracket_year),
            ExtraEmptyReferenceStyle(),
        ])  # fmt: skip
        GroupReferenceStyle.__post_init__(self)


def setup(app: Sphinx) -> dict[str, Any]:
    register_plugin("sphinxcontrib.bibtex.style.referencing", STYLE, ChineseAuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
