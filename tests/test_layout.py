"""The layout by family (one subpackage per family in ``formulations/`` and ``solvers/``) changed no name.

The move regrouped modules; the registry's method and rule names, every public
import the README and docs show, and the absence of import circles are what a
user and the other issues rely on.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import networkx as nx
import pytest

from kipopt import methods as registry

ROOT = Path(__file__).resolve().parent.parent

METHODS = {
    "tasks": ["exact.balanced_subtopology", "exact.joint", "exact.lag_active", "exact.rack_active",
              "exact.rack_standby", "exact.tag_standby", "kafka.ha", "kafka.rack_active", "kafka.rack_standby",
              "kafka.sticky", "kafka.tag_standby"],
    "replicas": ["exact.spread", "kafka.adminutils", "kafka.striped"],
    "consumers": ["exact.balanced", "exact.range", "kafka.cooperative_sticky", "kafka.range",
                  "kafka.server_range", "kafka.server_uniform"],
}
RULES = {
    "tasks": ["balanced_subtopology", "joint", "lag_active", "rack_active", "rack_standby", "tag_standby"],
    "replicas": ["spread"],
    "consumers": ["balanced", "range"],
}


@pytest.mark.parametrize("family", registry.FAMILIES)
def test_every_name_the_registry_had_before_the_move_resolves_in_its_family(family):
    """Method and rule names are the command line's and the JSON's contract: the move keeps them all."""
    for name in METHODS[family]:
        assert registry.get_method(name, family).family == family
    for name in RULES[family]:
        assert registry.get_rule(name, family).family == family
    assert set(METHODS[family]) <= {m for m, x in registry.methods().items() if x.family == family}
    assert set(RULES[family]) <= {r for r, x in registry.rules().items() if x.family == family}


def _family_modules(side: str, family: str) -> list[str]:
    package = importlib.import_module(f"kipopt.{side}.{family}")
    return [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]


@pytest.mark.parametrize("family", registry.FAMILIES)
def test_every_provider_of_a_family_is_listed_and_registers_only_that_family(family):
    """A module that defines ``METHODS`` or ``RULES`` but is missing from its package's ``PROVIDERS`` would
    be invisible to the command line; one that registers another family's method sits in the wrong room."""
    listed = set(registry.family_providers(family))
    for side in ("formulations", "solvers"):
        for name in _family_modules(side, family):
            module = importlib.import_module(name)
            provides = [*getattr(module, "METHODS", ()), *getattr(module, "RULES", ())]
            assert bool(provides) == (name in listed), name
            assert {x.family for x in provides} <= {family}, name


def _readme_imports() -> list[str]:
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    found = re.findall(r"^\s*(?:>>> )?(from kipopt[\w.]* import [\w, ]+|import kipopt[\w.]*)", text, re.M)
    assert found, "the README and docs show kipopt imports"
    return sorted(set(found))


@pytest.mark.parametrize("statement", _readme_imports())
def test_every_public_import_the_docs_show_resolves(statement):
    exec(statement, {})


def _import_graph() -> nx.DiGraph:
    """Every import between kipopt's own modules, wherever it stands in the file (function-level too)."""
    roots = {"kipopt": ROOT / "kipopt", "kipopt.formulations": ROOT / "formulations",
             "kipopt.solvers": ROOT / "solvers", "kipopt.datasets": ROOT / "datasets"}
    modules: dict[str, tuple[Path, bool]] = {}
    for package, folder in roots.items():
        for path in folder.rglob("*.py"):
            parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
            modules[".".join([package, *parts])] = (path, path.name == "__init__.py")
    graph = nx.DiGraph()
    for name, (path, is_package) in modules.items():
        base = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                head = base
                for _ in range(max(node.level - 1, 0)):
                    head = head.rpartition(".")[0]
                module = (head + ("." + node.module if node.module else "")) if node.level else (node.module or "")
                targets = [module, *(f"{module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                # a module importing its own package's __init__ is not a circle of the kind that bites
                if target in modules and target != name and not name.startswith(target + "."):
                    graph.add_edge(name, target)
    return graph


def test_no_import_circles():
    """Circles (``batch`` <-> ``cli``, the grouped standby model <-> its start, the sticky driver <-> its
    builders) forced imports into function bodies; none is left, lazy imports included."""
    graph = _import_graph()
    assert graph.number_of_nodes() > 50
    assert list(nx.simple_cycles(graph)) == []


def _declared_packages() -> tuple[dict[str, str], set[str]]:
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return setuptools["package-dir"], set(setuptools["packages"])


def test_every_package_folder_is_in_the_distribution():
    """A wheel holds only the packages pyproject lists: a folder left out installs nowhere but in editable mode."""
    folders, declared = _declared_packages()
    found = set()
    for name, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *parts)))
    assert found - declared == set()
    for package in declared - found:  # a data folder (no __init__.py) must still exist
        root = next(name for name in sorted(folders, key=len, reverse=True) if package.startswith(name))
        assert (ROOT / folders[root] / Path(*package[len(root):].split(".")[1:])).is_dir(), package
