"""The address space this process may use, when capped (``ulimit -v``, RLIMIT_AS or RLIMIT_DATA): libraries
that end the process when an allocation fails are kept from starting without room.

* orjson ends the process with SIGSEGV (:func:`kipopt._read.orjson_usable` uses Python's parser instead);
* numpy's OpenBLAS maps about 80 MB when it loads and, short of it, prints "Memory allocation still failed
  after 10 retries, giving up" and calls ``exit(1)``: kipopt's exit status for "no" (a check that failed),
  with no word of memory; scipy's own OpenBLAS (loaded by ``scipy.linalg``) retries for ever instead.
  :func:`guard_imports` makes those imports a :class:`MemoryError` when the room is short, which the command
  line reports as its one memory line (exit 2).
"""

from __future__ import annotations

import errno
import importlib.abc
import re
import sys

NEEDS = {"numpy": 88 * 2**20, "scipy.linalg": 72 * 2**20}
"""Address space a first import needs, its BLAS's buffers included (measured with one BLAS thread: numpy 81 MB,
``scipy.linalg``, which loads scipy's own OpenBLAS, 69 MB; short of it scipy's OpenBLAS retries an allocation
for ever, holding the GIL: SIGTERM did not end it in 25 minutes)."""


def cap() -> int | None:
    """The smallest finite soft limit on this process's address space or data, in bytes, or ``None``."""
    try:
        import resource
    except ImportError:  # no rlimits on this platform
        return None
    limits = [resource.getrlimit(kind)[0] for kind in (resource.RLIMIT_AS, resource.RLIMIT_DATA)]
    finite = [limit for limit in limits if limit != resource.RLIM_INFINITY]
    return min(finite) if finite else None


def headroom() -> int | None:
    """Bytes of address space left under :func:`cap` (``None`` when uncapped or unknown)."""
    limit = cap()
    if limit is None:
        return None
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            found = re.search(r"^VmSize:\s+(\d+) kB", handle.read(), re.MULTILINE)
    except OSError:
        return None
    return None if found is None else limit - int(found.group(1)) * 1024


class _ImportGuard(importlib.abc.MetaPathFinder):
    """Raise :class:`MemoryError` at the first import of a module of :data:`NEEDS` when the room left is less
    than it needs."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - the import system's signature
        need = NEEDS.get(name)
        if need is not None:
            left = headroom()
            if left is not None and left < need:
                raise MemoryError(f"{name} needs about {need >> 20} MB of address space to load; "
                                  f"{max(0, left) >> 20} MB are left under this process's limit")
        return None


def guard_imports() -> None:
    """Install the guard of :data:`NEEDS` (once) when the address space is capped and numpy is not loaded."""
    if "numpy" in sys.modules or cap() is None or any(isinstance(f, _ImportGuard) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _ImportGuard())


def memory_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is memory running out in another guise: a library that cannot be mapped (a late
    import under ``ulimit -v``), no memory for a thread's stack, an allocation refused with ENOMEM, a C
    extension's ``SystemError`` under a capped address space ("error return without exception set"), a
    thread HiGHS cannot start under a cap (C++ ``std::system_error``, EAGAIN). An exception whose text cannot
    be had (py4j's, once Spark's JVM is gone) is not one."""
    try:
        text = str(exc)
    except Exception:
        return False
    if isinstance(exc, ImportError):
        return "failed to map segment" in text or "Cannot allocate memory" in text
    if isinstance(exc, RuntimeError):
        return "can't start new thread" in text or (
            "Resource temporarily unavailable" in text and cap() is not None)
    if isinstance(exc, SystemError):  # a C extension's allocation that failed without saying so
        return cap() is not None
    return isinstance(exc, OSError) and exc.errno == errno.ENOMEM
