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
    h = _highs(presolve, time_limit, threads)
    if integer:
        h.setOptionValue("mip_rel_gap", 0.0)
    else:
        h.setOptionValue("solver", "simplex")
    h.passModel(_highs_lp(lp, integer))
    h.run()
    return _result(h, integer)


def _highs(presolve: bool, time_limit: float | None, threads: int | None):
    """A silent Highs object with kipopt's options."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "on" if presolve else "off")
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if threads is not None:
        # HiGHS' thread pool is process-wide: a run asking for a different size than the pool
        # was started with fails, so the pool is restarted (only when threads are asked for)
        h.resetGlobalScheduler(True)
        h.setOptionValue("threads", int(threads))
    return h


def _highs_lp(lp: ArrayLP, integer: bool):
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
        model.integrality_ = [highspy.HighsVarType.kInteger] * lp.num_col
    return model


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
    return HighsResult(status, objective, bound, x, integer, h.modelStatusToString(model_status), str(presolve))


def is_integral(x: np.ndarray, tol: float = INTEGRALITY_TOL) -> bool:
    """Whether every entry is within ``tol`` of an integer.

    >>> is_integral(np.array([0.0, 1.0, 2.0000000001])), is_integral(np.array([0.5]))
    (True, False)
    """
    return bool(np.all(np.abs(x - np.rint(x)) <= tol))


# --------------------------------------------------------------------------- lexicographic programs


@dataclass(frozen=True)
class StageResult:
    """One stage of a lexicographic solve: ``status`` optimal, feasible (stopped with an incumbent) or not_reached."""

    status: str
    value: float | None
    bound: float | None


@dataclass(frozen=True)
class StagedResult:
    stages: tuple[StageResult, ...]
    x: np.ndarray | None

    @property
    def complete(self) -> bool:
        return all(s.status == "optimal" for s in self.stages)


def solve_staged(lp: ArrayLP, objectives: list[np.ndarray], deadline: float | None = None,
                 start: np.ndarray | None = None, threads: int | None = None,
                 lower_bounds: list[float] | None = None) -> StagedResult:
    """Minimize ``objectives`` lexicographically over the integer points of ``lp`` (the standard way).

    Stage k minimizes ``objectives[k]`` subject to ``objectives[j] · x <= v_j``
    for the optimal values ``v_j`` of the stages before it; each stage starts
    from the previous stage's solution (``start`` for the first), so there is
    always an incumbent; a stage whose incumbent already meets its known
    ``lower_bounds`` entry is optimal without a solve. ``deadline`` (``time.monotonic()``) bounds the whole
    solve: a stage stopped by it reports its incumbent value and HiGHS' bound,
    later stages only their value at that incumbent. Objectives must have
    integer coefficients (values are rounded).

    >>> lp = ArrayLP(cost=np.zeros(2), lower=np.zeros(2), upper=np.ones(2),
    ...              row_lower=np.array([1.0]), row_upper=np.array([2.0]),
    ...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
    >>> r = solve_staged(lp, [np.array([1.0, 1.0]), np.array([1.0, 0.0])])
    >>> [(s.status, s.value) for s in r.stages], r.x.tolist()
    ([('optimal', 1.0), ('optimal', 0.0)], [0.0, 1.0])
    """
    import time

    h = _highs(True, None, threads)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.passModel(_highs_lp(lp, integer=True))
    columns = np.arange(lp.num_col, dtype=np.int32)
    x = start
    stages: list[StageResult] = []
    for cost in objectives:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            stages.append(StageResult("not_reached", _value(cost, x), None))
            continue
        if stages and stages[-1].status != "optimal":
            stages.append(StageResult("not_reached", _value(cost, x), None))
            continue
        known = None if lower_bounds is None else lower_bounds[len(stages)]
        value = _value(cost, x)
        if known is not None and value is not None and value <= known:
            stages.append(StageResult("optimal", value, value))
            _fix(h, cost, value)
            continue
        h.changeColsCost(lp.num_col, columns, cost.astype(np.float64))
        if x is not None:
            solution = highspy.HighsSolution()
            solution.col_value = list(map(float, x))
            h.setSolution(solution)
        h.setOptionValue("time_limit", float(remaining) if remaining is not None else float("inf"))
        h.run()
        result = _result(h, integer=True)
        if result.x is not None:
            x = np.rint(result.x) + 0.0  # no negative zeros
        value = _value(cost, x)
        if result.status == "optimal" and value is not None:
            stages.append(StageResult("optimal", value, value))
            _fix(h, cost, value)
        else:
            bound = result.bound if result.bound is not None else None
            stages.append(StageResult("feasible" if x is not None else result.status, value, bound))
    return StagedResult(tuple(stages), x)


def _fix(h, cost: np.ndarray, value: float) -> None:
    """Keep a solved stage at its optimum: ``cost · x <= value``."""
    nz = np.flatnonzero(cost)
    h.addRow(-highspy.kHighsInf, value + 0.5, len(nz), nz.astype(np.int32), cost[nz].astype(np.float64))


def _value(cost: np.ndarray, x: np.ndarray | None) -> float | None:
    return None if x is None else float(np.rint(cost @ x))
