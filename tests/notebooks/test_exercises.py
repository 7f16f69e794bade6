"""Every chapter ends with graded exercises, and the code in their solutions runs and asserts.

A chapter's last section, `## Exercises`, is a numbered list. Each item opens with its grade
in bold — *Check your understanding*, *Change and predict*, or *Open question* — and every
chapter has one of each. Items that can be answered have a collapsed solution (a MyST
`:::{admonition} Solution` block with `:class: dropdown`); an open question has a collapsed
`Discussion`. Python code in a solution is self-contained and ends in `assert`s that state
the answer, so a change in the library that makes an answer wrong fails here.
"""

import json
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
GRADES = ("Check your understanding", "Change and predict", "Open question")
_ITEM = re.compile(r"(?m)^\d+\.\s+\*\*([^*]+?)\.\*\*")
_BLOCK = re.compile(r"(?ms)^\s*:::\{admonition\} (Solution|Discussion)\n\s*:class: dropdown\n")
_CODE = re.compile(r"(?ms)^([ \t]*)```python\n(.*?)^\1```")


def exercises(path: Path) -> str:
    """The Markdown of a chapter's exercise section (empty if it has none)."""
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    start = text.find("\n## Exercises")
    return "" if start < 0 else text[start:]


def solutions(path: Path) -> list[str]:
    """Each Python block in a chapter's exercise section, dedented."""
    found = []
    for indent, body in _CODE.findall(exercises(path)):
        lines = body.splitlines()
        found.append("\n".join(line[len(indent) :] for line in lines) + "\n")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_chapter_ends_with_graded_exercises(path):
    section = exercises(path)
    assert section, f"{path.name} has no '## Exercises' section"
    grades = _ITEM.findall(section)
    assert len(grades) >= 3, f"{path.name}: {len(grades)} exercises, at least three expected"
    assert set(grades) <= set(GRADES), f"{path.name}: unknown grades {set(grades) - set(GRADES)}"
    assert set(grades) == set(GRADES), f"{path.name} lacks {set(GRADES) - set(grades)}"
    blocks = _BLOCK.findall(section)
    answerable = sum(g != "Open question" for g in grades)
    assert blocks.count("Solution") >= answerable, f"{path.name}: a solution is missing"
    assert "Discussion" in blocks, f"{path.name}: the open question has no discussion"
    assert not section[section.find("## Exercises") + 1 :].count("\n## "), (
        f"{path.name}: the exercises must be the chapter's last section"
    )


CASES = [(p, i, code) for p in NOTEBOOKS for i, code in enumerate(solutions(p))]


@pytest.mark.parametrize(
    ("path", "index", "code"), CASES, ids=[f"{p.stem}-{i}" for p, i, _ in CASES]
)
def test_solution_code_runs_and_its_answer_holds(path, index, code, monkeypatch):
    assert "assert " in code, f"{path.name} solution {index} states no answer (no assert)"
    # Like the chapters' own cells (ruff, line length 79): fits the site's text column.
    long = [line for line in code.splitlines() if len(line) > 79]
    assert not long, f"{path.name} solution {index} has lines over 79 characters: {long}"
    monkeypatch.chdir(REPO / "notebooks")  # where a reader runs it
    monkeypatch.setitem(os.environ, "HF_HUB_OFFLINE", "1")
    exec(compile(code, f"{path.stem}-solution-{index}", "exec"), {"__name__": "__solution__"})


def test_the_extractor_finds_indented_solution_code():
    sample = (
        "\n## Exercises\n\n1. **Check your understanding.** Why?\n\n"
        "   :::{admonition} Solution\n   :class: dropdown\n   Because.\n\n"
        "   ```python\n   x = 1\n   assert x == 1\n   ```\n   :::\n"
    )
    assert _ITEM.findall(sample) == ["Check your understanding"]
    assert _BLOCK.findall(sample) == ["Solution"]
    assert _CODE.findall(sample) == [("   ", "   x = 1\n   assert x == 1\n")]
