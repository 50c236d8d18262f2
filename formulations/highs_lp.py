"""An LP or MIP as numpy arrays (:class:`ArrayLP`) and one HiGHS solve of it (:func:`solve_lp`), presolve off.

What every solve shares is here too: a silent ``Highs`` (:func:`new_highs`), the model handed to it
(``_highs``, :func:`run_highs`), its answer read back (``_result``, :class:`HighsResult`), and the totally
unimodular LPs whose vertex is checked integral (:func:`solve_tu_lp`, :func:`is_integral`).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import highspy
import numpy as np

from kipopt._shared import SharedSetting
from kipopt.deadline import Deadline

INTEGRALITY_TOL = 1e-6


def _fd1_to_devnull() -> int:
    """File descriptor 1 sent to /dev/null; where it pointed before (a duplicate)."""
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    return saved


def _fd1_back(saved: int) -> None:
    os.dup2(saved, 1)
    os.close(saved)


_FD1_SILENT = SharedSetting(_fd1_to_devnull, _fd1_back)


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null for the block: highspy 1.16 prints its banner there from
    ``Highs()``'s constructor, before ``output_flag`` can be set (also when PuLP makes one), which
    would corrupt the JSON the command line prints on stdout.

    Threads share fd 1, so the first block to enter redirects it and the last to leave restores it
    (:class:`~kipopt._shared.SharedSetting`). Each block saving and restoring fd 1 on its own was wrong:
    with two threads making ``Highs`` objects (the level tree's start beside the dec-min stages), one could
    save /dev/null as "before" while the other's block was open and restore it last, leaving fd 1 at
    /dev/null for good (reproduced: a script's later output lost;
    ``test_stdout_survives_threads_silencing_highs_at_once``). A forked child keeps fd 1 as the parent's
    blocks left it (a child never prints on stdout; it answers through a pipe)."""
    sys.stdout.flush()
    with _FD1_SILENT():
        yield


def new_highs() -> highspy.Highs:
    """A silent ``highspy.Highs`` (see :func:`quiet_stdout`)."""
    with quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


_POOL = threading.local()
"""Per thread, the size :func:`size_thread_pool` last made that thread's HiGHS pool at (attribute ``size``;
absent or ``None``: not made since the thread began, the last restart or the last fork). HiGHS (1.16) keeps
one pool per calling thread (``thread_local``), made by that thread's first run: measured, a second thread's
2-thread solve adds a worker of its own. One number for the whole process was wrong: after another thread
made its pool at 2, a thread whose pool was at 1 skipped the resize and its 2-thread solve failed."""


def _pool_size() -> int | None:
    return getattr(_POOL, "size", None)


def size_thread_pool(threads: int | None) -> None:
    """HiGHS' thread pool (the calling thread's) at ``threads`` threads, as a run asking for ``threads`` needs
    (a run asking for a size other than its pool's fails). The pool is restarted only when its size changes
    (a restart stops and starts its threads), by an empty run; with ``threads=None`` (HiGHS' default size)
    it is only made, where it is not yet."""
    if threads is None:
        if _pool_size() is None:  # an empty run makes it at the default size, or finds it made
            new_highs().run()
        return
    if _pool_size() != threads:
        h = new_highs()
        h.resetGlobalScheduler(True)
        h.setOptionValue("threads", int(threads))
        h.run()
        _POOL.size = threads


def stop_thread_pool() -> None:
    """Stop the forking thread's HiGHS workers and wait for them to end: run by every ``os.fork`` of this
    process, in the parent, just before it forks (registered below). An idle worker sleeps on its semaphore,
    a mutex and a condition variable (HiGHS' ``HighsBinarySemaphore``), and takes the mutex on its way to
    sleep; a fork then would hand that state, mid-change, to the child, whose restart
    (:func:`restart_thread_pool`) signals it. With no worker at the fork the child has nothing to restart.
    The next run in the parent makes the pool again (about 0.1 ms). Only the forking thread's pool is
    stopped (HiGHS keeps one per thread): a solve in another thread goes on."""
    new_highs().resetGlobalScheduler(True)
    _POOL.size = None


