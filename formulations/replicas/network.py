"""The replica flows of ``exact.spread`` as min-cost flows, solved by a dedicated network solver.

The reassignment models of :mod:`.moves` are pure networks (node-arc
incidence matrices with integral bounds and costs). HiGHS solves them as
LPs (interior point, then crossover to an integral vertex); at 100,000
partitions × 300 brokers that LP has 381,316 rows and 1,181,610 columns and
its interior point needed about 240 CPU seconds. OR-Tools' cost-scaling
min-cost flow solves that network exactly in about 10 CPU s, and the reduced
network of :func:`.moves._replica_network` (657,280 arcs) in 2.4: its answer
is an integral optimal flow, and its cost is the LP's optimum (the tests
hold the two to each other). Without OR-Tools the LP answers, as before.

A :class:`Network` lists arcs by tail and head node (head ``-1``: the arc
leaves the network, into a sink whose demand balances the supplies), with
lower and upper bounds and integral costs; :func:`solve_network` shifts the
lower bounds into the supplies, solves, and answers with the same
:class:`~.model.Outcome` as the LP (``x`` in arc order).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kipopt.formulations.replicas.model import Model, Outcome, _lp_solve

_mcf = ...
"""OR-Tools' min-cost flow module once looked for (None: not installed; the LP answers the same question).
Imported on first use: it takes 0.14 s, which a fresh placement or a check never needs."""


def _solver():
    global _mcf
    if _mcf is ...:
        try:
            from ortools.graph.python import min_cost_flow as module
        except ImportError:  # pragma: no cover - depends on the environment
            module = None
        _mcf = module
    return _mcf


@dataclass(frozen=True)
class Network:
    """Arcs ``tail -> head`` (``head == -1``: out of the network) with bounds and costs; node supplies."""

    nodes: int
    tail: np.ndarray
    head: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    cost: np.ndarray
    supply: np.ndarray

    @staticmethod
    def of(model: Model, tail: np.ndarray, head: np.ndarray, supply: np.ndarray) -> "Network":
        """The network whose arcs are ``model``'s columns (in order) between the given nodes."""
        return Network(len(supply), np.asarray(tail, dtype=np.int64), np.asarray(head, dtype=np.int64),
                       np.concatenate(model.lower), np.concatenate(model.upper), model.costs(),
                       np.asarray(supply, dtype=float))


SECONDS_PER_ARC = 1e-5
"""A generous estimate of the network solver's time per arc (measured: 3.7 µs on the reduced add-a-rack network
of 657,280 arcs, 8.5 µs on the 1,181,610-arc slot network, one shared core). The solver has no time limit, so in
a process the deadline cannot stop, a network is not started when the time left is below this times its arcs
(the caller's fallback answers)."""

SECONDS_PER_ARC_IN_CHILD = 4e-6
"""The typical time per arc (measured 2.1-2.9 CPU µs on the reduced add-a-rack network and the leader network at
100,000 partitions x 300 brokers, a loaded machine): in a child the deadline kills
(:func:`kipopt.formulations.highs.in_guarded_child`), a network is started when it would typically finish, since
a miss only costs the child's time."""


def flow_fits(deadline: float | None, arcs: int, loses_work: bool = False) -> bool:
    """Whether a network of ``arcs`` arcs may start with the time left before ``deadline``: by the typical
    rate in a child the deadline kills, unless a kill would lose work already done there (``loses_work``:
    the leader flow after the replica flow), else by the generous one."""
    if deadline is None:
        return True
    from kipopt.formulations.highs import in_guarded_child
    rate = SECONDS_PER_ARC_IN_CHILD if in_guarded_child() and not loses_work else SECONDS_PER_ARC
    return deadline - time.perf_counter() >= rate * arcs


def dedicated_solver_available() -> bool:
    return _solver() is not None


def solve_network(net: Network, model: Model, deadline: float | None, threads: int | None,
                  presolve: bool = True, dedicated: bool = True) -> Outcome:
    """The min-cost flow of ``net`` (whose LP is ``model``): by the network solver when it can, else the LP."""
    if deadline is not None and time.perf_counter() >= deadline:
        return Outcome("time_limit", None, None, None)
    if dedicated and _solver() is not None and _integral_data(net):
        if not flow_fits(deadline, len(net.tail)):
            return Outcome("time_limit", None, None, None)  # it cannot be interrupted: not started past the limit
        out = _min_cost_flow(net)
        if out.status != "error":  # e.g. costs (bytes) too large for its cost scaling: the LP decides
            return out
    return _lp_solve(model, deadline, threads, presolve)


def _integral_data(net: Network) -> bool:
    finite = np.isfinite(net.upper).all() and np.isfinite(net.lower).all()
    values = (net.lower, net.upper, net.cost, net.supply)
    return bool(finite and all(np.array_equal(v, np.rint(v)) for v in values))


def _min_cost_flow(net: Network) -> Outcome:
    """Lower bounds shifted into the supplies (``f = lower + g``, ``0 <= g <= upper - lower``); the arcs
    leaving the network end at one extra node that takes what the others supply."""
    lower = net.lower.astype(np.int64)
    capacity = net.upper.astype(np.int64) - lower
    if (capacity < 0).any():
        return Outcome("infeasible", None, None, None)
    sink = net.nodes
    head = np.where(net.head < 0, sink, net.head)
    supply = np.zeros(net.nodes + 1, dtype=np.int64)
    supply[: net.nodes] = net.supply.astype(np.int64)
    np.subtract.at(supply, net.tail, lower)
    np.add.at(supply, head, lower)
    supply[sink] -= supply.sum()
    cost = net.cost.astype(np.int64)
    flow = _solver().SimpleMinCostFlow()
    arcs = flow.add_arcs_with_capacity_and_unit_cost(net.tail, head, capacity, cost)
    flow.set_nodes_supplies(np.arange(net.nodes + 1), supply)
    status = flow.solve()
    if status == flow.OPTIMAL:
        x = (lower + flow.flows(arcs)).astype(float)
        objective = float(flow.optimal_cost() + int(lower @ cost))
        return Outcome("optimal", x, objective, objective)
    if status in (flow.INFEASIBLE, flow.UNBALANCED):
        return Outcome("infeasible", None, None, None)
    return Outcome("error", None, None, None)
