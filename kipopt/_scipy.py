"""``scipy.sparse`` imported without the numpy submodules scipy's array-API layer would load for nothing.

scipy (1.17) vendors ``array_api_compat``, whose numpy namespace copies every public name of numpy when it
is imported (``from numpy import *``, then ``getattr`` over ``dir(numpy)``). numpy loads some of its
submodules only when first asked for (``testing``, ``f2py``, ``polynomial``, ``ma``), so that copy loads
them all. Measured here: ``import scipy.sparse`` took 0.112-0.125 s, of which 0.07 s loaded those four. The
consumers' exact method imports scipy.sparse on the critical path of a 1-second target
(:func:`~kipopt.formulations.consumers.level_bounds.tree`), and kipopt never uses them through scipy.

So the first import goes through :func:`sparse`: for its duration those names are left out of numpy's
``__all__`` and ``dir()``, and the copy then gets a module ``__getattr__`` (PEP 562) that hands any name
it lacks to numpy, which loads the submodule on first use, as numpy itself does. Everything stays
reachable; only the moment it is loaded moves. With another scipy or numpy (different names, the copy made
otherwise) the import is an ordinary one. The first import may run in the level tree's start thread; kipopt
forks only once such threads have ended (:func:`kipopt.deadline.beside`), so no child starts with numpy's
names hidden or the lock held.
"""

from __future__ import annotations

import sys
from types import ModuleType

from kipopt._shared import ForkSafeLock

LAZY = ("testing", "f2py", "polynomial", "ma")
"""numpy's submodules the copy would load and scipy.sparse does not need."""

COMPAT = "scipy._lib.array_api_compat.numpy"
"""scipy's copy of numpy's namespace."""

_LOCK = ForkSafeLock()


def sparse() -> ModuleType:
    """``scipy.sparse``, imported the first time as the module docstring says (thread-safe: numpy's names
    are hidden from the other threads' ``dir(numpy)`` for those few hundredths of a second only, and
    restored whatever the import raises)."""
    if "scipy.sparse" not in sys.modules:
        with _LOCK:
            if "scipy.sparse" not in sys.modules and COMPAT not in sys.modules:
                _import_hiding()
    import scipy.sparse  # imported by now: the import system still waits for a thread mid-import
    return scipy.sparse


def _import_hiding() -> None:
    """``import scipy.sparse`` with :data:`LAZY` left out of numpy's names meanwhile, then :func:`_forward`."""
    import numpy

    hidden = frozenset(name for name in LAZY if f"numpy.{name}" not in sys.modules)
    names, listed = numpy.__all__, numpy.__dict__.get("__dir__")
    numpy.__all__ = [name for name in names if name not in hidden]
    if listed is not None:
        numpy.__dir__ = lambda: [name for name in listed() if name not in hidden]
    try:
        import scipy.sparse  # noqa: F401
    finally:
        numpy.__all__ = names
        if listed is not None:
            numpy.__dir__ = listed
    _forward(sys.modules.get(COMPAT), numpy)


def _forward(copy: ModuleType | None, numpy: ModuleType) -> None:
    """Names the copy lacks are looked up in numpy on first use (a copy with its own ``__getattr__`` is left
    alone)."""
    if copy is None or "__getattr__" in copy.__dict__:
        return

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {copy.__name__!r} has no attribute {name!r}")
        return getattr(numpy, name)

    copy.__getattr__ = __getattr__


def csgraph() -> ModuleType:
    """``scipy.sparse.csgraph``, after :func:`sparse`."""
    sparse()
    import scipy.sparse.csgraph
    return scipy.sparse.csgraph