os.register_at_fork(before=stop_thread_pool)


def restart_thread_pool() -> None:
    """Restart HiGHS' thread pool (this thread's): a forked child inherits it without its threads, so a child
    that may run HiGHS after the parent did calls this first (:func:`~kipopt.formulations.highs.call_highs_before`,
    the ``--batch`` workers); the next run makes it again."""
    stop_thread_pool()


SMALL_LP_COLUMNS = 20_000
"""An LP (not a MIP) up to this many columns is solved even when the deadline has passed: it takes
milliseconds, and giving it up for a fallback costs more time and a worse answer (issue 21: a 54-column
and a 1,800-column LP abandoned, the start returned with gap 0.92 and 1.0)."""
SMALL_LP_SECONDS = 0.5
"""The least time limit a small LP gets (:data:`SMALL_LP_COLUMNS`), inside the limit's 1-second slack."""


def _small_lp(lp: "ArrayLP", mip: bool) -> bool:
    return not mip and lp.num_col <= SMALL_LP_COLUMNS


@dataclass(frozen=True)
class ArrayLP:
    """``min cost·x`` s.t. ``row_lower <= A x <= row_upper``, ``lower <= x <= upper``; A in CSC."""

    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    integrality: np.ndarray | None = None
    """Per-column ``True`` = integer (a MIP); ``None`` = all continuous unless ``solve_lp(integer=True)``."""

    @property
    def num_col(self) -> int:
        return len(self.cost)

    @property
    def num_row(self) -> int:
        return len(self.row_lower)


@dataclass(frozen=True)
class HighsResult:
    """What HiGHS says: ``status`` is optimal / feasible / infeasible / unbounded / time_limit / error.

    ``presolve`` is the option value HiGHS actually ran with (read back, for the regression check).
    """

    status: str
    objective: float | None
    bound: float | None
    x: np.ndarray | None
    integer: bool
    message: str
    presolve: str = "off"
    col_dual: np.ndarray | None = None  # reduced costs of an LP solved to optimality
    row_dual: np.ndarray | None = None  # row duals of an LP solved to optimality (col_dual = cost - Aᵀ row_dual),
    # or of a warm solve stopped at a cutoff (status cutoff): the duals that prove its bound


