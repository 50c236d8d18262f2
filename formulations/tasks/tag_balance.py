r"""``exact.tag_standby`` stage 2 by levels: the balance MIP as a sequence of flow problems.

Stage 2 minimises ``U − L`` subject to ``k_c L <= s_c <= k_c U`` per client
(:mod:`kipopt.formulations.tasks.tag_standby`). As one MIP it is hard for
HiGHS: with ``U`` and ``L`` free the LP relaxation spreads the load evenly
(``U − L`` near 0 whatever the integer optimum), so the bound never rises
and branching on thousands of ``y`` columns does not end (100,000 tasks ×
5,000 clients: no proof in 20 s, 20,038 columns, 9 classes).

But with ``U`` and ``L`` fixed what is left is a feasibility problem, and
with one standby per task (0/1 options of one profile each) it is a
transportation problem (class supplies ``m_κ``, client demands in
``[k_c L, k_c U]``): the simplex vertex is integral. So the levels are
scanned: ``J = U − L`` from its least possible value up, and per ``J``
every ``L`` with ``L·K <= S <= (L + J)·K`` (``S`` the copies, ``K`` the
threads; at most ``J + 1`` of them). The first feasible pair is optimal,
proven by the infeasible ones below it. A fractional vertex (options with
several profiles) is settled by the MIP with ``U`` and ``L`` fixed, a
feasibility question; only a pair the deadline leaves open stops the scan,
and the best point known (the greedy start) is answered with the bound the
scan reached (the start is made only then).
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kipopt.formulations.highs import ArrayLP, Deadline, LexResult, SparseBuilder, is_integral, solve_lp


def level_pairs(total: int, threads: int, spread: int) -> list[int]:
    """Every ``L >= 0`` with ``L·K <= S <= (L + J)·K`` (``S`` = ``total``, ``K`` = ``threads``, ``J`` = ``spread``).

    >>> level_pairs(100, 12, 1), level_pairs(96, 12, 0), level_pairs(96, 12, 2)
    ([8], [8], [6, 7, 8])
    """
    high = total // threads
    low = max(0, -(-total // threads) - spread)
    return list(range(low, high + 1))


def scan_levels(m: GroupedModel, capacity: np.ndarray, time_limit: float | None,
                threads: int | None) -> LexResult:
    """Stage 2 of :mod:`~kipopt.formulations.tasks.tag_standby` by the scan of the module docstring."""
    deadline = Deadline.after(time_limit)
    total = m.copies
    K = int(capacity.sum())
    least = -(-total // K) - total // K if K else 0
    checked = 0
    # every load fits once U reaches the largest possible load per thread and L = 0: the scan ends by then
    for spread in range(least, total + 1):
        for low in level_pairs(total, K, spread):
            if deadline.expired:
                return _stopped(m, spread, f"time limit in the level scan at U - L = {spread}")
            checked += 1
            found, decided = _fixed(m, low, low + spread, threads, deadline)
            if found is not None:
                return LexResult("optimal", found, (float(spread),), (float(spread),), None,
                                 f"{checked} level pairs checked")
            if not decided:
                return _stopped(m, spread, f"time limit at U - L = {spread}, L = {low}")
    return LexResult("infeasible", None, (), (), 0, f"no level pair is feasible ({checked} checked)")


def _fixed(m: GroupedModel, low: int, high: int, threads: int | None,
           deadline: Deadline) -> tuple[np.ndarray | None, bool]:
    """A point with ``L = low`` and ``U = high``, or ``None``; and whether that was decided."""
    if m.transport is not None and int(m.capacity.max()) * high <= m.transport.least_supply:
        found = _by_transport(m, low, high, threads, deadline)
        if found is not None:
            return found
    lower, upper = m.lp.lower.copy(), m.lp.upper.copy()
    lower[m.L] = upper[m.L] = low
    lower[m.U] = upper[m.U] = high
    lp = dataclasses.replace(m.lp, lower=lower, upper=upper, integrality=None)
    res = solve_lp(lp, deadline=deadline, threads=threads)
    if res.status == "infeasible":
        return None, True
    if res.x is None:
        return None, False
    if is_integral(res.x):
        return np.rint(res.x), True
    mip = solve_lp(dataclasses.replace(lp, integrality=m.lp.integrality), deadline=deadline, threads=threads,
                   presolve=True)
    if mip.status == "infeasible":
        return None, True
    return (None, False) if mip.x is None else (np.rint(mip.x), True)


def _stopped(m: GroupedModel, bound: int, message: str) -> LexResult:
    """The greedy start, with the level the scan had proven."""
    best = float(m.lp.cost @ m.start)
    return LexResult("feasible", m.start, (best,), (float(min(bound, best)),), 0, message)


@dataclass(frozen=True)
class Transport:
    """Stage 2 with unit options, aggregated: ``supply[κ]`` tasks of class κ, clients grouped into *sinks* by
    the classes they may serve (``sink_of[c]``, -1 for none); arc ``(arc_class[i], arc_sink[i])``."""

    supply: np.ndarray
    sink_of: np.ndarray
    arc_class: np.ndarray
    arc_sink: np.ndarray
    least_supply: int


def transport_form(supply: list[int], allowed: list[np.ndarray], profile_of: np.ndarray) -> Transport | None:
    """The aggregate of :func:`_by_transport`, or ``None`` when there are more than :data:`MAX_SINKS` sinks.

    A sink is the clients of one profile serving the same classes.
    """
    serves: list[list[int]] = [[] for _ in range(len(profile_of))]
    for k, clients in enumerate(allowed):
        for c in clients.tolist():
            serves[c].append(k)
    keys: dict[tuple[int, tuple[int, ...]], int] = {}
    sink_of = np.array([keys.setdefault((int(p), tuple(ks)), len(keys)) if ks else -1
                        for p, ks in zip(profile_of.tolist(), serves)], dtype=np.int64)
    if len(keys) > MAX_SINKS:
        return None
    pairs = [(k, s) for (_, ks), s in keys.items() for k in ks]
    arc_class, arc_sink = (np.array(v, dtype=np.int64) for v in zip(*pairs)) if pairs else (np.zeros(0, np.int64),) * 2
    return Transport(np.array(supply, dtype=np.int64), sink_of, arc_class, arc_sink, min(supply, default=0))


MAX_SINKS = 256
"""Most client groups (by the classes they may serve) the aggregated transportation problem takes."""


@dataclass(frozen=True)
class GroupedModel:
    """The stage-2 program of :mod:`~kipopt.formulations.tasks.tag_standby` (objective ``U − L``), where its
    columns are, and what the level scan needs."""

    lp: ArrayLP
    w_cols: list[np.ndarray]
    y_cols: list[np.ndarray]
    allowed: list[np.ndarray]
    U: int
    L: int
    make_start: Callable[[], np.ndarray]
    copies: int
    capacity: np.ndarray
    profile_of: np.ndarray
    unit_profile: list[np.ndarray] | None
    """Per class the profile of each option, when every option is one copy on one profile (σ = 1)."""
    transport: Transport | None

    @functools.cached_property
    def start(self) -> np.ndarray:
        """The greedy start (made when first asked for: the level scan needs it only when it is cut short)."""
        return self.make_start()


def _by_transport(m: GroupedModel, low: int, high: int, threads: int | None,
                  deadline: Deadline) -> tuple[np.ndarray | None, bool] | None:
    """Stage 2 at ``(L, U)`` for unit options: a transportation problem over (class, sink), then dealt to clients.

    Exact: clients serving the same classes are interchangeable, and with every
    client's upper load ``k_c U`` at most the smallest class (so no arc cap
    ``y <= m_κ`` binds), any sink total within ``[Σ k_c L, Σ k_c U]`` splits
    into client loads within theirs, and any split of the classes' flows over
    those loads (north-west corner) is a point of the full model. Returns
    what :func:`_fixed` does, or ``None`` when the full model must decide.
    """
    t = m.transport
    S = int(t.sink_of.max()) + 1 if len(t.sink_of) else 0
    member = t.sink_of >= 0
    if low > 0 and not member.all():  # a client no class may use stays at 0 standbys
        return None, True
    lo = np.bincount(t.sink_of[member], weights=m.capacity[member] * low, minlength=S)
    hi = np.bincount(t.sink_of[member], weights=m.capacity[member] * high, minlength=S)
    b = SparseBuilder()
    f = b.add_cols(len(t.arc_class), 0.0, np.inf)
    b.add_rows(len(t.supply), t.arc_class, f, 1.0, t.supply, t.supply)
    b.add_rows(S, t.arc_sink, f, 1.0, lo, hi)
    res = solve_lp(b.build(), threads=threads, deadline=deadline)
    if res.status == "infeasible":
        return None, True
    if res.x is None or not is_integral(res.x):
        return None  # undecided here: the full model decides
    flow = np.rint(res.x).astype(np.int64)
    x = np.zeros(m.lp.num_col)
    x[m.L], x[m.U] = low, high
    for s in range(S):
        clients = np.nonzero(t.sink_of == s)[0]
        arcs = np.nonzero(t.arc_sink == s)[0]
        load = _loads(m.capacity[clients] * low, m.capacity[clients] * high, int(flow[arcs].sum()))
        _north_west(m, x, t.arc_class[arcs], flow[arcs], clients, load)
    return x, True


def _loads(lo: np.ndarray, hi: np.ndarray, total: int) -> np.ndarray:
    """Loads within ``[lo, hi]`` summing to ``total`` (the lows, then each client filled in turn)."""
    extra = np.minimum(hi - lo, np.maximum(0, total - lo.sum() - np.concatenate(([0], np.cumsum(hi - lo)[:-1]))))
    return lo + extra


def _north_west(m: GroupedModel, x: np.ndarray, classes: np.ndarray, flows: np.ndarray, clients: np.ndarray,
                load: np.ndarray) -> None:
    """Each class's flow into consecutive clients' loads; sets its ``w`` (unit options) and ``y`` columns."""
    ends = np.cumsum(load)
    start = 0
    for k, amount in zip(classes.tolist(), flows.tolist()):
        if amount == 0:
            continue
        cuts = np.clip(ends, start, start + amount) - np.clip(ends - load, start, start + amount)
        took = np.nonzero(cuts)[0]
        cols = m.y_cols[k][np.searchsorted(m.allowed[k], clients[took])]
        x[cols] += cuts[took]
        profile = np.nonzero(m.unit_profile[k] == m.profile_of[clients[took[0]]])[0]
        x[m.w_cols[k][profile]] += amount
        start += amount


def greedy_start(pr, cl, capacity, num_col, w_cols, y_cols, allowed, U, L) -> np.ndarray:
    """Each task its class's first option, each copy on the least loaded allowed client of the profile
    (load per thread, then client index: a heap per profile, O(copies · log clients))."""
    x = np.zeros(num_col)
    load = np.zeros(len(capacity), dtype=np.int64)
    cap = capacity.tolist()
    for ts, opts, w, y, clients in zip(cl.tasks, cl.options, w_cols, y_cols, allowed):
        x[w[0]] = len(ts)
        wanted = [(int(p), int(opts[0][p])) for p in np.nonzero(opts[0])[0]]
        heaps = {p: _load_heap(np.nonzero(pr.of[clients] == p)[0].tolist(), clients, load, cap) for p, _ in wanted}
        picked = np.zeros(len(clients), dtype=np.int64)
        for _ in ts:
            for p, n in wanted:
                heap = heaps[p]
                taken = [heapq.heappop(heap) for _ in range(min(n, len(heap)))]
                for _, c, j in taken:
                    picked[j] += 1
                    load[c] += 1
                    heapq.heappush(heap, (load[c] / cap[c], c, j))
        x[y] += picked
    x[U] = np.max(-(-load // capacity))
    x[L] = np.min(load // capacity)
    return x


def _load_heap(positions: list[int], clients: np.ndarray, load: np.ndarray, cap: list) -> list:
    """``(load per thread, client, position)`` of the clients at ``positions`` of ``clients``, heapified."""
    heap = [(load[c] / cap[c], c, j) for j in positions for c in (int(clients[j]),)]
    heapq.heapify(heap)
    return heap
