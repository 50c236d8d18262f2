"""The dec-min stages of ``exact.balanced``: the most balanced counts (stage 1), then cross-rack and
revocations on that face (stage 2), their read-back, and the linear pricing helpers.

The two network LPs and their proofs are in :mod:`~kipopt.formulations.consumers.balanced`'s module
docstring (stages 1 and 2); that module drives the exact stages that follow and re-exports every name
here.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import (Dealer, Layout, cheapest, class_counts, integral_flows, layout,
                                                  least_cross, level_bounds, owners_in_order, quotas)
from kipopt.formulations.consumers.levels import owned_by_group
from kipopt.formulations.consumers.rules import owners, revoked
from kipopt.formulations.maxflow import max_flow
from kipopt.formulations.highs import (INTERIOR_POINT, ArrayLP, Deadline, HighsResult, build_csc,
                                      call_highs_before_with, is_integral, solve_lp, solve_tu_lp, stopped_at_limit)


@dataclass(frozen=True)
class BalanceFace:
    """The dec-min face: per class its member bounds and the topics it may take."""

    classes: tuple[frozenset[str], ...]
    member_class: np.ndarray
    low: np.ndarray
    high: np.ndarray
    allowed: frozenset[tuple[str, int]]
    info: dict
    levels: tuple[np.ndarray, np.ndarray] | None = None  # (L_c, U_c): valid for every pairwise balanced one



def balance_face(instance: ConsumersInstance, lay: Layout, time_limit: float | None = None,
                 threads: int | None = None) -> BalanceFace | None:
    """Stage 1: solve the class-level convex flow and read the dec-min face off its reduced costs.

    Its segments run over ``[L_c, U_c)`` narrowed to the window :func:`extreme_counts` gives (every
    dec-min member value lies in it), so the model does not grow with the partitions per member: on
    a 1,000,000 x 10,000 group every dec-min member holds 100, where ``[L_c, U_c)`` spans about 180
    levels per class (164,000 columns, 11 s). Were the window ever wrong (a numerical slip in its
    LPs), the narrowed flow would have no solution, and the full one is solved instead. Where the window
    is even (everyone at ``⌊P / M⌋`` or one more, found by two maximum flows) every solution of the
    narrowed flow costs the same, and the face is read with no LP (:func:`_flat_face`)."""
    t0 = time.perf_counter()
    classes, member_class, count, sizes = class_counts(instance, lay)
    L, U = level_bounds(lay, sizes, classes, count)
    topic_row = {t: i for i, t in enumerate(lay.topics)}
    arcs = [(t, c) for c, topics in enumerate(classes) for t in sorted(topics, key=topic_row.get)]
    f_topic = np.array([topic_row[t] for t, _ in arcs], dtype=np.int64)
    f_class = np.array([c for _, c in arcs], dtype=np.int64)
    supply = np.array([sizes[t] for t in lay.topics], dtype=np.float64)
    window = extreme_counts(f_topic, f_class, count, supply, time_limit, threads)
    info = {"stage1_window": None if window is None else list(window)}
    if window is not None:
        low, high = np.minimum(np.maximum(L, window[0]), U), np.maximum(np.minimum(U, window[1]), L)
    if window is not None and window == _even_counts(f_class, count, supply):
        return _timed(_flat_face(classes, member_class, count, arcs, supply, low, high, window[0]), t0, info, (L, U))
    if window is not None and ((low != L).any() or (high != U).any()):
        face = _face(classes, member_class, count, arcs, f_topic, f_class, supply, low, high, _left(t0, time_limit),
                     threads)
        if face is not None:
            return _timed(face, t0, info, (L, U))
        info["stage1_window"] = "no solution in the window: the full range"
    face = _face(classes, member_class, count, arcs, f_topic, f_class, supply, L, U, _left(t0, time_limit), threads)
    return None if face is None else _timed(face, t0, info, (L, U))


def _left(t0: float, time_limit: float | None) -> float | None:
    return None if time_limit is None else max(0.01, time_limit - (time.perf_counter() - t0))


def _timed(face: BalanceFace, t0: float, info: dict, levels: tuple[np.ndarray, np.ndarray]) -> BalanceFace:
    return replace(face, info={**face.info, **info, "stage1_seconds": round(time.perf_counter() - t0, 6)},
                   levels=levels)


def extreme_counts(f_topic: np.ndarray, f_class: np.ndarray, count: np.ndarray, supply: np.ndarray,
                   time_limit: float | None = None, threads: int | None = None) -> tuple[int, int] | None:
    """``(L*, U*)``: the largest least count and the smallest greatest count, over members that subscribe
    to something, of any valid assignment (arcs ``(f_topic, f_class)``, classes of ``count`` members,
    topics of ``supply`` partitions); ``None`` when an LP does not finish.

    A dec-min vector of an M-convex set (here: the members' counts) is also inc-max (Frank & Murota,
    *Discrete decreasing minimization*, part I), so it minimizes the greatest component and maximizes
    the least: every dec-min member value lies in ``[L*, U*]``. Members of a class are interchangeable
    and split its total evenly, so each is one LP over classes (``max l`` with class totals at least
    ``n_c l``, ``min u`` with them at most ``n_c u``); with integral data an integral flow meets
    ``floor(l)`` and ``ceil(u)``. Where everyone can hold ``⌊P / M⌋`` or one more (:func:`_even_window`, two
    maximum flows) that is the answer, and no LP is solved."""
    classes = np.unique(f_class)
    if not len(classes):
        return None
    even = _even_window(f_topic, f_class, count, supply, classes)
    if even is not None:
        return even
    k = len(f_topic)
    T = len(supply)
    row = T + np.searchsorted(classes, f_class)
    cols = np.concatenate([np.repeat(np.arange(k), 2), np.full(len(classes), k)])
    rows = np.concatenate([np.stack([f_topic, row], axis=1).ravel(), T + np.arange(len(classes))])
    vals = np.concatenate([np.ones(2 * k), -count[classes].astype(np.float64)])
    start, index, value = build_csc(k + 1, cols, rows, vals)
    found = []
    for sense in (1.0, -1.0):  # max l (minimize -l), then min u: the same matrix, other row bounds
        lo_rows = np.zeros(len(classes)) if sense > 0 else np.full(len(classes), -np.inf)
        hi_rows = np.full(len(classes), np.inf) if sense > 0 else np.zeros(len(classes))
        lp = ArrayLP(cost=np.r_[np.zeros(k), -sense], lower=np.zeros(k + 1), upper=np.full(k + 1, np.inf),
                     row_lower=np.r_[supply, lo_rows], row_upper=np.r_[supply, hi_rows],
                     start=start, index=index, value=value)
        result = solve_lp(lp, time_limit=time_limit, threads=threads)
        if result.status != "optimal" or result.x is None:
            return None
        found.append(float(result.x[k]))
    return int(math.floor(found[0] + 1e-6)), int(math.ceil(found[1] - 1e-6))


def _even_window(f_topic: np.ndarray, f_class: np.ndarray, count: np.ndarray, supply: np.ndarray,
                 classes: np.ndarray) -> tuple[int, int] | None:
    """``(q, ⌈P / M⌉)`` when some valid assignment gives every member ``q = ⌊P / M⌋`` or ``q + 1``, else ``None``.
    No member's count can stay above the average's floor nor below its ceiling, so that is then
    :func:`extreme_counts`' answer. Class totals between ``n_c q`` and ``n_c ⌈P / M⌉`` with every topic's
    partitions placed exist exactly when the upper bounds take every partition and the lower bounds are met
    by some flow (Hoffman's condition of this bipartite network splits into those two: every cut with both
    kinds of bound crossing it is crossed by an infinite arc), two maximum flows. The answer's class totals
    split evenly among the class's members. Each LP of :func:`extreme_counts` took 0.05 s at 10,000 x
    1,000 (3,210 arcs); the flows take a few milliseconds."""
    T, members = len(supply), int(count[classes].sum())
    total = int(round(float(supply.sum())))
    q, r = divmod(total, members)
    source, sink = T + len(classes), T + len(classes) + 1
    # source -> topic (its partitions), topic -> class (unbounded), class -> sink (its members' share)
    tail = np.r_[np.full(T, source), f_topic, T + np.arange(len(classes))].tolist()
    head = np.r_[np.arange(T), T + np.searchsorted(classes, f_class), np.full(len(classes), sink)].tolist()
    fixed = np.r_[np.rint(supply), np.full(len(f_topic), total)].astype(np.int64)

    def saturated(per_member: int, wanted: int) -> bool:
        caps = np.r_[fixed, count[classes].astype(np.int64) * per_member].tolist()
        return max_flow(sink + 1, tail, head, caps, source, sink) == wanted

    if not saturated(q + (r > 0), total) or (r > 0 and not saturated(q, q * members)):
        return None
    return q, q + (r > 0)


def _even_counts(f_class: np.ndarray, count: np.ndarray, supply: np.ndarray) -> tuple[int, int]:
    """``(⌊P / M⌋, ⌈P / M⌉)`` over the members of classes with arcs: the window :func:`extreme_counts` gives
    exactly when its two maximum flows found everyone there (:func:`_even_window`)."""
    q, r = divmod(int(round(float(supply.sum()))), int(count[np.unique(f_class)].sum()))
    return q, q + (r > 0)


def _flat_face(classes, member_class, count, arcs, supply, low: np.ndarray, high: np.ndarray, level: int
               ) -> BalanceFace:
    """The face of the even window ``[level, level + 1]``, read with no LP. Every segment left there is
    ``[level, level + 1)`` and costs ``2 level + 1``, and the segments together carry what the classes'
    least totals leave (``P - Σ n_c low_c``), so every solution of the convex flow costs the same: each one
    is optimal, the face is every solution (every arc allowed, each class between ``low_c`` and
    ``high_c``), and the window's maximum flows showed there is one. The LP found the same face at a cost
    that grows with the arcs: 60 s at 500,000 x 5,000 over 100 topics (249,628 columns, one member per
    class), where the flows took 1.2 s."""
    objective = (2 * level + 1) * (float(supply.sum()) - float(np.sum(count * low)))
    info = {"stage1_columns": 0, "stage1_rows": 0, "stage1_status": "optimal", "stage1_lp": "none (even window)",
            "classes": len(classes), "sum_squares": _sum_squares(objective, count, low)}
    return BalanceFace(classes, member_class, low, high, frozenset(arcs), info)


def _face(classes, member_class, count, arcs, f_topic, f_class, supply, L, U, time_limit, threads
          ) -> BalanceFace | None:
    """The convex flow with class c's segments over ``[L_c, U_c)`` (demand ``n_c L_c``), and the face its
    reduced costs give; ``None`` when it has no optimum."""
    T = len(supply)
    seg_class = np.repeat(np.arange(len(classes)), U - L)
    seg_level = np.concatenate([np.arange(lo, hi) for lo, hi in zip(L, U)]) if len(classes) else np.zeros(0, int)
    k_f, k_s = len(arcs), len(seg_class)
    cols = np.concatenate([np.repeat(np.arange(k_f), 2), k_f + np.arange(k_s)])
    rows = np.concatenate([np.stack([f_topic, T + f_class], axis=1).ravel(), T + seg_class])
    vals = np.concatenate([np.ones(2 * k_f), -np.ones(k_s)])
    start, index, value = build_csc(k_f + k_s, cols, rows, vals)
    demand = (count * L).astype(np.float64)
    lp = ArrayLP(cost=np.concatenate([np.zeros(k_f), 2.0 * seg_level + 1.0]),
                 lower=np.zeros(k_f + k_s),
                 # f unbounded above: a bound there could hold with a negative reduced cost, and the
                 # face would then also need "arc at its bound", which the read-off below does not model
                 upper=np.concatenate([np.full(k_f, np.inf), count[seg_class].astype(float)]),
                 row_lower=np.concatenate([supply, demand]), row_upper=np.concatenate([supply, demand]),
                 start=start, index=index, value=value)
    result = solve_lp(lp, time_limit=time_limit, threads=threads)
    info = {"stage1_columns": lp.num_col, "stage1_rows": lp.num_row, "stage1_status": result.status,
            "classes": len(classes)}
    if result.status != "optimal" or result.col_dual is None:
        return None
    d = result.col_dual
    allowed = frozenset((t, c) for (t, c), rc in zip(arcs, d[:k_f]) if rc < 0.5)
    seg_d = d[k_f:]
    full = np.bincount(seg_class, weights=(seg_d < -0.5).astype(float), minlength=len(classes)).astype(np.int64)
    free = np.bincount(seg_class, weights=(np.abs(seg_d) <= 0.5).astype(float), minlength=len(classes))
    low = L + full
    high = low + (free > 0)
    info["sum_squares"] = _sum_squares(result.objective, count, L)
    return BalanceFace(classes, member_class, low, high, allowed, info, (L, U))


def _sum_squares(stage1: float | None, count: np.ndarray, L: np.ndarray) -> int | None:
    """``Σ x²`` of a dec-min vector: the base ``n_c L_c²`` plus the segment costs."""
    return None if stage1 is None else int(round(stage1)) + int(np.sum(count * L * L))


@dataclass(frozen=True)
class BalancedProblem:
    layout: Layout
    face: BalanceFace
    weight: int
    owned_total: int
    groups: tuple[tuple[int, int], ...]       # member groups h: (rack index, class)
    group_members: tuple[tuple[int, ...], ...]  # members of h that own nothing
    owner_members: tuple[int, ...]            # members that own something (own rows)
    owned: dict[tuple[int, int], list[int]]   # (partition group, member) -> owned partition numbers
    col_kind: np.ndarray  # 0 = y (relay -> h), 1 = z (keep), 2 = w (h -> owner), 3 = x (g -> relay)
    col_a: np.ndarray     # relay for y, g for z/x, h for w
    col_b: np.ndarray     # h for y, member for z/w, relay for x
    lp: ArrayLP


def balanced_problem(instance: ConsumersInstance, lay: Layout, face: BalanceFace) -> BalancedProblem:
    """Stage 2 on the dec-min face (see the module docstring)."""
    owner_of = owners(instance)
    weight = len(owner_of) + 1
    owned = owned_by_group(instance, lay)
    owner_set = sorted({m for _, m in owned})
    is_owner = np.zeros(len(lay.members), dtype=bool)
    is_owner[owner_set] = True
    h_index: dict[tuple[int, int], int] = {}
    plain: dict[int, list[int]] = defaultdict(list)
    owner_group: dict[int, int] = {}
    for i in range(len(lay.members)):
        h = h_index.setdefault((int(lay.member_rack[i]), int(face.member_class[i])), len(h_index))
        if is_owner[i]:
            owner_group[i] = h
        else:
            plain[h].append(i)
    groups = tuple(h_index)
    topic_of_group = [g.topic for g in lay.groups]
    topics = sorted({t for t, _ in face.allowed} | set(topic_of_group))
    at = {t: i for i, t in enumerate(topics)}
    allowed = np.zeros((len(topics), len(face.classes) if len(face.classes) else 1), dtype=bool)
    for t, c in face.allowed:
        allowed[at[t], c] = True
    h_rack = np.array([r for r, _ in groups], dtype=np.int64)
    h_class = np.array([c for _, c in groups], dtype=np.int64)
    g_topic = np.array([at[t] for t in topic_of_group], dtype=np.int64)
    sizes = np.array([g.size for g in lay.groups], dtype=np.float64)
    G, H, O = len(lay.groups), len(groups), len(owner_set)
    owner_row = {m: G + H + i for i, m in enumerate(owner_set)}
    # y: relay (topic, rack) -> member group, where the face allows the topic to the group's class (a
    # (topics x member groups) mask); x: partition group -> relay of its topic, at the rack's cross-rack cost
    y_t, y_h = (np.asarray(v, dtype=np.int64) for v in (np.nonzero(allowed[:, h_class]) if H else ((), ())))
    relays, y_relay = np.unique(y_t * len(lay.racks) + h_rack[y_h], return_inverse=True)
    relay_topic, relay_rack = relays // len(lay.racks), relays % len(lay.racks)
    by_topic = np.argsort(g_topic, kind="stable")
    edge = np.searchsorted(g_topic[by_topic], np.arange(len(topics) + 1))
    x_relay = np.repeat(np.arange(len(relays)), edge[relay_topic + 1] - edge[relay_topic])
    x_g = by_topic[np.concatenate([np.arange(edge[t], edge[t + 1]) for t in relay_topic])] if len(relays) \
        else np.zeros(0, dtype=np.int64)
    relay_row = G + H + O + np.arange(len(relays))
    z = [(g, m) for (g, m) in owned if (topic_of_group[g], int(face.member_class[m])) in face.allowed]
    z_g = np.array([g for g, _ in z], dtype=np.int64)
    z_m = np.array([m for _, m in z], dtype=np.int64)
    w_h = np.array([owner_group[m] for m in owner_set], dtype=np.int64)
    w_m = np.array(owner_set, dtype=np.int64)
    o_row = lambda ms: np.array([owner_row[int(m)] for m in ms], dtype=np.int64)  # noqa: E731
    topic_size = np.bincount(g_topic, weights=sizes, minlength=len(topics))
    # (kind, a, b, first row, its coefficient, second row, cost, upper): y, z (keeps), w (to owners), x
    parts = [(0, y_relay, y_h, G + y_h, 1.0, relay_row[y_relay], np.zeros(len(y_h)), topic_size[relay_topic[y_relay]]),
             (1, z_g, z_m, z_g, 1.0, o_row(z_m), weight * lay.cross[z_g, lay.member_rack[z_m]] - 1.0,
              np.array([len(owned[(int(g), int(m))]) for g, m in z], dtype=np.float64)),
             (2, w_h, w_m, G + w_h, -1.0, o_row(w_m), np.zeros(O), face.high[face.member_class[w_m]]),
             (3, x_g, x_relay, x_g, 1.0, relay_row[x_relay], weight * lay.cross[x_g, relay_rack[x_relay]],
              sizes[x_g])]
    kind = np.concatenate([np.full(len(a), k, dtype=np.int64) for k, a, *_ in parts])
    col_a, col_b = (np.concatenate([part[i] for part in parts]).astype(np.int64) for i in (1, 2))
    first = np.concatenate([part[3] for part in parts]).astype(np.int64)
    sign = np.concatenate([np.full(len(part[1]), part[4]) for part in parts])
    second = np.concatenate([part[5] for part in parts]).astype(np.int64)
    # the relay row's sign: -1 for what leaves it (y), +1 for what enters (x)
    second_sign = np.where(kind == 0, -1.0, 1.0)
    k = len(kind)
    start, index, value = build_csc(k, np.repeat(np.arange(k), 2), np.stack([first, second], axis=1).ravel(),
                                    np.stack([sign, second_sign], axis=1).ravel())
    n_plain = np.array([len(plain[h]) for h in range(H)], dtype=np.float64)
    o_class = face.member_class[owner_set] if owner_set else np.zeros(0, dtype=np.int64)
    no_relay = np.zeros(len(relays))
    lp = ArrayLP(cost=np.concatenate([part[6] for part in parts]).astype(np.float64), lower=np.zeros(k),
                 upper=np.concatenate([part[7] for part in parts]).astype(np.float64),
                 row_lower=np.concatenate([sizes, n_plain * face.low[h_class], face.low[o_class], no_relay]).astype(float),
                 row_upper=np.concatenate([sizes, n_plain * face.high[h_class], face.high[o_class], no_relay]).astype(float),
                 start=start, index=index, value=value)
    return BalancedProblem(lay, face, weight, len(owner_of), groups, tuple(tuple(plain[h]) for h in range(H)),
                           tuple(owner_set), dict(owned), kind, col_a, col_b, lp)


def read_back(problem: BalancedProblem, flows: np.ndarray) -> dict[str, tuple[str, ...]]:
    lay, face = problem.layout, problem.face
    lists: list[list[str]] = [[] for _ in lay.members]
    kept: dict[tuple[int, int], int] = {}
    flows = np.rint(flows).astype(np.int64)
    a, b, kind = problem.col_a, problem.col_b, problem.col_kind

    def columns(k: int) -> zip:  # one kind's (a, b, flow) as Python ints (numpy scalars are slow one by one)
        return zip(a[kind == k].tolist(), b[kind == k].tolist(), flows[kind == k].tolist())

    for g, m, f in columns(1):
        kept[(g, m)] = f
    pools: list[list[int]] = [[] for _ in lay.groups]
    taken: list[set[int]] = [set() for _ in lay.groups]
    for (g, m), numbers in problem.owned.items():
        keep = numbers[:kept.get((g, m), 0)]
        lists[m].extend(f"{lay.groups[g].topic}-{p}" for p in keep)
        taken[g].update(keep)
    for g, group in enumerate(lay.groups):
        pools[g] = [p for p in group.partitions if p not in taken[g]]
    dealer = Dealer(pools, [g.topic for g in lay.groups])
    relayed: dict[int, list[str]] = defaultdict(list)
    for g, relay, f in columns(3):
        if f:
            relayed[relay].extend(dealer.take(g, f))
    incoming: dict[int, list[str]] = defaultdict(list)
    passed: dict[int, int] = defaultdict(int)
    for relay, h, f in columns(0):
        if f:
            incoming[h].extend(relayed[relay][passed[relay]:passed[relay] + f])
            passed[relay] += f
    if any(n != len(relayed[r]) for r, n in passed.items()) or set(relayed) - set(passed):
        raise ValueError("a relay's partitions in and out differ")
    to_owner: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for h, m, f in columns(2):
        to_owner[h].append((m, f))
    for h in range(len(problem.groups)):
        got, at = incoming.get(h, []), 0
        for m, f in to_owner.get(h, []):
            lists[m].extend(got[at:at + f])
            at += f
        members = problem.group_members[h]
        if members:
            c = problem.groups[h][1]
            n = len(members)
            share = quotas(len(got) - at, np.full(n, face.low[c]), np.full(n, face.high[c]))
            for m, q in zip(members, share):
                lists[m].extend(got[at:at + int(q)])
                at += int(q)
        if at != len(got):
            raise ValueError(f"member group {h}: {len(got)} partitions in, {at} dealt")
    if not dealer.exhausted():
        raise ValueError("some partitions were not assigned")
    return {m: tuple(lists[i]) for i, m in enumerate(lay.members)}


def free_bound(instance: ConsumersInstance, lay: Layout) -> float:
    """Rule objective with balance dropped: each partition to its cheapest subscriber (a lower bound).

    Revoked there: owned partitions whose owner does not subscribe to them or reads them at more than
    their group's least cost (and those of topics nobody subscribes to), counted over all topics at once
    on :func:`~kipopt.formulations.consumers.groups.owners_in_order`."""
    lost = len(owners(instance))
    weight = lost + 1
    best = cheapest(lay)
    if lay.topics:  # every topic's partitions at once
        owner = owners_in_order(instance, lay)
        group = np.concatenate([lay.group_of_partition[t] for t in lay.topics])
        owned = np.flatnonzero(owner >= 0)
        g = group[owned]
        lost -= int(np.count_nonzero(lay.cross[g, lay.member_rack[owner[owned]]] <= best[g]))
    return float(weight * least_cross(lay, best) + lost)


def layout_objective(instance: ConsumersInstance, lay: Layout, assignment: dict[str, tuple[str, ...]],
                     cross: int | None = None) -> float:
    """The rule's scalar of ``assignment`` counted through the layout's partition groups: cross-rack by
    :func:`layout_cross` (or ``cross``, its value when the caller has it), revocations by :func:`rules.revoked`."""
    cross = layout_cross(lay, assignment) if cross is None else cross
    return float(cross * (len(owners(instance)) + 1) + revoked(instance, assignment))


def layout_cross(lay: Layout, assignment: dict[str, tuple[str, ...]]) -> int:
    """Cross-rack partitions of ``assignment`` as ``lay.cross`` counts them (the evaluator's definition,
    by partition group): linear in the assignment."""
    cross, group_of, rack = 0, lay.group_of_partition, lay.member_rack
    for i, m in enumerate(lay.members):
        row = lay.cross[:, rack[i]]
        if not row.any():
            continue
        for p in assignment.get(m, ()):
            t, _, number = p.rpartition("-")
            cross += int(row[group_of[t][int(number)]])
    return cross


def _uniform(lay: Layout) -> bool:
    return len(set(lay.member_topics)) <= 1


def solve_balanced(instance: ConsumersInstance, time_limit: float | None = None, threads: int | None = None,
                   lay: Layout | None = None, meanwhile: Callable[[], None] | None = None):
    """``(assignment or None, status, info)``: stage 1, then stage 2 (LP, ILP if ever fractional);
    ``meanwhile()`` runs here while stage 2 solves in a child (before stage 2 where it runs here; not at
    all when stage 1 fails, and no answer follows)."""
    t0 = time.perf_counter()
    lay = lay or layout(instance)
    face = balance_face(instance, lay, time_limit, threads)
    if face is None:
        return None, "stage1_failed", {"build_seconds": round(time.perf_counter() - t0, 6)}
    problem = balanced_problem(instance, lay, face)
    t1 = time.perf_counter()
    result, ilp = _stage2(problem.lp, _left(t0, time_limit), threads, meanwhile)
    info = dict(face.info, columns=problem.lp.num_col, rows=problem.lp.num_row, ilp_fallback=ilp,
                stage2_seconds=round(time.perf_counter() - t1, 6), stage2_status=result.status)
    if result.x is None or not is_integral(result.x):
        return None, result.status, info
    flows = integral_flows(result.x)
    info["model_objective"] = int(round(float(problem.lp.cost @ flows))) + problem.owned_total
    return read_back(problem, flows), result.status, info


STAGE2_INTERIOR_COLUMNS = 30_000
"""Above this many columns stage 2 runs interior point, then crossover to a vertex (integral: the matrix is
a network one, and :func:`~kipopt.formulations.highs.solve_tu_lp` checks it). Measured against the dual
simplex: 0.48 s against 1.72 at 44,806 columns (a 100,000 x 1,000 x 50 group), 2.07 against 3.56 at
89,138 (100,000 x 5,000), 6.8 against 18.0 at 207,637 (1,000,000 x 10,000); even at 19,662."""


def _stage2(lp: ArrayLP, time_limit: float | None, threads: int | None,
            meanwhile: Callable[[], None] | None = None) -> tuple[HighsResult, bool]:
    """Stage 2's LP: interior point above :data:`STAGE2_INTERIOR_COLUMNS`, in a child the time limit kills
    (a crossover can overrun HiGHS' own limit by seconds), ``meanwhile()`` run here while it works (before
    the solve where it runs here)."""
    if meanwhile is not None and (lp.num_col <= STAGE2_INTERIOR_COLUMNS or time_limit is None):
        meanwhile()
    if lp.num_col <= STAGE2_INTERIOR_COLUMNS:
        return solve_tu_lp(lp, time_limit=time_limit, threads=threads)
    run = lambda: solve_tu_lp(lp, time_limit=time_limit, threads=threads, options=INTERIOR_POINT)  # noqa: E731
    if time_limit is None:
        return run()
    done, _ = call_highs_before_with(Deadline.after(time_limit), run, meanwhile or (lambda: None))
    return (stopped_at_limit(), False) if done is None else done

