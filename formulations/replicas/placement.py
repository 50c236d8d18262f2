"""KIP-36 ``exact.spread`` without ``current``: rack totals and the placements that meet them.

See :mod:`kipopt.formulations.replicas.spread` for the models and why they are exact.
"""

from __future__ import annotations

from typing import Sequence
from dataclasses import dataclass

import numpy as np

from kipopt._scipy import csgraph, sparse
from kipopt._write import collector_paused

from kipopt.errors import MethodError

from kipopt.formulations.replicas.model import Cluster, Model, solve_model

# --------------------------------------------------------------------------- rack totals (R >= RF)


@dataclass(frozen=True)
class RackTotals:
    """Replicas ``T_r`` and leaders ``Λ_r`` per rack, with the imbalances of even splits."""

    replicas: tuple[int, ...]
    leaders: tuple[int, ...]
    replica_imbalance: int
    leader_imbalance: int
    optimal: bool
    bound: float | None  # of W·D + L


def _even(total: int, n: int) -> list[int]:
    q, s = divmod(total, n)
    return [q + 1] * s + [q] * (n - s)


def split_imbalance(totals: Sequence[int], sizes: Sequence[int]) -> int:
    """max − min broker load when each rack splits its total evenly.

    >>> split_imbalance([4, 3], [2, 2])
    1
    """
    loads = [x for t, n in zip(totals, sizes) for x in _even(t, n)]
    return max(loads) - min(loads)


def replicas_per_rack(c: Cluster) -> tuple[list[int], list[int]]:
    """How many replicas of one partition each rack may hold: ``[0, 1]`` when R >= RF,
    else ``[1, min(n_r, RF - R + 1)]`` (every rack used)."""
    if c.one_per_rack:
        return [0] * c.num_racks, [1] * c.num_racks
    return [1] * c.num_racks, [min(len(r), c.rf - c.num_racks + 1) for r in c.racks]


def solve_rack_totals(c: Cluster, deadline: float | None, threads: int | None) -> RackTotals:
    """Minimize ``(P+1)·D + L`` over rack totals ``T_r`` in ``[P·low_r, P·high_r]`` (:func:`replicas_per_rack`)."""
    m = Model()
    R, P = c.num_racks, c.partitions
    sizes = np.array([len(r) for r in c.racks], dtype=float)
    big = P + 1
    low, high = replicas_per_rack(c)
    T = m.add_vars(R, 0, P)
    m.lower[-1] = P * np.array(low, dtype=float)
    m.upper[-1] = P * np.array(high, dtype=float)
    Lam = m.add_vars(R, 0, P)
    hi, lo, lhi, llo = (m.add_vars(1, 0, P, cost=k)[0] for k in (big, -big, 1, -1))
    for total, top, bottom in ((T, hi, lo), (Lam, lhi, llo)):
        q = m.add_vars(R, 0, P)
        s = m.add_vars(R, 0, 0)
        m.upper[-1] = np.maximum(sizes - 1, 0)
        u = m.add_vars(R, 0, 1)
        idx = np.arange(R)
        # total = n·q + s
        m.add_rows(np.zeros(R), 0, np.r_[idx, idx, idx], np.r_[total, q, s], np.r_[np.ones(R), -sizes, -np.ones(R)])
        # s <= (n-1)·u ; top >= q + u ; q >= bottom
        m.add_rows(np.full(R, -np.inf), 0, np.r_[idx, idx], np.r_[s, u], np.r_[np.ones(R), -(sizes - 1)])
        m.add_rows(np.zeros(R), np.inf, np.r_[idx, idx, idx], np.r_[np.full(R, top), q, u],
                   np.r_[np.ones(R), -np.ones(R), -np.ones(R)])
        m.add_rows(np.zeros(R), np.inf, np.r_[idx, idx], np.r_[q, np.full(R, bottom)], np.r_[np.ones(R), -np.ones(R)])
    idx = np.arange(R)
    m.add_rows(np.full(R, -np.inf), 0, np.r_[idx, idx], np.r_[Lam, T], np.r_[np.ones(R), -np.ones(R)])
    m.add_rows([P * c.rf], [P * c.rf], np.zeros(R, dtype=int), T, 1.0)
    m.add_rows([P], [P], np.zeros(R, dtype=int), Lam, 1.0)
    out = solve_model(m, deadline, threads)
    if out.x is None:
        if out.status in ("time_limit", "feasible"):
            return heuristic_totals(c)
        raise MethodError(f"the rack-level model gave no solution ({out.status})")
    t = tuple(int(round(v)) for v in out.x[T])
    lam = tuple(int(round(v)) for v in out.x[Lam])
    sz = [len(r) for r in c.racks]
    return RackTotals(t, lam, split_imbalance(t, sz), split_imbalance(lam, sz), out.status == "optimal",
                      out.bound)


