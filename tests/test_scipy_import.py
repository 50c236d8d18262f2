"""kipopt._scipy: scipy.sparse imported without the numpy submodules scipy's array-API copy would load, with
numpy's names restored and every name of the copy still reachable. Each case runs in a fresh interpreter
(the import happens once per process)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import numpy
names, listed = list(numpy.__all__), sorted(dir(numpy))
from kipopt._scipy import sparse
LAZY = ("testing", "f2py", "polynomial", "ma")
module = sparse()
loaded = [name for name in LAZY if "numpy." + name in sys.modules]
import scipy._lib.array_api_compat.numpy as copy
product = (module.csr_matrix([[1.0, 2.0], [0.0, 3.0]]) @ numpy.array([1.0, 1.0])).tolist()
reached = all(getattr(copy, name) is getattr(numpy, name) for name in LAZY)
print(json.dumps({"loaded": loaded, "same_names": names == list(numpy.__all__), "same_dir": listed == sorted(dir(numpy)),
                  "product": product, "reached": reached, "again": sparse() is module,
                  "missing": hasattr(copy, "no_such_name")}))
"""

FAILING = """
import json, sys
import numpy
names = list(numpy.__all__)

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy.sparse":
            raise ImportError("refused")

sys.meta_path.insert(0, Refuse())
from kipopt._scipy import sparse
try:
    sparse()
    raised = False
except ImportError:
    raised = True
print(json.dumps({"raised": raised, "same_names": names == list(numpy.__all__)}))
"""


def _run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_scipy_sparse_comes_without_numpys_unused_submodules():
    seen = _run(PROBE)
    assert seen["loaded"] == []                       # testing, f2py, polynomial, ma: not loaded by the import
    assert seen["same_names"] and seen["same_dir"]    # numpy's __all__ and dir() as they were
    assert seen["product"] == [3.0, 3.0]
    assert seen["reached"]                            # the copy hands the skipped names to numpy
    assert seen["again"] and not seen["missing"]


def test_numpys_names_are_restored_when_the_import_fails():
    assert _run(FAILING) == {"raised": True, "same_names": True}
