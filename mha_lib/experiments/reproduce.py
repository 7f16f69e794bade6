"""Committed results a reader can trust: where each part came from, and live checks that fail.

Experiments too slow for a chapter are studies (`mha_lib.experiments.studies`), run
as `python -m mha_lib.experiments.studies.<name>` and committed as a small JSON file in
`scripts/results`
(`results_dir`). What every study's command line repeats lives here once: its options
(`parse_args`), its runs spread over processes (`run_jobs`, `run_all`,
`run_parts`, and `rerun_parts` for a study of parts),
rounding for the file (`rounded`), the parts a partial rerun keeps (`start_parts`),
and a sample re-run on torch's plain-C kernels (`on_plain_kernels`,
`plain_kernel_sample`).
Two things keep such a file honest:

* **Provenance.** Every part of the file records the git commit, torch version, CPU
  capability and thread count that made it (`provenance`); `save_results`
  writes it, `load_results` refuses a part without it, and a script that keeps
  some parts of an old file says so instead of merging them silently.
* **Live checks.** The chapter recomputes a sample and calls `verify`, which raises
  `ReproductionError` — so the book build fails — when a live value is further
  from the committed one than its tolerance.

Tolerances must hold on any CPU. Runs are bit-identical only on the same CPU and torch
build: kernels for AVX-512, AVX2 or plain C round differently in the last bits, and a
chaotic training run turns those bits into a different curve. So a check compares what is
robust (a short run's curve, an evaluation, a final accuracy within a stated number of
points), with a tolerance far above the cross-kernel differences and far below any change
that would alter the chapter's story.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import torch

from mha_lib._checks import check_positive_int

PROVENANCE = "provenance"
PROVENANCE_FIELDS = ("git_commit", "git_dirty", "torch", "cpu_capability", "threads", "created")
# The package's folder: in a checkout, git finds the repository from here; in an installed
# copy (Colab's `pip install`) there is no repository, and provenance says "unknown".
_PACKAGE = Path(__file__).resolve().parents[1]
# Code whose uncommitted changes make a result's commit a lie, relative to the repository's
# top; the results themselves are excluded (a script rewrites them while it runs).
CODE_PATHS = ("mha_lib", "scripts", "bench")
EXCLUDED_PATHS = ("scripts/results",)
RESULTS_ENV = "MHA_RESULTS_DIR"
_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


@runtime_checkable
class Study(Protocol):
    """What every module of `mha_lib.experiments.studies` is: one study, one file.

    `NAME` is its file in `results_dir`; `PARTS` the parts of that file that
    `--only` reruns separately (empty for a study that reruns whole); `run_one` runs one
    item of its grid (its arguments are the study's own: a seed, a configuration and a seed,
    a part); `live_checks(live, committed)` compares what a page recomputed now (`live`)
    with the file or the part of it that the page reads (`committed`) and returns the
    `Check` s that `verify` asserts; `main(argv)` is its command line,
    `python -m mha_lib.experiments.studies.<name>`."""

    NAME: str
    PARTS: tuple[str, ...]
    run_one: Callable[..., Any]

    def live_checks(self, live: Any, committed: Any) -> list[Check]: ...

    def main(self, argv: Sequence[str] | None = None) -> None: ...


class ReproductionError(AssertionError):
    """A live recomputation disagrees with a committed result beyond its tolerance."""


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def code_state(start: Path | None = None) -> tuple[str, bool] | None:
    """`(commit, dirty)` of the repository holding `start`, or None outside a repository.

    `start` defaults to this package's folder. `dirty` is whether `CODE_PATHS` have
    changes not committed, untracked files included. git runs from the repository's top,
    where those paths mean what they say."""
    top = _git(_PACKAGE if start is None else start, "rev-parse", "--show-toplevel")
    if not top:
        return None
    commit = _git(Path(top), "rev-parse", "HEAD")
    excluded = [f":(exclude){path}" for path in EXCLUDED_PATHS]
    status = _git(Path(top), "status", "--porcelain", "--", *CODE_PATHS, *excluded)
    if commit is None or status is None:
        return None
    return commit, bool(status)


def provenance(threads: int | None = None) -> dict[str, object]:
    """Where a result comes from: commit (and whether the code had uncommitted changes), torch,
    CPU capability, intra-op threads (`threads` if the runs used another count than this
    process), Python, machine and time."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
        raise TypeError(f"threads must be an int or None, got {threads!r}")
    state = code_state()
    return {
        "git_commit": "unknown" if state is None else state[0],
        "git_dirty": None if state is None else state[1],
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads() if threads is None else threads,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def results_dir(start: Path | None = None) -> Path:
    """The committed results, `scripts/results` of the book's checkout.

    Found from `start` (default: the working directory) upwards, as git finds a repository:
    a chapter runs in `notebooks/`, a script from the top, and a copy of the book (the
    tests perturb one) reads its own files. `$MHA_RESULTS_DIR` overrides."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    here = (Path.cwd() if start is None else Path(start)).resolve()
    for folder in (here, *here.parents):
        if (folder / "scripts" / "results").is_dir():
            return folder / "scripts" / "results"
    raise FileNotFoundError(
        f"no scripts/results in {here} or above it: run from the book's checkout, "
        f"or set {RESULTS_ENV}"
    )


def committed(name: str) -> dict[str, object]:
    """The committed result file `name` (e.g. a study's `NAME`), read with
    `load_results` from `results_dir`."""
    return load_results(results_dir() / name)


def rounded(obj: object, *, decimals: int | None = None, digits: int | None = None) -> object:
    """`obj` with every float rounded to `decimals` places or `digits` significant
    digits (neither: unchanged) and NaN as None, through dicts, lists and tuples: a
    committed file stays small and valid JSON, and the checks use tolerances anyway."""
    if decimals is not None and digits is not None:
        raise ValueError("round to decimals or to significant digits, not both")
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if decimals is not None:
            return round(obj, decimals)
        return obj if digits is None else float(f"{obj:.{digits}g}")
    if isinstance(obj, dict):
        return {key: rounded(value, decimals=decimals, digits=digits) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [rounded(value, decimals=decimals, digits=digits) for value in obj]
    return obj


def parse_args(
    doc: str,
    name: str,
    *,
    parts: Sequence[str] = (),
    processes: int | None = 2,
    threads: int | None = None,
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """A study's command line: `--out` (default: the committed file `name`),
    `--processes` for runs spread over processes (unless `processes` is None),
    `--threads` for a study that runs in one process (when `threads` is given) and, for a
    study with `parts`, `--only PART ...` to rerun those and keep the others."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help=f"default: scripts/results/{name}")
    if processes is not None:
        parser.add_argument("--processes", type=int, default=processes)
    if threads is not None:
        parser.add_argument("--threads", type=int, default=threads)
    if parts:
        parser.add_argument(
            "--only",
            nargs="+",
            choices=tuple(parts),
            help="rerun only these parts and keep the others from the existing file",
        )
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = results_dir() / name
    return args


def run_jobs(
    job: Callable[[_Item], _Result],
    items: Sequence[_Item],
    processes: int,
    *,
    longest_first: Callable[[_Item], float] | None = None,
) -> Iterator[tuple[int, _Result]]:
    """`job` on every item in `processes` fresh (spawned) processes: `(index, result)`
    pairs as runs finish. With `longest_first` (an item's expected cost), the longest start
    first, so that no process is left with a long run at the end. `job` must be a
    module-level function, which is what lets a spawned process find it."""
    check_positive_int("processes", processes)
    order = list(range(len(items)))
    if longest_first is not None:
        order.sort(key=lambda i: -longest_first(items[i]))
    with get_context("spawn").Pool(processes) as pool:
        done = pool.imap_unordered(_indexed, [(job, i, items[i]) for i in order], chunksize=1)
        yield from done


def _indexed(task: tuple[Callable, int, object]) -> tuple[int, object]:
    job, index, item = task
    return index, job(item)


def run_all(
    job: Callable[[_Item], _Result],
    items: Sequence[_Item],
    processes: int,
    *,
    longest_first: Callable[[_Item], float] | None = None,
) -> list[_Result]:
    """`run_jobs` waited for: every item's result, in the order of `items`."""
    done = dict(run_jobs(job, items, processes, longest_first=longest_first))
    return [done[i] for i in range(len(items))]


def run_parts(
    job: Callable[[_Item], _Result],
    jobs: Mapping[str, Sequence[_Item]],
    processes: int,
    *,
    longest_first: Callable[[_Item], float] | None = None,
) -> dict[str, list[_Result]]:
    """Every part's items (`jobs`: part name -> its items) through `job` in one pool of
    `processes` (`run_all`, so the longest of all parts start first): each part's
    results, in the order of its items."""
    items = [item for group in jobs.values() for item in group]
    done = iter(run_all(job, items, processes, longest_first=longest_first))
    return {part: [next(done) for _ in group] for part, group in jobs.items()}


def rerun_parts(
    job: Callable[[_Item], _Result],
    jobs: Mapping[str, list[_Item]],
    args: argparse.Namespace,
    *,
    longest_first: Callable[[_Item], float] | None = None,
) -> tuple[dict[str, list], dict[str, dict[str, object]], dict[str, list[_Item]]]:
    """A study's parts run as its command line asks (`args` of `parse_args`: `--out`,
    `--only`, `--processes`): the parts not rerun kept from `args.out` (`start_parts`), the
    others through `job` in one pool (`run_parts`), each part the list of its items' results
    in their order. Returns `(results, provenance per part, the jobs run now)`."""
    results, provs, todo = start_parts(args.out, jobs, args.only)
    results.update(run_parts(job, todo, args.processes, longest_first=longest_first))
    return results, provs, todo


PLAIN_KERNELS = "default"  # ATEN_CPU_CAPABILITY for torch's plain-C kernels


def on_plain_kernels(function: Callable[..., object], *args: object) -> object:
    """`function(*args)` run in a child process on torch's plain-C kernels
    (`ATEN_CPU_CAPABILITY=default`), as a CPU without vector instructions would run it.

    A study measures the gap its tolerances must cover this way: it re-runs a sample in the
    child and keeps what its checks compare. `function` must be importable by name (defined
    at the top of a module); `args` and its result travel as JSON."""
    module, name = function.__module__, function.__qualname__
    if module == "__main__" or "." in name:
        raise ValueError(f"{name} must be a module-level function of an importable module")
    child = (
        "import json, sys\n"
        f"from {module} import {name} as function\n"
        "result = function(*json.loads(sys.argv[1]))\n"
        "with open(sys.argv[2], 'w') as out:\n"
        "    json.dump(result, out)\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        subprocess.run(
            [sys.executable, "-c", child, json.dumps(list(args)), str(out)],
            env={**os.environ, "ATEN_CPU_CAPABILITY": PLAIN_KERNELS},
            check=True,
        )
        return json.loads(out.read_text())


def plain_kernel_sample(
    function: Callable[..., object], *args: object, threads: int = 1
) -> tuple[object, dict[str, object]]:
    """A sample re-run on torch's plain-C kernels for a result file's own part:
    `function(*args)` run by `on_plain_kernels`, and the provenance of the child that
    ran it (its CPU capability is the plain kernels'; `threads`: what each run used)."""
    module, name = function.__module__, function.__qualname__
    done = on_plain_kernels(_with_provenance, module, name, threads, *args)
    assert isinstance(done, dict)
    return done["result"], done["provenance"]


def _with_provenance(module: str, name: str, threads: int, *args: object) -> dict[str, object]:
    import importlib

    function = getattr(importlib.import_module(module), name)
    return {"result": function(*args), "provenance": provenance(threads)}


def save_results(
    path: Path,
    parts: Mapping[str, object],
    provenances: Mapping[str, Mapping[str, object]],
    *,
    indent: int | None = 1,
) -> None:
    """Write `parts` and, under `"provenance"`, one provenance record per part."""
    if PROVENANCE in parts:
        raise ValueError(f"{PROVENANCE!r} is reserved for the provenance records")
    missing = sorted(set(parts) - set(provenances))
    if missing:
        raise ValueError(f"parts without provenance: {missing}")
    for name in parts:
        _check_record(name, provenances[name])
    data = {**parts, PROVENANCE: {name: dict(provenances[name]) for name in parts}}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")


def _check_record(part: str, record: Mapping[str, object]) -> None:
    absent = [f for f in PROVENANCE_FIELDS if f not in record]
    if absent:
        raise ValueError(f"the provenance of part {part!r} lacks {absent}")


def load_results(path: Path) -> dict[str, object]:
    """Read a result file; every part must carry provenance (ValueError otherwise)."""
    path = Path(path)
    data = json.loads(path.read_text())
    records = data.get(PROVENANCE)
    if not isinstance(records, dict):
        raise ValueError(f"{path.name} records no provenance; regenerate it with its script")
    for name in data:
        if name == PROVENANCE:
            continue
        if name not in records:
            raise ValueError(f"{path.name}: part {name!r} records no provenance")
        _check_record(name, records[name])
    return data


def kept_parts(
    old: Mapping[str, object], keep: Iterable[str]
) -> tuple[dict[str, object], dict[str, dict[str, object]], list[str]]:
    """The parts of an existing result file that a partial rerun keeps, with their provenance
    and one line per kept part saying where it came from (print them: nothing merges silently)."""
    records = old.get(PROVENANCE, {})
    parts, provs, lines = {}, {}, []
    for name in keep:
        if name not in old:
            continue
        if not isinstance(records, dict) or name not in records:
            raise ValueError(f"cannot keep part {name!r}: it records no provenance; rerun it")
        parts[name], provs[name] = old[name], dict(records[name])
        lines.append(f"kept part {name!r} from {describe(records[name])}")
    return parts, provs, lines


def start_parts(
    path: Path, jobs: Mapping[str, list], only: Iterable[str] | None
) -> tuple[dict[str, list], dict[str, dict[str, object]], dict[str, list]]:
    """Begin a script run over `jobs` (part name -> its work items).

    Returns `(results, provenance per part, jobs to run now)`: every part starts empty with
    this run's provenance; with `only`, the other parts are kept from `path` (a line per
    kept part is printed, see `kept_parts`) and only the named parts are run.
    """
    made = provenance(threads=1)  # the studies train on one thread
    results: dict[str, list] = {name: [] for name in jobs}
    provs: dict[str, dict[str, object]] = {name: dict(made) for name in jobs}
    if not only:
        return results, provs, dict(jobs)
    only = set(only)
    unknown = only - set(jobs)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; the parts are {list(jobs)}")
    kept, kept_provs, lines = kept_parts(load_results(path), [n for n in jobs if n not in only])
    results.update(kept)  # type: ignore[arg-type]
    provs.update(kept_provs)
    print("\n".join(lines))
    return results, provs, {name: group for name, group in jobs.items() if name in only}


def describe(record: Mapping[str, object]) -> str:
    """One line: commit, torch, CPU capability and threads of a provenance record."""
    commit = str(record.get("git_commit", "unknown"))[:10]
    dirty = " + uncommitted changes" if record.get("git_dirty") else ""
    return (
        f"commit {commit}{dirty}, torch {record.get('torch')}, CPU {record.get('cpu_capability')}, "
        f"{record.get('threads')} thread(s), {record.get('created')}"
    )


@contextlib.contextmanager
def threads(count: int) -> Iterator[None]:
    """Run with `count` intra-op threads and restore the caller's count afterwards."""
    check_positive_int("count", count)
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class Check:
    """One committed value (or curve) against its live recomputation.

    `difference` is the largest absolute difference (divided by `|committed|` when
    `relative`); the check holds when it is at most `tolerance`. Curves of different
    lengths, and NaN anywhere, never hold.
    """

    what: str
    live: float | Sequence[float]
    committed: float | Sequence[float]
    tolerance: float
    relative: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.tolerance, int | float) and self.tolerance >= 0):
            raise ValueError(f"tolerance must be a non-negative number, got {self.tolerance!r}")

    @property
    def difference(self) -> float:
        live, committed = _values(self.live), _values(self.committed)
        if len(live) != len(committed) or not live:
            return math.inf
        gaps = [
            abs(a - b) / abs(b) if self.relative and b != 0 else abs(a - b)
            for a, b in zip(live, committed, strict=True)
        ]
        return math.nan if any(math.isnan(g) for g in gaps) else max(gaps)

    @property
    def holds(self) -> bool:
        return self.difference <= self.tolerance  # False for NaN and inf

    def describe(self) -> str:
        kind = "relative" if self.relative else "absolute"
        return (
            f"{self.what}: live {_short(self.live)} vs committed {_short(self.committed)}, "
            f"{kind} difference {self.difference:.3g} > tolerance {self.tolerance:.3g}"
        )


