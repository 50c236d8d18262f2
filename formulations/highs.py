"""Solve a linear program given as numpy arrays with ``highspy``, presolve off.

Models here are built column-wise in compressed sparse column form and
handed to :class:`highspy.HighsLp` directly: no modelling layer, no file.
HiGHS presolve is switched off on purpose (``solver-notes.md``: on the
rack-grouped KIP-925 LP it turns a 0.2 s solve into minutes).

The solves live in three modules beside this one, and other code imports them all from here:
:mod:`kipopt.formulations.highs_lp` (:class:`ArrayLP`, :func:`solve_lp` and what every solve shares),
:mod:`kipopt.formulations.highs_lexicographic` (:class:`SparseBuilder`, :func:`solve_lexicographic`) and
:mod:`kipopt.formulations.highs_duals` (:func:`dual_bound`, column generation with :func:`solve_priced`).
This module keeps HiGHS in a child the deadline kills (:func:`call_highs_before`: tests patch its
``_KILLABLE`` flag here, so what reads the flag stays beside it) and :class:`WarmLP`, which runs its
largest solves in such a child.

>>> import numpy as np
>>> lp = ArrayLP(cost=np.array([1.0, 2.0]), lower=np.zeros(2), upper=np.ones(2),
...              row_lower=np.array([1.0]), row_upper=np.array([1.0]),
...              start=np.array([0, 1, 2]), index=np.array([0, 0]), value=np.array([1.0, 1.0]))
>>> r = solve_lp(lp)
>>> r.status, r.objective, r.x.tolist()
('optimal', 1.0, [1.0, 0.0])
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, TypeVar

import highspy
import numpy as np

from kipopt.deadline import (Deadline, call_before,  # noqa: F401  (Deadline re-exported)
                             call_before_with)
from kipopt.formulations.highs_duals import (NewColumns, carried_cutoff, confirmed_cutoff,  # noqa: F401 (re-exported)
                                             dual_bound, solve_priced)
from kipopt.formulations.highs_lexicographic import (MERGE_LIMIT, LexResult, SparseBuilder,  # noqa: F401 (re-exported)
                                                    solve_lexicographic, split_merged)
from kipopt.formulations.highs_lp import (INTEGRALITY_TOL, SMALL_LP_COLUMNS,  # noqa: F401 (re-exported)
                                          SMALL_LP_SECONDS, build_csc, is_integral, quiet_stdout,
                                          restart_thread_pool, run_highs, size_thread_pool, solve_lp, solve_tu_lp)
from kipopt.formulations.highs_face import dive_on_face, integral_value
from kipopt.formulations.highs_lp import ArrayLP, HighsResult, _highs, _result, new_highs, pass_model

T = TypeVar("T")
U = TypeVar("U")


def call_highs_before(deadline: Deadline, fn: Callable[[], T]) -> T | None:
    """:func:`kipopt.deadline.call_before` for work that runs HiGHS: ``fn()`` in a child the deadline kills.

    A forked child inherits the forking thread's HiGHS thread pool without its
    threads: once the parent has run HiGHS, a MIP in the child waits for them
    forever (measured: an LP in the parent, then a 1-second MIP in the child
    never returned). The child therefore restarts the pool first.
    """
    return fn() if deadline.at is None or _KILLABLE else call_before(deadline, _guarded(fn))


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


def call_highs_each_before(deadline: Deadline, fns: list[Callable[[], T]],
                           meanwhile: Callable[[], None] | None = None) -> list[T | None]:
    """Each of ``fns`` in a child of its own, all at once, each killed when ``deadline`` passes (as
    :func:`call_highs_before`): their results in order, ``None`` for one that did not finish. Without a
    deadline, or inside such a child, they run here one after another. ``meanwhile()`` runs here once all
    are started (after them, where they run here)."""
    if not fns:
        if meanwhile is not None:
            meanwhile()
        return []
    if len(fns) == 1:
        if meanwhile is None:
            return [call_highs_before(deadline, fns[0])]
        return [call_highs_before_with(deadline, fns[0], meanwhile)[0]]
    first, rest = call_highs_before_with(deadline, fns[0],
                                         lambda: call_highs_each_before(deadline, fns[1:], meanwhile))
    return [first, *rest]


_KILLABLE = False
"""True in a child :func:`call_highs_before` made: its deadline already kills it, so a call nested inside runs
inline (a grandchild would outlive a killed child, burning a core)."""


def in_guarded_child() -> bool:
    """Whether this process is a child :func:`call_highs_before` made (the deadline kills it: work that does
    not watch the clock may start here without overrunning the limit)."""
    return _KILLABLE


@dataclass(frozen=True)
class WarmStart:
    """A solve's end in a :class:`WarmLP` family: its basis and its row duals (``None`` unless optimal)."""

    basis: object
    row_dual: np.ndarray | None


