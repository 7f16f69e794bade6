"""pyproject.toml declares what each part of the library imports, and nothing more is needed.

Two checks, each with a control that shows it can fail:

- every import in the library's source (lazy ones and those for type checkers included),
  parsed with `ast`, comes from a distribution that pyproject.toml declares for the
  module's part (the core dependencies and the part's extras, [tool.mha_lib.parts]);
- each part imports, in a fresh interpreter, while the import system finds no top-level
  package outside the standard library and the declared distributions (with what they
  require in turn): the state of `pip install .` plus that part's extras. In that
  interpreter an undeclared package is "not installed", so optional imports that torch or
  transformers guard with `try`/`find_spec` behave as they would on a user's machine.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from functools import cache

import pytest
from declared_dependencies import (
    REPO,
    declared,
    import_names,
    installed_closure,
    library_modules,
    part_of,
    parts,
    pyproject,
)

# Run in a fresh interpreter: hide every installed top-level package (found in site-packages)
# whose name is not in argv[1], then import each module of argv[2]; print the hidden
# packages that something asked for.
GATE = r"""
import importlib, json, os, sys, sysconfig
allowed = set(json.loads(sys.argv[1])) | {"mha_lib"}
allowed |= {name.partition(".")[0] for name in sys.modules}  # what started the interpreter
installed = tuple(
    os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("purelib", "platlib")
)
hidden = set()


def is_installed(spec):
    # Found in site-packages (a distribution), not in the standard library or the repository.
    places = [spec.origin, *(spec.submodule_search_locations or [])]
    return any(p and os.path.realpath(p).startswith(installed) for p in places)

class Gate:
    def __init__(self, finders):
        self.finders = finders

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        for finder in self.finders:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                if top not in allowed and is_installed(spec):
                    hidden.add(top)
                    return None  # as if not installed: the import fails, find_spec says None
                return spec
        return None

    def invalidate_caches(self):
        for finder in self.finders:
            if hasattr(finder, "invalidate_caches"):
                finder.invalidate_caches()

sys.meta_path[:] = [Gate(list(sys.meta_path))]
for module in json.loads(sys.argv[2]):
    importlib.import_module(module)
print(json.dumps(sorted(hidden)))
"""


def allowed_import_names(extras):
    """Top-level names the declared distributions (and their requirements) provide."""
    closure = installed_closure(extras)
    return sorted(name for name, dists in import_names().items() if dists & closure)


def run_gate(extras, modules):
    return subprocess.run(
        [sys.executable, "-c", GATE, json.dumps(allowed_import_names(extras)), json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


def modules_by_extras():
    """Library modules grouped by the extras their part declares (one interpreter each)."""
    groups = defaultdict(list)
    for module in library_modules():
        groups[tuple(sorted(parts()[part_of(module)]))].append(module)
    return dict(groups)


def imports_of(tree):
    """`(name, at module level?)` of every absolute import in a module.

    `from mha_lib.x import y` names `mha_lib.x.y` when that is a module of the library.
    An import inside a function, or under `if TYPE_CHECKING`, is not at module level:
    it runs only when that code is used (or never), but its package must still be declared.
    """
    modules = library_modules()
    found = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            lazy = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            if isinstance(child, ast.Import):
                found.extend((a.name, top) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                for alias in child.names:
                    inner = f"{child.module}.{alias.name}"
                    found.append((inner if inner in modules else child.module, top))
            visit(child, top and not lazy)

    visit(tree, True)
    return found


@cache
def needed_at_import(module):
    """Third-party top-level names that importing `module` imports, through the library's
    own modules (and the packages above them) that load with it."""
    modules = library_modules()
    todo, loaded, names = [module], set(), set()
    while todo:
        name = todo.pop()
        for package in (".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)):
            if package in loaded or package not in modules:
                continue
            loaded.add(package)
            for imported, at_top in imports_of(ast.parse(modules[package].read_text())):
                top = imported.partition(".")[0]
                if not at_top or top in sys.stdlib_module_names:
                    continue
                if top == "mha_lib":
                    todo.append(imported)
                else:
                    names.add(top)
    return frozenset(names)


def undeclared_imports(source, module):
    """What `module`'s source needs that its part does not declare, as messages: its own
    imports (lazy ones too), and what the library modules it imports at module level
    import in turn when they load."""
    mine = declared(parts()[part_of(module)])
    needs = []
    for name, at_top in imports_of(ast.parse(source)):
        top = name.partition(".")[0]
        if top == "mha_lib":
            if at_top:
                needs.extend((t, f" (through {name})") for t in sorted(needed_at_import(name)))
        elif top not in sys.stdlib_module_names:
            needs.append((top, ""))
    problems = []
    for top, through in dict.fromkeys(needs):
        dists = import_names().get(top)
        if not dists:
            problems.append(f"{module} imports {top}{through}: no installed distribution has it")
        elif not dists & mine:
            problems.append(
                f"{module} imports {top}{through} ({', '.join(sorted(dists))}), not declared"
            )
    return problems


def test_every_module_belongs_to_a_part_whose_extras_exist():
    extras = pyproject()["project"]["optional-dependencies"]
    for module in library_modules():
        for extra in parts()[part_of(module)]:
            assert extra in extras, f"{module}: part {part_of(module)} names extra {extra!r}"


@pytest.mark.parametrize("part", sorted(parts()))
def test_every_import_of_a_part_is_declared_for_it(part):
    problems = [
        problem
        for module, path in library_modules().items()
        if part_of(module) == part
        for problem in undeclared_imports(path.read_text(), module)
    ]
    assert not problems, "\n".join(problems)


def test_the_import_check_catches_an_undeclared_import():
    assert undeclared_imports("import torch, numpy\nimport json\n", "mha_lib.core.x") == []
    lazy = "def f():\n    import scipy\n"
    assert undeclared_imports(lazy, "mha_lib.core.x") == [
        "mha_lib.core.x imports scipy (scipy), not declared"
    ]
    assert undeclared_imports(lazy, "mha_lib.experiments.x") == []
    # A library module imported at load time brings its own imports along ...
    through = undeclared_imports("from mha_lib.experiments import training\n", "mha_lib.core.x")
    assert through == [
        "mha_lib.core.x imports tqdm (through mha_lib.experiments.training) (tqdm), not declared"
    ]
    # ... one imported inside a function only when that function runs.
    lazy_library = "def f():\n    import mha_lib.experiments.training\n"
    assert undeclared_imports(lazy_library, "mha_lib.core.x") == []


@pytest.mark.parametrize("extras", sorted(modules_by_extras()), ids=lambda e: "+".join(e) or "core")
def test_each_part_imports_with_only_what_it_declares(extras):
    modules = modules_by_extras()[extras]
    result = run_gate(extras, modules)
    assert result.returncode == 0, (
        f"importing {modules} with only the core and {list(extras)} installed failed:\n"
        + result.stderr[-3000:]
    )


def test_the_import_gate_refuses_what_the_core_does_not_declare():
    """The control: tqdm is installed here, but the core does not declare it."""
    assert "tqdm" in import_names()
    result = run_gate((), ["mha_lib.experiments.training"])
    assert result.returncode != 0
    assert "No module named 'tqdm'" in result.stderr
    assert run_gate(("experiments",), ["mha_lib.experiments.training"]).returncode == 0


def test_the_colab_install_brings_every_part():
    """The guard cell runs `pip install /content/book[bert]`: a chapter needs every part."""
    extras = pyproject()["project"]["optional-dependencies"]
    everything = set().union(*(declared([e]) for e in extras))
    assert declared(["bert"]) == everything
