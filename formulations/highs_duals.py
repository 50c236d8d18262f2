"""What an LP's row duals give: a bound by weak duality (:func:`dual_bound`) and column generation
(:func:`solve_priced`, which prices :class:`NewColumns` in with them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kipopt.deadline import Deadline
from kipopt.formulations.highs_lp import ArrayLP, HighsResult, _empty_result, _highs, _result


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
    reduced = lp.cost - np.bincount(_entry_columns(lp.start), weights=lp.value * row_dual[lp.index],
                                    minlength=lp.num_col)
    with np.errstate(invalid="ignore"):
        rows = np.where(row_dual > 0, row_dual * lp.row_lower, np.where(row_dual < 0, row_dual * lp.row_upper, 0.0))
        cols = np.where(reduced > 0, reduced * lp.lower, np.where(reduced < 0, reduced * lp.upper, 0.0))
    total = float(rows.sum() + cols.sum())
    return -math.inf if math.isnan(total) else total


_ENTRY_COLUMNS: tuple[np.ndarray, np.ndarray] | None = None
"""The ``start`` array last seen by :func:`_entry_columns` (held, so its identity stays its own) and its
entries' columns."""


def _entry_columns(start: np.ndarray) -> np.ndarray:
    """Each matrix entry's column, from the CSC ``start``; kept for the next call with the same array. A
    family of LPs shares one pattern (the level tree's leaves and boxes: hundreds of bounds per search),
    and expanding it took most of a bound's time (0.34 of 0.43 ms at 20,000 columns)."""
    global _ENTRY_COLUMNS
    seen = _ENTRY_COLUMNS  # read once: another thread may replace it
    if seen is None or seen[0] is not start:
        seen = (start, np.repeat(np.arange(len(start) - 1), np.diff(start)))
        _ENTRY_COLUMNS = seen
    return seen[1]


def carried_cutoff(lp: ArrayLP, row_dual: np.ndarray | None, cutoff: float | None) -> HighsResult | None:
    """``lp`` settled with no solve: status ``cutoff`` when the row duals of an earlier member of its family
    (``row_dual``) bound it above ``cutoff`` by weak duality (:func:`dual_bound`, valid for any duals);
    ``None`` otherwise."""
    if cutoff is None or row_dual is None:
        return None
    bound = dual_bound(lp, row_dual)
    if bound <= cutoff:
        return None
    return HighsResult("cutoff", None, bound, None, False, "bounded by an earlier member's duals")


def confirmed_cutoff(h, lp: ArrayLP, cutoff: float) -> HighsResult | None:
    """A dual simplex stopped at its objective bound (``h``, run on ``lp``): status ``cutoff`` when its row
    duals prove the optimum above ``cutoff`` (:func:`dual_bound`, never HiGHS' word), with those duals as
    its ``row_dual`` (the proof, which may settle a related LP too); ``None`` when they do not, and the
    caller solves on."""
    row_dual = np.asarray(h.getSolution().row_dual, dtype=np.float64)
    bound = dual_bound(lp, row_dual)
    if bound <= cutoff:
        return None
    return HighsResult("cutoff", None, bound, None, False, "objective bound reached (dual bound checked)",
                       row_dual=row_dual)


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
