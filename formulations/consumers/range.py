"""``exact.range``: per-topic range quotas at minimum cross-rack traffic (rule ``range``).

Per subscribed topic t with ``P_t`` partitions and subscribers ``N_t``
(``n_t = |N_t|``, ``lo_t = floor(P_t/n_t)``, ``hi_t = ceil(P_t/n_t)``), the
member-level model (:func:`~kipopt.formulations.consumers.pulp_models.range_model`, PuLP, one variable
per partition × subscriber) is::

    min  Σ_{p,m} c_{p,m} x_{p,m}                    c_{p,m} = 1 if m reads p cross-rack
    s.t. Σ_{m ∈ N_t} x_{p,m} = 1                    every partition p of t
         lo_t <= Σ_{p ∈ t} x_{p,m} <= hi_t          every (t, m ∈ N_t)
         x >= 0

Topics are independent, and within one a member's rack is all that matters
(its other subscriptions do not). Grouping the partitions of t by replica-
rack set ``R`` (``s_{t,R}`` of them) and its subscribers by rack ``r``
(``n_{t,r}`` of them) gives the transportation problem solved at scale
(:func:`solve_grouped`, highspy arrays)::

    min  Σ c_{R,r} y_{t,R,r}
    s.t. Σ_r y_{t,R,r} = s_{t,R}                            every (t, R)
         n_{t,r} lo_t <= Σ_R y_{t,R,r} <= n_{t,r} hi_t      every (t, r)
         y >= 0

Both are bipartite (supply rows × demand rows, one +1 in each per column),
hence totally unimodular: a simplex vertex is integral (checked with
:func:`~kipopt.formulations.highs.is_integral`, ILP otherwise). The grouped
model has at most ``T · 2^R · (R + 1)`` columns, whatever the number of
partitions and members. Read-back: a rack group's flow ``F`` gives its
first ``F - n lo`` members (Java ``String.compareTo`` order) ``hi``
partitions and the rest ``lo``; they take its incoming partitions in order
(groups by topic, rack set; partitions ascending). Any per-member split is
optimal: members of one rack group are interchangeable for the rule.
Every (t, r) group count between ``n lo`` and ``n hi`` splits into
per-member counts in ``[lo, hi]``, so the two models have the same optimum.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers",
...     "topics": {"t": {"racks": [["a"], ["a"], ["b"]]}},
...     "members": [{"id": "c1", "rack": "b", "topics": ["t"]}, {"id": "c2", "rack": "a", "topics": ["t"]}]})
>>> r = run_range(x, SolveOptions())
>>> r.status.value, r.objective, r.assignment
('optimal', 0.0, {'c1': ('t-2',), 'c2': ('t-0', 't-1')})
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status

from kipopt.formulations.consumers.groups import Dealer, Layout, flow_to_lists, integral_flows, layout, quotas
from kipopt.formulations.consumers.pulp_models import pairs, solve_range_members
from kipopt.formulations.consumers.rules import range_objective
from kipopt.formulations.highs import ArrayLP, build_csc, is_integral, solve_tu_lp

PULP_MAX_PAIRS = 2_000
"""``exact.range`` solves the member-level PuLP model up to this many partition × subscriber pairs."""


@dataclass(frozen=True)
class RangeProblem:
    """The grouped transportation problem: columns ``(group, demand)``, demands ``(topic, rack)``."""

    layout: Layout
    col_group: np.ndarray
    col_demand: np.ndarray
    demand_members: tuple[tuple[int, ...], ...]
    demand_bounds: np.ndarray  # demands × 2: lo, hi per member
    lp: ArrayLP


def range_problem(instance: ConsumersInstance) -> RangeProblem:
    lay = layout(instance)
    subscribers: dict[str, dict[int, list[int]]] = {t: defaultdict(list) for t in lay.topics}
    for i, topics in enumerate(lay.member_topics):
        for t in topics:
            subscribers[t][int(lay.member_rack[i])].append(i)
    demand_members, bounds, col_g, col_d, demand_rack = [], [], [], [], []
    for t in lay.topics:
        n = sum(len(ms) for ms in subscribers[t].values())
        size = instance.topics[t].partitions
        first = len(demand_members)
        for r in sorted(subscribers[t]):
            demand_members.append(tuple(subscribers[t][r]))
            bounds.append((size // n, -(-size // n)))
            demand_rack.append(r)
        for g in lay.groups_of_topic[t]:
            for d in range(first, len(demand_members)):
                col_g.append(g)
                col_d.append(d)
    col_group, col_demand = np.array(col_g, dtype=np.int64), np.array(col_d, dtype=np.int64)
    bounds_arr = np.array(bounds, dtype=np.int64).reshape(-1, 2)
    rack = np.array(demand_rack, dtype=np.int64)
    sizes = np.array([g.size for g in lay.groups], dtype=np.float64)
    counts = np.array([len(ms) for ms in demand_members], dtype=np.float64)
    G, k = len(lay.groups), len(col_group)
    cols = np.repeat(np.arange(k), 2)
    rows = np.stack([col_group, G + col_demand], axis=1).ravel()
    start, index, value = build_csc(k, cols, rows, np.ones(2 * k))
    lp = ArrayLP(cost=lay.cross[col_group, rack[col_demand]].astype(np.float64),
                 lower=np.zeros(k), upper=sizes[col_group],
                 row_lower=np.concatenate([sizes, counts * bounds_arr[:, 0]]),
                 row_upper=np.concatenate([sizes, counts * bounds_arr[:, 1]]),
                 start=start, index=index, value=value)
    return RangeProblem(lay, col_group, col_demand, tuple(demand_members), bounds_arr, lp)


def solve_grouped(problem: RangeProblem, time_limit: float | None = None, threads: int | None = None):
    """``(flows or None, status, info)``: LP by simplex, ILP only if the vertex were fractional."""
    t0 = time.perf_counter()
    result, ilp = solve_tu_lp(problem.lp, time_limit=time_limit, threads=threads)
    info = {"model": "grouped", "columns": problem.lp.num_col, "rows": problem.lp.num_row,
            "solver_seconds": round(time.perf_counter() - t0, 6), "ilp_fallback": ilp}
    flows = integral_flows(result.x) if result.x is not None and is_integral(result.x) else None
    return flows, result.status, info


def read_back(problem: RangeProblem, flows: np.ndarray) -> dict[str, tuple[str, ...]]:
    lay = problem.layout
    dealer = Dealer([list(g.partitions) for g in lay.groups], [g.topic for g in lay.groups])
    inflow = np.bincount(problem.col_demand, weights=flows, minlength=len(problem.demand_members))
    quota = {}
    for d, members in enumerate(problem.demand_members):
        lo, hi = problem.demand_bounds[d]
        n = len(members)
        quota[d] = quotas(int(round(inflow[d])), np.full(n, lo), np.full(n, hi))
    pairs = [(int(g), int(d), int(f)) for g, d, f in zip(problem.col_group, problem.col_demand, flows)]
    lists = flow_to_lists(pairs, dict(enumerate(problem.demand_members)), quota, dealer, len(lay.members))
    return {m: tuple(lists[i]) for i, m in enumerate(lay.members)}


def plain_range(instance: ConsumersInstance) -> dict[str, tuple[str, ...]]:
    """Range without racks (contiguous blocks, extras to the first members): always feasible."""
    lay = layout(instance)
    lists: list[list[str]] = [[] for _ in lay.members]
    for t in lay.topics:
        subs = [i for i, ts in enumerate(lay.member_topics) if t in ts]
        size, n = instance.topics[t].partitions, len(subs)
        at = 0
        for k, i in enumerate(subs):
            take = size // n + (k < size % n)
            lists[i].extend(f"{t}-{p}" for p in range(at, at + take))
            at += take
    return {m: tuple(lists[i]) for i, m in enumerate(lay.members)}


def relaxed_bound(problem: RangeProblem) -> float:
    """Cross-rack with quotas dropped: each group to its cheapest subscriber rack."""
    best = np.full(len(problem.layout.groups), np.inf)
    np.minimum.at(best, problem.col_group, problem.lp.cost)
    sizes = np.array([g.size for g in problem.layout.groups], dtype=np.float64)
    return float(np.sum(np.where(np.isfinite(best), best, 0.0) * sizes))


# --------------------------------------------------------------------------- method


def run_range(instance: ConsumersInstance, options: SolveOptions, model: str | None = None) -> MethodResult:
    """``exact.range``: the member-level PuLP model for small instances, the grouped LP otherwise."""
    t0 = time.perf_counter()
    if model == "pulp" or (model is None and pairs(instance) <= PULP_MAX_PAIRS):
        assignment, status, objective = solve_range_members(instance, options.time_limit, options.threads)
        if assignment is not None and status == "optimal":
            return MethodResult(assignment, Status.OPTIMAL, objective, objective,
                                info={"model": "pulp", "seconds": round(time.perf_counter() - t0, 6)})
    problem = range_problem(instance)
    left = None if options.time_limit is None else max(0.01, options.time_limit - (time.perf_counter() - t0))
    flows, status, info = solve_grouped(problem, left, options.threads)
    if flows is None:
        fallback = plain_range(instance)
        return MethodResult(fallback, Status.FEASIBLE, range_objective(instance, fallback), relaxed_bound(problem),
                            message=f"HiGHS ended with {status}: returning plain range, bound from dropped quotas",
                            info=info)
    assignment = read_back(problem, flows)
    objective = float(problem.lp.cost @ flows)
    exact = status == "optimal"
    return MethodResult(assignment, Status.OPTIMAL if exact else Status.FEASIBLE, objective,
                        objective if exact else relaxed_bound(problem), info=info)


METHODS = [
    Method("exact.range", "consumers", "range", run_range,
           "per-topic range quotas (floor/ceil(P/N) each) at minimum cross-rack partitions: "
           "transportation LP over (topic, rack set) x (topic, member rack)"),
]
