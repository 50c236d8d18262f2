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
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, TypeVar

import highspy
import numpy as np

from kipopt.deadline import (Deadline, call_before,  # noqa: F401  (Deadline re-exported)
                             call_before_with)

T = TypeVar("T")
U = TypeVar("U")

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


def call_highs_before(deadline: Deadline, fn: Callable[[], T]) -> T | None:
    """:func:`kipopt.deadline.call_before` for work that runs HiGHS: ``fn()`` in a child the deadline kills.

    A forked child inherits HiGHS' process-wide thread pool without its
    threads: once the parent has run HiGHS, a MIP in the child waits for them
    forever (measured: an LP in the parent, then a 1-second MIP in the child
    never returned). The child therefore restarts the pool first.
    """
    return fn() if deadline.at is None or _KILLABLE else call_before(deadline, _guarded(fn))


def restart_thread_pool() -> None:
    """Restart HiGHS' process-wide thread pool: a forked child inherits it without its threads, so a child
    that may run HiGHS after the parent did calls this first (:func:`call_highs_before`, the ``--batch``
    workers)."""
    new_highs().resetGlobalScheduler(True)


def _guarded(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` as the body of a child the deadline kills: it marks the process so (nested calls run inline)
    and restarts the thread pool first."""
    def body() -> T:
        global _KILLABLE
        _KILLABLE = True
        restart_thread_pool()
        return fn()

    return body


def call_highs_before_with(deadline: Deadline, fn: Callable[[], T], meanwhile: Callable[[], U],
                           wanted: Callable[[U], bool] | None = None) -> tuple[T | None, U]:
    """:func:`call_highs_before` with ``meanwhile()`` run in this process while the child works
    (:func:`kipopt.deadline.call_before_with`, ``wanted`` included): ``(fn's result or None, meanwhile's
    result)``."""
    if deadline.at is None or _KILLABLE:
        if wanted is None:
            return fn(), meanwhile()
        mine = meanwhile()
        return (fn() if wanted(mine) else None), mine
    return call_before_with(deadline, _guarded(fn), meanwhile, wanted)


_KILLABLE = False
"""True in a child :func:`call_highs_before` made: its deadline already kills it, so a call nested inside runs
inline (a grandchild would outlive a killed child, burning a core)."""


def in_guarded_child() -> bool:
    """Whether this process is a child :func:`call_highs_before` made (the deadline kills it: work that does
    not watch the clock may start here without overrunning the limit)."""
    return _KILLABLE


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
    row_dual: np.ndarray | None = None  # row duals of an LP solved to optimality (col_dual = cost - Aᵀ row_dual)


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
    if _is_mip(lp, integer):
        h.setOptionValue("mip_rel_gap", 0.0)
        mask = np.ones(lp.num_col, dtype=bool) if integer else lp.integrality
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        model.integrality_ = [kinds[int(b)] for b in mask]
    h.passModel(model)
    return h


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


class WarmLP:
    """A family of LPs with one sparsity pattern, solved one after another, each from the previous
    one's optimal basis (dual simplex, presolve off). Members of the family differ in bounds and in
    the values of the pattern's entries (a value may be 0): the level tree's leaves, whose re-solves
    take a few hundred pivots instead of thousands. Each solve passes the whole model (numpy arrays,
    cheap) instead of changing coefficients one call at a time (costly in HiGHS)."""

    WARM_COLUMNS = 40_000
    """Above this many columns every solve is an interior point one (measured: warm dual simplex
    re-solves no faster than cold ones there)."""

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads
        self._basis = None
        self._dual: np.ndarray | None = None

    def solve(self, lp: ArrayLP, time_limit: float | None = None, cutoff: float | None = None) -> HighsResult:
        """``lp`` (an LP: no integrality) must have this family's pattern (``start`` and ``index``); see
        :meth:`_solve`.

        With a ``cutoff``, the row duals of the family's last optimum are tried first: by weak duality
        (:func:`dual_bound`, valid for any duals) they bound this member too, and a bound above
        ``cutoff`` settles it (status ``cutoff``) with no solve. Measured on the level tree's leaves at
        10,000 x 1,000: they bound every neighbouring vector at its own optimum (31 of 31 leaves).

        Above :data:`WARM_COLUMNS` under a time limit the solve runs in a child the limit
        kills: HiGHS' interior point overran a 2-second limit by 2 s at 100,000 x 5,000 (86,000 columns;
        its crossover), and no basis is kept at that size anyway."""
        if cutoff is not None and self._dual is not None:
            bound = dual_bound(lp, self._dual)
            if bound > cutoff:
                return HighsResult("cutoff", None, bound, None, False, "bounded by the last optimum's duals")
        if lp.num_col > self.WARM_COLUMNS and time_limit is not None:
            done = call_highs_before(Deadline.after(time_limit), lambda: self._solve(lp, time_limit, None))
            result = done if done is not None else HighsResult("time_limit", None, None, None, False,
                                                               "stopped at the time limit")
        else:
            result = self._solve(lp, time_limit, cutoff)
        if result.row_dual is not None:
            self._dual = result.row_dual
        return result

    def _solve(self, lp: ArrayLP, time_limit: float | None = None, cutoff: float | None = None) -> HighsResult:
        """``cutoff``: only an optimum at most this matters. A warm dual simplex then stops as soon as its
        objective passes it (HiGHS' ``objective_bound``), and the result's status is ``cutoff`` with
        ``bound`` a lower bound above ``cutoff`` that :func:`dual_bound` checks from the row duals here,
        not taken on HiGHS' word; a stop the check does not confirm is solved again in full."""
        until = Deadline.after(time_limit)
        h = _highs(lp, False, time_limit, self._threads, False)
        warm = self._basis is not None and lp.num_col <= self.WARM_COLUMNS
        if warm:
            h.setBasis(self._basis)
            if cutoff is not None:
                h.setOptionValue("objective_bound", float(cutoff))
        else:  # interior point then crossover to a vertex: on the level tree's leaves at 5,000 members
            # (86,000 columns) 3 s where the dual simplex takes 26 s cold and about as long warm
            h.setOptionValue("solver", "ipm")
            h.setOptionValue("run_crossover", "on")
        h.run()
        if warm and cutoff is not None and h.getModelStatus() == highspy.HighsModelStatus.kObjectiveBound:
            self._basis = h.getBasis()  # dual feasible: a good start for the next one
            bound = dual_bound(lp, np.asarray(h.getSolution().row_dual, dtype=np.float64))
            if bound > cutoff:
                return HighsResult("cutoff", None, bound, None, False, "objective bound reached (dual bound checked)")
            h = _highs(lp, False, until.limit(), self._threads, False)
            h.setBasis(self._basis)
            h.run()
        result = _result(h, False)
        if result.status not in ("optimal", "infeasible", "time_limit"):
            # IPM gives up on infeasible LPs, and a stale basis can mislead: the plain dual simplex, cold
            h = _highs(lp, False, until.limit(), self._threads, False)
            h.run()
            result = _result(h, False)
        if result.status == "optimal":
            self._basis = h.getBasis()
        return result


def dual_bound(lp: ArrayLP, row_dual: np.ndarray) -> float:
    """Weak duality with bounded rows and columns: for any ``y``, ``min {cx : l <= x <= u, L <= Ax <= U}``
    is at least ``Σ_i (y_i L_i if y_i > 0 else y_i U_i) + Σ_j min(d_j l_j, d_j u_j)`` with ``d = c - Aᵀy``
    (``-inf`` where a needed column bound is infinite). ``y`` is first projected on the signs its rows
    allow (no positive dual on a row without a lower bound, no negative one without an upper bound):
    duals carried over from another LP, or a simplex's round-off, would otherwise give ``-inf``. Exact
    arithmetic is not needed: callers compare it with a cutoff that has slack (objectives are integers).

    >>> lp = ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.full(2, 5.0),
    ...              row_lower=np.array([3.0]), row_upper=np.array([np.inf]),
    ...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
    >>> dual_bound(lp, np.array([1.0])), dual_bound(lp, np.array([0.5])), dual_bound(lp, np.array([-1.0]))
    (3.0, 1.5, 0.0)
    """
    row_dual = np.where(np.isfinite(lp.row_lower), row_dual, np.minimum(row_dual, 0.0))
    row_dual = np.where(np.isfinite(lp.row_upper), row_dual, np.maximum(row_dual, 0.0))
    counts = np.diff(lp.start)
    reduced = lp.cost - np.bincount(np.repeat(np.arange(lp.num_col), counts), weights=lp.value * row_dual[lp.index],
                                    minlength=lp.num_col)
    with np.errstate(invalid="ignore"):
        rows = np.where(row_dual > 0, row_dual * lp.row_lower, np.where(row_dual < 0, row_dual * lp.row_upper, 0.0))
        cols = np.where(reduced > 0, reduced * lp.lower, np.where(reduced < 0, reduced * lp.upper, 0.0))
    total = float(rows.sum() + cols.sum())
    return -math.inf if math.isnan(total) else total


def solve_tu_lp(lp: ArrayLP, time_limit: float | None = None, threads: int | None = None,
                deadline: Deadline | None = None) -> tuple[HighsResult, bool]:
    """An LP whose matrix is totally unimodular (network, transportation): the simplex vertex is
    integral, and that is checked; a fractional vertex (a modelling slip) is re-solved as an ILP.

    Returns the result and whether the ILP fallback ran. ``time_limit`` (or ``deadline``) covers both.

    >>> lp = ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.ones(2),
    ...              row_lower=np.array([1.0]), row_upper=np.array([1.0]),
    ...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
    >>> r, fallback = solve_tu_lp(lp)
    >>> r.status, r.x.tolist(), fallback
    ('optimal', [1.0, 0.0], False)
    """
    if deadline is None and time_limit is not None:
        deadline = Deadline.after(time_limit)
    res = solve_lp(lp, threads=threads, deadline=deadline)
    if res.x is not None and not is_integral(res.x):
        return solve_lp(lp, integer=True, threads=threads, deadline=deadline), True
    return res, False


def is_integral(x: np.ndarray, tol: float = INTEGRALITY_TOL) -> bool:
    """Whether every entry is within ``tol`` of an integer.

    >>> is_integral(np.array([0.0, 1.0, 2.0000000001])), is_integral(np.array([0.5]))
    (True, False)
    """
    return bool(np.all(np.abs(x - np.rint(x)) <= tol))


# --------------------------------------------------------------------------- building and lexicographic MIPs


class SparseBuilder:
    """Collects columns and rows (COO) and returns an :class:`ArrayLP`; vectorised adds.

    >>> b = SparseBuilder()
    >>> x = b.add_cols(2, upper=1.0, integer=True)
    >>> b.add_row(x, [1.0, 1.0], 1.0, 1.0)
    0
    >>> lp = b.build(cost=np.array([3.0, 2.0]))
    >>> np.rint(solve_lp(lp).x).astype(int).tolist()
    [0, 1]

    A column's cost may come with it instead (``add_cols(..., cost=...)``); ``build()`` without ``cost``
    then uses those.
    """

    def __init__(self) -> None:
        self.lower: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.integer: list[np.ndarray] = []
        self.cost: list[np.ndarray] = []
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.num_col = 0

    @property
    def num_row(self) -> int:
        return len(self.row_lo)

    def add_cols(self, n: int, lower: float | np.ndarray = 0.0, upper: float | np.ndarray = np.inf,
                 integer: bool = False, cost: float | np.ndarray = 0.0) -> np.ndarray:
        """``n`` new columns; returns their indices."""
        self.cost.append(np.broadcast_to(np.asarray(cost, dtype=np.float64), (n,)).copy())
        self.lower.append(np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,)).copy())
        self.upper.append(np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,)).copy())
        self.integer.append(np.full(n, integer))
        idx = np.arange(self.num_col, self.num_col + n)
        self.num_col += n
        return idx

    def add_row(self, cols, vals, lo: float, hi: float) -> int:
        """One row ``lo <= Σ vals·x[cols] <= hi``; returns its index."""
        r = self.num_row
        cols = np.asarray(cols, dtype=np.int64)
        self.rows.append(np.full(len(cols), r, dtype=np.int64))
        self.cols.append(cols)
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), (len(cols),)).copy())
        self.row_lo.append(lo)
        self.row_hi.append(hi)
        return r

    def add_rows(self, count: int, rows: np.ndarray, cols: np.ndarray, vals, lo, hi) -> np.ndarray:
        """``count`` rows at once from entries (``rows`` local in ``0..count-1``); returns their indices."""
        first = self.num_row
        self.rows.append(np.asarray(rows, dtype=np.int64) + first)
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), (len(cols),)).copy())
        self.row_lo.extend(np.broadcast_to(np.asarray(lo, dtype=np.float64), (count,)).tolist())
        self.row_hi.extend(np.broadcast_to(np.asarray(hi, dtype=np.float64), (count,)).tolist())
        return np.arange(first, first + count)

    def build(self, cost: np.ndarray | None = None) -> ArrayLP:
        n = self.num_col
        cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dtype=dt))
        start, index, value = build_csc(n, cat(self.cols, np.int64), cat(self.rows, np.int64),
                                        cat(self.vals, np.float64))
        integer = cat(self.integer, bool)
        return ArrayLP(cat(self.cost, np.float64) if cost is None else np.asarray(cost, dtype=np.float64),
                       cat(self.lower, np.float64), cat(self.upper, np.float64),
                       np.asarray(self.row_lo, dtype=np.float64), np.asarray(self.row_hi, dtype=np.float64),
                       start, index, value, integer if integer.any() else None)


@dataclass(frozen=True)
class LexResult:
    """A lexicographic solve: per stage its optimal (or incumbent) value and proven bound.

    ``stopped`` is the index of the stage the time limit interrupted (``None``
    when every stage was solved to optimality); ``x`` the last incumbent, which
    meets every earlier stage at its optimal value.
    """

    status: str
    x: np.ndarray | None
    values: tuple[float, ...]
    bounds: tuple[float, ...]
    stopped: int | None
    message: str = ""


def solve_lexicographic(lp: ArrayLP, stages: list[np.ndarray], time_limit: float | None = None,
                        threads: int | None = None, start: np.ndarray | None = None,
                        lower_bounds: list[float] | None = None) -> LexResult:
    """Minimise ``stages[0]·x``, then ``stages[1]·x`` with stage 0 fixed at its optimum, and so on.

    The standard lexicographic method: after stage k, the row ``stages[k]·x <=
    opt_k`` is added (stage objectives have integer coefficients on integer
    columns, so ``opt_k`` is an integer and the row is exact). The previous
    stage's solution, feasible for the next, is passed as a start. One
    ``time_limit`` holds for all stages together; when it strikes, the stage's
    incumbent and bound are returned (``status`` ``feasible``), or the last
    stage's solution if the stage found nothing better. A stage whose
    incumbent already meets its entry of ``lower_bounds`` (a bound known
    without solving, e.g. 0 for a count) is optimal without a solve.

    >>> b = SparseBuilder()
    >>> x = b.add_cols(3, upper=1.0, integer=True)
    >>> _ = b.add_row(x, 1.0, 2.0, 2.0)
    >>> r = solve_lexicographic(b.build(), [np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0])])
    >>> r.status, r.values, np.rint(r.x).astype(int).tolist()
    ('optimal', (1.0, 0.0), [1, 0, 1])
    """
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    mip = _is_mip(lp, False)
    h = _highs(lp, False, time_limit, threads, presolve=mip)  # presolve off only pays on the network LPs
    values: list[float] = []
    bounds: list[float] = []
    x = start
    all_cols = np.arange(lp.num_col, dtype=np.int32)
    for k, cost in enumerate(stages):
        cost = np.asarray(cost, dtype=np.float64)
        if x is not None and lower_bounds is not None and cost @ x <= lower_bounds[k] + 1e-9:
            _keep(h, cost, x, mip, values, bounds)
            continue
        h.changeColsCost(lp.num_col, all_cols, cost)
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                return _stopped(x, values, bounds, cost, k)
            h.setOptionValue("time_limit", left)
        if x is not None and mip:
            sol = highspy.HighsSolution()
            sol.col_value = list(map(float, x))
            h.setSolution(sol)
        h.run()
        r = _result(h, mip)
        if r.status == "optimal" and x is not None and mip and _stale(h, cost, r):
            h.clearSolver()  # no start this time: the answer is the solver's own
            h.run()
            r = _result(h, mip)
        if r.status == "optimal":
            x = r.x
            _keep(h, cost, x, mip, values, bounds)
            continue
        if r.status == "feasible" or (r.status == "time_limit" and x is not None):
            if r.x is not None:
                x = r.x
            bound = r.bound if r.bound is not None else -np.inf
            return LexResult("feasible", x, tuple(values) + (float(cost @ x),), tuple(bounds) + (bound,), k,
                             f"time limit in stage {k + 1} of {len(stages)}")
        return LexResult(r.status, x, tuple(values), tuple(bounds), k, r.message)
    return LexResult("optimal", x, tuple(values), tuple(bounds), None)


MERGE_LIMIT = 1e10
"""Largest value a merged stage (:func:`split_merged`) may take: integral objectives stay exact far below 2^53."""


def split_merged(result: LexResult, weight: int, first: int = 0, second: int = 0) -> LexResult:
    """``result`` of a :func:`solve_lexicographic` whose last stage merged two as ``(first stage +
    first)·weight + (second stage + second)``, each shifted value in ``[0, weight)`` (one solve instead of
    two: minimizing it is minimizing them lexicographically), as a result over both. An optimum splits
    into both values; a bound ``b`` of the merged stage bounds the first by ``⌊(b + K)/W⌋`` (the second
    is below W) and, when that meets the incumbent's first value, the second by the remainder."""
    merged = len(result.values) == len(result.bounds) and result.stopped is None
    k = len(result.values) - 1
    values, bounds = list(result.values[:k]), list(result.bounds[:k])
    if len(result.values) > k >= 0 and (result.stopped is None or result.stopped == k):
        total = int(round(result.values[k])) + first * weight + second
        values += [total // weight - first, total % weight - second]
        if merged:
            bounds += [values[-2], values[-1]]
        elif k < len(result.bounds) and np.isfinite(result.bounds[k]):
            low = int(np.ceil(result.bounds[k] - 1e-6)) + first * weight + second
            bounds += [low // weight - first]
            if low // weight == total // weight:  # the first stage is proven: the second's bound follows
                bounds += [low % weight - second]
                return replace(result, values=tuple(values), bounds=tuple(bounds), stopped=k + 1)
        return replace(result, values=tuple(values), bounds=tuple(bounds), stopped=None if merged else k)
    return result


def _stale(h, cost: np.ndarray, r: HighsResult) -> bool:
    """Whether HiGHS handed back a point other than the one it reports: with a feasible MIP start that its
    presolve improves on, HiGHS 1.16 can answer ``optimal`` with the right objective and bound but the
    *start's* column values (found on ``exact.joint``: objective 50, the start's 80 returned), which would
    fix the stage at the start's value and call it optimal."""
    return r.x is None or abs(float(cost @ r.x) - float(h.getInfo().objective_function_value)) > 1e-6 * max(
        1.0, abs(float(h.getInfo().objective_function_value)))


def _keep(h, cost: np.ndarray, x: np.ndarray, mip: bool, values: list[float], bounds: list[float]) -> None:
    """Record a solved stage's optimum and hold later stages to it: ``cost · x <= value``."""
    value = float(np.rint(cost @ x)) if mip else float(cost @ x)
    values.append(value)
    bounds.append(value)
    nz = np.nonzero(cost)[0]
    h.addRow(-highspy.kHighsInf, value + (0.0 if mip else 1e-9), len(nz), nz.astype(np.int32), cost[nz])


def _stopped(x, values, bounds, cost, k) -> LexResult:
    if x is None:
        return LexResult("time_limit", None, tuple(values), tuple(bounds), k, "time limit before any solution")
    return LexResult("feasible", x, tuple(values) + (float(cost @ x),), tuple(bounds) + (-np.inf,), k,
                     f"time limit before stage {k + 1}")


# --------------------------------------------------------------------------- column generation


@dataclass(frozen=True)
class NewColumns:
    """Columns to append to a model (CSC over the model's rows)."""

    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray

    @property
    def num_col(self) -> int:
        return len(self.cost)


def _lagrangian_gap(extra: NewColumns, row_dual: np.ndarray) -> float:
    """``Σ min(rc·lower, rc·upper)`` over ``extra``'s columns (``-inf`` for an unbounded one that would
    improve): how much better than the restricted optimum the whole model can be at most."""
    counts = np.diff(extra.start)
    col = np.repeat(np.arange(extra.num_col), counts)
    rc = extra.cost - np.bincount(col, weights=extra.value * row_dual[extra.index], minlength=extra.num_col)
    with np.errstate(invalid="ignore"):
        low, high = rc * extra.lower, rc * extra.upper
    return float(np.sum(np.fmin(np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=0.0))))


def solve_priced(lp: ArrayLP, price, threads: int | None = None,
                 deadline: Deadline | None = None) -> tuple[HighsResult, int]:
    """Column generation on an LP: solve ``lp`` (simplex, presolve off), hand the row duals to
    ``price(row_dual) -> NewColumns | None`` and re-solve from the current basis with the columns it
    returns, until it returns ``None`` (no column it knows of has a negative reduced cost, so the
    restricted optimum is optimal for the whole model). The first solve is dual simplex, the re-solves
    primal simplex from the previous basis.

    ``x`` of the result covers ``lp``'s columns, then the added ones in the order they were added.
    Returns the result and the number of pricing rounds that added columns. When the ``deadline``
    stops the loop, the last restricted solution comes back as ``feasible``; if ``price`` returns
    *every* column of negative reduced cost (as its contract asks), its bound is Lagrangian: the
    restricted optimum plus ``Σ min(rc·lower, rc·upper)`` over the columns it returned (no column left
    out could do better), from the last completed round.

    >>> lp = ArrayLP(cost=np.array([5.0]), lower=np.zeros(1), upper=np.ones(1),
    ...              row_lower=np.array([1.0]), row_upper=np.array([1.0]),
    ...              start=np.array([0, 1]), index=np.array([0]), value=np.array([1.0]))
    >>> cheap = NewColumns(np.array([2.0]), np.zeros(1), np.ones(1), np.array([0, 1]), np.array([0]), np.ones(1))
    >>> offers = [cheap]
    >>> r, rounds = solve_priced(lp, lambda dual: offers.pop() if offers and dual[0] > 2 else None)
    >>> r.status, r.objective, np.rint(r.x).astype(int).tolist(), rounds
    ('optimal', 2.0, [0, 1], 1)
    """
    if lp.num_col == 0:  # HiGHS calls a model without columns "Empty" (status error); its answer is known
        return _empty_result(lp, False, "off"), 0
    if deadline is not None and deadline.expired:
        return HighsResult("time_limit", None, None, None, False, "deadline passed before the solve"), 0
    h = _highs(lp, False, None if deadline is None else deadline.limit(), threads, False)
    rounds = 0
    bound = None  # Lagrangian bound of the last completed round
    while True:
        h.run()
        res = _result(h, False)
        if res.status != "optimal":
            return replace(res, bound=bound) if res.x is not None else res, rounds
        extra = price(res.row_dual)
        if extra is None or extra.num_col == 0:
            return res, rounds
        bound = res.objective + _lagrangian_gap(extra, res.row_dual)
        if deadline is not None and deadline.expired:
            return HighsResult("feasible", res.objective, bound, res.x, False, "time limit while pricing"), rounds
        rounds += 1
        # the basis stays primal feasible when columns join at their bound: primal simplex only prices
        # the new ones in (dual simplex restarted from it took 12,600 iterations on rack_balance_priced)
        h.setOptionValue("simplex_strategy", 4)
        h.addCols(extra.num_col, extra.cost, extra.lower, extra.upper, len(extra.index),
                  extra.start[:-1].astype(np.int32), extra.index.astype(np.int32), extra.value)
        if deadline is not None and deadline.at is not None:
            # HiGHS compares time_limit with its run time summed over every run() of this object
            h.setOptionValue("time_limit", float(h.getRunTime() + deadline.limit()))
