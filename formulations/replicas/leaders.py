"""Preferred leaders for fixed replica sets: every broker's leader count in a window, current leaders kept.

:func:`choose_leaders` answers ``exact.spread``'s leader step: one leader per
partition among its replicas, leader imbalance at most ``l_max``, and among
such choices as many current preferred leaders kept as possible (leaders move
no data and are no criterion of the rule; keeping them spares the cluster
leader elections). That is the min-cost flow of :func:`leader_network`.

When the time left is shorter than that flow's estimate (the generous one: a
child killed there would lose the replica flow's answer), the leaders come
from :func:`kept_leaders_at_bound` instead: broker ``b`` keeps at most
``min(cand_b, hi)`` current leaders (``cand_b`` the partitions that lead on
``b`` today and still hold a replica there), the first ``hi`` of them are
kept and every other leader is placed by one maximum flow on the windows left
(a fraction of the min-cost flow's time), or by one maximum flow alone if
those keeps leave no room. The leader imbalance is the same; fewer current
leaders may be kept.
"""

from __future__ import annotations

import math

import numpy as np

from kipopt._scipy import csgraph, sparse
from kipopt.instance import ReplicasInstance

from kipopt.formulations.replicas.model import Cluster, Model, _integral
from kipopt.formulations.replicas.network import Network, flow_fits, solve_network


def leader_network(P: int, N: int, arc_p: np.ndarray, arc_b: np.ndarray, old: np.ndarray, llo: int,
                   l_max: int) -> tuple[Network, Model, np.ndarray]:
    """Each partition sends one unit to one of its replicas' brokers (cost 1 unless it leads there now);
    each broker passes between ``llo`` and ``llo + l_max`` units out of the network."""
    m = Model()
    arcs = m.add_vars(len(arc_p), 0, 1, integer=False, cost=np.where(old, 0.0, 1.0))
    sink = m.add_vars(N, llo, llo + l_max, integer=False)
    m.add_rows(np.ones(P), 1, arc_p, arcs, 1.0)
    m.add_rows(np.zeros(N), 0, np.r_[arc_b, np.arange(N)], np.r_[arcs, sink],
               np.r_[np.ones(len(arcs)), -np.ones(N)])
    tails = np.r_[arc_p, P + np.arange(N)]
    heads = np.r_[P + arc_b, np.full(N, -1)]
    supply = np.r_[np.ones(P), np.zeros(N)]
    return Network.of(m, tails, heads, supply), m, arcs


def window_leaders(P: int, N: int, arc_p: np.ndarray, arc_b: np.ndarray, lo, hi) -> np.ndarray | None:
    """A leader (broker index) per partition along its arcs with broker ``b``'s count in ``[lo_b, hi_b]``
    (scalars or arrays), by one maximum flow (scipy's Dinic) on the lower-bound reduction: S' feeds each
    partition 1 and the sink ``Σ lo``, each broker sends ``lo_b`` to T' and up to ``hi_b − lo_b`` on to the
    sink, the sink returns to the source, which owes T' one unit per partition. Feasible exactly when the
    flow saturates S'; None otherwise."""
    csr_array, maximum_flow = sparse().csr_array, csgraph().maximum_flow

    lo = np.broadcast_to(np.asarray(lo, dtype=np.int64), (N,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.int64), (N,))
    if (hi < lo).any() or lo.sum() > P or hi.sum() < P:
        return None
    if P == 0:
        return np.zeros(0, dtype=np.int64)
    S2, T2, s, t = P + N, P + N + 1, P + N + 2, P + N + 3  # partitions 0..P-1, brokers P..P+N-1
    brokers = P + np.arange(N)
    tails = np.concatenate([arc_p, np.full(P, S2), brokers, brokers, [S2, t, s]])
    heads = np.concatenate([P + arc_b, np.arange(P), np.full(N, T2), np.full(N, t), [t, s, T2]])
    caps = np.concatenate([np.ones(len(arc_p), dtype=np.int64), np.ones(P, dtype=np.int64), lo, hi - lo,
                           [int(lo.sum()), P, P]]).astype(np.int32)
    keep = caps > 0
    graph = csr_array((caps[keep], (tails[keep], heads[keep])), shape=(P + N + 4,) * 2)
    graph.sum_duplicates()
    result = maximum_flow(graph, S2, T2)
    if result.flow_value < P + int(lo.sum()):
        return None
    sub = result.flow.tocsr()[:P, P:P + N].tocoo()
    lead = np.full(P, -1, dtype=np.int64)
    positive = sub.data > 0
    lead[sub.row[positive]] = sub.col[positive]
    return lead if (lead >= 0).all() else None