def heuristic_totals(c: Cluster) -> RackTotals:
    """Feasible rack totals without a solve (when the deadline leaves no time for the rack model):
    replicas and leaders in proportion to rack sizes within each rack's limits, largest deficit first."""
    P, R = c.partitions, c.num_racks
    sizes = [len(r) for r in c.racks]
    N = sum(sizes)
    low, high = replicas_per_rack(c)
    replicas = _fill([P * lo for lo in low], [P * h for h in high], sizes, P * c.rf, N)
    leaders = _fill([0] * R, replicas, sizes, P, N)
    return RackTotals(tuple(replicas), tuple(leaders), split_imbalance(replicas, sizes),
                      split_imbalance(leaders, sizes), False, None)


def _fill(lower: list[int], upper: list[int], sizes: list[int], total: int, n: int) -> list[int]:
    """Integers in ``[lower, upper]`` summing to ``total``, near ``total × size / n`` each."""
    out = [min(u, max(lo, total * s // n)) for lo, u, s in zip(lower, upper, sizes)]
    while sum(out) != total:
        short = sum(out) < total
        for r in sorted(range(len(out)), key=lambda r: (out[r] / sizes[r]) * (1 if short else -1)):
            room = (upper[r] - out[r]) if short else (out[r] - lower[r])
            step = min(room, abs(total - sum(out)))
            out[r] += step if short else -step
            if sum(out) == total:
                break
    return out


def partition_racks(c: Cluster, totals: RackTotals) -> list[tuple[int, list[int]]]:
    """Leader rack and follower racks of each partition, meeting the rack totals exactly.

    Greedy, one partition at a time: lead from a rack whose remaining leaders
    equal its remaining replicas (it must lead all of them), else from the
    rack with most leaders left; then take every rack that must appear in all
    remaining partitions, then the racks with most replicas left.
    """
    T, Lam = list(totals.replicas), list(totals.leaders)
    R, out = c.num_racks, []
    for m in range(c.partitions, 0, -1):
        leader = max((r for r in range(R) if Lam[r] > 0),
                     key=lambda r: (Lam[r] == T[r], T[r] == m, Lam[r], T[r], -r))
        blocked = {r for r in range(R) if r != leader and T[r] > 0 and Lam[r] == T[r]}
        rest = sorted((r for r in range(R) if r != leader and r not in blocked and T[r] > 0),
                      key=lambda r: (-(T[r] == m), -T[r], -(T[r] - Lam[r]), r))
        followers = rest[:c.rf - 1]
        if len(followers) < c.rf - 1 or any(T[r] == m for r in rest[c.rf - 1:]):
            raise MethodError("rack totals could not be de-aggregated (this is a bug)")
        Lam[leader] -= 1
        for r in [leader] + followers:
            T[r] -= 1
        out.append((leader, followers))
    return out


def place_in_racks(c: Cluster, totals: RackTotals, racks: list[tuple[int, list[int]]]) -> dict[int, tuple[int, ...]]:
    """Brokers for each partition: each rack's leader and follower entries go to its brokers' even quotas."""
    lead_slots, follow_slots = [], []
    for r, members in enumerate(c.racks):
        rho = _even(totals.replicas[r], len(members))
        lam = _even(totals.leaders[r], len(members))
        lead_slots.append(iter([b for b, k in zip(members, lam) for _ in range(k)]))
        follow_slots.append(iter([b for b, k, l in zip(members, rho, lam) for _ in range(k - l)]))
    out = {}
    for i, (leader, followers) in enumerate(racks):
        out[c.start + i] = (next(lead_slots[leader]),) + tuple(next(follow_slots[r]) for r in followers)
    return out


# --------------------------------------------------------------------------- R < RF, no current


def extra_counts(c: Cluster, totals: RackTotals) -> list[list[int]]:
    """Replicas of each partition in each rack when every rack must be used (R < RF).

    Each partition has one replica per rack plus ``RF − R`` extras; rack r's
    ``T_r − P`` extras are laid on one cyclic sequence over the partitions,
    rack after rack, so every partition gets exactly ``RF − R`` extras and at
    most ``⌈(T_r − P)/P⌉ <= high_r − 1`` of them in rack r.
    """
    P = c.partitions
    counts = [[1] * c.num_racks for _ in range(P)]
    position = 0
    for r, t in enumerate(totals.replicas):
        for _ in range(t - P):
            counts[position % P][r] += 1
            position += 1
    return counts


def _follower_order(n: int, led: list[int], others: list[int], followers: dict[int, int]
                    ) -> tuple[list[int], dict[int, int]] | None:
    """Order one rack's follower blocks and give each led partition a leader slot outside its own block.

    The fill puts the ``len(led)`` leaders on slots ``0, 1, ...`` (so slot
    ``k`` is used ``⌊Λ/n⌋`` or ``⌈Λ/n⌉`` times), then the blocks of
    ``followers[p]`` consecutive slots. Greedy: at each slot, the led partition
    with the biggest block that still avoids some free leader slot goes next
    (taking the free slot with most copies left); partitions this rack does
    not lead fill in when none fits. Led partitions without followers take
    the leader slots left at the end. None if it gets stuck.
    """
    tokens = [0] * n
    for j in range(len(led)):
        tokens[j % n] += 1
    waiting: dict[int, list[int]] = {}  # block size -> led partitions
    for p in led:
        if followers[p] > 0:
            waiting.setdefault(followers[p], []).append(p)
    free = [p for p in others if followers[p] > 0]
    order: list[int] = []
    lead_at: dict[int, int] = {}
    slot = len(led) % n
    while waiting or free:
        pick = None
        for f in sorted(waiting, reverse=True):
            fits = [k for k in range(n) if tokens[k] and (k - slot) % n >= f]
            if fits:
                pick = waiting[f].pop()
                if not waiting[f]:
                    del waiting[f]
                k = max(fits, key=lambda k: tokens[k])
                tokens[k] -= 1
                lead_at[pick] = k
                break
        if pick is None:
            if not free:
                return None
            pick = free.pop()
        order.append(pick)
        slot = (slot + followers[pick]) % n
    rest = [k for k in range(n) for _ in range(tokens[k])]
    for p, k in zip((p for p in led if p not in lead_at), rest):
        lead_at[p] = k
    return order, lead_at


def place_every_rack(c: Cluster, totals: RackTotals) -> dict[int, tuple[int, ...]] | None:
    """Brokers for each partition when R < RF, or None if the greedy block order gets stuck.

    Per rack, one cyclic fill over its brokers: first the leaders of the
    partitions it leads, one slot each, then every partition's remaining
    replicas in that rack as a block of consecutive slots. A single fill
    gives each broker ⌊T_r/n_r⌋ or ⌈T_r/n_r⌉ replicas and ⌊Λ_r/n_r⌋ or
    ⌈Λ_r/n_r⌉ leaders, the extras of both on the first brokers (so nested).
    """
    P = c.partitions
    counts = extra_counts(c, totals)
    leader_rack = [r for r, k in enumerate(totals.leaders) for _ in range(k)]
    chosen: list[list[int]] = [[] for _ in range(P)]
    leaders = [0] * P
    for r, members in enumerate(c.racks):
        n = len(members)
        led = [p for p in range(P) if leader_rack[p] == r]
        led_set = set(led)
        followers = {p: counts[p][r] - (p in led_set) for p in range(P)}
        planned = _follower_order(n, led, [p for p in range(P) if p not in led_set], followers)
        if planned is None:
            return None
        order, lead_at = planned
        for p, j in lead_at.items():
            leaders[p] = members[j]
        slot = len(led)
        for p in order:
            chosen[p].extend(members[(slot + k) % n] for k in range(followers[p]))
            slot += followers[p]
    return {c.start + p: (leaders[p],) + tuple(chosen[p]) for p in range(P)}


# --------------------------------------------------------------------------- no racks


def balanced_placement(c: Cluster) -> dict[int, tuple[int, ...]]:
    """Leaders on a balanced word over the brokers, replicas on the RF brokers from the leader on.

    Every window of RF consecutive brokers then holds ⌊RF·a/N⌋ or ⌈RF·a/N⌉
    of the ``a = P mod N`` extra leaders, so both imbalances are at most 1.

    >>> c = Cluster((0, 1, 2, 3), ((0, 1, 2, 3),), False, 6, 2, 0)
    >>> balanced_placement(c)
    {0: (0, 1), 1: (1, 2), 2: (1, 2), 3: (2, 3), 4: (3, 0), 5: (3, 0)}
    """
    n = len(c.brokers)
    q, a = divmod(c.partitions, n)
    leaders = [q + ((i + 1) * a // n - i * a // n) for i in range(n)]
    out, pid = {}, c.start
    for i, k in enumerate(leaders):
        for _ in range(k):
            out[pid] = tuple(c.brokers[(i + j) % n] for j in range(c.rf))
            pid += 1
    return out




# --------------------------------------------------------------------------- R >= RF, vectorised


def wrap_placement(c: Cluster, totals: RackTotals) -> dict[int, tuple[int, ...]] | None:
    """The rack totals as a placement in array operations (a million partitions in seconds), or None.

    Racks' replicas are laid end to end over the slots ``k = row·P + p`` (McNaughton's wrap-around):
    rack r covers a cyclic run of ``T_r <= P`` partitions, so no partition gets a rack twice, and the
    runs' ends cut the partitions into at most ``R + 1`` intervals with one rack set each. Leaders are
    a transportation problem between those intervals and the racks' leader totals ``Λ_r`` (a max flow);
    within a rack, leaders and followers go to its brokers' even quotas as in :func:`place_in_racks`.
    None when the transportation has no solution (the greedy :func:`partition_racks` then decides).
    """
    P, R, rf = c.partitions, c.num_racks, c.rf
    T, lam = np.array(totals.replicas, dtype=np.int64), np.array(totals.leaders, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(T)[:-1]))
    cuts = np.unique(np.concatenate(([0, P], starts % P)))
    lows, highs = cuts[:-1], cuts[1:]
    has = np.zeros((len(lows), R), dtype=bool)  # interval i holds rack r
    for r in range(R):
        if T[r] == 0:
            continue
        a = starts[r] % P
        inside = ((lows - a) % P) < T[r]
        has[inside, r] = True
    if not np.all(has.sum(axis=1) == rf):
        return None
    lead = _interval_leaders(has, (highs - lows), lam)
    if lead is None:
        return None
    leader_rack = np.empty(P, dtype=np.int64)
    for i, (lo, hi) in enumerate(zip(lows, highs)):
        at = lo
        for r in np.flatnonzero(lead[i]):
            leader_rack[at:at + lead[i, r]] = r
            at += lead[i, r]
    return _brokers_for(c, totals, has, lows, highs, leader_rack)


def _interval_leaders(has: np.ndarray, sizes: np.ndarray, lam: np.ndarray) -> np.ndarray | None:
    """Leaders per (interval, rack): interval i leads ``sizes[i]`` among its racks, rack r ``lam[r]``."""
    csr_array, maximum_flow = sparse().csr_array, csgraph().maximum_flow

    n, R = has.shape
    src, sink = n + R, n + R + 1
    ii, rr = np.nonzero(has)
    tails = np.concatenate([np.full(n, src), ii, n + np.arange(R)])
    heads = np.concatenate([np.arange(n), n + rr, np.full(R, sink)])
    caps = np.concatenate([sizes, sizes[ii], lam]).astype(np.int64)
    if caps.max(initial=0) > np.iinfo(np.int32).max:
        return None
    graph = csr_array((caps.astype(np.int32), (tails, heads)), shape=(n + R + 2,) * 2)
    result = maximum_flow(graph, src, sink)
    if result.flow_value != sizes.sum():
        return None
    flow = result.flow.toarray() if hasattr(result, "flow") else result.residual.toarray()
    out = np.zeros((n, R), dtype=np.int64)
    out[ii, rr] = flow[ii, n + rr]
    return out


def _brokers_for(c: Cluster, totals: RackTotals, has: np.ndarray, lows: np.ndarray, highs: np.ndarray,
                 leader_rack: np.ndarray) -> dict[int, tuple[int, ...]]:
    """Each rack's leader and follower entries, in partition order, onto its brokers' even quotas."""
    P, R = c.partitions, c.num_racks
    interval = np.repeat(np.arange(len(lows)), highs - lows)
    leader = np.empty(P, dtype=np.int64)
    followers = np.empty((P, c.rf - 1), dtype=np.int64)
    filled = np.zeros(P, dtype=np.int64)
    for r, members in enumerate(c.racks):
        ids = np.array(members, dtype=np.int64)
        rho = np.array(_even(totals.replicas[r], len(members)), dtype=np.int64)
        lm = np.array(_even(totals.leaders[r], len(members)), dtype=np.int64)
        led = np.flatnonzero(leader_rack == r)
        leader[led] = np.repeat(ids, lm)
        follows = np.flatnonzero(has[interval, r] & (leader_rack != r))
        followers[follows, filled[follows]] = np.repeat(ids, rho - lm)
        filled[follows] += 1
    columns = [leader.tolist(), *followers.T.tolist()]  # zip makes the tuples: no million lists first
    with collector_paused():  # a million new tuples, no cycles: collections would walk them again and again
        return dict(zip(range(c.start, c.start + P), zip(*columns)))
