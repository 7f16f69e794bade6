"""`python -m mha_lib.replicate MODEL [--out DIR] [--device auto]`: see `mha_lib.replicate`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch

from mha_lib.replicate.measures import MEASURES
from mha_lib.replicate.models import DEFAULT_SEED, UnsupportedModelError, load_model
from mha_lib.replicate.report import run


def pick_device(name: str) -> torch.device:
    """`auto`: the GPU when there is one, else the CPU; anything else as torch reads it."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, run the report, print where it went; 2 for a refused model."""
    parser = argparse.ArgumentParser(
        prog="python -m mha_lib.replicate",
        description="The book's real-model verdicts on a BERT-family model.",
    )
    parser.add_argument(
        "model", nargs="?", default=None,
        help="a local folder, a hub name (may download unless HF_HUB_OFFLINE=1), "
        "'random:bert-base' or 'random:LxHxD' (the negative control); default: packaged MiniLM",
    )  # fmt: skip
    parser.add_argument("--out", default="replicate-report", help="folder for the report")
    parser.add_argument("--device", default="auto", help="auto (GPU if any), cpu, cuda, ...")
    parser.add_argument("--random-init", action="store_true",
                        help="the model's config and tokenizer with random weights (its "
                        "negative control); with no model: random:bert-base")  # fmt: skip
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of a random model")
    parser.add_argument("--only", nargs="+", choices=list(MEASURES), default=None,
                        help="run these measurements only")  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    spec, random_init = args.model, args.random_init
    if random_init and spec is None:
        spec, random_init = "random:bert-base", False
    try:
        loaded = load_model(
            spec, device=pick_device(args.device), seed=args.seed, random_init=random_init
        )
    except UnsupportedModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    report = run(loaded, args.out, measures=args.only, quiet=args.quiet)
    print(f"{report.path} ({report.seconds:.0f} s, peak {report.peak_rss_mib:.0f} MiB)")
    for r in report.rows:
        print(f"  {r.number:>4}  {r.verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
