"""KIP-36 reassignment at scale: per-broker targets, a bound, and a read-back that meets it.

The moves criterion only sees how many replicas each broker keeps. A broker
``b`` holding ``c_b`` replicas today and ``t_b`` after the reassignment keeps
at most ``min(c_b, t_b)`` of them (by weight: the ``t_b`` heaviest), so at any
targets ``t`` with every load in a window ``[lo, lo + D]``

    moves >= Σ_p w_p·RF − Σ_b G_b(t_b),   G_b(k) = the k largest weights on b,

(``w_p`` = 1, or the partition's bytes), and the forced moves ``Σ_p w_p·f_p``
(``f_p`` replicas that cannot stay: on departed brokers, beyond the rack rule
or the replication factor) are a bound as well. Maximising ``Σ_b G_b(t_b)``
over the window with ``Σ t_b = P·RF`` and each rack's total within what the
rack rule allows (``≤ P`` with one replica per rack, ``≥ P`` when every rack
is used) is a concave separable allocation over a laminar family (brokers in
racks): taking the best marginal unit one at a time (a rack's required
minimum first) is optimal, so the bound is the exact minimum of the
relaxation — it does not grow with partitions × brokers, only with brokers
and the window width. (The tests hold it to the broker-level MIP.)

The read-back keeps, on every broker, its ``t_b`` heaviest replicas (after
the drops the rack rule forces, taken on the most overloaded brokers), then
fills each partition's missing replicas onto brokers with room: the rack with
most room first, then its broker with most room, never a broker the
partition held (a Havel–Hakimi order, partitions with most to place first).
When it places every replica it meets the bound (the keeps are the bound's),
and :func:`fast_replica_sets` says so; otherwise it reports failure and the
caller falls back to the exact flows. Optimality is never taken on trust:
the caller compares the evaluator's moves with the bound.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from kipopt.instance import ReplicasInstance

from kipopt.formulations.replicas.model import Cluster
from kipopt.formulations.replicas.placement import replicas_per_rack
from kipopt.formulations.replicas.leaders import window_leaders


@dataclass(frozen=True)
class FastSets:
    """Replica sets per partition row (None if the read-back got stuck), their weighted moves and the bound."""

    sets: list[list[int]] | None
    moves: int
    bound: int
    lo: int


@dataclass(frozen=True)
class _Current:
    """Present current replicas: per broker index the partitions on it (heaviest first), per partition its brokers."""

    on_broker: list[list[int]]
    of_partition: list[list[int]]


def weights_of(instance: ReplicasInstance, by_bytes: bool) -> np.ndarray:
    """``w_p`` per partition row: 1, or the partition's bytes."""
    if not by_bytes:
        return np.ones(instance.partitions, dtype=np.int64)
    return np.array([instance.size_of(p) for p in instance.partition_ids], dtype=np.int64)


def _present(instance: ReplicasInstance, c: Cluster, w: np.ndarray) -> _Current:
    bidx = {b: j for j, b in enumerate(c.brokers)}
    of_partition: list[list[int]] = [[] for _ in range(c.partitions)]
    on_broker: list[list[int]] = [[] for _ in c.brokers]
    for pid, brokers in (instance.current or {}).items():
        row = pid - c.start
        for b in brokers:
            j = bidx.get(b)
            if j is not None:
                of_partition[row].append(j)
                on_broker[j].append(row)
    if len(w) and w.min() != w.max():  # equal weights: the stable sort would keep every list as it is
        w_l = w.tolist()
        for lst in on_broker:
            lst.sort(key=lambda p: -w_l[p])
    return _Current(on_broker, of_partition)


def _forced_drops(c: Cluster, cur: _Current, rack: np.ndarray, surplus: np.ndarray) -> list[set[int]]:
    """Per partition, the broker indices it must leave (rack rule, replication factor), most overloaded first."""
    low, high = replicas_per_rack(c)
    rack_l, surplus_l = rack.tolist(), surplus.tolist()
    clean_max = min(high) if c.num_racks > 1 else c.rf
    drops: list[set[int]] = [set() for _ in range(c.partitions)]
    for p, held in enumerate(cur.of_partition):
        if not held:
            continue
        racks_held = {rack_l[j] for j in held}
        if len(held) <= c.rf and (clean_max == 1 and len(racks_held) == len(held)) and c.one_per_rack:
            continue  # one per rack, within RF: nothing forced (the common case, checked cheaply)
        order = sorted(held, key=lambda j: -surplus_l[j])
        per_rack = [0] * c.num_racks
        for j in held:
            per_rack[rack_l[j]] += 1
        kept = len(held)
        for j in order:  # beyond the rack's limit
            if per_rack[rack_l[j]] > high[rack_l[j]]:
                per_rack[rack_l[j]] -= 1
                kept -= 1
                drops[p].add(j)
        missing = sum(1 for r in range(c.num_racks) if per_rack[r] < low[r])
        for j in order:  # room for the racks it lacks, and at most RF
            if kept <= c.rf - missing:
                break
            if j not in drops[p]:
                drops[p].add(j)
                per_rack[rack_l[j]] -= 1
                kept -= 1
    return drops


