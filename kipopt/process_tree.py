"""The processes a command started, however deep: found by their parent links, stopped, then killed.

Spark's JVM is started by PySpark (no handle until its start-up ends), and it starts PySpark's worker
daemon, which forks the workers, which fork kipopt's method runs: only the parent links reach them
all. On Linux they are read from ``/proc``; elsewhere only the processes given are ended.
"""

from __future__ import annotations

import os
import signal
import time


def descendants(root: int) -> list[int]:
    """Every living process below ``root`` (children first found first), from ``/proc``; [] without it."""
    parents: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if name.isdigit():
            ppid = _parent(int(name))
            if ppid is not None:
                parents.setdefault(ppid, []).append(int(name))
    found, frontier = [], [root]
    while frontier:
        below = [c for p in frontier for c in parents.get(p, ())]
        found += below
        frontier = below
    return found


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:  # gone meanwhile
        return None
    # the command name (field 2) may hold spaces and parentheses: the fields after it follow its last ')'
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else None


def kill_descendants(root: int | None = None, extra: tuple[int, ...] = (), rounds: int = 5,
                     reap: bool = True) -> int:
    """SIGKILL every process below ``root`` (this process by default) and the pids in ``extra``.

    Each round first stops them all (SIGSTOP), so none forks or restarts a child while the round runs,
    then kills them; rounds repeat while new ones appear. With ``reap``, direct children are collected
    (polling, up to two seconds; a caller that knows its child waits for it itself). Returns how many
    processes were signalled.
    """
    root = os.getpid() if root is None else root
    ended: set[int] = set()
    for _ in range(rounds):
        found = [p for p in dict.fromkeys(descendants(root) + list(extra)) if p not in ended]
        if not found:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in found:
                _signal(pid, sig)
        ended.update(found)
    if reap:
        _reap(ended)
    return len(ended)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pids: set[int], within: float = 2.0) -> None:
    """Collect the direct children among ``pids`` (others are reaped by their own parents or init)."""
    deadline = time.monotonic() + within
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours, or already collected
                waiting.discard(pid)
                continue
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.01)
