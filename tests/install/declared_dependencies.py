"""What pyproject.toml declares: each extra's distributions, and which part needs which extra.

Shared by tests/install/test_packaging.py (the library's imports against the declarations) and
tests/install/test_binder.py (what the Colab guard's `pip install /content/book[bert]` brings).
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "mha_lib"


def canonical(name: str) -> str:
    """PEP 503 normalised distribution name: "Scikit_Learn" and "scikit-learn" are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def requirements(extras: Iterable[str] = ()) -> list[Requirement]:
    """The core dependencies and those of `extras`, the project's own extras followed."""
    project = pyproject()["project"]
    own = canonical(project["name"])
    optional = project.get("optional-dependencies", {})
    found: list[Requirement] = []
    todo, seen = list(extras), set()
    for text in project.get("dependencies", []):
        found.append(Requirement(text))
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        if extra not in optional:
            raise KeyError(f"pyproject.toml declares no extra {extra!r}")
        seen.add(extra)
        for text in optional[extra]:
            req = Requirement(text)
            if canonical(req.name) == own:
                todo.extend(req.extras)  # mha_lib[other,extras]: theirs too
            else:
                found.append(req)
    return found


def declared(extras: Iterable[str] = ()) -> set[str]:
    """Canonical names of the distributions the core and `extras` declare directly."""
    return {canonical(r.name) for r in requirements(extras)}


def installed_closure(extras: Iterable[str] = ()) -> set[str]:
    """The declared distributions and, as installed here, everything they require in turn."""
    todo = [(canonical(r.name), frozenset(r.extras)) for r in requirements(extras)]
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed (e.g. a platform-only dependency): nothing to import
        found.add(name)
        for text in requires:
            req = Requirement(text)
            if req.marker is not None and not any(
                req.marker.evaluate({"extra": e}) for e in (*wanted, "")
            ):
                continue
            todo.append((canonical(req.name), frozenset(req.extras)))
    return found


@cache
def import_names() -> dict[str, frozenset[str]]:
    """Top-level import name → canonical names of the installed distributions providing it."""
    return {
        name: frozenset(canonical(d) for d in dists)
        for name, dists in importlib.metadata.packages_distributions().items()
    }


def parts() -> dict[str, list[str]]:
    """`{part: [extras]}` from `[tool.mha_lib.parts]`."""
    return pyproject()["tool"]["mha_lib"]["parts"]


def part_of(module: str) -> str:
    """The part a module belongs to: the longest part name that is it or a package above it."""
    matches = [p for p in parts() if module == p or module.startswith(p + ".")]
    if not matches:
        raise KeyError(f"{module} belongs to no part of [tool.mha_lib.parts]")
    return max(matches, key=len)


def library_modules() -> dict[str, Path]:
    """Every module of the library by dotted name, from the files (nothing is imported)."""
    modules = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        parts_ = path.relative_to(REPO).with_suffix("").parts
        if parts_[-1] == "__init__":
            parts_ = parts_[:-1]
        modules[".".join(parts_)] = path
    return modules
