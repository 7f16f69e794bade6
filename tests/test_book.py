"""The book: every chapter executes in a fresh kernel and the site builds with warnings as errors.

The `built_book` fixture (conftest.py) runs ``jupyter-book build -W -n --keep-going`` into a
temporary directory with an empty execution cache, so each notebook runs top to bottom in its
own fresh kernel; an exception in any cell, any stderr output, an unresolved glue key or a
broken cross-reference fails the build and therefore these tests.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def toc_files() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def test_every_notebook_is_a_chapter_in_the_toc():
    listed = set(toc_files())
    missing = [nb.name for nb in NOTEBOOKS if f"notebooks/{nb.stem}" not in listed]
    assert not missing, f"notebooks not in _toc.yml: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    dirty = [i for i, c in enumerate(cells) if c.get("outputs") or c.get("execution_count")]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; the book executes notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_prose_numbers_are_glued_not_typed(path):
    """A measured number in prose must come from `glue`; flag decimals typed into Markdown."""
    cells = json.loads(path.read_text())["cells"]
    typed = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        text = re.sub(r"\{glue:\w+\}`[^`]*`", "", text)  # glued values
        text = re.sub(r"\$[^$]*\$|`[^`]*`|\{cite\}`[^`]*`", "", text)  # maths, code, citations
        typed += re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text)
    assert not typed, f"{path.name}: decimal numbers typed into prose: {typed}"


@pytest.mark.book
def test_every_toc_page_is_built(built_book):
    missing = [f for f in toc_files() if not (built_book / f"{f}.html").is_file()]
    assert not missing, f"pages missing from the built site: {missing}"


@pytest.mark.book
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_executed_and_rendered_its_figures(built_book, path):
    page = (built_book / "notebooks" / f"{path.stem}.html").read_text()
    assert "Traceback" not in page, f"{path.name}: a traceback is rendered on the page"
    assert "{glue:" not in page, f"{path.name}: a glue role was not resolved (check its backticks)"
    n_code = sum(c["cell_type"] == "code" for c in json.loads(path.read_text())["cells"])
    assert page.count("cell_output") >= 1 or n_code == 0, f"{path.name}: no executed output"
    uses_show = "show(" in path.read_text()
    if uses_show:
        assert "data:image/png;base64," in page, f"{path.name}: figures did not render"
