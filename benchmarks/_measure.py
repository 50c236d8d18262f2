"""One way for the benchmarks to run ``kipopt`` in a child process and measure it.

:func:`measure` starts a command in a session of its own, optionally under an
address-space cap (``RLIMIT_AS``: a run that needs more fails as it would on a
small machine instead of starving the others sharing this one), waits for it
with ``wait4`` and returns its exit code, wall seconds (measured here, outside
kipopt), CPU seconds (user + system of the child and of the processes it
waited for, such as the tasks guard's solver child) and peak RSS. A run still
going at ``hard_stop`` seconds has its whole process group killed.

    from _measure import kipopt_solve, measure, read_json
    run = measure(kipopt_solve(path, "exact.range", time_limit=5), out, memory_bytes=6e9, hard_stop=300)
    solution = read_json(out)

The benchmarks import it by name (``sys.path`` holds a script's own folder).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

KIPOPT = Path(sys.executable).with_name("kipopt")
"""The ``kipopt`` command of the interpreter running the benchmark (its virtualenv's)."""


@dataclass(frozen=True)
class Measured:
    """One finished child: ``exit`` as :func:`os.waitstatus_to_exitcode` gives it (negative: killed by that
    signal), ``wall`` and ``cpu`` seconds, peak RSS in GB, whether :func:`measure` killed it at its hard
    stop, and the last line it wrote to stderr (for a table's message column)."""

    exit: int
    wall: float
    cpu: float
    rss_gb: float
    killed: bool
    last_error: str


def kipopt_solve(path: str | Path, method: str, time_limit: float | None = None,
                 extra: Sequence[str] = ()) -> list[str]:
    """The ``kipopt solve`` command line for ``path`` and ``method`` (``--time-limit`` when given)."""
    args = [str(KIPOPT), "solve", str(path), "--method", method]
    if time_limit is not None:
        args += ["--time-limit", f"{time_limit:g}"]
    return args + list(extra)


def measure(args: Sequence[str], stdout: str | Path, *, memory_bytes: float | None = None,
            hard_stop: float | None = None, stderr: str | Path | None = None) -> Measured:
    """Run ``args`` with its stdout in the file ``stdout`` (stderr in ``stderr``, default beside it with the
    suffix ``.err``); see the module docstring."""
    err_path = Path(stderr) if stderr is not None else Path(stdout).with_suffix(".err")
    cap = None if memory_bytes is None else int(memory_bytes)

    def limit() -> None:
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = time.perf_counter()
    with open(stdout, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(list(args), stdout=out, stderr=err, preexec_fn=limit, start_new_session=True)
        status, usage, killed = _wait(proc.pid, None if hard_stop is None else start + hard_stop)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024 ** 2,
                    killed, _last_line(err_path))


def _wait(pid: int, stop_at: float | None) -> tuple[int, Any, bool]:
    """Wait status, resource usage and whether it was killed at ``stop_at`` (a ``perf_counter`` instant)."""
    if stop_at is None:
        _, status, usage = os.wait4(pid, 0)
        return status, usage, False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, False
        if time.perf_counter() > stop_at:
            try:
                os.killpg(pid, signal.SIGKILL)  # the child leads its own session: its helpers die with it
            except ProcessLookupError:
                pass
            _, status, usage = os.wait4(pid, 0)
            return status, usage, True
        time.sleep(0.02)


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:160] if lines else ""


def read_json(path: str | Path) -> dict | None:
    """The JSON object a run printed, or ``None`` when it printed none (or a partial one)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
