"""Process-wide state that kipopt's threads share: a lock a forked child gets afresh, and a setting the first
of several overlapping blocks makes and the last undoes.

Methods may run in several threads at once (a library's callers, the level tree's start beside the dec-min
stages), and kipopt forks children under deadlines. Two things follow for state every thread sees (file
descriptor 1, the warning filters, the list of threads a fork waits for):

* a block that saves such a setting on entry and restores it on exit is wrong as soon as two overlap: the
  second saves the first's change as "before" and, leaving last, restores it for good;
* a lock another thread holds at a fork stays held in the child, which has no such thread.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class ForkSafeLock:
    """A ``threading.Lock`` (as a context manager) made afresh in every forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> "ForkSafeLock":
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class SharedSetting(Generic[T]):
    """A setting of the whole process held while any thread is inside one of its blocks: the first block in
    makes it (``make()``, whose result ``undo`` takes back), the last one out undoes it."""

    def __init__(self, make: Callable[[], T], undo: Callable[[T], None]) -> None:
        self._make, self._undo = make, undo
        self._lock = ForkSafeLock()
        self._inside = 0
        self._saved: T | None = None

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if not self._inside:
                self._saved = self._make()
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if not self._inside:
                    saved, self._saved = self._saved, None
                    self._undo(saved)
