"""KIP-36 ``exact.spread`` with ``current``: fewest moves at the optimal imbalances.

See :mod:`kipopt.formulations.replicas.spread` for the models and why they are exact.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from kipopt.instance import ReplicasInstance

from kipopt.formulations.replicas.model import Cluster, Model, Outcome, _integral, solve_model
from kipopt.formulations.replicas.network import Network, solve_network
from kipopt.formulations.replicas.broker_level import solve_full, solve_moves_broker_level  # noqa: F401  (re-exported)
from kipopt.formulations.replicas.placement import replicas_per_rack
from kipopt.formulations.replicas.leaders import choose_leaders  # noqa: F401  (re-exported)

# --------------------------------------------------------------------------- reassignment, R >= RF


def current_pairs(instance: ReplicasInstance, c: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """``(partition row, broker index)`` of every current replica on a broker of ``c``, by partition row (each
    partition's replicas in their listed order); built from arrays, not per-replica Python objects."""
    current = instance.current or {}
    if not current:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    held = list(current.values())
    lens = np.fromiter(map(len, held), dtype=np.int64, count=len(held))
    flat = np.fromiter(itertools.chain.from_iterable(held), dtype=np.int64, count=int(lens.sum()))
    rows = np.repeat(np.fromiter(current.keys(), dtype=np.int64, count=len(held)) - c.start, lens)
    ids = np.asarray(c.brokers, dtype=np.int64)  # sorted
    j = np.minimum(np.searchsorted(ids, flat), len(ids) - 1)
    keep = (ids[j] == flat) & (rows >= 0) & (rows < c.partitions)
    rows, j = rows[keep], j[keep]
    order = np.argsort(rows, kind="stable")
    return rows[order], j[order]


def broker_racks(c: Cluster) -> np.ndarray:
    """The rack index of every broker index."""
    rack_of = c.rack_of_index
    return np.array([rack_of[b] for b in c.brokers], dtype=np.int64)


def solve_moves_one_per_rack(instance: ReplicasInstance, c: Cluster, d_max: int, l_max: int,
                             deadline: float | None, threads: int | None) -> tuple[dict, Outcome]:
    """Joint MIP: fewest moves with replica imbalance <= ``d_max`` and leader imbalance <= ``l_max``.

    One keep (and keep-as-leader) variable per current replica, one add (and
    add-as-leader) variable per (partition, rack). The fallback when the two
    flows cannot place leaders, and an independent cross-check in the tests.
    """
    P, R, N = c.partitions, c.num_racks, len(c.brokers)
    bidx = {b: i for i, b in enumerate(c.brokers)}
    rack_of = c.rack_of_index
    current = instance.current or {}
    kp, kb = [], []  # current replicas: partition row, broker index
    for i in range(P):
        for b in current.get(c.start + i, ()):
            kp.append(i)
            kb.append(bidx[b])
    kp, kb = np.array(kp, dtype=np.int64), np.array(kb, dtype=np.int64)
    kr = np.array([rack_of[c.brokers[j]] for j in kb], dtype=np.int64)
    K = len(kp)
    m = Model()
    keep = m.add_vars(K)
    lkeep = m.add_vars(K)
    add = m.add_vars(P * R, cost=1.0)  # (p, r) at p·R + r
    ladd = m.add_vars(P * R)
    a = m.add_vars(N, 0, P)
    la = m.add_vars(N, 0, P)
    lo, llo = m.add_vars(1, 0, P), m.add_vars(1, 0, P)
    pr_p = np.repeat(np.arange(P), R)
    # RF replicas and one leader per partition
    m.add_rows(np.full(P, c.rf), c.rf, np.r_[kp, pr_p], np.r_[keep, add], 1.0)
    m.add_rows(np.ones(P), 1, np.r_[kp, pr_p], np.r_[lkeep, ladd], 1.0)
    m.add_rows(np.full(K, -np.inf), 0, np.r_[np.arange(K), np.arange(K)], np.r_[lkeep, keep], np.r_[np.ones(K), -np.ones(K)])
    m.add_rows(np.full(P * R, -np.inf), 0, np.r_[np.arange(P * R), np.arange(P * R)], np.r_[ladd, add],
               np.r_[np.ones(P * R), -np.ones(P * R)])
    # at most one replica per (partition, rack)
    m.add_rows(np.full(P * R, -np.inf), 1, np.r_[kp * R + kr, np.arange(P * R)], np.r_[keep, add], 1.0)
    # adds into a rack = adds to its brokers
    b_rack = np.array([rack_of[b] for b in c.brokers])
    for var, bvar in ((add, a), (ladd, la)):
        m.add_rows(np.zeros(R), 0, np.r_[np.tile(np.arange(R), P), b_rack], np.r_[var, bvar],
                   np.r_[np.ones(P * R), -np.ones(N)])
    m.add_rows(np.full(N, -np.inf), 0, np.r_[np.arange(N), np.arange(N)], np.r_[la, a], np.r_[np.ones(N), -np.ones(N)])
    # load windows: lo <= kept + added <= lo + d_max, likewise for leaders
    for kvar, bvar, low, width in ((keep, a, lo[0], d_max), (lkeep, la, llo[0], l_max)):
        rows = np.r_[kb, np.arange(N), np.arange(N)]
        cols = np.r_[kvar, bvar, np.full(N, low)]
        vals = np.r_[np.ones(K), np.ones(N), -np.ones(N)]
        m.add_rows(np.zeros(N), width, rows, cols, vals)
    out = solve_model(m, deadline, threads)
    if out.x is None:
        return {}, out
    x = np.rint(out.x).astype(np.int64)
    return _read_moves(c, x, keep, lkeep, add, ladd, a, la, kp, kb), out


def _read_moves(c: Cluster, x, keep, lkeep, add, ladd, a, la, kp, kb) -> dict[int, tuple[int, ...]]:
    P, R = c.partitions, c.num_racks
    lead_slots, follow_slots = [], []
    for r, members in enumerate(c.racks):
        idx = [c.brokers.index(b) for b in members]
        lead_slots.append(iter([c.brokers[j] for j in idx for _ in range(x[la[j]])]))
        follow_slots.append(iter([c.brokers[j] for j in idx for _ in range(x[a[j]] - x[la[j]])]))
    leader: list[int | None] = [None] * P
    others: list[list[int]] = [[] for _ in range(P)]
    for k in range(len(kp)):
        if not x[keep[k]]:
            continue
        if x[lkeep[k]]:
            leader[kp[k]] = c.brokers[kb[k]]
        else:
            others[kp[k]].append(c.brokers[kb[k]])
    for p in range(P):
        for r in range(R):
            if x[add[p * R + r]]:
                if x[ladd[p * R + r]]:
                    leader[p] = next(lead_slots[r])
                else:
                    others[p].append(next(follow_slots[r]))
    return {c.start + p: (leader[p],) + tuple(others[p]) for p in range(P)}


@dataclass(frozen=True)
class _Network:
    """The replica flow of a reassignment with one replica per rack (arc columns of a :class:`Model`)."""

    model: Model
    keep: np.ndarray        # arc slot -> current broker, one per current replica of a slot with several
    keep_p: np.ndarray
    keep_b: np.ndarray      # broker index
    add: np.ndarray         # arcs into a rack pool (from a slot or straight from a partition)
    add_p: np.ndarray
    add_r: np.ndarray
    to_broker: np.ndarray   # arc pool_r -> b, one per broker
    sink: np.ndarray        # arc b -> sink, one per broker
    flow: Network           # the same arcs as a network
    single: np.ndarray      # arc partition -> its only current broker in a rack (the reduced network)
    single_p: np.ndarray
    single_b: np.ndarray
    forward: np.ndarray     # arc b -> pool of b's rack, one per broker (the reduced network; else empty)


def _replica_network(instance: ReplicasInstance, c: Cluster, d_max: int, lo: int,
                     w: np.ndarray | None = None, reduced: bool | None = None) -> _Network:
    """Min-cost flow: partitions send RF units through (partition, rack) slots to brokers.

    A slot exists for every rack where the partition has current replicas; it
    either keeps one of them (cost 0) or sends its unit to the rack's pool
    (cost 1, a move). Racks without a current replica are reached by an arc
    straight into their pool (cost 1). Pools feed their brokers, and each
    broker's total lies in ``[lo, lo + d_max]``. The matrix is a node-arc
    incidence matrix, so every vertex is integral.

    ``reduced`` (the default for unweighted moves): a slot with a single
    current replica ``b`` becomes one arc from the partition straight to ``b``,
    and each broker forwards what it does not keep to its rack's pool at cost 1
    (one arc per broker). The options and their costs are the slot's: the unit
    stays on ``b`` or moves to another broker of the same rack; which of
    ``b``'s units move is free, since they cost the same. That drops some
    260,000 nodes and 520,000 arcs at 100,000 partitions (a weighted move
    costs its own partition's bytes, which one forwarding arc cannot say).
    """
    reduced = w is None if reduced is None else reduced
    P, R, N = c.partitions, c.num_racks, len(c.brokers)
    kp, kb = current_pairs(instance, c)
    b_rack = broker_racks(c)
    key = kp * R + b_rack[kb]  # the replica's (partition, rack) slot
    order = np.argsort(key, kind="stable")
    kp, kb, key = kp[order], kb[order], key[order]
    slot_keys, slot_size = np.unique(key, return_counts=True)
    slot_of = np.repeat(np.arange(len(slot_keys)), slot_size)  # per replica
    node = slot_size > 1 if reduced else np.ones(len(slot_keys), dtype=bool)  # slots that stay nodes
    on_node = node[slot_of]
    keep_p, keep_b = kp[on_node], kb[on_node]
    keep_s = (np.cumsum(node) - 1)[slot_of[on_node]]
    S = int(node.sum())
    slot_p, slot_r = np.divmod(slot_keys[node], R)
    single_p, single_b = kp[~on_node], kb[~on_node]
    held_slot = np.zeros(P * R, dtype=bool)
    held_slot[slot_keys] = True
    dir_p, dir_r = np.divmod(np.flatnonzero(~held_slot), R)
    node_slot, node_pool, node_b = P, P + S, P + S + R
    m = Model()
    tails, heads = [], []

    def arcs(n: int, tail, head, ub, cost, lb: float = 0.0) -> np.ndarray:
        cols = m.add_vars(n, lb, ub, integer=False, cost=cost)
        tails.append(np.broadcast_to(tail, (n,)))
        heads.append(np.broadcast_to(head, (n,)))
        return cols

    arcs(S, slot_p, node_slot + np.arange(S), 1, 0)
    keep = arcs(len(keep_p), node_slot + keep_s, node_b + keep_b, 1, 0)
    slot_add = arcs(S, node_slot + np.arange(S), node_pool + slot_r, 1, 1 if w is None else w[slot_p])
    dir_add = arcs(len(dir_p), dir_p, node_pool + dir_r, 1, 1 if w is None else w[dir_p])
    to_broker = arcs(N, node_pool + b_rack, node_b + np.arange(N), P, 0)
    sink_lb, sink_ub = lo, lo + d_max
    sink = arcs(N, node_b + np.arange(N), -1, sink_ub, 0, lb=sink_lb)
    single = arcs(len(single_p), single_p, node_b + single_b, 1, 0)
    held = np.bincount(single_b, minlength=N).astype(float) if reduced else np.zeros(0)
    forward = arcs(len(held), node_b + np.arange(len(held)), node_pool + b_rack[:len(held)], held, 1)
    tails, heads = np.concatenate(tails), np.concatenate(heads)
    cols = np.arange(len(tails))
    n_nodes = P + S + R + N
    out_ok, in_ok = tails >= 0, heads >= 0
    supply = np.zeros(n_nodes)
    supply[:P] = c.rf
    m.add_rows(supply, supply, np.r_[tails[out_ok], heads[in_ok]], np.r_[cols[out_ok], cols[in_ok]],
               np.r_[np.ones(out_ok.sum()), -np.ones(in_ok.sum())])
    add = np.r_[slot_add, dir_add]
    return _Network(m, keep, keep_p, keep_b, add, np.r_[slot_p, dir_p], np.r_[slot_r, dir_r], to_broker, sink,
                    Network.of(m, tails, heads, supply), single, single_p, single_b, forward)


def _read_network(c: Cluster, net: _Network, x: np.ndarray, instance: ReplicasInstance) -> list[list[int]]:
    """Replica sets (unordered) of every partition from an integral flow."""
    on = np.rint(x).astype(np.int64) > 0
    kept_p, kept_b = [net.keep_p[on[net.keep]]], [net.keep_b[on[net.keep]]]
    # a broker forwards some of its singles' units: which ones is free (they cost the same); the first ones
    sp, sb = net.single_p[on[net.single]], net.single_b[on[net.single]]
    order = np.argsort(sb, kind="stable")
    sp, sb = sp[order], sb[order]
    starts = np.searchsorted(sb, np.arange(len(c.brokers)))
    leaving = np.zeros(len(c.brokers), dtype=np.int64)
    leaving[: len(net.forward)] = np.rint(x[net.forward]).astype(np.int64)
    moved = np.arange(len(sb)) - starts[sb] < leaving[sb]
    kept_p.append(sp[~moved])
    kept_b.append(sb[~moved])
    b_rack = broker_racks(c)
    add_p = np.r_[net.add_p[on[net.add]], sp[moved]].astype(np.int64)
    add_r = np.r_[net.add_r[on[net.add]], b_rack[sb[moved]]].astype(np.int64)
    sets: list[list[int]] = [[] for _ in range(c.partitions)]
    brokers = c.brokers
    for p, j in zip(np.concatenate(kept_p).tolist(), np.concatenate(kept_b).tolist()):
        sets[p].append(brokers[j])
    quota: list[list[int]] = [[] for _ in range(c.num_racks)]
    into = np.rint(x[net.to_broker]).astype(np.int64).tolist()
    for j, (b, r) in enumerate(zip(brokers, b_rack.tolist())):
        quota[r].extend([b] * into[j])
    # a unit into a rack where the partition holds a replica now must avoid that broker: placed first, one by
    # one; the others (racks it does not hold) take what is left of the rack's pool in order
    kp, kb = current_pairs(instance, c)
    R = c.num_racks
    risky = np.isin(add_p * R + add_r, kp * R + b_rack[kb])
    current = instance.current or {}
    for p, r in zip(add_p[risky].tolist(), add_r[risky].tolist()):
        held = current.get(c.start + p, ())
        pool = quota[r]
        pick = next((i for i in range(len(pool) - 1, -1, -1) if pool[i] not in held), len(pool) - 1)
        sets[p].append(pool.pop(pick))
    safe_p, safe_r = add_p[~risky], add_r[~risky]
    order = np.argsort(safe_r, kind="stable")
    for p, r in zip(safe_p[order].tolist(), safe_r[order].tolist()):
        sets[p].append(quota[r].pop())
    return sets


@dataclass(frozen=True)
class _EveryRackNetwork:
    """The replica flow when every rack must hold a replica (R < RF): arc ``k`` is (partition, broker)."""

    model: Model
    arc: np.ndarray     # columns of the (partition, rack) -> broker arcs
    arc_p: np.ndarray
    arc_b: np.ndarray   # broker index
    flow: Network       # the same arcs as a network


def _every_rack_network(instance: ReplicasInstance, c: Cluster, d_max: int, lo: int,
                        w: np.ndarray | None = None) -> _EveryRackNetwork:
    """Min-cost flow: partition p sends RF units to nodes (p, r) (between 1 and ``min(n_r, RF − R + 1)``
    each: every rack used), each to distinct brokers of rack r (cost 1 unless p is on that broker now),
    and each broker's total lies in ``[lo, lo + d_max]``. A node-arc incidence matrix: integral vertices."""
    P, R, N = c.partitions, c.num_racks, len(c.brokers)
    rack_of = c.rack_of_index
    low, high = replicas_per_rack(c)
    b_rack = np.array([rack_of[b] for b in c.brokers], dtype=np.int64)
    bidx = {b: j for j, b in enumerate(c.brokers)}
    held = np.zeros((P, N), dtype=bool)
    for pid, brokers in (instance.current or {}).items():
        held[pid - c.start, [bidx[b] for b in brokers]] = True
    m = Model()
    pr_p, pr_r = np.divmod(np.arange(P * R), R)
    to_rack = m.add_vars(P * R, 0, 1, integer=False)
    m.lower[-1] = np.array(low, dtype=float)[pr_r]
    m.upper[-1] = np.array(high, dtype=float)[pr_r]
    arc_p, arc_b = np.divmod(np.arange(P * N), N)
    arc = m.add_vars(P * N, 0, 1, integer=False, cost=np.where(held.reshape(-1), 0.0, 1.0 if w is None else w[arc_p]))
    sink = m.add_vars(N, lo, lo + d_max, integer=False)
    # rows: partitions (P), (p, r) nodes (P·R), brokers (N); +1 out of a node, -1 into it
    node_pr, node_b = P, P + P * R
    rows = np.concatenate([pr_p, node_pr + np.arange(P * R), node_pr + arc_p * R + b_rack[arc_b],
                           node_b + arc_b, node_b + np.arange(N)])
    cols = np.concatenate([to_rack, to_rack, arc, arc, sink])
    vals = np.concatenate([np.ones(P * R), -np.ones(P * R), np.ones(P * N), -np.ones(P * N), np.ones(N)])
    rhs = np.concatenate([np.full(P, float(c.rf)), np.zeros(P * R + N)])
    m.add_rows(rhs, rhs, rows, cols, vals)
    tails = np.concatenate([pr_p, node_pr + arc_p * R + b_rack[arc_b], node_b + np.arange(N)])
    heads = np.concatenate([node_pr + np.arange(P * R), node_b + arc_b, np.full(N, -1)])
    return _EveryRackNetwork(m, arc, arc_p, arc_b, Network.of(m, tails, heads, rhs))


def solve_replica_flow(instance: ReplicasInstance, c: Cluster, d_max: int, deadline: float | None,
                       threads: int | None, w: np.ndarray | None = None, dedicated: bool = True
                       ) -> tuple[list[list[int]] | None, int | None, int]:
    """Fewest moves with replica imbalance <= ``d_max`` (leaders ignored): sets, moves, lower bound.

    With ``w`` (one weight per partition row) a move costs its partition's weight (bytes moved).
    Each network is solved by the dedicated min-cost flow solver (:mod:`.network`) unless
    ``dedicated`` is false or it is missing; then by HiGHS as an LP.

    The window ``[lo, lo + d_max]`` of broker loads must contain the average
    load, which leaves ``d_max + 1`` values of ``lo`` at most; each is a pure
    network flow, solved exactly. The fewest moves as a function of ``lo`` is
    convex (the optimal value of an LP whose bounds move linearly with one
    parameter; every vertex is integral, so it is the integer optimum at each
    integer ``lo``), so a walk downhill from the window centred on the average
    stops at the optimum: a point no worse than both neighbours is a global
    minimum of a convex sequence. Until the walk ends the bound is
    ``Σ_b max(0, lowest lo − current load of b)``.
    """
    avg = c.partitions * c.rf / len(c.brokers)
    candidates = list(range(max(0, math.ceil(avg) - d_max), math.floor(avg) + 1))
    held = {b: 0 for b in c.brokers}
    for brokers in (instance.current or {}).values():
        for b in brokers:
            held[b] += 1
    bound = sum(max(0, candidates[0] - k) for k in held.values()) if w is None else 0
    solved: dict[int, tuple[float, object, np.ndarray | None]] = {}
    exact = True

    def moves(lo: int) -> float:
        """The fewest moves with window floor ``lo`` (inf if infeasible or cut short)."""
        nonlocal exact
        if lo not in solved:
            if c.one_per_rack:
                net, presolve = _replica_network(instance, c, d_max, lo, w), True
            else:  # presolve took 40 times longer than the solve on this network (measured, 1,000 x 20)
                net, presolve = _every_rack_network(instance, c, d_max, lo, w), False
            o = solve_network(net.flow, net.model, deadline, threads, presolve, dedicated)
            exact &= o.status in ("optimal", "infeasible")
            good = o.x is not None and o.status == "optimal" and _integral(o.x)
            solved[lo] = (o.objective if good else math.inf, net, o.x if good else None)
        return solved[lo][0]

    def out_of_time() -> bool:
        return deadline is not None and time.perf_counter() >= deadline

    order = sorted(candidates, key=lambda v: abs(v + d_max / 2 - avg))
    current = next((lo for lo in order if not out_of_time() and moves(lo) < math.inf), None)
    walked = current is not None
    while current is not None and round(moves(current)) > bound:
        step = next((nb for nb in (current - 1, current + 1) if nb in candidates and not out_of_time()
                     and moves(nb) < moves(current)), None)
        if step is None:
            walked = not out_of_time() and all(nb in solved or nb not in candidates
                                               for nb in (current - 1, current + 1))
            break
        current = step
    if current is None:
        return None, None, bound
    best, net, x = solved[current]
    if walked and exact:  # the walk ended at a minimum of the convex sequence: optimal
        bound = max(bound, round(best))
    if isinstance(net, _EveryRackNetwork):
        sets: list[list[int]] = [[] for _ in range(c.partitions)]
        for k in np.flatnonzero(x[net.arc] > 0.5):
            sets[net.arc_p[k]].append(c.brokers[net.arc_b[k]])
        return sets, round(best), bound
    return _read_network(c, net, x, instance), round(best), bound
