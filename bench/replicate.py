"""Wall time, CPU time and peak memory of the whole `mha_lib.replicate` report, per model.

    .venv/bin/python bench/replicate.py [--models none random:bert-base] [--threads 2]
                                        [--json bench/results/replicate.json]

Each model runs in its own process (`python -m mha_lib.replicate`, as a reader runs it), one
after the other, offline; the script reads the child's wall time, its CPU time and peak
resident memory (`getrusage`), and the report's own time per measurement. On a machine
shared with other work the wall time is inflated by the load (its load average is recorded
before and after); the CPU time is what the run would cost on idle cores. `none` is the
packaged MiniLM; the issue's goal is MiniLM under 5 minutes and BERT-base's shape under 20 on
2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_one(model: str, threads: int, out: Path) -> dict[str, object]:
    """One report in a child process; its times, memory and the report's per-measurement times."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS=str(threads), PYTHONPATH=str(REPO))  # fmt: skip
    args = [sys.executable, "-m", "mha_lib.replicate", "--out", str(out), "--quiet"]
    if model != "none":
        args.insert(3, model)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(args, check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = json.loads((out / "report.json").read_text())
    return {
        "model": report["model"],
        "shape": report["shape"],
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_rss_mib": after.ru_maxrss / 1024,  # the largest child so far (KiB on Linux)
        "load_average": [load_before, os.getloadavg()[0]],
        "measurements_wall_s": report["timings"],
        "measurements_cpu_s": report.get("cpu_timings", {}),
        "verdicts": {f"{r['number']} {r['claim'][:40]}": r["verdict"] for r in report["rows"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["none", "random:bert-base"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=REPO / "bench/results/replicate.json")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each report in KEEP/<model> (default: a temporary folder)")
    args = parser.parse_args()
    results = []
    for model in args.models:
        if args.keep is not None:
            out = args.keep / model.replace(":", "-").replace("/", "-")
            result = run_one(model, args.threads, out)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                result = run_one(model, args.threads, Path(tmp))
        results.append(result)
        print(f"{model}: {result['wall_s']:.0f} s wall, {result['cpu_s']:.0f} s CPU, "
              f"peak {result['peak_rss_mib']:.0f} MiB", flush=True)  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "threads": args.threads,
        "runs": results,
    }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
