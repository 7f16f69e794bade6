"""book/_ext/site_assets.py's pointing of the Chinese lab page at the English site's lab files,
on a hand-made page: the link is exactly one site up, however often the build runs over it (an
incremental build finds the page already pointed there, when Sphinx did not write it again)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "book" / "_ext"))

from site_assets import share_lab_files  # noqa: E402
from sphinx.errors import ExtensionError  # noqa: E402

PAGE = '<script src="../_static/lab/lab.js"></script><link href="../_static/lab/lab.css">'
SHARED = (
    '<script src="../../_static/lab/lab.js"></script><link href="../../_static/lab/lab.css">'
)


def test_the_lab_page_points_one_site_up_once_and_stays_there(tmp_path: Path) -> None:
    page = tmp_path / "lab.html"
    page.write_text(PAGE)
    share_lab_files(page, "../", depth=1)
    assert page.read_text() == SHARED
    share_lab_files(page, "../", depth=1)  # a second build over the same page
    assert page.read_text() == SHARED


def test_a_page_without_lab_files_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "lab.html"
    page.write_text("<p>no lab here</p>")
    with pytest.raises(ExtensionError, match="names no _static/lab/"):
        share_lab_files(page, "../", depth=1)
