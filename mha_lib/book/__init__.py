"""What the book's pages call: the plumbing around a chapter, not the ideas it teaches.

The library's other packages hold the measurements; this one holds what a page needs to
show them, the same way in Jupyter, Binder and the static site:

- `page`: `setup` (seeded, offline, quiet), `device`, and
  `put`, which glues a measured value into the prose;
- `figures`: `show`, a figure as an image with alt text and the
  size of its smallest text, which the site test checks;
- `tables`: `html_table`, and the tables of reproduction checks
  and provenance;
- `plotting`: the figure shapes chapters repeat (runs as a mean and a
  band, per-head heat maps) and `COLUMN_INCHES`, the text column's width.
"""

from mha_lib.book.figures import show, smallest_text_px
from mha_lib.book.page import device, glue_cited, put, setup
from mha_lib.book.plotting import COLUMN_INCHES
from mha_lib.book.tables import checks_table, html_table, provenance_table

__all__ = [
    "COLUMN_INCHES",
    "checks_table",
    "device",
    "glue_cited",
    "html_table",
    "provenance_table",
    "put",
    "setup",
    "show",
    "smallest_text_px",
]
