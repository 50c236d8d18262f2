"""Interrupts: SIGINT, SIGTERM and SIGHUP end a kipopt command within a second, and no child outlives it.

A Python signal handler runs only when the main thread returns to the
interpreter, and a HiGHS solve or a large numpy step may not return for
minutes. So :func:`install` (called by the command line when it is the whole
process) has the C-level handler write the signal number to a pipe
(``signal.set_wakeup_fd``) that a watcher thread reads: on SIGINT, SIGTERM or
SIGHUP it waits for a line being written to finish (:func:`whole_write`), kills
every registered child (:func:`child_started`), prints one line on stderr and
ends the process with 128 + the signal (130, 143, 129). No traceback is possible:
the main thread never sees the signal.

Children (the forked HiGHS runs of :func:`kipopt.deadline.call_before`) also
die when kipopt dies without a chance to clean up (SIGKILL): each asks Linux
for ``PR_SET_PDEATHSIG`` and, on every platform, watches a pipe whose only
writer is the parent; end of file means the parent is gone.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from typing import Any, Callable

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
WRITE_GRACE = 1.0
"""Seconds an interrupt waits for a line being written to finish before ending the process anyway."""

_children: set[int] = set()
_write_lock = threading.Lock()
_installed = False
_at_stop: list[Callable[[signal.Signals], None]] = []
_stopping = threading.Event()


def install() -> None:
    """Route SIGINT, SIGTERM and SIGHUP to the watcher thread (main thread only; once per process).

    A signal this process was started ignoring stays ignored, as Python leaves it: ``nohup`` ignores
    SIGHUP, and a shell without job control starts ``kipopt ... &`` ignoring SIGINT so that Ctrl-C ends
    the foreground command only."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    for sig in EXIT_CODES:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _noted)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_fd,), name="kipopt-interrupts", daemon=True).start()
    _installed = True


def _noted(signum: int, frame: object) -> None:
    """The Python-level handler: nothing (the watcher thread acts on the wakeup byte)."""


def _watch(read_fd: int) -> None:
    while True:
        data = os.read(read_fd, 64)
        for signum in data:
            if signum in EXIT_CODES:
                stop(signal.Signals(signum))


def stop(sig: signal.Signals) -> None:
    """End the process for ``sig``: finish the line being written, run the :func:`at_stop` actions, kill the
    children, one line on stderr."""
    _stopping.set()
    _write_lock.acquire(timeout=WRITE_GRACE)  # a verdict being written is finished, not cut
    for action in list(_at_stop):
        try:
            action(sig)
        except Exception:  # noqa: BLE001 - the process ends anyway; the next action still runs
            pass
    kill_children()
    try:
        os.write(2, f"kipopt: interrupted by {sig.name}\n".encode())
    finally:
        os._exit(EXIT_CODES[sig])


def hold_if_stopping() -> None:
    """In another thread while :func:`stop` ends the process: wait for the end, saying nothing (what failed
    there failed because the stop killed it: its message would be a false second verdict)."""
    if _stopping.is_set():
        threading.Event().wait()


def at_stop(action: Callable[[signal.Signals], None]) -> Callable[[], None]:
    """Have :func:`stop` run ``action(sig)`` before it ends the process (``kipopt bench`` ends Spark's
    processes and removes its scratch folder so); returns the function that withdraws it."""
    _at_stop.append(action)
    return lambda: _at_stop.remove(action) if action in _at_stop else None


# --------------------------------------------------------------------------- children


def child_started(pid: int) -> None:
    _children.add(pid)


def child_ended(pid: int) -> None:
    _children.discard(pid)


def kill_children() -> None:
    """SIGKILL every registered child (and reap it, so it is gone when this returns)."""
    for pid in list(_children):
        kill_child(pid)


def kill_child(pid: int) -> None:
    """SIGKILL a child still running, with every process it started (PuLP's CBC runs as a program of its own,
    which a SIGKILL of its parent alone leaves running), and reap it."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if not done:
            from .process_tree import kill_descendants
            kill_descendants(pid, extra=(pid,), reap=False)
            os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    _children.discard(pid)


def reap_child(pid: int) -> None:
    """Wait for a registered child that ends by itself, and forget it."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    child_ended(pid)


def flush_streams() -> bool:
    """Flush stdout and stderr (before a fork: a child must not inherit unwritten output, which Jupyter would
    show twice; before the console script's exit): whether both flushed."""
    flushed = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # closed or replaced streams
            flushed = False
    return flushed


def die_with_parent(parent: int, watch_fd: int) -> None:
    """In a forked child: end when ``parent`` ends, however it ends.

    ``PR_SET_PDEATHSIG`` (Linux) has the kernel send SIGKILL; as a fallback
    ``watch_fd``, a pipe whose only writer is the parent, is put in signal-
    driven mode (``O_ASYNC``): when the parent is gone its last writer closes
    and the kernel sends SIGIO, whose default action ends the child. (No
    thread: a thread started in the child breaks HiGHS' restart of its thread
    pool there.) A parent gone before either was set is caught by ``getppid``.
    """
    for sig in EXIT_CODES:  # a signal to the whole group (Ctrl-C) ends the child at once, not via the parent's pipe
        signal.signal(sig, signal.SIG_DFL)
    if threading.current_thread() is threading.main_thread():
        signal.set_wakeup_fd(-1)
    _pdeathsig()
    _sigio_at_eof(watch_fd)
    if os.getppid() != parent:
        os._exit(1)


def _pdeathsig() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # no libc symbol: the pipe still works
        pass


def _sigio_at_eof(fd: int) -> None:
    try:
        import fcntl
        signal.signal(signal.SIGIO, signal.SIG_DFL)
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC | os.O_NONBLOCK)
    except (ImportError, AttributeError, OSError):  # no signal-driven I/O here: the death signal remains
        pass


# --------------------------------------------------------------------------- whole lines


def write_out(out: Any, text: str) -> None:
    """``text`` on the text stream ``out``, whole: once :func:`install` has run (the command is the
    process), in one :func:`whole_write` on its file descriptor; else (tests, notebooks) through ``out``."""
    fd = _fileno(out) if _installed else None
    if fd is None:
        out.write(text)
        out.flush()
        return
    out.flush()
    whole_write(fd, text.encode("utf-8", "surrogatepass"))


def _fileno(out: Any) -> int | None:
    try:
        return out.fileno()
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both an OSError and a ValueError
        return None


def whole_write(fd: int, data: bytes) -> None:
    """Write ``data`` (one line) so that an interrupt never cuts it.

    SIGINT and SIGTERM wait for the write (:data:`WRITE_GRACE` at most, in
    case the reader stopped reading). Against SIGKILL the data goes out in one
    ``write`` call where it can: on a pipe the buffer is first grown to hold
    the line (``F_SETPIPE_SZ``, up to the system's ``pipe-max-size``), since
    Linux copies a write that fits the free space at once; a line longer than
    the largest pipe, or a reader that has left the pipe full, can still be cut
    by SIGKILL.
    """
    with _write_lock:
        _fit_pipe(fd, len(data))
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]


def _fit_pipe(fd: int, size: int) -> None:
    try:
        import fcntl
        get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
        set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
        if get_size is None or set_size is None:
            return
        current = fcntl.fcntl(fd, get_size)
        if current >= 2 * size:
            return
        fcntl.fcntl(fd, set_size, min(max(2 * size, current), _pipe_max()))
    except OSError:  # not a pipe, or no permission to grow it: a plain write
        pass


@functools.lru_cache(maxsize=1)
def _pipe_max() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size", "rb") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 1 << 20

