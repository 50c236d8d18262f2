"""One method on one instance, guarded: solved in a forked child that is killed at its time limit
plus a grace period, reporting status, objective, bound, time and memory as a :class:`MethodRun`.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import resource
import select
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any, Mapping

# The status of a method on an instance it declares it does not apply to (Method.requires).
NOT_APPLICABLE = "not_applicable"

INTERRUPTED_EXIT = 130
"""A method run's exit status when an interrupt, not the method, ended it."""

TIME_LIMIT_PREFIX = "time limit"
"""How an ``error`` row's message starts when the run did not finish within its time limit (it was killed)."""


@dataclass(frozen=True)
class MethodRun:
    """What a guarded method run reports back to the executor."""

    status: str
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    peak_memory_mb: float | None = None
    memory_growth_mb: float | None = None
    metrics: Mapping[str, Any] | None = None
    message: str | None = None
    violations: int | None = None


def run_method(instance: Any, method: str, time_limit: float, grace: float, seed: int,
               threads: int, score_rules: tuple[str, ...] = ()) -> MethodRun:
    """Solve in a forked child; kill it at ``time_limit + grace`` seconds.

    The child also scores the assignment on every rule of ``score_rules``
    (``metrics["scored"][rule]``: objective, violations, criteria). The fork shares the already imported solvers and the instance, so a run
    costs milliseconds more than an in-process call, and the child's peak
    resident memory is the method's own.
    """
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: solve, send the result, leave without running the parent's cleanup
        os.close(read_fd)
        code = 0
        try:
            payload = pickle.dumps(_solve_here(instance, method, time_limit, seed, threads, score_rules))
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(payload)
        except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: not the method's failure
            code = INTERRUPTED_EXIT
        except BaseException:  # noqa: BLE001 - the parent records whatever happened
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return _collect(pid, read_fd, start, time_limit, time_limit + grace)


def _collect(pid: int, read_fd: int, start: float, limit: float, deadline: float) -> MethodRun:
    chunks: list[bytes] = []
    killed = False
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - (time.perf_counter() - start)
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                chunk = pipe.read(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    _, wait_status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if _interrupted(wait_status):  # no row: the item must stay undone, to run again on resume
        raise KeyboardInterrupt(f"the method run was ended by {_describe_wait(wait_status)}")
    if killed:
        return MethodRun("error", seconds=elapsed,
                         message=f"{TIME_LIMIT_PREFIX}: killed after {elapsed:.1f} s (limit {limit:g} s, not honoured)")
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a child that died (e.g. out of memory) leaves no result
        return MethodRun("error", seconds=elapsed,
                         message=f"the solving process died ({_describe_wait(wait_status)})")


def _interrupted(status: int) -> bool:
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status) in (signal.SIGINT, signal.SIGTERM)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == INTERRUPTED_EXIT


def _describe_wait(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _solve_here(instance: Any, method: str, time_limit: float, seed: int, threads: int,
                score_rules: tuple[str, ...] = ()) -> MethodRun:
    from ..api import score, solve
    from ..errors import KipoptError, NotApplicableError
    rss_start = _rss_mb()
    start = time.perf_counter()
    try:
        solution = solve(instance, method, time_limit=time_limit, threads=threads, seed=seed)
    except NotApplicableError as exc:
        return MethodRun(NOT_APPLICABLE, seconds=time.perf_counter() - start, message=exc.reason)
    except KipoptError as exc:
        return MethodRun("error", seconds=time.perf_counter() - start, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken method must not stop the benchmark
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return MethodRun("error", seconds=time.perf_counter() - start,
                         message=f"{type(exc).__name__}: {exc} ({os.path.basename(where.filename)}:{where.lineno})")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    broken = sum(int(v.get("count", 1)) for v in solution.metrics.get("violations", []))
    metrics = dict(solution.metrics)
    if score_rules and solution.status.value in ("optimal", "feasible"):
        scored = solution.target if solution.target is not None else solution.assignment
        metrics["scored"] = {rule: score(instance, scored, rule) for rule in score_rules}
    return MethodRun(solution.status.value, _finite(solution.objective), _finite(solution.bound),
                     solution.seconds, round(peak, 1), round(max(0.0, peak - rss_start), 1),
                     _jsonable(metrics), solution.message, broken)


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _jsonable(metrics: Mapping[str, Any]) -> dict:
    return json.loads(json.dumps(metrics, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
