"""Every docstring example in the installed package runs, under its real ``kipopt.*`` name.

(Collecting ``formulations/`` with pytest's ``--doctest-modules`` would import
it as a top-level ``formulations`` package, which it is not.)
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import kipopt
import kipopt.datasets
import kipopt.formulations
import kipopt.solvers


def _modules() -> list[str]:
    names = {"kipopt"}
    for package in (kipopt, kipopt.formulations, kipopt.solvers, kipopt.datasets):
        names.add(package.__name__)
        names.update(m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."))
    return sorted(n for n in names if not n.endswith("__main__"))


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
