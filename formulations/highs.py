"""Solve a linear program given as numpy arrays with ``highspy``, presolve off.

Models here are built column-wise in compressed sparse column form and
handed to :class:`highspy.HighsLp` directly: no modelling layer, no file.
HiGHS presolve is switched off on purpose (``solver-notes.md``: on the
rack-grouped KIP-925 LP it turns a 0.2 s solve into minutes).

>>> import numpy as np
>>> lp = ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.ones(2),
...              row_lower=np.array([1.0]), row_upper=np.array([1.0]),
...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
>>> r = solve_lp(lp)
>>> r.status, r.objective, r.x.tolist()
('optimal', 1.0, [1.0, 0.0])
"""

from __future__ import annotations

import math
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import highspy
import numpy as np

from kipopt.deadline import MIN_SOLVER_SECONDS, Deadline  # noqa: F401  (re-exported: the helper models call)

INTEGRALITY_TOL = 1e-6

@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null for the block: highspy 1.16 prints its banner there from
    ``Highs()``'s constructor, before ``output_flag`` can be set (also when PuLP makes one), which
    would corrupt the JSON the command line prints on stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def new_highs() -> highspy.Highs:
    """A silent ``highspy.Highs`` (see :func:`quiet_stdout`)."""
    with quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


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
             deadline: Deadline | None = None) -> HighsResult:
    """Solve ``lp`` (as an ILP when ``integer``) with presolve off; simplex for LPs (a vertex).

    ``presolve=True`` exists only to demonstrate the regression (benchmarks).
    With a ``deadline`` HiGHS gets the smaller of ``time_limit`` and the time left.
    A vertex matters: on a totally unimodular matrix with integer data every
    vertex is integral, and :func:`is_integral` checks that it is.
    """
    if deadline is not None and deadline.expired:  # no time left: do not start a solve at all
        return HighsResult("time_limit", None, None, None, integer, "deadline passed before the solve",
                           "on" if presolve else "off")
    h = new_highs()
    h.setOptionValue("presolve", "on" if presolve else "off")
    if not integer:
        h.setOptionValue("solver", "simplex")
    if deadline is not None:
        time_limit = deadline.limit(time_limit)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if threads is not None:
        # HiGHS' thread pool is process-wide: a run asking for a different size than the pool
        # was started with fails, so the pool is restarted (only when threads are asked for)
        h.resetGlobalScheduler(True)
        h.setOptionValue("threads", int(threads))
    model = highspy.HighsLp()
    model.num_col_ = lp.num_col
    model.num_row_ = lp.num_row
    model.col_cost_ = lp.cost
    model.col_lower_ = lp.lower
    model.col_upper_ = lp.upper
    model.row_lower_ = lp.row_lower
    model.row_upper_ = lp.row_upper
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = lp.start
    model.a_matrix_.index_ = lp.index
    model.a_matrix_.value_ = lp.value
    if integer:
        h.setOptionValue("mip_rel_gap", 0.0)
        model.integrality_ = [highspy.HighsVarType.kInteger] * lp.num_col
    h.passModel(model)
    h.run()
    return _result(h, integer)


_STATUS = {
    "kOptimal": "optimal", "kInfeasible": "infeasible", "kUnbounded": "unbounded",
    "kUnboundedOrInfeasible": "infeasible", "kTimeLimit": "time_limit", "kIterationLimit": "time_limit",
    "kSolutionLimit": "time_limit", "kInterrupt": "time_limit",
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
    return HighsResult(status, objective, bound, x, integer, h.modelStatusToString(model_status), str(presolve))


def is_integral(x: np.ndarray, tol: float = INTEGRALITY_TOL) -> bool:
    """Whether every entry is within ``tol`` of an integer.

    >>> is_integral(np.array([0.0, 1.0, 2.0000000001])), is_integral(np.array([0.5]))
    (True, False)
    """
    return bool(np.all(np.abs(x - np.rint(x)) <= tol))
