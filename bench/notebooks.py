"""Run every chapter notebook in a fresh kernel; report wall time and peak memory.

Run from the repository root:

    .venv/bin/python bench/notebooks.py                        # every notebooks/*.ipynb
    .venv/bin/python bench/notebooks.py notebooks/03_splitting_heads.ipynb
    .venv/bin/python bench/notebooks.py --json /tmp/notebooks.json

Each notebook runs top to bottom with nbclient in a new kernel, from the
`notebooks/` directory and offline, as the book build runs it. Wall time
includes starting the kernel. Peak memory is the largest resident set size
(RSS) of the kernel process plus all its children, sampled every
`--interval` seconds with psutil, so a short spike between samples can be
missed. Targets from CONTRIBUTING.md: at most 90 s and 1.5 GB per chapter;
rows over a target are flagged. Exits non-zero if a notebook fails or misses one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parent.parent
MAX_SECONDS = 90.0
MAX_BYTES = 1.5e9


class PeakRSS:
    """Sample the RSS of a process tree in a background thread; keep the maximum."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, pid: int) -> None:
        self._thread = threading.Thread(target=self._run, args=(pid,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self, pid: int) -> None:
        try:
            root = psutil.Process(pid)
        except psutil.NoSuchProcess:
            return
        while not self._stop.is_set():
            total = 0
            try:
                for proc in [root, *root.children(recursive=True)]:
                    try:
                        total += proc.memory_info().rss
                    except psutil.NoSuchProcess:
                        pass  # a child that just exited
            except psutil.NoSuchProcess:
                return  # the kernel itself has gone
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)


def run_notebook(path: Path, timeout: int, interval: float) -> dict:
    """Execute one notebook in a fresh kernel; return wall time, peak RSS and any error."""
    nb = nbformat.read(path, as_version=4)
    sampler = PeakRSS(interval)

    def on_start(**_: object) -> None:
        sampler.start(client.km.provisioner.pid)

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        on_notebook_start=on_start,
    )
    error = None
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as exc:
        error = f"{exc.ename}: {exc.evalue}"
    except (CellTimeoutError, DeadKernelError) as exc:
        error = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
    finally:
        wall = time.perf_counter() - start
        sampler.stop()
    return {
        "notebook": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
        "wall_s": wall,
        "peak_rss_bytes": sampler.peak,
        "error": error,
    }


def markdown_table(rows: list[dict]) -> str:
    lines = [
        f"| notebook | wall time (s) | peak RSS (MB) | status (targets ≤ {MAX_SECONDS:.0f} s, "
        f"≤ {MAX_BYTES / 1e9:.1f} GB) |",
        "|---|---|---|---|",
    ]
    for row in rows:
        flags = []
        if row["error"]:
            flags.append(f"FAILED: {row['error']}")
        if row["wall_s"] > MAX_SECONDS:
            flags.append("⚠ over time")
        if row["peak_rss_bytes"] > MAX_BYTES:
            flags.append("⚠ over memory")
        status = "; ".join(flags) or "ok"
        lines.append(
            f"| {row['notebook']} | {row['wall_s']:.1f} | {row['peak_rss_bytes'] / 1e6:.0f} "
            f"| {status} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    parser.add_argument(
        "--interval", type=float, default=0.05, help="RSS sampling period in s (default 0.05)"
    )
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    if not paths:
        parser.error("no notebooks found in notebooks/")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

    rows = []
    for path in paths:
        rows.append(run_notebook(path, args.timeout, args.interval))
        print(f"ran {rows[-1]['notebook']} in {rows[-1]['wall_s']:.1f} s", file=sys.stderr)
    print(markdown_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    ok = all(
        not r["error"] and r["wall_s"] <= MAX_SECONDS and r["peak_rss_bytes"] <= MAX_BYTES
        for r in rows
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