class WarmLP:
    """A family of LPs with one sparsity pattern, solved one after another, each from the previous
    one's optimal basis (dual simplex, presolve off). Members of the family differ in bounds and in
    the values of the pattern's entries (a value may be 0): the level tree's leaves, whose re-solves
    take a few hundred pivots instead of thousands. Each solve passes the whole model (numpy arrays,
    cheap) instead of changing coefficients one call at a time (costly in HiGHS)."""

    WARM_COLUMNS = 40_000
    """Above this many columns every solve is an interior point one, in a child. Measured at 100,000 x 5,000
    (89,000 columns): a warm dual simplex re-solve from the last leaf's basis takes 0.28 s when the next
    leaf differs in one small topic, but 5.4 s for one large topic (interior point: 2.8 s), and the
    level tree's leaves, popped best first, are far from the last one solved."""

    WARM_ITERATIONS = 2_000
    """A warm dual simplex that has not ended after this many iterations gives way to interior point, cold
    (with crossover: the basis is kept). On the level tree's sweep at 10,000 x 1,000 (15,500 columns) one warm
    re-solve took 5,131 iterations and 0.83 s where interior point takes 0.26 s; the group (seed 3) was proven
    in 1.56-1.60 s instead of 1.70-1.77 s, the other seeds unchanged (1,000: 0.45 s slower on seed 1)."""

    KEPT_DUALS = 8
    """How many of the last optima's row duals are kept to bound later members by weak duality. On the level
    tree of a 100,000 x 5,000 group at 60 s (leaf LPs of 89,000 columns, boxes bounded by these duals too):
    bound 23,509 with one, 23,532 with 4, 23,538-23,540 with 8 and with 16 (the answer: 23,549)."""

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads
        self._basis = None
        self._duals: list[np.ndarray] = []        # the last optima's row duals, newest first
        self._cut_dual: np.ndarray | None = None  # those that proved the last cutoff
        self._end_dual: np.ndarray | None = None  # the last solve's, None unless it ended optimal
        self._h = None

    @property
    def basis(self):
        """The basis the family's last solve ended at (``None`` before any): a caller that solves members in
        its own order keeps it to start a related member from (:meth:`solve`'s ``start``)."""
        return self._basis

    @property
    def carried(self) -> list[np.ndarray]:
        """The row duals :meth:`solve` tries before solving (the last optima's, newest first, then those that
        proved the last cutoff), for a caller that bounds other members of the family with them (weak
        duality)."""
        return self._duals + ([] if self._cut_dual is None else [self._cut_dual])

    @property
    def start(self) -> "WarmStart":
        """Where the family's last solve ended: its basis and (when it ended optimal) its row duals, for
        :meth:`solve`'s ``start``."""
        return WarmStart(self._basis, self._end_dual)

    def solve(self, lp: ArrayLP, time_limit: float | None = None, cutoff: float | None = None,
              start=None) -> HighsResult:
        """``lp`` (an LP: no integrality) must have this family's pattern (``start`` and ``index``); see
        :meth:`_solve`. It starts from the basis ``start`` (one :attr:`basis` gave, or the basis of a
        :class:`WarmStart`, :attr:`start`) when given, else from the last one.

        With a ``cutoff``, the row duals of a :class:`WarmStart` given (a related member's optimum: in the
        level tree, the box a box was split from), then those of the family's last optima
        (:data:`KEPT_DUALS`, newest first), then those that proved the last cutoff are tried first: by
        weak duality (:func:`dual_bound`, valid for any duals) they bound this member too, and a bound
        above ``cutoff`` settles it (status ``cutoff``) with no solve. Measured on the level tree's leaves
        at 10,000 x 1,000: the last cutoff's duals settle 30 of the 31 leaves the last optimum's do not
        (the tree's 1.4 s proof then takes 1.0 s).

        Above :data:`WARM_COLUMNS` under a time limit the solve runs in a child the limit
        kills: HiGHS' interior point overran a 2-second limit by 2 s at 100,000 x 5,000 (86,000 columns;
        its crossover), and no basis is kept at that size anyway."""
        self._end_dual = None
        given = start.row_dual if isinstance(start, WarmStart) else None
        start = start.basis if isinstance(start, WarmStart) else start
        settled = _first_settled(lp, [given] + self.carried, cutoff)
        if settled is not None:
            return settled
        if start is not None:
            self._basis = start
        if lp.num_col > self.WARM_COLUMNS and time_limit is not None:
            done = call_highs_before(Deadline.after(time_limit), lambda: self._solve(lp, time_limit, None))
            result = done if done is not None else stopped_at_limit()
        else:
            result = self._solve(lp, time_limit, cutoff)
        if result.status == "cutoff":
            self._cut_dual = result.row_dual
        elif result.row_dual is not None:
            self._end_dual = result.row_dual
            self._keep(result.row_dual)
        return result

    def solve_then(self, lp: ArrayLP, fixed: Callable[[np.ndarray], np.ndarray], time_limit: float | None = None,
                   cutoff: float | None = None, start=None,
                   meanwhile: Callable[[], None] | None = None) -> tuple[HighsResult, HighsResult | None]:
        """:meth:`solve`, then (when that is optimal at most ``cutoff``) the same LP with its first
        ``len(fixed(x))`` columns fixed at ``fixed(x)``, ``x`` the first optimum, from the first's basis.
        Where that second optimum is worse than the first's value and that value is an integer, a dive on the
        first's optimal face (:func:`~kipopt.formulations.highs_face.dive_on_face`) may answer instead: an
        optimum at the first's value with those columns integral.

        Above :data:`WARM_COLUMNS` under a time limit both run in one child: fixing columns keeps the
        first optimum's basis dual feasible, so the second is a short dual simplex in the same HiGHS
        object, where a second child would solve it cold (as long as the first; measured at 100,000 x
        5,000: 2.9 s each, which left the tree's first leaf without its rounded answer at a 10 s limit).
        ``meanwhile()`` runs here while that child works (after the solve, where it runs here)."""
        if meanwhile is None:
            return self._solve_then_here(lp, fixed, time_limit, cutoff, start)
        if self._in_children([lp], time_limit):
            return self.solve_then_each([lp], fixed, time_limit, cutoff, meanwhile)[0]
        done = self._solve_then_here(lp, fixed, time_limit, cutoff, start)
        meanwhile()
        return done

    def _solve_then_here(self, lp: ArrayLP, fixed: Callable[[np.ndarray], np.ndarray], time_limit: float | None,
                         cutoff: float | None, start) -> tuple[HighsResult, HighsResult | None]:
        """:meth:`solve_then` with nothing to run meanwhile."""
        if lp.num_col <= self.WARM_COLUMNS or time_limit is None:
            until = Deadline.after(time_limit)
            first = self.solve(lp, time_limit, cutoff, start)
            if not _fixing_pays(first, cutoff):
                return first, None
            basis, values = self._basis, fixed(first.x)
            second = self.solve(fix_columns(lp, values), until.limit())
            if _rounding_missed(first, second):
                second = _dived_here(lp, first, basis, len(values), until, self._threads) or second
            return first, second
        settled = _first_settled(lp, self._duals, cutoff)
        if settled is not None:
            return settled, None
        done = call_highs_before(Deadline.after(time_limit), lambda: _solve_then(lp, fixed, time_limit, cutoff,
                                                                                  self._threads))
        if done is None:
            return stopped_at_limit(), None
        if done[0].row_dual is not None:
            self._keep(done[0].row_dual)
        return done

    def settled(self, lp: ArrayLP, cutoff: float | None) -> HighsResult | None:
        """``lp`` (a member) settled above ``cutoff`` with no solve by the duals :attr:`carried` (status
        ``cutoff``), else ``None``."""
        return _first_settled(lp, self.carried, cutoff)

    def solve_then_each(self, lps: list[ArrayLP], fixed: Callable[[np.ndarray], np.ndarray],
                        time_limit: float | None = None, cutoff: float | None = None,
                        meanwhile: Callable[[], None] | None = None
                        ) -> list[tuple[HighsResult, HighsResult | None]]:
        """:meth:`solve_then` for each of ``lps`` (members of the family), in order. Where they are large
        (above :data:`WARM_COLUMNS`, under a time limit) each one the family's kept duals do not settle
        runs in a child of its own, all at once (:func:`call_highs_each_before`): interior point keeps
        one core busy, so two leaves of the level tree at 1,000,000 x 10,000 take 8.5 s together, as
        long as one alone. Their optima's duals are kept in order once all are back. Otherwise one
        after another, each settled by the duals of those before it where they can. ``meanwhile()`` runs here
        once the children are started (after the solves, where they run here)."""
        if (len(lps) == 1 and meanwhile is None) or not self._in_children(lps, time_limit):
            until = Deadline.after(time_limit)
            done = [self.solve_then(lp, fixed, until.limit(), cutoff) for lp in lps]
            if meanwhile is not None:
                meanwhile()
            return done
        out = [(_first_settled(lp, self._duals, cutoff), None) for lp in lps]
        wave = [i for i, (settled, _) in enumerate(out) if settled is None]
        jobs = [partial(_solve_then, lps[i], fixed, time_limit, cutoff, self._threads) for i in wave]
        for i, done in zip(wave, call_highs_each_before(Deadline.after(time_limit), jobs, meanwhile)):
            out[i] = (stopped_at_limit(), None) if done is None else done
            if done is not None and done[0].row_dual is not None:
                self._keep(done[0].row_dual)
        return out

    def _in_children(self, lps: list[ArrayLP], time_limit: float | None) -> bool:
        """Whether :meth:`solve_then_each` solves ``lps`` in children: all large, under a time limit, and not
        inside such a child already."""
        return time_limit is not None and not in_guarded_child() and all(lp.num_col > self.WARM_COLUMNS
                                                                           for lp in lps)

    def _keep(self, row_dual: np.ndarray) -> None:
        self._duals = [row_dual] + self._duals[:self.KEPT_DUALS - 1]

    def _solve(self, lp: ArrayLP, time_limit: float | None = None, cutoff: float | None = None) -> HighsResult:
        """``cutoff``: only an optimum at most this matters. A warm dual simplex then stops as soon as its
        objective passes it (HiGHS' ``objective_bound``), and the result's status is ``cutoff`` with
        ``bound`` a lower bound above ``cutoff`` that :func:`dual_bound` checks from the row duals here,
        not taken on HiGHS' word; a stop the check does not confirm is solved on in full.

        Warm solves share one ``Highs`` object that each member replaces the model of: a fresh object per
        solve (options, thread pool restart) cost the level tree's box relaxations of a 100-member group
        1.6 ms each, about a third of their dual simplex."""
        until = Deadline.after(time_limit)
        warm = self._basis is not None and lp.num_col <= self.WARM_COLUMNS
        if warm:
            h = self._warm_highs(lp, time_limit)
            h.setBasis(self._basis)
            h.setOptionValue("simplex_iteration_limit", self.WARM_ITERATIONS)
            h.setOptionValue("objective_bound", np.inf if cutoff is None else float(cutoff))
        else:  # interior point then crossover to a vertex: on the level tree's leaves at 5,000 members
            # (86,000 columns) 3 s where the dual simplex takes 26 s cold and about as long warm
            h = _interior_highs(lp, time_limit, self._threads)
        h.run()
        if warm and h.getModelStatus() == highspy.HighsModelStatus.kIterationLimit:
            h = _interior_highs(lp, until.limit(), self._threads)
            h.run()
        if warm and cutoff is not None and h.getModelStatus() == highspy.HighsModelStatus.kObjectiveBound:
            self._basis = h.getBasis()  # dual feasible: a good start for the next one
            stopped = confirmed_cutoff(h, lp, cutoff)
            if stopped is not None:
                return stopped
            h.setOptionValue("objective_bound", np.inf)
            _time_limit(h, until.limit())
            h.run()
        h, result = _or_plain(h, lp, until, self._threads)
        if result.status == "optimal":
            self._basis = h.getBasis()
        return result

    def _warm_highs(self, lp: ArrayLP, time_limit: float | None):
        """The family's ``Highs`` object holding ``lp`` (options kept from its first member), its time limit
        ``time_limit`` from now."""
        if self._h is None:
            self._h = _highs(lp, False, None, self._threads, False)
        else:
            pass_model(self._h, lp)
        _time_limit(self._h, time_limit)
        return self._h


