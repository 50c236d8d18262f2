"""KIP-36 ``exact.spread``: the broker-level MIP over (partition, broker) pairs.

Three lexicographic stages when nothing smaller applies (:func:`solve_full`), and the fewest-moves MIP
started from the balanced placement (:func:`solve_moves_broker_level`). See
:mod:`kipopt.formulations.replicas.spread` for when each runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from kipopt.instance import ReplicasInstance

from kipopt.formulations.replicas.model import Cluster, Model, Outcome, solve_model

# --------------------------------------------------------------------------- broker-level MIP


@dataclass(frozen=True)
class _BrokerModel:
    """Columns of the broker-level model: ``x``/``y`` replica/leader at ``p·N + b``, load bounds."""

    model: Model
    x: np.ndarray
    y: np.ndarray
    hi: int
    lo: int
    lhi: int
    llo: int
    held: np.ndarray


def _broker_model(instance: ReplicasInstance, c: Cluster) -> _BrokerModel:
    """RF replicas and one leader among them per partition, the rack rule, and per-broker loads
    between ``lo`` and ``hi`` (leaders between ``llo`` and ``lhi``); no objective yet."""
    P, N, R = c.partitions, len(c.brokers), c.num_racks
    rack_of = c.rack_of_index
    m = Model()
    x = m.add_vars(P * N)  # (p, b) at p·N + b
    y = m.add_vars(P * N)
    hi, lo, lhi, llo = (m.add_vars(1, 0, P)[0] for _ in range(4))
    pn_p = np.repeat(np.arange(P), N)
    pn_b = np.tile(np.arange(N), P)
    m.add_rows(np.full(P, c.rf), c.rf, pn_p, x, 1.0)
    m.add_rows(np.ones(P), 1, pn_p, y, 1.0)
    m.add_rows(np.full(P * N, -np.inf), 0, np.r_[np.arange(P * N), np.arange(P * N)], np.r_[y, x],
               np.r_[np.ones(P * N), -np.ones(P * N)])
    if c.racked:
        b_rack = np.array([rack_of[b] for b in c.brokers])
        low, up = (0, 1) if c.one_per_rack else (1, np.inf)
        m.add_rows(np.full(P * R, low), up, pn_p * R + b_rack[pn_b], x, 1.0)
    for var, top, bottom in ((x, hi, lo), (y, lhi, llo)):
        m.add_rows(np.full(N, -np.inf), 0, np.r_[pn_b, np.arange(N)], np.r_[var, np.full(N, top)],
                   np.r_[np.ones(P * N), -np.ones(N)])
        m.add_rows(np.zeros(N), np.inf, np.r_[pn_b, np.arange(N)], np.r_[var, np.full(N, bottom)],
                   np.r_[np.ones(P * N), -np.ones(N)])
    bidx = {b: j for j, b in enumerate(c.brokers)}
    held = np.zeros(P * N)
    for pid, brokers in (instance.current or {}).items():
        for b in brokers:
            held[(pid - c.start) * N + bidx[b]] = 1
    return _BrokerModel(m, x, y, hi, lo, lhi, llo, held)


def _read_broker_model(c: Cluster, bm: _BrokerModel, values: np.ndarray) -> dict[int, tuple[int, ...]]:
    N = len(c.brokers)
    xv = np.rint(values).astype(np.int64)
    out = {}
    for p in range(c.partitions):
        row = slice(p * N, (p + 1) * N)
        chosen = [c.brokers[j] for j in np.flatnonzero(xv[bm.x[row]])]
        lead = [c.brokers[j] for j in np.flatnonzero(xv[bm.y[row]])]
        out[c.start + p] = tuple(lead) + tuple(b for b in chosen if b not in lead)
    return out


def solve_full(instance: ReplicasInstance, c: Cluster, deadline: float | None,
               threads: int | None) -> tuple[dict, list[Outcome]]:
    """Broker-level model, three lexicographic stages: replica, then leader imbalance, then moves."""
    bm = _broker_model(instance, c)
    m = bm.model
    n_col = m.num_col
    stages = []
    objectives = [{bm.hi: 1, bm.lo: -1}, {bm.lhi: 1, bm.llo: -1}] + ([None] if instance.current is not None else [])
    for objective in objectives:
        cost = np.zeros(n_col)
        if objective is None:
            cost[bm.x] = 1 - bm.held
        else:
            for k, v in objective.items():
                cost[k] = v
        m.set_cost(cost)
        out = solve_model(m, deadline, threads)
        stages.append(out)
        if out.status != "optimal":
            break
        # fix this stage's optimum before the next
        m.add_rows([-np.inf], [round(out.objective)], np.zeros(int((cost != 0).sum()), dtype=int),
                   np.flatnonzero(cost), cost[cost != 0])
    final = next((s for s in reversed(stages) if s.x is not None), None)
    if final is None:
        return {}, stages
    return _read_broker_model(c, bm, final.x), stages


def solve_moves_broker_level(instance: ReplicasInstance, c: Cluster, d_max: int, l_max: int,
                             start: Mapping[int, Sequence[int]], deadline: float | None,
                             threads: int | None) -> tuple[dict, Outcome]:
    """Fewest moves with replica imbalance <= ``d_max`` and leader imbalance <= ``l_max``: one MIP
    over (partition, broker) pairs, started from ``start`` (an assignment meeting both), so a solve
    cut short by the deadline still answers with ``start`` or better."""
    bm = _broker_model(instance, c)
    m = bm.model
    m.add_rows([-np.inf], [d_max], [0, 0], [bm.hi, bm.lo], [1.0, -1.0])
    m.add_rows([-np.inf], [l_max], [0, 0], [bm.lhi, bm.llo], [1.0, -1.0])
    cost = np.zeros(m.num_col)
    cost[bm.x] = 1 - bm.held
    m.set_cost(cost)
    out = solve_model(m, deadline, threads, start=_broker_point(c, bm, start))
    if out.x is None:
        return {}, out
    return _read_broker_model(c, bm, out.x), out


def _broker_point(c: Cluster, bm: _BrokerModel, assignment: Mapping[int, Sequence[int]]) -> np.ndarray:
    """The column values of ``assignment`` in the broker-level model."""
    N = len(c.brokers)
    bidx = {b: j for j, b in enumerate(c.brokers)}
    point = np.zeros(bm.model.num_col)
    replicas = np.zeros(N)
    leaders = np.zeros(N)
    for pid, brokers in assignment.items():
        row = (pid - c.start) * N
        for b in brokers:
            point[bm.x[row + bidx[b]]] = 1
            replicas[bidx[b]] += 1
        point[bm.y[row + bidx[brokers[0]]]] = 1
        leaders[bidx[brokers[0]]] += 1
    point[[bm.hi, bm.lo, bm.lhi, bm.llo]] = replicas.max(), replicas.min(), leaders.max(), leaders.min()
    return point