def worst_share(checks: Iterable[Check]) -> float:
    """The largest difference of `checks` as a share of its tolerance: below 1 every check
    holds, and the smaller it is, the further a result is from failing (0 for exact checks
    that hold exactly)."""
    checks = list(checks)
    if not checks:
        raise ValueError("worst_share needs at least one check")
    shares = [
        0.0 if c.difference == 0 else c.difference / c.tolerance if c.tolerance else math.inf
        for c in checks
    ]
    return max(shares)


def _values(x: float | Sequence[float]) -> list[float]:
    if isinstance(x, int | float):
        return [float(x)]
    return [float(v) for v in x]


def _short(x: float | Sequence[float]) -> str:
    values = _values(x)
    if len(values) == 1:
        return f"{values[0]:.6g}"
    return f"[{len(values)} values, last {values[-1]:.6g}]"


def verify(checks: Iterable[Check]) -> list[Check]:
    """Return the checks if every one holds; raise ReproductionError naming each that fails."""
    checks = list(checks)
    if not checks:
        raise ValueError("verify needs at least one check")
    failed = [c for c in checks if not c.holds]
    if failed:
        raise ReproductionError(
            "a committed result no longer reproduces:\n  "
            + "\n  ".join(c.describe() for c in failed)
            + "\nRegenerate it with its script (see its docstring), or find what changed."
        )
    return checks
