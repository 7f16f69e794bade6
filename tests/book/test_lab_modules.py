"""The lab's pure ES modules (lab/strings.js, heads.js, maps.js, pointer.js) under node.

On hand-checked cases, which live beside this file in `lab_js/*.test.mjs` (node's own test
runner): the messages and `t()` (a missing key or placeholder throws, naming it), the head
switches and every way a reader changes them (clicks, layers, presets, `#preset=` links,
arrow keys, chapter 6's menu following them), the maps' numbers (colour scale and its table,
layout, change, a long text's maps pooled to their on-screen pixels, text alternative) and what
a pointer means (a tap shows, a click or a key switches; a scroll under a still pointer is no
move). The colour scale is also checked here against matplotlib's own viridis. Marked
`book`: it needs node, which the book's CI job installs with npm.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from node_js import node_executable

pytestmark = pytest.mark.book

REPO = Path(__file__).resolve().parents[2]
CASES = sorted((Path(__file__).parent / "lab_js").glob("*.test.mjs"))
# maps.js's 17-stop viridis, interpolated linearly, against matplotlib's 256-entry table: the
# stops are matplotlib's to the unit (hex); between them the curve bends, and matplotlib picks
# the nearest of its entries (4.6 units at worst, measured).
VIRIDIS_TOLERANCE = 6.0  # of 255, per channel


def test_every_module_has_cases() -> None:
    names = {case.name.removesuffix(".test.mjs") for case in CASES}
    assert names >= {"strings", "heads", "maps", "pointer"}, names


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_module_cases_under_node(case: Path) -> None:
    done = subprocess.run(
        [node_executable(), "--test", "--test-reporter=spec", str(case)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, f"{case.name} failed under node:\n{done.stdout}\n{done.stderr}"
    assert "# fail 0" in done.stdout or "ℹ fail 0" in done.stdout, done.stdout


def test_colour_scale_is_matplotlibs_viridis() -> None:
    import matplotlib
    import numpy as np

    weights = np.linspace(0.0, 1.0, 257)
    script = (
        "const { colour } = await import(process.argv[1]);"
        "const ws = JSON.parse(process.argv[2]);"
        "console.log(JSON.stringify(ws.map(colour)));"
    )
    done = subprocess.run(
        [
            node_executable(),
            "--input-type=module",
            "-e",
            script,
            "--",
            (REPO / "lab" / "maps.js").as_uri(),
            json.dumps(weights.tolist()),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    page = np.array(json.loads(done.stdout))
    want = matplotlib.colormaps["viridis"](weights)[:, :3] * 255
    worst = float(np.abs(page - want).max())
    assert worst <= VIRIDIS_TOLERANCE, f"the lab's colours differ from viridis by {worst:.2f}/255"
    # The comparison can fail: another map (magma) is far off.
    other = matplotlib.colormaps["magma"](weights)[:, :3] * 255
    assert float(np.abs(page - other).max()) > 10 * VIRIDIS_TOLERANCE
