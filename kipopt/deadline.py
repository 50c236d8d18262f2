"""One time budget for a whole run: a :class:`Deadline` made where the run starts and passed down.

Kept free of heavy imports (no numpy, no HiGHS) so the registry and the
command line can make one; ``kipopt.formulations.highs`` re-exports it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from ._shared import ForkSafeLock

T = TypeVar("T")
U = TypeVar("U")

MIN_SOLVER_SECONDS = 0.01
"""The least time limit handed to HiGHS (it rejects 0); an expired deadline still gets this much."""


@dataclass(frozen=True)
class Deadline:
    """An instant on ``time.perf_counter()``'s clock by which a whole run must end (``None``: never).

    Made once where the run starts (the command line starts it before reading
    the instance) and passed down, so model building and every solve share one
    budget: each solve gets :meth:`remaining`, not the full limit again.

    >>> Deadline.never().remaining() is None, Deadline.after(None).expired
    (True, False)
    >>> d = Deadline.after(60.0); 59 < d.remaining() <= 60, d.expired
    (True, False)
    >>> Deadline.after(-1.0).expired
    True
    """

    at: float | None = None

    @staticmethod
    def never() -> Deadline:
        return Deadline(None)

    @staticmethod
    def after(seconds: float | None, start: float | None = None) -> Deadline:
        """``seconds`` from ``start`` (default now); ``None`` seconds: no deadline."""
        if seconds is None:
            return Deadline(None)
        return Deadline((time.perf_counter() if start is None else start) + seconds)

    def remaining(self) -> float | None:
        """Seconds left (may be negative), or ``None`` without a deadline."""
        return None if self.at is None else self.at - time.perf_counter()

    @property
    def expired(self) -> bool:
        return self.at is not None and time.perf_counter() >= self.at

    def limit(self, time_limit: float | None = None) -> float | None:
        """The time limit for one solve: the smaller of ``time_limit`` and what is left (at least
        :data:`MIN_SOLVER_SECONDS`)."""
        left = self.remaining()
        if left is None:
            return time_limit
        left = max(MIN_SOLVER_SECONDS, left)
        return left if time_limit is None else min(time_limit, left)


_CORES: int | None = None


def cores() -> int:
    """How many children this process may keep busy at once (the level tree's leaf LPs): the cores it may
    run on (its CPU affinity where the platform says), or the share :func:`share_cores` gave it.

    >>> cores() >= 1
    True
    """
    if _CORES is not None:
        return _CORES
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def share_cores(count: int) -> None:
    """Give this process ``count`` cores of its machine (at least one): a ``--batch`` worker, one of several
    that share the cores, gets its part, so that its solves do not each start children for every core."""
    global _CORES
    _CORES = max(1, int(count))


_BESIDE: list[Any] = []   # the threads :func:`beside` started (the finished ones dropped at its next call)
_BESIDE_LOCK = ForkSafeLock()
"""Guards :data:`_BESIDE`: methods run in several threads at once each start threads beside, and a list
rebuilt by two at once would drop one of them (a fork would then not wait for it)."""


def beside(fn: Callable[[], None], name: str) -> Any:
    """``fn()`` started in a daemon thread beside this one (HiGHS releases the GIL while it solves, so two
    solves use two cores); the thread is returned, to be joined. Every fork (:func:`call_before` and the
    calls built on it) first waits for such threads to end: a child inherits the memory of every thread
    but runs only one, so a lock the other holds (HiGHS' scheduler, an allocator's) would stay locked in it.

    >>> out = []; beside(lambda: out.append(6 * 7), "doc").join(); out
    [42]
    """

    thread = threading.Thread(target=fn, name=name, daemon=True)
    with _BESIDE_LOCK:  # started and listed at once: a fork never misses it, never joins it unstarted
        thread.start()
        _BESIDE[:] = [t for t in _BESIDE if t.is_alive()] + [thread]
    return thread


def _wait_beside() -> None:
    """Join the threads :func:`beside` started (all but the calling one) before a fork."""

    with _BESIDE_LOCK:
        started = list(_BESIDE)
    for thread in started:
        if thread is not threading.current_thread():
            thread.join()


def call_before(deadline: Deadline, fn: Callable[[], T]) -> T | None:
    """``fn()`` in a forked child that is killed when ``deadline`` passes: its result, or ``None`` if it did
    not finish in time (or died).

    For native work that does not watch the clock itself: HiGHS honours its
    time limit inside the simplex iterations, but loading and setting up a
    model of millions of columns can take minutes before the first one. The
    result comes back pickled through a pipe, so it should be compact (arrays).
    Without a deadline ``fn`` simply runs here.

    >>> call_before(Deadline.after(5.0), lambda: 6 * 7)
    42
    >>> import time as _t; call_before(Deadline.after(0.2), lambda: _t.sleep(30)) is None
    True
    """
    if deadline.at is None:
        return fn()
    return call_before_with(deadline, fn, lambda: None)[0]


def call_before_with(deadline: Deadline, fn: Callable[[], T], meanwhile: Callable[[], U],
                     wanted: Callable[[U], bool] | None = None) -> tuple[T | None, U]:
    """:func:`call_before` with ``meanwhile()`` run here while the child computes ``fn()``: ``(fn's result
    or None, meanwhile's result)``. The deadline is waited for only after ``meanwhile`` returns; if it
    raises, the child is killed and the exception passes on. With ``wanted``, a ``meanwhile`` result it
    refuses means the child's is not needed: the child is killed at once and ``None`` stands for its result.

    >>> call_before_with(Deadline.after(5.0), lambda: 6 * 7, lambda: "here")
    (42, 'here')
    >>> import time as _t; call_before_with(Deadline.after(30.0), lambda: _t.sleep(30), lambda: "enough",
    ...                                     wanted=lambda mine: mine != "enough")   # killed at once
    (None, 'enough')
    """
    if deadline.at is None:
        if wanted is None:
            return fn(), meanwhile()
        mine = meanwhile()
        return (fn() if wanted(mine) else None), mine
    import pickle

    from . import interrupts

    _failure.reason = None
    pid, read_fd, watch_write = _fork(fn)
    try:
        mine = meanwhile()
        chunks = None if wanted is not None and not wanted(mine) else _read_until(deadline, read_fd)
    finally:  # every way out of here (the deadline, an exception, an interrupt) leaves no child behind
        os.close(read_fd)
        os.close(watch_write)
        interrupts.kill_child(pid)
    try:
        result = None if chunks is None else pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a child that died leaves no (or a cut) result
        _failure.reason = "the child ended without a whole result (killed from outside, or out of memory)"
        return None, mine
    if isinstance(result, ChildFailure):
        _failure.reason = result.error
        return None, mine
    return result, mine


@dataclass(frozen=True)
class ChildFailure:
    """What a child sends instead of its result when ``fn`` raised: the exception, as text."""

    error: str


_failure = threading.local()
"""Per thread (two threads may each wait for a child), why its last child gave no result (``reason``)."""


def child_failure() -> str | None:
    """Why the last :func:`call_before_with` child ended without a result although the deadline had not
    passed (its exception, ``"TypeName: message"``), or ``None``; the calling thread's last child; a caller whose fallback answers says this.

    >>> call_before(Deadline.after(5.0), lambda: 1 // 0) is None, child_failure()
    (True, 'ZeroDivisionError: integer division or modulo by zero')
    """
    return getattr(_failure, "reason", None)


def _fork(fn: Callable[[], T]) -> tuple[int, int, int]:
    """A child computing ``fn()`` and sending it pickled: its pid, the result's read end and the lifeline's
    write end (the child dies when it reads end of file there: the parent is gone)."""
    import pickle

    from . import interrupts

    _wait_beside()
    parent = os.getpid()
    interrupts.flush_streams()
    read_fd, write_fd = os.pipe()
    watch_read, watch_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without the parent's clean-up
        os.close(read_fd)
        os.close(watch_write)
        code = 0
        try:
            interrupts.die_with_parent(parent, watch_read)
            with os.fdopen(write_fd, "wb") as pipe:
                try:
                    result: Any = fn()
                except Exception as exc:  # noqa: BLE001 - said to the parent (child_failure), not lost
                    result, code = ChildFailure(f"{type(exc).__name__}: {exc}"[:500]), 1
                pipe.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        except BaseException:  # noqa: BLE001 - the parent sees no result and answers None
            code = 1
        finally:
            os._exit(code)
    interrupts.child_started(pid)
    os.close(write_fd)
    os.close(watch_read)
    return pid, read_fd, watch_write


_MAX_WAIT = 3600.0
"""Longest single wait on the child: a deadline years away (``--time-limit 1e308``) is waited for in steps,
since ``select`` refuses a timeout beyond the platform's ``time_t``."""


def _read_until(deadline: Deadline, fd: int) -> list[bytes] | None:
    """What the child writes to ``fd`` up to its end of file, or ``None`` when the deadline passes with the
    child silent (what it has sent by then is still read to its end)."""
    import select

    chunks: list[bytes] = []
    while True:
        left = deadline.remaining()  # past the deadline, a result sent while this process worked still counts
        wait = None if left is None else min(max(left, 0.0), _MAX_WAIT)
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready and left is not None and left <= 0:
            return None
        if ready:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return chunks
            chunks.append(chunk)