def _first_settled(lp: ArrayLP, duals: list[np.ndarray | None], cutoff: float | None) -> HighsResult | None:
    """The first :func:`carried_cutoff` of ``lp`` that ``duals`` (in order; ``None`` skipped) give, else ``None``."""
    return next(filter(None, (carried_cutoff(lp, d, cutoff) for d in duals)), None)


def fix_columns(lp: ArrayLP, values: np.ndarray) -> ArrayLP:
    """``lp`` with its first ``len(values)`` columns fixed at ``values``."""
    k = len(values)
    return replace(lp, lower=np.r_[values, lp.lower[k:]], upper=np.r_[values, lp.upper[k:]])


def _solve_then(lp: ArrayLP, fixed: Callable[[np.ndarray], np.ndarray], time_limit: float, cutoff: float | None,
                threads: int | None) -> tuple[HighsResult, HighsResult | None]:
    """:meth:`WarmLP.solve_then` for a large LP, in the child: interior point and crossover, then the fixed
    columns' bounds changed in place and a dual simplex from that vertex, under HiGHS' own time limit
    (a dual simplex keeps it; the crossover is what the child's deadline guards)."""
    until = Deadline.after(time_limit)
    h = _interior_highs(lp, time_limit, threads)
    h.run()
    h, first = _or_plain(h, lp, until, threads)
    if not _fixing_pays(first, cutoff):
        return first, None
    basis = h.getBasis()
    values = np.asarray(fixed(first.x), dtype=np.float64)
    k = len(values)
    h.changeColsBounds(k, np.arange(k, dtype=np.int32), values, values)
    h.setOptionValue("solver", "simplex")
    _time_limit(h, until.limit())
    h.run()
    second = _result(h, False)
    if _rounding_missed(first, second):
        h.changeColsBounds(k, np.arange(k, dtype=np.int32), lp.lower[:k], lp.upper[:k])
        h.setBasis(basis)
        second = dive_on_face(h, lp, first, k, until) or second
    return first, second