def _allocate(gains: list[np.ndarray], lo: int, hi: int, total: int, rack: np.ndarray | None,
              rack_low: list[int] | None, rack_high: list[int] | None) -> tuple[np.ndarray, int] | None:
    """Targets in ``[lo, hi]`` summing to ``total`` that maximise ``Σ G_b(t_b)`` (best marginal unit first),
    with each rack's sum in ``[rack_low, rack_high]`` when given; None if no targets fit."""
    n = len(gains)
    t = np.full(n, lo, dtype=np.int64)
    if n * lo > total or n * hi < total:
        return None
    value = int(sum(int(g[:lo].sum()) for g in gains))

    def gain(b: int) -> int:
        return int(gains[b][t[b]]) if t[b] < len(gains[b]) else 0

    def take(members: np.ndarray, units: int, cap_of) -> int:
        nonlocal value
        heap = [(-gain(b), int(b)) for b in members if t[b] < hi]
        heapq.heapify(heap)
        while units > 0 and heap:
            g, b = heapq.heappop(heap)
            if not cap_of(b):
                continue
            t[b] += 1
            value -= g
            units -= 1
            if t[b] < hi:
                heapq.heappush(heap, (-gain(b), b))
        return units

    sums = None
    if rack is not None:
        sums = np.bincount(rack, weights=t, minlength=len(rack_low)).astype(np.int64)
        for r in range(len(rack_low)):
            need = rack_low[r] - sums[r]
            if need > 0:
                left = take(np.flatnonzero(rack == r), need, lambda b: True)
                if left:
                    return None
                sums[r] = rack_low[r]
            if sums[r] > rack_high[r]:
                return None

    def room(b: int) -> bool:
        if sums is None:
            return True
        if sums[rack[b]] >= rack_high[rack[b]]:
            return False
        sums[rack[b]] += 1
        return True

    if take(np.arange(n), total - int(t.sum()), room):
        return None
    return t, value


def fast_replica_sets(instance: ReplicasInstance, c: Cluster, d_max: int, w: np.ndarray) -> FastSets:
    """Fewest (weighted) moves with replica imbalance <= ``d_max``: sets, their moves, the bound."""
    P, N, rf = c.partitions, len(c.brokers), c.rf
    rack_idx = c.rack_of_index
    rack = np.array([rack_idx[b] for b in c.brokers], dtype=np.int64)
    cur = _present(instance, c, w)
    gains = [w[lst] for lst in cur.on_broker]
    low, high = replicas_per_rack(c)
    rack_low, rack_high = [P * x for x in low], [P * x for x in high]
    total = P * rf
    avg = total / N
    best_bound, best = None, None
    for lo in range(max(0, math.ceil(avg) - d_max), math.floor(avg) + 1):
        fitted = _allocate(gains, lo, lo + d_max, total, rack, rack_low, rack_high)
        if fitted is not None:
            best_bound = fitted[1] if best_bound is None else max(best_bound, fitted[1])
            if best is None or fitted[1] > best[1][1]:
                best = (lo, fitted)
    everything = int(w.sum()) * rf
    cur_weight = sum(int(w[p]) * len(h) for p, h in enumerate(cur.of_partition))
    counts = np.array([len(lst) for lst in cur.on_broker], dtype=np.int64)
    if best is None:
        return FastSets(None, 0, everything - (best_bound or 0), 0)
    lo, (t, _) = best
    drops = _forced_drops(c, cur, rack, counts - t)
    forced = sum(int(w[p]) * (rf - len(cur.of_partition[p]) + len(d)) for p, d in enumerate(drops))
    bound = max(everything - (best_bound if best_bound is not None else cur_weight), forced, 0)
    sets = _read_back(c, cur, drops, t, rack, low, high, w)
    if sets is None:
        return FastSets(None, 0, bound, lo)
    kept = sum(int(w[p]) * len(cur_kept) for p, cur_kept in enumerate(sets[1]))
    return FastSets(sets[0], everything - kept, bound, lo)


