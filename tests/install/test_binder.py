"""The two cloud doors of the book: Binder (repo2docker) and Colab.

Binder builds `binder/` with repo2docker: it must carry the same pins as the root
`requirements.txt` (only torch differs, as the CPU build), Python 3.11, and install
`mha_lib`; every notebook may import only what those requirements declare. Colab gets
nothing but the notebook, so each notebook starts with the guard cell that installs the
library from the repository named in `_config.yml`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
# Installed from the repository itself (binder/postBuild), or read from its scripts/ folder.
FIRST_PARTY = {"mha_lib"} | {p.stem for p in (REPO / "scripts").glob("*.py")}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name: "Scikit_Learn" and "scikit-learn" are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> tuple[dict[str, str], list[str]]:
    """`name -> version` for every `name==version` line, and the option lines."""
    pins: dict[str, str] = {}
    options: list[str] = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)", line)
        assert match, f"{path.name}: '{raw}' is not pinned as name==version"
        pins[canonical(match[1])] = match[2]
    return pins, options


def notebook_code(path: Path) -> list[str]:
    """The code cells of a notebook, IPython magics and shell escapes blanked out."""
    cells = json.loads(path.read_text())["cells"]
    return [
        "\n".join(
            "" if line.lstrip().startswith(("%", "!")) else line
            for line in "".join(cell["source"]).splitlines()
        )
        for cell in cells
        if cell["cell_type"] == "code"
    ]


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every absolute import in the notebook's code cells."""
    names: set[str] = set()
    for source in notebook_code(path):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def repository_url() -> str:
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    return config["repository"]["url"].rstrip("/")


# --- Binder -------------------------------------------------------------------------------


def test_binder_pins_match_root_requirements_except_cpu_torch():
    root, root_options = read_pins(REPO / "requirements.txt")
    binder, binder_options = read_pins(REPO / "binder" / "requirements.txt")
    assert set(binder) == set(root), (
        f"only in requirements.txt: {sorted(set(root) - set(binder))}; "
        f"only in binder/requirements.txt: {sorted(set(binder) - set(root))}"
    )
    differ = {n: (root[n], binder[n]) for n in root if n != "torch" and root[n] != binder[n]}
    assert not differ, f"pins differ (root, binder): {differ}"
    assert binder["torch"] == f"{root['torch'].split('+')[0]}+cpu", (
        f"binder torch must be the CPU build of {root['torch']}, got {binder['torch']}"
    )
    assert f"--extra-index-url {CPU_INDEX}" in binder_options, binder_options
    assert not [o for o in root_options if "download.pytorch.org" in o], "root pins a torch index"


def test_binder_runtime_is_python_311_as_the_project():
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    assert sys.version_info[:2] == (3, 11), "the project's .venv must be Python 3.11 as Binder"


def test_binder_postbuild_installs_mha_lib():
    post_build = REPO / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable"
    commands = [
        line.strip()
        for line in post_build.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "python -m pip install --no-cache-dir --no-deps -e ." in commands, commands


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_imports_only_declared_dependencies(path):
    declared = set(read_pins(REPO / "binder" / "requirements.txt")[0])
    dists = importlib.metadata.packages_distributions()
    undeclared: dict[str, list[str]] = {}
    for module in sorted(imported_modules(path)):
        if module in sys.stdlib_module_names or module in FIRST_PARTY:
            continue
        providers = [canonical(d) for d in dists.get(module, [])]
        if not any(p in declared for p in providers):
            undeclared[module] = providers or ["<not installed>"]
    assert not undeclared, (
        f"{path.name} imports modules whose distribution is not pinned in requirements.txt "
        f"(module: providing distributions): {undeclared}"
    )


def test_imported_modules_sees_imports_in_every_form(tmp_path):
    """The import scanner itself: plain, dotted, from-imports, nested; relative ones skipped."""
    nb = {
        "cells": [
            {"cell_type": "code", "source": ["import a.b as c, d\n", "%matplotlib inline\n"]},
            {"cell_type": "markdown", "source": ["import not_code"]},
            {"cell_type": "code", "source": ["if x:\n    from e.f import g\nfrom . import h"]},
        ]
    }
    path = tmp_path / "scanner.ipynb"
    path.write_text(json.dumps(nb))
    assert imported_modules(path) == {"a", "d", "e"}


@pytest.fixture(scope="module")
def repo2docker_dockerfile() -> str:
    """The Dockerfile repo2docker would build for this repository (dry run, no Docker)."""
    exe = shutil.which("jupyter-repo2docker", path=str(Path(sys.executable).parent))
    if exe is None:
        message = "jupyter-repo2docker is not installed (it is pinned in requirements-dev.txt)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    proc = subprocess.run(
        [exe, "--no-build", "--debug", "--no-run", str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_repo2docker_uses_binder_folder_python_311_and_installs_mha_lib(repo2docker_dockerfile):
    text = repo2docker_dockerfile
    assert "environment.py-3.11-" in text or "python=3.11" in text, "not Python 3.11"
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in text
    assert '-r "requirements.txt"' not in text, "repo2docker picked the root requirements"
    assert "./binder/postBuild" in text, "repo2docker does not run binder/postBuild"


# --- Colab --------------------------------------------------------------------------------

GUARD_TEMPLATE = """# Colab only: fetch the book, install its library and work from its
# notebooks folder (chapters read ../scripts). Locally and on Binder: nothing.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    repo = "{url}"
    if not os.path.isdir("/content/book"):
        subprocess.run(
            ["git", "clone", "-q", "--depth", "1", repo, "/content/book"],
            check=True,
        )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "/content/book[bert]"],
        check=True,
    )
    os.chdir("/content/book/notebooks")
"""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_starts_with_the_colab_guard(path):
    """Same code as the guard (formatting aside), hidden from the site, installing from here."""
    first = json.loads(path.read_text())["cells"][0]
    assert first["cell_type"] == "code", f"{path.name}: first cell is not the Colab guard"
    assert "remove-cell" in first.get("metadata", {}).get("tags", []), (
        f"{path.name}: the Colab guard needs the tag remove-cell"
    )
    source = "".join(first["source"])
    assert source.startswith(GUARD_TEMPLATE.splitlines()[0]), f"{path.name}: guard comment"
    urls = re.findall(r"repo = [\"'](\S+?)[\"']", source)
    assert urls == [repository_url()], (
        f"{path.name}: the guard installs from {urls}, _config.yml names {repository_url()}"
    )
    expected = GUARD_TEMPLATE.format(url=repository_url())
    assert ast.dump(ast.parse(source)) == ast.dump(ast.parse(expected)), (
        f"{path.name}: the first cell differs from the Colab guard of CONTRIBUTING.md"
    )


# Distributions that Colab's default runtime already has: the guard need not install them.
COLAB_PREINSTALLED = {"numpy", "torch", "matplotlib", "scipy", "scikit-learn", "ipython", "tqdm"}


def guard_installs() -> set[str]:
    """Distributions the guard's `pip install /content/book[bert]` brings, per pyproject.toml
    (the core dependencies and the extra `bert`, with the project's own extras it names)."""
    from declared_dependencies import declared

    return declared(["bert"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_guard_installs_every_import(path):
    available = guard_installs() | COLAB_PREINSTALLED
    dists = importlib.metadata.packages_distributions()
    missing = {
        module: [canonical(d) for d in dists.get(module, [])]
        for module in sorted(imported_modules(path))
        if module not in sys.stdlib_module_names and module not in FIRST_PARTY
        if not any(canonical(d) in available for d in dists.get(module, []))
    }
    assert not missing, f"{path.name}: on Colab these imports would fail: {missing}"