def _rounding_missed(first: HighsResult, second: HighsResult) -> bool:
    """Whether the rounded solve ``second`` fell short of ``first``'s value where an integral point of
    ``first``'s optimal face may still reach it (:func:`~kipopt.formulations.highs_face.dive_on_face`)."""
    if not integral_value(first):
        return False
    return (second.status != "optimal" or second.x is None or second.objective > first.objective + 0.5
            or not is_integral(second.x))


def _dived_here(lp: ArrayLP, first: HighsResult, basis, k: int, until: Deadline,
                threads: int | None) -> HighsResult | None:
    """:func:`~kipopt.formulations.highs_face.dive_on_face` in a ``Highs`` object of its own, started at
    ``first``'s optimal basis."""
    if basis is None:
        return None
    h = _highs(lp, False, until.limit(), threads, False)
    h.setBasis(basis)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return dive_on_face(h, lp, first, k, until)


INTERIOR_POINT = {"solver": "ipm", "run_crossover": "on"}
"""HiGHS options for interior point, then crossover to a vertex (integral on a network matrix)."""


def _interior_highs(lp: ArrayLP, time_limit: float | None, threads: int | None):
    """A ``Highs`` object holding ``lp`` for interior point and crossover to a vertex."""
    h = _highs(lp, False, time_limit, threads, False)
    for name, value in INTERIOR_POINT.items():
        h.setOptionValue(name, value)
    return h