def build_csc(num_col: int, cols: np.ndarray, rows: np.ndarray, values: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort COO entries by column and return ``(start, index, value)``.

    >>> [a.tolist() for a in build_csc(2, np.array([1, 0]), np.array([0, 1]), np.array([2.0, 3.0]))]
    [[0, 1, 2], [1, 0], [3.0, 2.0]]
    """
    order = np.argsort(cols, kind="stable")
    counts = np.bincount(cols, minlength=num_col)
    start = np.zeros(num_col + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return start, rows[order].astype(np.int32), values[order].astype(np.float64)


def solve_lp(lp: ArrayLP, integer: bool = False, time_limit: float | None = None,
             threads: int | None = None, presolve: bool = False,
             deadline: Deadline | None = None, start: np.ndarray | None = None,
             cutoff: float | None = None, options: dict[str, Any] | None = None) -> HighsResult:
    """Solve ``lp`` (as an ILP when ``integer``) with presolve off; simplex for LPs (a vertex).

    ``presolve=True`` exists only to demonstrate the regression (benchmarks).
    With a ``deadline`` HiGHS gets the smaller of ``time_limit`` and the time left.
    A vertex matters: on a totally unimodular matrix with integer data every
    vertex is integral, and :func:`is_integral` checks that it is. An ``lp``
    with ``integrality`` is solved as a MIP on those columns.

    MIPs only: ``start`` is a known feasible point (one value per column) given to HiGHS as its first
    incumbent; ``cutoff`` an objective value no wanted solution exceeds (HiGHS' ``objective_bound``:
    nodes whose bound passes it are pruned, so with a cutoff below the optimum the answer is
    ``infeasible``, and the reported bound is only valid as ``min(bound, cutoff)``).
    ``options``: further HiGHS options by name, set last.
    """
    mip = _is_mip(lp, integer)
    if lp.num_col == 0:  # HiGHS calls a model without columns "Empty" (status error); its answer is known
        return _empty_result(lp, mip, "on" if presolve else "off")
    small = _small_lp(lp, mip)
    if deadline is not None and deadline.expired and not small:  # no time left: do not start a solve at all
        return HighsResult("time_limit", None, None, None, mip, "deadline passed before the solve",
                           "on" if presolve else "off")
    if deadline is not None:
        time_limit = deadline.limit(time_limit)
    if small and time_limit is not None:
        time_limit = max(time_limit, SMALL_LP_SECONDS)
    h = _highs(lp, integer, time_limit, threads, presolve)
    if mip and cutoff is not None:
        h.setOptionValue("objective_bound", float(cutoff))
    if mip and start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = np.asarray(start, dtype=np.float64).tolist()
        solution.value_valid = True
        h.setSolution(solution)
    for name, value in (options or {}).items():
        h.setOptionValue(name, value)
    h.run()
    return _result(h, mip)


def _empty_result(lp: ArrayLP, mip: bool, presolve: str) -> HighsResult:
    """The solution of a model with no columns: every row's activity is 0, so it is optimal at 0 exactly
    when every row admits 0 (a model with nothing to place, e.g. no standby to assign)."""
    if np.all(lp.row_lower <= 0) and np.all(lp.row_upper >= 0):
        return HighsResult("optimal", 0.0, 0.0, np.zeros(0), mip, "no columns", presolve)
    return HighsResult("infeasible", None, None, None, mip, "no columns, and a row that needs a nonzero activity",
                       presolve)


def _is_mip(lp: ArrayLP, integer: bool) -> bool:
    return integer or (lp.integrality is not None and bool(np.any(lp.integrality)))


def _highs(lp: ArrayLP, integer: bool, time_limit: float | None, threads: int | None, presolve: bool):
    h = new_highs()
    h.setOptionValue("presolve", "on" if presolve else "off")
    if not _is_mip(lp, integer):
        # a vertex for LPs; never for MIPs: with solver=simplex HiGHS drops integrality and solves the relaxation
        h.setOptionValue("solver", "simplex")
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if threads is not None:
        size_thread_pool(int(threads))
        h.setOptionValue("threads", int(threads))
    if _is_mip(lp, integer):
        h.setOptionValue("mip_rel_gap", 0.0)
    pass_model(h, lp, integer)
    return h


def pass_model(h, lp: ArrayLP, integer: bool = False) -> None:
    """Hand ``lp`` to ``h`` as arrays (integer columns marked when it is a MIP). The array form of
    ``passModel`` copies them in C++: building a ``highspy.HighsLp`` field by field took 1.1 ms for a
    2,200-column LP against 0.01 ms (measured)."""
    if _is_mip(lp, integer):
        kinds = np.ones(lp.num_col, dtype=np.int32) if integer else np.asarray(lp.integrality, dtype=np.int32)
    else:  # every column continuous: HiGHS reads num_col entries, an empty array would give it garbage
        kinds = np.zeros(lp.num_col, dtype=np.int32)
    h.passModel(int(lp.num_col), int(lp.num_row), len(lp.value), int(highspy.MatrixFormat.kColwise),
                int(highspy.ObjSense.kMinimize), 0.0, np.asarray(lp.cost, dtype=np.float64),
                np.asarray(lp.lower, dtype=np.float64), np.asarray(lp.upper, dtype=np.float64),
                np.asarray(lp.row_lower, dtype=np.float64), np.asarray(lp.row_upper, dtype=np.float64),
                np.asarray(lp.start, dtype=np.int32), np.asarray(lp.index, dtype=np.int32),
                np.asarray(lp.value, dtype=np.float64), kinds)


def run_highs(lp: ArrayLP, time_limit: float | None, threads: int | None, presolve: bool = True,
              solver: str | None = None, mip_abs_gap: float | None = None, start: np.ndarray | None = None):
    """Build ``lp`` (a MIP on its ``integrality`` columns), optionally with a starting point (a MIP's first
    incumbent), run it and return the ``Highs`` object for the caller to read (the replica models read
    its status, solution and dual bound). ``solver`` overrides the simplex chosen for LPs."""
    h = _highs(lp, False, time_limit, threads, presolve)
    if solver:
        h.setOptionValue("solver", solver)
    if mip_abs_gap is not None:
        h.setOptionValue("mip_abs_gap", float(mip_abs_gap))
    if start is not None:
        point = highspy.HighsSolution()
        point.col_value = np.asarray(start, dtype=np.float64)
        point.value_valid = True
        h.setSolution(point)
    h.run()
    return h


_STATUS = {
    "kOptimal": "optimal", "kInfeasible": "infeasible", "kUnbounded": "unbounded",
    "kUnboundedOrInfeasible": "infeasible", "kTimeLimit": "time_limit", "kIterationLimit": "time_limit",
    "kSolutionLimit": "time_limit", "kInterrupt": "time_limit", "kMemoryLimit": "out_of_memory",
}


def _result(h, integer: bool) -> HighsResult:
    model_status = h.getModelStatus()
    name = str(model_status).split(".")[-1]
    status = _STATUS.get(name, "error")
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=np.float64) if has_solution else None
    objective = float(info.objective_function_value) if has_solution else None
    if integer:
        # objective coefficients are integers in every kipopt model: round the proven bound up
        bound = math.ceil(info.mip_dual_bound - 1e-6) if np.isfinite(info.mip_dual_bound) else None
    else:
        bound = objective if status == "optimal" else None
    if status == "time_limit" and x is not None:
        status = "feasible"
    presolve = h.getOptionValue("presolve")
    if isinstance(presolve, tuple):  # some highspy versions return (status, value)
        presolve = presolve[-1]
    col_dual = row_dual = None
    if not integer and status == "optimal" and info.dual_solution_status == 2:
        solution = h.getSolution()
        col_dual = np.asarray(solution.col_dual, dtype=np.float64)
        row_dual = np.asarray(solution.row_dual, dtype=np.float64)
    return HighsResult(status, objective, bound, x, integer, h.modelStatusToString(model_status), str(presolve),
                       col_dual, row_dual)


def solve_tu_lp(lp: ArrayLP, time_limit: float | None = None, threads: int | None = None,
                deadline: Deadline | None = None, options: dict[str, Any] | None = None) -> tuple[HighsResult, bool]:
    """An LP whose matrix is totally unimodular (network, transportation): the simplex vertex is
    integral, and that is checked; a fractional vertex (a modelling slip) is re-solved as an ILP.

    Returns the result and whether the ILP fallback ran. ``time_limit`` (or ``deadline``) covers both.
    ``options``: HiGHS options for the LP (interior point needs ``run_crossover`` on, for a vertex).

    >>> lp = ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.ones(2),
    ...              row_lower=np.array([1.0]), row_upper=np.array([1.0]),
    ...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
    >>> r, fallback = solve_tu_lp(lp)
    >>> r.status, r.x.tolist(), fallback
    ('optimal', [1.0, 0.0], False)
    """
    if deadline is None and time_limit is not None:
        deadline = Deadline.after(time_limit)
    res = solve_lp(lp, threads=threads, deadline=deadline, options=options)
    if res.x is not None and not is_integral(res.x):
        return solve_lp(lp, integer=True, threads=threads, deadline=deadline), True
    return res, False


def is_integral(x: np.ndarray, tol: float = INTEGRALITY_TOL) -> bool:
    """Whether every entry is within ``tol`` of an integer.

    >>> is_integral(np.array([0.0, 1.0, 2.0000000001])), is_integral(np.array([0.5]))
    (True, False)
    """
    return bool(np.all(np.abs(x - np.rint(x)) <= tol))
