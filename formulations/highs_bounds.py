"""A family of LPs that differ only in their bounds, re-solved in one HiGHS object.

:class:`~kipopt.formulations.highs.WarmLP` passes each member of a family whole (its entries' values
change too) and sets the last basis. When only column and row bounds change, HiGHS keeps the model,
its factorisation and its basis between runs: changing the bounds and running again skips building
the model, passing it and restarting the thread pool, which on the level tree's box flow bounds of
a 100-member group cost more than the dual simplex itself (measured: 0.8 ms of set-up against 1.6 ms
of solving per box).
"""

from __future__ import annotations

import highspy
import numpy as np

from kipopt.formulations.highs_duals import carried_cutoff, confirmed_cutoff
from kipopt.formulations.highs_lp import ArrayLP, HighsResult, _highs, _result


class BoundsLP:
    """``base`` with new bounds per :meth:`solve`; the matrix and the costs never change (only a member's
    bounds are read).

    >>> lp = ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.ones(2),
    ...              row_lower=np.array([1.0]), row_upper=np.array([1.0]),
    ...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
    >>> from dataclasses import replace
    >>> family = BoundsLP(lp)
    >>> family.solve(lp).objective
    1.0
    >>> first_out = replace(lp, upper=np.array([0.0, 1.0]))
    >>> family.solve(first_out).objective
    2.0
    >>> family.solve(first_out, cutoff=1.5).status
    'cutoff'
    """

    def __init__(self, base: ArrayLP, threads: int | None = None) -> None:
        self._base = base
        self._threads = threads
        self._h = None
        self._dual: np.ndarray | None = None
        self._cols = np.arange(base.num_col, dtype=np.int32)
        self._rows = np.arange(base.num_row, dtype=np.int32)

    def solve(self, lp: ArrayLP, time_limit: float | None = None, cutoff: float | None = None) -> HighsResult:
        """``lp``: the family's matrix and costs with this member's bounds; solved from the last run's basis.
        With a ``cutoff``, status ``cutoff`` and a ``bound`` above it when the optimum is proven above it:
        by the last optimum's row duals (weak duality, no solve), or by a dual simplex stopped at the
        cutoff and confirmed by the same check (never on HiGHS' word)."""
        settled = carried_cutoff(lp, self._dual, cutoff)
        if settled is not None:
            return settled
        h = self._model(lp)
        # HiGHS compares its time limit with the run time summed over the object's runs
        limit = np.inf if time_limit is None else h.getRunTime() + max(0.0, float(time_limit))
        h.setOptionValue("time_limit", float(limit))
        h.setOptionValue("objective_bound", np.inf if cutoff is None else float(cutoff))
        h.run()
        if cutoff is not None and h.getModelStatus() == highspy.HighsModelStatus.kObjectiveBound:
            stopped = confirmed_cutoff(h, lp, cutoff)
            if stopped is not None:
                return stopped
            h.setOptionValue("objective_bound", np.inf)
            h.run()
        result = _result(h, False)
        if result.status not in ("optimal", "infeasible", "time_limit"):  # a misleading basis: once more, cold
            h.clearSolver()
            h.run()
            result = _result(h, False)
        if result.row_dual is not None:
            self._dual = result.row_dual
        return result

    def _model(self, lp: ArrayLP):
        if self._h is None:
            self._h = _highs(lp, False, None, self._threads, False)
        else:
            self._h.changeColsBounds(lp.num_col, self._cols, lp.lower, lp.upper)
            self._h.changeRowsBounds(lp.num_row, self._rows, lp.row_lower, lp.row_upper)
        return self._h
