"""Models built column by column (:class:`SparseBuilder`) and solved lexicographically
(:func:`solve_lexicographic`; :func:`split_merged` for two stages merged into one)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import highspy
import numpy as np

from kipopt.formulations.highs_lp import ArrayLP, HighsResult, _highs, _is_mip, _result, build_csc
from kipopt.formulations.highs_lp import solve_lp  # noqa: F401  (SparseBuilder's example solves with it)


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
            why = "time limit" if r.status == "time_limit" or r.message.lower().startswith("time limit") \
                else f"HiGHS: {r.message}"  # under a memory cap HiGHS stops too, without a time limit
            return LexResult("feasible", x, tuple(values) + (float(cost @ x),), tuple(bounds) + (bound,), k,
                             f"{why} in stage {k + 1} of {len(stages)}")
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