def _read_back(c: Cluster, cur: _Current, drops: list[set[int]], t: np.ndarray, rack: np.ndarray,
               low: list[int], high: list[int], w: np.ndarray) -> tuple[list[list[int]], list[list[int]]] | None:
    """Keep each broker's ``t_b`` heaviest allowed replicas, then place the rest (broker indices)."""
    P, N, R, rf = c.partitions, len(c.brokers), c.num_racks, c.rf
    kept: list[list[int]] = [[] for _ in range(P)]
    free = t.copy()
    dropped = [len(d) for d in drops]
    w_l, t_l = w.tolist(), t.tolist()
    for j, lst in enumerate(cur.on_broker):
        eligible = [p for p in lst if not dropped[p] or j not in drops[p]]
        if len(eligible) > t_l[j]:  # keep the heaviest; among equals drop from partitions that lost least so far
            eligible.sort(key=lambda p: (-w_l[p], -dropped[p]))
            for p in eligible[t_l[j]:]:
                dropped[p] += 1
            eligible = eligible[:t_l[j]]
        for p in eligible:
            kept[p].append(j)
        free[j] -= len(eligible)
    free_l, rack_l = free.tolist(), rack.tolist()
    rack_free = [0] * R
    for j in range(N):
        rack_free[rack_l[j]] += free_l[j]
    heaps = [[(-free_l[j], j) for j in range(N) if rack_l[j] == r and free_l[j] > 0] for r in range(R)]
    for h in heaps:
        heapq.heapify(h)
    order = sorted((p for p in range(P) if len(kept[p]) < rf), key=lambda p: len(kept[p]))
    chosen = [list(k) for k in kept]
    per_rack = {}
    for p in order:
        counts = [0] * R
        for j in kept[p]:
            counts[rack_l[j]] += 1
        per_rack[p] = counts
    banned = {p: set(cur.of_partition[p]) for p in order}
    added_in: list[list[tuple[int, int]]] = [[] for _ in range(R)]  # (partition, broker) placed per rack

    def place(p: int, racks: list[int]) -> bool:
        racks = sorted((r for r in racks if rack_free[r] > 0), key=lambda r: -rack_free[r])
        j = next((j for j in (_roomiest(heaps[r], free_l, banned[p]) for r in racks) if j is not None), None)
        if j is None:
            return False
        chosen[p].append(j)
        banned[p].add(j)
        free_l[j] -= 1
        rack_free[rack_l[j]] -= 1
        per_rack[p][rack_l[j]] += 1
        added_in[rack_l[j]].append((p, j))
        if free_l[j] > 0:
            heapq.heappush(heaps[rack_l[j]], (-free_l[j], j))
        return True

    def swap_in(p: int, racks: list[int]) -> bool:
        """No allowed rack has room for p: a partition q placed earlier on a broker j of an allowed rack
        moves that replica to a rack with room that q may use, and p takes j (the moves stay the same)."""
        for r in racks:
            for k, (q, j) in enumerate(added_in[r]):
                if j in banned[p] or per_rack[q][r] - 1 < low[r]:
                    continue
                for r2 in range(R):
                    if r2 == r or rack_free[r2] <= 0 or per_rack[q][r2] >= high[r2]:
                        continue
                    j2 = _roomiest(heaps[r2], free_l, banned[q])
                    if j2 is None:
                        continue
                    chosen[q][chosen[q].index(j)] = j2
                    banned[q].add(j2)
                    per_rack[q][r] -= 1
                    per_rack[q][r2] += 1
                    free_l[j2] -= 1
                    rack_free[r2] -= 1
                    if free_l[j2] > 0:
                        heapq.heappush(heaps[r2], (-free_l[j2], j2))
                    added_in[r2].append((q, j2))
                    added_in[r][k] = (p, j)
                    chosen[p].append(j)
                    banned[p].add(j)
                    per_rack[p][r] += 1
                    return True
        return False

    for p in order:  # first the replicas the rack rule sends to one rack (a rack the partition lacks)
        for r in range(R):
            while per_rack[p][r] < low[r]:
                if not place(p, [r]) and not swap_in(p, [r]):
                    return None
    # then the rest, to the rack with most room among those the rule allows; partitions with the fewest
    # allowed racks first (they are the ones the last free slots might not fit)
    order.sort(key=lambda p: (sum(per_rack[p][r] < high[r] for r in range(R)) - (rf - len(chosen[p])),
                              len(chosen[p])))
    for p in order:
        while len(chosen[p]) < rf:
            allowed = [r for r in range(R) if per_rack[p][r] < high[r]]
            if not place(p, allowed) and not swap_in(p, allowed):
                return None
    return [[c.brokers[j] for j in s] for s in chosen], kept


