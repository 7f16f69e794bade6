"""The book's real-model verdicts on any BERT-family model, with a random model as the control.

`python -m mha_lib.replicate MODEL [--out DIR] [--device auto]` runs the measurements the
chapters make on MiniLM (held-out syntax heads against position, coreference, self-weight,
attention distance by layer, sinks by weight and by what heads move, pruning by importance with
a frozen and a refitted read-out, layer probes) on another model, through the chapters' own
functions, and writes a report whose verdict table uses the claims ledger's words. MODEL is a
local folder, a hub name (the only case that may download), nothing (the packaged MiniLM), or
`random:bert-base` (BERT-base's shape, MiniLM's vocabulary, seeded): the negative control,
on which every claim that needs training must come out not supported.

- `models`: `load_model`, the BERT-family check;
- `measures`: the measurements and their verdict rules;
- `report`: `run`, the Markdown and JSON report.
"""

from mha_lib.replicate.models import (
    Loaded,
    Shape,
    UnsupportedModelError,
    check_supported,
    load_model,
    missing_parts,
    shape_of,
)
from mha_lib.replicate.report import Report, run
from mha_lib.replicate.verdicts import VERDICTS, Row

__all__ = [
    "VERDICTS",
    "Loaded",
    "Report",
    "Row",
    "Shape",
    "UnsupportedModelError",
    "check_supported",
    "load_model",
    "missing_parts",
    "run",
    "shape_of",
]