def kept_leaders_at_bound(P: int, N: int, arc_p: np.ndarray, arc_b: np.ndarray, old: np.ndarray, lo: int,
                          hi: int) -> np.ndarray | None:
    """Leaders in the window ``[lo, hi]`` keeping the bound's current leaders (the first ``hi`` of each
    broker's, in partition order), the others by :func:`window_leaders`; None if those cannot be placed.
    An answer keeps the most current leaders any choice in the window can keep. ``arc_p`` must be sorted."""
    cand_p, cand_b = arc_p[old], arc_b[old]
    order = np.argsort(cand_b, kind="stable")
    cand_p, cand_b = cand_p[order], cand_b[order]
    rank = np.arange(len(cand_b)) - np.searchsorted(cand_b, cand_b)
    kept = rank < hi
    lead = np.full(P, -1, dtype=np.int64)
    lead[cand_p[kept]] = cand_b[kept]
    count = np.bincount(cand_b[kept], minlength=N)
    rest = lead < 0
    if rest.any():
        row = np.cumsum(rest) - 1  # partition -> row among the rest
        sel = rest[arc_p]
        placed = window_leaders(int(rest.sum()), N, row[arc_p[sel]], arc_b[sel], np.maximum(0, lo - count),
                                hi - count)
        if placed is None:
            return None
        lead[rest] = placed
    elif count.min() < lo:
        return None
    return lead


def choose_leaders(instance: ReplicasInstance, c: Cluster, sets: list[list[int]], l_max: int,
                   deadline: float | None, threads: int | None, dedicated: bool = True,
                   info: dict | None = None) -> dict[int, tuple[int, ...]] | None:
    """One leader per partition among its replicas, leader imbalance <= ``l_max``, keeping as many current
    preferred leaders as possible (the min-cost flow of :func:`leader_network`; windows from the highest
    floor down, the first that fits answers). Short of time for that flow, :func:`quick_leaders` (said in
    ``info["leaders_note"]``)."""
    P, N = c.partitions, len(c.brokers)
    ids = np.asarray(c.brokers, dtype=np.int64)
    sizes = np.fromiter(map(len, sets), dtype=np.int64, count=P)
    arc_p = np.repeat(np.arange(P), sizes)
    arc_b = np.searchsorted(ids, np.fromiter((b for s in sets for b in s), dtype=np.int64, count=int(sizes.sum())))
    old = arc_b == _current_leaders(instance, c, ids)[arc_p]
    avg = P / N
    for llo in range(math.floor(avg), max(0, math.ceil(avg) - l_max) - 1, -1):
        if not flow_fits(deadline, len(arc_p) + N, loses_work=True):  # a kill would lose the replica sets
            lead = quick_leaders(P, N, arc_p, arc_b, old, llo, llo + l_max)
            if info is not None:
                info["leaders_note"] = ("current preferred leaders kept by maximum flows, not proven the most "
                                        "(no time left for the leader flow); leaders are no criterion of the rule")
        else:
            net, m, arcs = leader_network(P, N, arc_p, arc_b, old, llo, l_max)
            o = solve_network(net, m, deadline, threads, dedicated=dedicated)
            lead = None
            if o.x is not None and o.status == "optimal" and _integral(o.x):
                on = o.x[arcs] > 0.5
                lead = np.full(P, -1, dtype=np.int64)
                lead[arc_p[on]] = arc_b[on]
        if lead is not None:
            return leader_first(c, sets, ids[lead])
    return None


def quick_leaders(P: int, N: int, arc_p: np.ndarray, arc_b: np.ndarray, old: np.ndarray, lo: int,
                  hi: int) -> np.ndarray | None:
    """Leaders in ``[lo, hi]`` by maximum flows only: :func:`kept_leaders_at_bound`, else any."""
    lead = kept_leaders_at_bound(P, N, arc_p, arc_b, old, lo, hi)
    return lead if lead is not None else window_leaders(P, N, arc_p, arc_b, lo, hi)


def _current_leaders(instance: ReplicasInstance, c: Cluster, ids: np.ndarray) -> np.ndarray:
    """Per partition row, the broker index of its current preferred leader (-1: none, or not a broker)."""
    current = instance.current or {}
    rows = np.fromiter((pid - c.start for pid, bs in current.items() if bs), dtype=np.int64)
    first = np.fromiter((bs[0] for bs in current.values() if bs), dtype=np.int64, count=len(rows))
    out = np.full(c.partitions + 1, -1, dtype=np.int64)  # the last cell takes rows outside the range
    j = np.minimum(np.searchsorted(ids, first), len(ids) - 1)
    j = np.where(ids[j] == first, j, -1)
    out[np.where((rows >= 0) & (rows < c.partitions), rows, c.partitions)] = j
    return out[:-1]


def leader_first(c: Cluster, sets: list[list[int]], lead: np.ndarray) -> dict[int, tuple[int, ...]]:
    """Each partition's replicas as a tuple: its leader, then the others by broker id."""
    pids = range(c.start, c.start + c.partitions)
    if all(len(s) == c.rf for s in sets):
        matrix = np.array(sets, dtype=np.int64).reshape(c.partitions, c.rf)
        key = np.where(matrix == lead[:, None], -1, matrix)
        matrix = np.take_along_axis(matrix, np.argsort(key, axis=1, kind="stable"), axis=1)
        return dict(zip(pids, map(tuple, matrix.tolist())))
    lead_l = lead.tolist()
    return {pid: (lead_l[p],) + tuple(sorted(b for b in sets[p] if b != lead_l[p])) for p, pid in enumerate(pids)}
