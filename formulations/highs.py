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
from dataclasses import dataclass

import highspy
import numpy as np

INTEGRALITY_TOL = 1e-6


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
    col_dual: np.ndarray | None = None  # reduced costs of an LP solved to optimality


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
             threads: int | None = None, presolve: bool = False) -> HighsResult:
    """Solve ``lp`` (as an ILP when ``integer``) with presolve off; simplex for LPs (a vertex).

    ``presolve=True`` exists only to demonstrate the regression (benchmarks).
    A vertex matters: on a totally unimodular matrix with integer data every
    vertex is integral, and :func:`is_integral` checks that it is.
    """
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "on" if presolve else "off")
    if not integer:
        h.setOptionValue("solver", "simplex")
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


def _banner_to_stderr() -> None:
    """Make the process's first ``highspy.Highs`` with file descriptor 1 pointed at stderr.

    HiGHS prints its banner to standard output when the first ``Highs`` of a
    process is made, before any option can silence it. kipopt's standard
    output is one JSON document, so this module (imported by every model that
    uses HiGHS, PuLP's included) makes that first object at import time.
    """
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


_banner_to_stderr()


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
    col_dual = None
    if not integer and status == "optimal" and info.dual_solution_status == 2:
        col_dual = np.asarray(h.getSolution().col_dual, dtype=np.float64)
    return HighsResult(status, objective, bound, x, integer, h.modelStatusToString(model_status), str(presolve),
                       col_dual)


def is_integral(x: np.ndarray, tol: float = INTEGRALITY_TOL) -> bool:
    """Whether every entry is within ``tol`` of an integer.

    >>> is_integral(np.array([0.0, 1.0, 2.0000000001])), is_integral(np.array([0.5]))
    (True, False)
    """
    return bool(np.all(np.abs(x - np.rint(x)) <= tol))