def _fixing_pays(first: HighsResult, cutoff: float | None) -> bool:
    """Whether :meth:`WarmLP.solve_then`'s second solve is wanted: the first is an optimum at most ``cutoff``."""
    return first.status == "optimal" and first.x is not None and (cutoff is None or first.objective <= cutoff)


def _or_plain(h, lp: ArrayLP, until: Deadline, threads: int | None):
    """``(h, its result)`` after a run; where that run neither solved nor refuted ``lp`` nor ran out of time
    (IPM gives up on infeasible LPs, and a stale basis can mislead), the plain dual simplex, cold, in a new
    object."""
    result = _result(h, False)
    if result.status in ("optimal", "infeasible", "time_limit"):
        return h, result
    h = _highs(lp, False, until.limit(), threads, False)
    h.run()
    return h, _result(h, False)


def stopped_at_limit() -> HighsResult:
    """The result of a solve whose child the time limit killed."""
    return HighsResult("time_limit", None, None, None, False, "stopped at the time limit")


def _time_limit(h, seconds: float | None) -> None:
    """``seconds`` more for ``h``: HiGHS compares its time limit with the run time summed over the object's
    runs."""
    h.setOptionValue("time_limit", np.inf if seconds is None else h.getRunTime() + max(0.0, float(seconds)))
