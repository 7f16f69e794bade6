"""The committed initialisation study (scripts/ch7_init.py) reproduces from its own code."""

import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="module")
def ch7_init():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import ch7_init
    finally:
        sys.path.remove(str(SCRIPTS))
    return ch7_init


def test_cached_run_reproduces(ch7_init):
    cached = json.loads((SCRIPTS / "results" / "ch7_init.json").read_text())["runs"]
    entry = next(r for r in cached if r["init_scale"] == 16.0 and r["seed"] == 1)
    live = ch7_init.run(16.0, 1, steps=entry["config"]["steps"])
    assert live["result"]["eval_accuracy"] == entry["result"]["eval_accuracy"]
    assert live["before"]["state"] == entry["before"]["state"]


def test_grid_covers_every_scale_and_seed(ch7_init):
    cached = json.loads((SCRIPTS / "results" / "ch7_init.json").read_text())["runs"]
    short = {(r["init_scale"], r["seed"]) for r in cached if r["config"]["steps"] == 600}
    assert short == {(s, seed) for s in ch7_init.SCALES for seed in ch7_init.SEEDS}
