"""Run the measurements on one model and write the report: Markdown, figures and a JSON file."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from mha_lib.replicate.measures import MEASURES, Context, Finding
from mha_lib.replicate.models import Loaded
from mha_lib.replicate.verdicts import Row, not_in

REPORT = "report.md"
NUMBERS = "report.json"
# Every row the report knows, in the ledger's order, and which measurement gives it: a row
# whose measurement was not asked for is written as not measured, never left out.
ROWS = {
    "4 (syntax)": "syntax", "4 (coreference)": "coreference", "6": "self-weight",
    "7": "distance", "8b": "syntax", "9": "pruning", "10": "probes", "12": "pruning",
    "18a": "sinks", "18": "sinks", "4 (knockout)": "knockout",
}  # fmt: skip


@dataclass
class Report:
    """What `run` wrote: the rows in ledger order, the findings, the files, the time."""

    rows: list[Row]
    findings: list[Finding]
    path: Path
    seconds: float
    cpu_seconds: float
    peak_rss_mib: float


def _key(row: Row, finding: str) -> str:
    """Row 4 is three rows here (syntax, coreference, knockout): its key names the finding."""
    if row.number == "4":
        return f"4 ({finding})"
    return row.number


class _Progress:
    """A bar over the measurements with the current step, on a terminal only."""

    def __init__(self, names: Sequence[str], quiet: bool) -> None:
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(names), unit="measurement", file=sys.stderr)

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(text, refresh=True)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(
    loaded: Loaded,
    out: str | Path,
    *,
    measures: Sequence[str] | None = None,
    quiet: bool = False,
) -> Report:
    """Measure `loaded` with `measures` (default: all, in order of value) and write
    `report.md`, its figures and `report.json` into `out`; rows not measured say so."""
    names = list(MEASURES) if measures is None else list(measures)
    unknown = [n for n in names if n not in MEASURES]
    if unknown or not names:
        raise ValueError(f"unknown measurements {unknown}; choose from {list(MEASURES)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    progress = _Progress(names, quiet)
    ctx = Context(loaded, out, note=progress.note)
    start, cpu_start = time.perf_counter(), time.process_time()
    findings: list[Finding] = []

    def write(pending: Sequence[str]) -> Report:
        # After every measurement: a long run that is stopped still leaves what it measured.
        measured = {_key(r, f.name): r for f in findings for r in f.rows}
        rows = []
        for key, source in ROWS.items():
            if key in measured:
                rows.append(measured[key])
            else:
                why = "still running" if source in pending else (
                    f"the {source!r} measurement was not asked for"
                )  # fmt: skip
                rows.append(not_in(key.split(" ")[0], key, why))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        report = Report(rows, findings, out / REPORT, seconds, cpu, peak)
        _write(report, loaded)
        return report

    try:
        for k, name in enumerate(names):
            progress.note(name)
            t0, c0 = time.perf_counter(), time.process_time()
            with torch.inference_mode(False):
                finding = MEASURES[name](ctx)
            finding.seconds = time.perf_counter() - t0
            finding.cpu_seconds = time.process_time() - c0
            findings.append(finding)
            progress.done()
            report = write(names[k + 1:])
    finally:
        progress.close()
    return report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _write(report: Report, loaded: Loaded) -> None:
    shape = loaded.shape
    params = sum(p.numel() for p in loaded.model.parameters())
    device = next(loaded.model.parameters()).device
    import transformers

    kind = "randomly initialised (the negative control)" if loaded.random_init else "pretrained"
    lines = [
        f"# The book's real-model verdicts on {loaded.name}",
        "",
        f"**Model:** {loaded.name}, {kind}.  ",
        f"**Shape** (from its config): {shape.layers} layers × {shape.heads} heads, each "
        f"{shape.d_head} features wide ({shape.total_heads} heads; "
        f"{params / 1e6:.1f} M parameters).  ",
        f"**Run:** {report.seconds:.0f} s ({report.cpu_seconds:.0f} s of CPU time) on {device} "
        f"({torch.get_num_threads()} threads; load average {os.getloadavg()[0]:.1f}), "
        f"peak memory {report.peak_rss_mib:.0f} MiB; torch {torch.__version__}, transformers "
        f"{transformers.__version__}, Python {platform.python_version()}.",
        "",
        "Verdicts use the claims ledger's words (book/claims.md). *Supported*: the measurement "
        "agrees; *nuanced*: only in part; *contradicted*: it says the opposite; *not supported "
        "as stated*: the effect is absent here; *not testable*: the measurement cannot decide "
        "(or did not run). Rows marked † need training: a randomly initialised model must not "
        "pass them.",
        "",
        "| # | the claim | measured | number | baseline | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in report.rows:
        mark = " †" if r.trained_only else ""
        lines.append(
            "| " + " | ".join(_cell(x) for x in (
                r.number + mark, r.claim, r.measured, r.value, r.baseline, f"**{r.verdict}**"
                + (f": {r.detail}" if r.detail else ""))) + " |"
        )  # fmt: skip
    lines += ["", "## Where the time went", "", "| measurement | wall (s) | CPU (s) |",
              "|---|---|---|"]  # fmt: skip
    lines += [f"| {f.name} | {f.seconds:.1f} | {f.cpu_seconds:.1f} |" for f in report.findings]
    for f in report.findings:
        if not (f.figures or f.section):
            continue
        lines += ["", f"## {f.name}", ""]
        for fig in f.figures:
            lines += [f"![{fig.alt}]({fig.path})", ""]
        if f.section:
            lines += [f.section]
    report.path.write_text("\n".join(lines) + "\n")
    numbers = {
        "model": loaded.name,
        "shape": asdict(shape),
        "random_init": loaded.random_init,
        "seconds": report.seconds,
        "cpu_seconds": report.cpu_seconds,
        "load_average": os.getloadavg()[0],
        "peak_rss_mib": report.peak_rss_mib,
        "timings": {f.name: f.seconds for f in report.findings},
        "cpu_timings": {f.name: f.cpu_seconds for f in report.findings},
        "rows": [asdict(r) for r in report.rows],
    }
    (report.path.parent / NUMBERS).write_text(json.dumps(numbers, indent=1, default=float))
