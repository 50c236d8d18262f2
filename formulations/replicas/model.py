"""KIP-36 ``exact.spread``: the cluster's shape and the array models it hands to HiGHS.

:class:`Cluster` groups brokers by rack; :class:`Model` collects columns and
COO rows; :func:`solve_model` solves one MIP or LP within a
``time.perf_counter()`` deadline, optionally from a starting point (a MIP
start, so a solve cut short by its deadline still returns that point).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from kipopt.instance import ReplicasInstance

from kipopt.formulations.highs import ArrayLP, build_csc, run_highs

# --------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class Cluster:
    """Brokers sorted by id, grouped by rack (``None`` is a rack of its own in a mixed cluster)."""

    brokers: tuple[int, ...]
    racks: tuple[tuple[int, ...], ...]
    racked: bool
    partitions: int
    rf: int
    start: int

    @staticmethod
    def of(instance: ReplicasInstance) -> "Cluster":
        groups: dict = {}
        for b in instance.broker_ids:
            groups.setdefault(instance.rack_of[b], []).append(b)
        names = sorted(groups, key=lambda r: (r is not None, r or ""))
        racked = any(r is not None for r in groups)
        return Cluster(instance.broker_ids, tuple(tuple(groups[r]) for r in names), racked,
                       instance.partitions, instance.replication_factor, instance.start_partition_id)

    @property
    def num_racks(self) -> int:
        return len(self.racks)

    @property
    def one_per_rack(self) -> bool:
        """R >= RF with racks: at most one replica of a partition per rack."""
        return self.racked and self.num_racks >= self.rf

    @property
    def rack_of_index(self) -> dict[int, int]:
        return {b: r for r, members in enumerate(self.racks) for b in members}


# --------------------------------------------------------------------------- HiGHS, from arrays


@dataclass
class Model:
    """Columns and COO rows of one model (:meth:`to_array_lp` hands it to :mod:`kipopt.formulations.highs`)."""

    cost: list = field(default_factory=list)
    lower: list = field(default_factory=list)
    upper: list = field(default_factory=list)
    integer: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    cols: list = field(default_factory=list)
    vals: list = field(default_factory=list)
    row_lower: list = field(default_factory=list)
    row_upper: list = field(default_factory=list)

    @property
    def num_col(self) -> int:
        return sum(len(c) for c in self.cost)

    def add_vars(self, n: int, lb: float = 0.0, ub: float = 1.0, integer: bool = True,
                 cost: float | np.ndarray = 0.0) -> np.ndarray:
        first = self.num_col
        self.cost.append(np.broadcast_to(np.asarray(cost, dtype=float), (n,)).copy())
        self.lower.append(np.full(n, lb, dtype=float))
        self.upper.append(np.full(n, ub, dtype=float))
        self.integer.append(np.full(n, integer, dtype=bool))
        return np.arange(first, first + n)

    @property
    def num_row(self) -> int:
        return sum(len(r) for r in self.row_lower)

    def add_rows(self, lower: np.ndarray, upper: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                 vals: np.ndarray | float) -> None:
        """Rows ``lower <= A x <= upper``; ``rows`` index the new rows from 0."""
        first = self.num_row
        lower = np.asarray(lower, dtype=float)
        self.row_lower.append(lower)
        self.row_upper.append(np.broadcast_to(np.asarray(upper, dtype=float), lower.shape).copy())
        rows = np.asarray(rows)
        self.rows.append(rows + first)
        self.cols.append(np.asarray(cols))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=float), rows.shape).copy())

    def set_cost(self, cost: np.ndarray) -> None:
        self.cost = [np.asarray(cost, dtype=float)]

    def costs(self) -> np.ndarray:
        return np.concatenate(self.cost)

    def to_array_lp(self) -> ArrayLP:
        """The model in CSC form for :mod:`kipopt.formulations.highs` (integer columns make it a MIP)."""
        rows, cols, vals = (np.concatenate(a) for a in (self.rows, self.cols, self.vals))
        start, index, value = build_csc(self.num_col, cols.astype(np.int64), rows.astype(np.int64), vals)
        integer = np.concatenate(self.integer)
        return ArrayLP(self.costs(), np.concatenate(self.lower), np.concatenate(self.upper),
                       np.concatenate(self.row_lower), np.concatenate(self.row_upper), start, index, value,
                       integer if integer.any() else None)


@dataclass
class Outcome:
    status: str  # optimal | feasible | infeasible | time_limit | error
    x: np.ndarray | None
    objective: float | None
    bound: float | None


def solve_model(model: Model, deadline: float | None, threads: int | None, presolve: bool = True,
                solver: str | None = None, start: np.ndarray | None = None) -> Outcome:
    """One MIP (or LP) solve; ``deadline`` is a ``time.perf_counter()`` instant.

    ``start`` is a feasible point handed to HiGHS as its first incumbent: a
    solve cut short by the deadline then still answers with it (or better).
    """
    if deadline is not None and time.perf_counter() >= deadline:  # no time left: do not start a solve
        return Outcome("time_limit", None, None, None)
    limit = None if deadline is None else max(0.01, deadline - time.perf_counter())
    # mip_rel_gap is 0 in every kipopt MIP; objectives here are integral, so an absolute gap under 1 is exact
    h = run_highs(model.to_array_lp(), limit, threads, presolve=presolve, solver=solver, mip_abs_gap=0.5,
                  start=start)
    return _outcome(h)


def _outcome(h) -> Outcome:
    name = h.modelStatusToString(h.getModelStatus()).lower()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2
    x = np.asarray(h.getSolution().col_value) if has_x else None
    obj = float(info.objective_function_value) if has_x else None
    bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
    if name == "optimal":
        return Outcome("optimal", x, obj, obj)
    if "infeasible" in name:
        return Outcome("infeasible", None, None, None)
    if "time" in name or "limit" in name or "interrupt" in name:
        return Outcome("feasible" if has_x else "time_limit", x, obj, bound)
    return Outcome("error", x, obj, bound)


LP_TIME_SLICE = 100.0
"""(Used when the replica flows run as LPs, i.e. without OR-Tools' min-cost flow: see :mod:`.network`.) Seconds of HiGHS' ``time_limit`` an LP gets first. Its interior point on these network LPs takes longer
the larger that option is, whatever the LP needs (the add-a-rack replica flow from a slipped start, CPU
seconds, one process: 3,000 x 60 brokers 1.0 s at a limit of 10 or 100 s, 1.9 at 300, 2.8 at 1,000, 7.6 at
3,000, 17 at 100,000, 15 with none; 10,000 x 60: 3.6 s at 30 or 100, 4.7 at 300, 15 with none). So an LP
runs first with at most this limit and only runs again with the rest of the time if it needed more."""


def _lp_solve(m: Model, deadline: float | None, threads: int | None, presolve: bool = True) -> Outcome:
    """A linear program (every column continuous): interior point, then crossover to a vertex.

    On these flow matrices simplex needs a minute at 10,000 partitions where
    IPM with crossover takes seconds; the crossover vertex is what makes a
    totally unimodular model's answer integral (and callers check it is).
    """
    m.integer = [np.zeros(len(c), dtype=bool) for c in m.cost]
    capped = time.perf_counter() + LP_TIME_SLICE
    out = solve_model(m, capped if deadline is None else min(deadline, capped), threads, presolve=presolve,
                      solver="ipm")
    if out.status in ("time_limit", "feasible") and (deadline is None or time.perf_counter() < deadline):
        out = solve_model(m, deadline, threads, presolve=presolve, solver="ipm")  # it needs more: the rest
    retry = out.status == "error" or (out.status == "optimal" and not _integral(out.x))
    if retry:  # IPM can fail to classify an infeasible flow; simplex settles both cases
        out = solve_model(m, deadline, threads, presolve=presolve, solver="simplex")
    return out


def _integral(x: np.ndarray) -> bool:
    return bool(np.all(np.abs(x - np.rint(x)) < 1e-6))


