"""The book's real-model verdicts on MiniLM and on its negative control, as a committed study.

`python -m mha_lib.replicate` runs the chapters' real-model measurements on any BERT-family
model (`mha_lib.replicate`). This study runs it on the two models the book can ship
offline, and commits both reports for the page "Run it on your model":

- `minilm`: the packaged all-MiniLM-L6-v2, the model every chapter measures;
- `random_bert_base`: a randomly initialised model of BERT-base's shape (12 layers × 12
  heads × 64, MiniLM's vocabulary, seed 0), the negative control: a claim that needs training
  must come out not supported on it.

Regenerate with::

    .venv/bin/python -m mha_lib.experiments.studies.replicate [--only minilm]

Each part is one report, run on two threads as a reader would run it (their wall and CPU
times are the page's timings), about 5 and 20 minutes on 2 idle cores; the Markdown reports
and their figures go to `bench/results/replicate/<part>/`. The page, and the tests on
torch's plain-C kernels, rerun the sink measurement on both models (`CHECK_MEASURES`) and
compare its numbers with the file (`live_checks`).
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from mha_lib.experiments.reproduce import (
    Check,
    parse_args,
    provenance,
    rounded,
    save_results,
    start_parts,
)

NAME = "replicate.json"
PARTS = ("minilm", "random_bert_base")
MODELS = {"minilm": None, "random_bert_base": "random:bert-base"}
SEED = 0  # the random control's weights
THREADS = 2  # a reader's laptop; the timings are taken with this many threads
REPORTS = Path(__file__).resolve().parents[3] / "bench" / "results" / "replicate"
# What a page reruns: the sink measurement takes seconds on either model.
CHECK_MEASURES = ("sinks",)
# Shares of attention weight in [0, 1] and counts of heads. A forward pass on another CPU
# differs in the last bits (1e-6); a count of heads over a threshold could flip only for a
# head within that of the threshold. Any change of the code or the sentences moves them more.
TOLERANCE = 1e-3


def load(part: str) -> object:
    """The model of `part` (`MODELS`), loaded as the command line loads it."""
    from mha_lib.replicate import load_model

    if part not in MODELS:
        raise ValueError(f"unknown part {part!r}; the parts are {list(MODELS)}")
    return load_model(MODELS[part], seed=SEED)


def run_one(part: str, measures: Sequence[str] | None = None, out: Path | None = None) -> dict:
    """The report of `part` (all measurements, or `measures`) as the JSON record the file
    keeps: the model, its shape, the rows with their numbers, the times and the peak memory.
    The Markdown report and its figures are written to `out` (a temporary folder if None)."""
    from mha_lib.replicate import run

    loaded = load(part)
    with tempfile.TemporaryDirectory() as tmp:
        report = run(loaded, out or Path(tmp), measures=measures, quiet=True)
        record = json.loads((report.path.parent / "report.json").read_text())
    record["part"] = part
    return rounded(record, digits=10)  # type: ignore[return-value]


def row(record: Mapping, number: str) -> Mapping:
    """The row of ledger number `number` in a record (the first, if several share it)."""
    for r in record["rows"]:
        if r["number"] == number:
            return r
    raise KeyError(f"the report has no row {number!r}")


def live_checks(live: Mapping, committed: Mapping) -> list[Check]:
    """A rerun of `CHECK_MEASURES` against the committed report of the same model: every
    number of the rows it decides (rows 18a and 18), and their verdicts."""
    if live["part"] != committed["part"] or live["model"] != committed["model"]:
        raise ValueError("live and committed are not the same model")
    checks = []
    for number in ("18a", "18"):
        new, old = row(live, number), row(committed, number)
        for key, value in sorted(old["numbers"].items()):
            if isinstance(value, int | float) and math.isfinite(value):
                checks.append(Check(f"{live['part']}, row {number}: {key}",
                                    new["numbers"].get(key, math.nan), value, TOLERANCE))
        same = float(new["verdict"] == old["verdict"])
        checks.append(Check(f"{live['part']}, row {number}: the verdict", same, 1.0, 0.0))
    return checks


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__, NAME, parts=PARTS, processes=None, threads=THREADS, argv=argv)
    out, provs, jobs = start_parts(args.out, {part: [part] for part in PARTS}, args.only)
    torch.set_num_threads(args.threads)
    made = provenance(threads=args.threads)  # the code as it was when the run began
    for part in jobs:
        provs[part] = dict(made)
        start = time.perf_counter()
        out[part] = [run_one(part, out=REPORTS / part)]
        print(f"{part}: {time.perf_counter() - start:.0f} s", flush=True)
        save_results(args.out, out, provs)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