def _roomiest(heap: list, free: list[int], banned: set[int]) -> int | None:
    """Pop the broker with most room that the partition never held (None if none has room). Entries are
    lazy: room only shrinks, so an entry whose room is stale is dropped (its fresh one is in the heap)."""
    skipped, found = [], None
    while heap:
        neg, j = heapq.heappop(heap)
        if -neg != free[j] or free[j] <= 0:
            continue
        if j in banned:
            skipped.append((neg, j))
            continue
        found = j
        break
    for item in skipped:
        heapq.heappush(heap, item)
    return found


def fast_leaders(instance: ReplicasInstance, c: Cluster, sets: list[list[int]],
                 l_max: int) -> dict[int, tuple[int, ...]] | None:
    """One leader per partition among its replicas with leader imbalance <= ``l_max``, current leaders kept
    where the caps allow; a greedy with one-step repairs, None if it misses (the caller then runs the flow)."""
    P, N = c.partitions, len(c.brokers)
    bidx = {b: j for j, b in enumerate(c.brokers)}
    current = instance.current or {}
    avg = P / N
    for hi in range(math.ceil(avg), math.floor(avg) + l_max + 1):
        lead = _greedy_leaders(c, sets, current, bidx, hi, hi - l_max)
        if lead is None:
            lead = _flow_leaders(c, sets, bidx, hi, max(0, hi - l_max))
        if lead is not None:
            return {c.start + p: (c.brokers[lead[p]],) + tuple(sorted(b for b in sets[p] if b != c.brokers[lead[p]]))
                    for p in range(P)}
    return None


def least_imbalance_leaders(instance: ReplicasInstance, c: Cluster, sets: list[list[int]],
                            lowest: int) -> tuple[dict, int]:
    """Leaders for fixed replica sets and their imbalance: the max flows at ``lowest``, ``lowest + 1`` and
    ``lowest + 2`` (each exact for its imbalance), else a greedy (each partition to its least-loaded
    replica) whose imbalance is then measured. The first is the least possible; the others are answers."""
    for l in range(lowest, lowest + 3):
        found = fast_leaders(instance, c, sets, l)
        if found is not None:
            return found, l
    bidx = {b: j for j, b in enumerate(c.brokers)}
    lead = _greedy_leaders(c, sets, instance.current or {}, bidx, c.partitions, 0)
    counts = np.bincount(np.array(lead, dtype=np.int64), minlength=len(c.brokers))
    out = {c.start + p: (c.brokers[lead[p]],) + tuple(sorted(b for b in sets[p] if b != c.brokers[lead[p]]))
           for p in range(c.partitions)}
    return out, int(counts.max() - counts.min())


def _flow_leaders(c: Cluster, sets: list[list[int]], bidx: dict, hi: int, lo: int) -> list[int] | None:
    """Leaders with every broker's count in ``[lo, hi]``, by one maximum flow (:func:`.leaders.window_leaders`)."""
    P = c.partitions
    arc_p = np.repeat(np.arange(P), [len(x) for x in sets])
    arc_b = np.array([bidx[b] for x in sets for b in x], dtype=np.int64)
    lead = window_leaders(P, len(c.brokers), arc_p, arc_b, lo, hi)
    return None if lead is None else lead.tolist()


def _greedy_leaders(c: Cluster, sets: list[list[int]], current, bidx: dict, hi: int, lo: int) -> list[int] | None:
    P, N = c.partitions, len(c.brokers)
    idx = [[bidx[b] for b in s] for s in sets]
    count = np.zeros(N, dtype=np.int64)
    lead = [-1] * P
    for p in range(P):
        old = current.get(c.start + p)
        j = bidx.get(old[0]) if old else None
        if j is not None and j in idx[p] and count[j] < hi:
            lead[p] = j
            count[j] += 1
    for p in range(P):
        if lead[p] < 0:
            j = min(idx[p], key=lambda j: count[j])
            if count[j] >= hi:
                return None
            lead[p] = j
            count[j] += 1
    if count.min() >= lo:
        return lead
    holders: list[list[int]] = [[] for _ in range(N)]  # partitions with a replica on each broker
    for p, s in enumerate(idx):
        for j in s:
            if j != lead[p]:
                holders[j].append(p)
    for u in np.flatnonzero(count < lo):
        for p in holders[u]:
            if count[u] >= lo:
                break
            v = lead[p]
            if v != u and count[v] > lo:
                lead[p] = u
                count[v] -= 1
                count[u] += 1
        if count[u] < lo:
            return None
    return lead
