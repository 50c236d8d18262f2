"""``exact.balanced``: the most balanced assignments at minimum cross-rack, then revocations.

Notation as in :mod:`kipopt.formulations.consumers.rules`; ``c(m)`` is member
m's subscription class (its set of topics with partitions), ``n_c`` the size
of class c, ``W = O + 1`` with ``O`` the number of owned partitions.

Stage 1, most balanced counts. The dec-min ("lexicographically most
balanced") count vectors are the minimisers of ``Σ_m x_m²`` over all valid
assignments (Frank & Murota, decreasing minimisation on M-convex sets). By
class (members of one class are interchangeable, and ``n_c`` members
holding ``X`` in total cost at least ``f_c(X)``, the cost of the even split,
convex piecewise linear with slope ``2q + 1`` on ``[q n_c, (q+1) n_c]``)::

    min  Σ_{c, q} (2q + 1) s_{c,q}
    s.t. Σ_{c ∋ t} f_{t,c} = P_t                           every topic t
         Σ_t f_{t,c} - Σ_q s_{c,q} = n_c L_c                every class c
         0 <= s_{c,q} <= n_c  (L_c <= q < U_c),  f >= 0

``L_c = max_t ceil(P_t/|N_t|) - 1`` and ``U_c = 1 + max_t floor(A_t/|N_t|)``
(``A_t``: partitions of every topic a subscriber of t subscribes to) bound
every dec-min member value of the class: some member holds
``ceil(P_t/|N_t|)`` of t, and no subscriber of t may hold two less
(a transfer would lower ``Σ x²``); a member holding a partition of t holds
at most one more than t's least-loaded subscriber, who holds at most the
average. The matrix is a network matrix (negate the topic rows), so the
simplex vertex and its duals are integral. *Every* optimal solution
satisfies complementary slackness with *any* optimal dual, so with reduced
costs ``d``: class c may take topic t only where ``d(f_{t,c}) = 0``, a
segment with ``d < 0`` is full and one with ``d > 0`` empty, and (slopes
differ by 2) at most one segment is free. Hence the dec-min assignments are
exactly the valid assignments with arcs ``(t, c)`` restricted as above and
every member of class c holding between ``l_c`` and ``u_c <= l_c + 1``
(``l_c`` = ``L_c`` + full segments; ``u_c`` adds the free one).

Stage 2, cross-rack then revocations on that face. Partitions grouped by
(topic, replica-rack set) ``g`` (``s_g`` of them), members by (rack, class)
``h`` (``n'_h`` of them own nothing), plus one node per member that owns
something (``k_{g,m}`` owned partitions of g it may keep)::

    min  Σ W cross(g,h) y_{g,h} + Σ (W cross(g,m) - 1) z_{g,m}   (+ O: revoked = O - Σ z)
    s.t. Σ_h y_{g,h} + Σ_m z_{g,m} = s_g                          every g
         n'_h l_c <= Σ_g y_{g,h} - Σ_{m ∈ h} w_{h,m} <= n'_h u_c   every h
         l_c <= Σ_g z_{g,m} + w_{h(m),m} <= u_c                   every owner m
         0 <= z_{g,m} <= k_{g,m},  y, w >= 0,  y_{g,h} = z_{g,m} = 0 off the face

Again a network matrix (negate the g rows): totally unimodular, so the
simplex vertex is integral (checked; ILP fallback). Its size depends on
topics, rack sets, racks, classes and ownership, never on the number of
partitions; members appear only through what they own. Read-back: a member
keeps its first ``z`` owned partitions of each g; the rest pool with g's
unowned partitions; member groups take ``y`` of each pool in order and deal
them to owners (``w`` each) and then to the others in Java order, ``l_c``
each and one more to the first ones while the flow lasts.

Exactness for the rule ``balanced``. Every dec-min assignment is pairwise
balanced, so the answer always meets the rule. For uniform subscriptions
the two sets coincide (``floor``/``ceil`` of ``P/M``) and the answer is
optimal. Otherwise the rule also admits pairwise balanced but less balanced
assignments, over which no transportation model exists (the rule is a
disjunction: per topic, its holders exceed its least-loaded subscriber by at
most one). The level tree of :mod:`~kipopt.formulations.consumers.level_tree`
settles the rule exactly: a branch and bound over boxes of topic levels
(closed-form bounds valid for every vector of a box, with the count
coupling ``P - Σ μ``, and on groups of moderate size a transportation LP per
box, :mod:`~kipopt.formulations.consumers.level_flow`, after a descent over
level vectors from the dec-min answer's least loads,
:mod:`~kipopt.formulations.consumers.level_local`), then per level vector the LP relaxation of one small
MILP (a network matrix, one row per member node with topics one level down
and each owner's two-mode keep hull, which makes the relaxation tight;
warm-started from vector to vector and stopped at the best answer's cutoff;
its high counts rounded give answers early), then that MILP; a box narrowed to
one or two levels per topic over many topics is settled whole by one MILP with
member counts explicit (:mod:`~kipopt.formulations.consumers.level_box`); best
first, stopping when the next bound reaches the best answer; its bound stays
valid when the time limit cuts it. (The flat enumeration of
:mod:`~kipopt.formulations.consumers.level_search`, which it replaces,
stays as a cross-check.) If it ends unproven, up to :data:`MILP_MAX_COLUMNS`
(member, partition group) pairs the rule's own MILP over those pairs
(:mod:`~kipopt.formulations.consumers.member_milp`; it never grows with the
partitions) runs in the time left: its answer replaces the dec-min one when
cheaper and its dual bound, with the balance-free relaxation's (each
partition to its cheapest subscriber), is the reported bound. Both only
seek answers below the best one in hand (a HiGHS cutoff: a level vector or
MILP with nothing below it is settled without branching on, and "nothing
below" is itself the proof). ``optimal`` means the answer meets that bound. The class-level model of
:mod:`~kipopt.formulations.consumers.levels` and the level-indexed one of
:mod:`~kipopt.formulations.consumers.level_index` are exact too, but
measured slower (their relaxations are no stronger); they are kept as
cross-checks. The rule is strongly
NP-hard in each criterion (stated there; :mod:`kipopt.theory.balanced_reduction`).

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers",
...     "topics": {"t": {"racks": [["a"], ["b"], ["a"], ["b"]]}},
...     "members": [{"id": "c1", "rack": "a", "topics": ["t"], "owned": ["t-1", "t-2"], "generation": 1},
...                 {"id": "c2", "rack": "b", "topics": ["t"], "owned": [], "generation": 1}]})
>>> r = run_balanced(x, SolveOptions())
>>> r.status.value, r.objective, r.assignment
('optimal', 1.0, {'c1': ('t-2', 't-0'), 'c2': ('t-1', 't-3')})
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status

from kipopt.formulations.consumers.groups import (Dealer, Layout, cheapest, class_counts, integral_flows, layout,
                                                  least_cross, level_bounds, quotas)
from kipopt.formulations.consumers.greedy import greedy_balanced  # noqa: F401  (re-exported: the fallback)
from kipopt.formulations.consumers.level_tree import search_tree
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations, owners, revoked, _owned_by
from kipopt.formulations.highs import ArrayLP, Deadline, build_csc, call_highs_before, is_integral, solve_lp, solve_tu_lp


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
    """Stage 1: solve the class-level convex flow and read the dec-min face off its reduced costs."""
    t0 = time.perf_counter()
    classes, member_class, count, sizes = class_counts(instance, lay)
    L, U = level_bounds(lay, sizes, classes, count)
    topic_row = {t: i for i, t in enumerate(lay.topics)}
    T = len(lay.topics)
    arcs = [(t, c) for c, topics in enumerate(classes) for t in sorted(topics, key=topic_row.get)]
    seg_class = np.repeat(np.arange(len(classes)), U - L)
    seg_level = np.concatenate([np.arange(lo, hi) for lo, hi in zip(L, U)]) if len(classes) else np.zeros(0, int)
    k_f, k_s = len(arcs), len(seg_class)
    f_topic = np.array([topic_row[t] for t, _ in arcs], dtype=np.int64)
    f_class = np.array([c for _, c in arcs], dtype=np.int64)
    cols = np.concatenate([np.repeat(np.arange(k_f), 2), k_f + np.arange(k_s)])
    rows = np.concatenate([np.stack([f_topic, T + f_class], axis=1).ravel(), T + seg_class])
    vals = np.concatenate([np.ones(2 * k_f), -np.ones(k_s)])
    start, index, value = build_csc(k_f + k_s, cols, rows, vals)
    demand = (count * L).astype(np.float64)
    supply = np.array([sizes[t] for t in lay.topics], dtype=np.float64)
    lp = ArrayLP(cost=np.concatenate([np.zeros(k_f), 2.0 * seg_level + 1.0]),
                 lower=np.zeros(k_f + k_s),
                 # f unbounded above: a bound there could hold with a negative reduced cost, and the
                 # face would then also need "arc at its bound", which the read-off below does not model
                 upper=np.concatenate([np.full(k_f, np.inf), count[seg_class].astype(float)]),
                 row_lower=np.concatenate([supply, demand]), row_upper=np.concatenate([supply, demand]),
                 start=start, index=index, value=value)
    result = solve_lp(lp, time_limit=time_limit, threads=threads)
    info = {"stage1_columns": lp.num_col, "stage1_rows": lp.num_row, "stage1_status": result.status,
            "stage1_seconds": round(time.perf_counter() - t0, 6), "classes": len(classes)}
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
    col_kind: np.ndarray                      # 0 = y (g -> h), 1 = z (keep), 2 = w (h -> owner)
    col_a: np.ndarray                         # g for y/z, h for w
    col_b: np.ndarray                         # h for y, member for z/w
    lp: ArrayLP


def balanced_problem(instance: ConsumersInstance, lay: Layout, face: BalanceFace) -> BalancedProblem:
    """Stage 2 on the dec-min face (see the module docstring)."""
    owner_of = owners(instance)
    weight = len(owner_of) + 1
    owned: dict[tuple[int, int], list[int]] = defaultdict(list)
    member_index, group_of = lay.member_index, lay.group_of_partition
    for p, m in owner_of.items():
        t, _, number = p.rpartition("-")
        owned[(int(group_of[t][int(number)]), member_index[m])].append(int(number))
    for v in owned.values():
        v.sort()
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
    kinds, a, b, cost = [], [], [], []
    for g, t in enumerate(topic_of_group):
        for h, (r, c) in enumerate(groups):
            if (t, c) in face.allowed:
                kinds.append(0); a.append(g); b.append(h); cost.append(weight * lay.cross[g, r])
    for (g, m), numbers in owned.items():
        c = int(face.member_class[m])
        if (topic_of_group[g], c) in face.allowed:
            kinds.append(1); a.append(g); b.append(m)
            cost.append(weight * lay.cross[g, lay.member_rack[m]] - 1)
    for m in owner_set:
        kinds.append(2); a.append(owner_group[m]); b.append(m); cost.append(0)
    kind, col_a, col_b = (np.array(v, dtype=np.int64) for v in (kinds, a, b))
    G, H = len(lay.groups), len(groups)
    owner_row = {m: G + H + i for i, m in enumerate(owner_set)}
    k = len(kind)
    rows_first = np.where(kind == 2, G + col_a, col_a)  # g row for y/z, h row for w
    second = np.where(kind == 0, G + col_b, 0)
    if k:
        second[kind != 0] = [owner_row[int(m)] for m in col_b[kind != 0]]
    vals_first = np.where(kind == 2, -1.0, 1.0)
    start, index, value = build_csc(k, np.repeat(np.arange(k), 2), np.stack([rows_first, second], axis=1).ravel(),
                                    np.stack([vals_first, np.ones(k)], axis=1).ravel())
    sizes = np.array([g.size for g in lay.groups], dtype=np.float64)
    h_class = np.array([c for _, c in groups], dtype=np.int64)
    n_plain = np.array([len(plain[h]) for h in range(H)], dtype=np.float64)
    o_class = face.member_class[owner_set] if owner_set else np.zeros(0, dtype=np.int64)
    upper = np.zeros(k)
    if k:
        y = kind == 0
        upper[y] = sizes[col_a[y]]
        keep = kind == 1
        upper[keep] = [len(owned[(int(g), int(m))]) for g, m in zip(col_a[keep], col_b[keep])]
        w = kind == 2
        upper[w] = face.high[face.member_class[col_b[w]]]
    lp = ArrayLP(cost=np.array(cost, dtype=np.float64), lower=np.zeros(k), upper=upper.astype(np.float64),
                 row_lower=np.concatenate([sizes, n_plain * face.low[h_class], face.low[o_class]]).astype(float),
                 row_upper=np.concatenate([sizes, n_plain * face.high[h_class], face.high[o_class]]).astype(float),
                 start=start, index=index, value=value)
    return BalancedProblem(lay, face, weight, len(owner_of), groups, tuple(tuple(plain[h]) for h in range(H)),
                           tuple(owner_set), dict(owned), kind, col_a, col_b, lp)


def read_back(problem: BalancedProblem, flows: np.ndarray) -> dict[str, tuple[str, ...]]:
    lay, face = problem.layout, problem.face
    lists: list[list[str]] = [[] for _ in lay.members]
    kept: dict[tuple[int, int], int] = {}
    for g, m, f in zip(problem.col_a[problem.col_kind == 1], problem.col_b[problem.col_kind == 1],
                       flows[problem.col_kind == 1]):
        kept[(int(g), int(m))] = int(f)
    pools: list[list[int]] = [[] for _ in lay.groups]
    taken: list[set[int]] = [set() for _ in lay.groups]
    for (g, m), numbers in problem.owned.items():
        keep = numbers[:kept.get((g, m), 0)]
        lists[m].extend(f"{lay.groups[g].topic}-{p}" for p in keep)
        taken[g].update(keep)
    for g, group in enumerate(lay.groups):
        pools[g] = [p for p in group.partitions if p not in taken[g]]
    dealer = Dealer(pools, [g.topic for g in lay.groups])
    incoming: dict[int, list[str]] = defaultdict(list)
    for g, h, f in zip(problem.col_a[problem.col_kind == 0], problem.col_b[problem.col_kind == 0],
                       flows[problem.col_kind == 0]):
        if f:
            incoming[int(h)].extend(dealer.take(int(g), int(f)))
    to_owner: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for h, m, f in zip(problem.col_a[problem.col_kind == 2], problem.col_b[problem.col_kind == 2],
                       flows[problem.col_kind == 2]):
        to_owner[int(h)].append((int(m), int(f)))
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
    their group's least cost; counted per owner and topic with numpy (one string split per partition,
    on the owner lists :func:`rules.revoked` caches and reuses)."""
    weight = len(owners(instance)) + 1
    best = cheapest(lay)
    total = weight * least_cross(lay, best)
    for m, parts in _owned_by(instance).items():
        i = lay.member_index[m]
        mine, row = lay.member_topics[i], lay.cross[:, lay.member_rack[i]]
        by_topic: dict[str, list[int]] = defaultdict(list)
        for p in parts:
            t, _, number = p.rpartition("-")
            by_topic[t].append(int(number))
        for t, numbers in by_topic.items():
            if t not in mine:
                total += len(numbers)
                continue
            g = lay.group_of_partition[t][numbers]
            total += int(np.count_nonzero(row[g] > best[g]))
    return float(total)


def layout_objective(instance: ConsumersInstance, lay: Layout, assignment: dict[str, tuple[str, ...]]) -> float:
    """The rule's scalar of ``assignment`` counted through the layout's partition groups: cross-rack by
    :func:`layout_cross`, revocations by :func:`rules.revoked`."""
    return float(layout_cross(lay, assignment) * (len(owners(instance)) + 1) + revoked(instance, assignment))


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
                   lay: Layout | None = None):
    """``(assignment or None, status, info)``: stage 1, then stage 2 (LP, ILP if ever fractional)."""
    t0 = time.perf_counter()
    lay = lay or layout(instance)
    face = balance_face(instance, lay, time_limit, threads)
    if face is None:
        return None, "stage1_failed", {"build_seconds": round(time.perf_counter() - t0, 6)}
    problem = balanced_problem(instance, lay, face)
    left = None if time_limit is None else max(0.01, time_limit - (time.perf_counter() - t0))
    t1 = time.perf_counter()
    result, ilp = solve_tu_lp(problem.lp, time_limit=left, threads=threads)
    info = dict(face.info, columns=problem.lp.num_col, rows=problem.lp.num_row, ilp_fallback=ilp,
                stage2_seconds=round(time.perf_counter() - t1, 6), stage2_status=result.status)
    if result.x is None or not is_integral(result.x):
        return None, result.status, info
    flows = integral_flows(result.x)
    info["model_objective"] = int(round(float(problem.lp.cost @ flows))) + problem.owned_total
    return read_back(problem, flows), result.status, info


MILP_MAX_COLUMNS = 400_000
"""Above this many (member, partition group) pairs the rule's MILP is not built (its build alone
would eat the time): the dec-min answer stands with the balance-free bound."""

MILP_BUILD_SECONDS_PER_PAIR = 1.5e-4
"""Measured cost of building the MILP, per (member, partition group) pair (9 CPU s for 75,000 pairs
at 100,000 x 5,000)."""

MILP_FIT_BUILDS = 4
"""Under a time limit the MILP runs only when this many times its build fits in its turn: at 100,000 x
5,000 a turn of 27 s (about 2.4 builds) ended killed at the deadline with nothing, time the level tree
then lacked."""

FALLBACK_SECONDS_PER_PARTITION = 1.5e-5
"""Under a time limit, the dec-min stages leave this much per partition for the greedy fallback, the
balance-free bound and pricing the answer (about 7 s at 500,000 partitions, profiled on the loaded
shared machine; a third of it unloaded)."""

STAGES_LEAST_SECONDS = 0.05
"""Under a time limit, the dec-min stages are not started with less than this left for them (their
level bounds and LPs would be cut anyway, and the time is the fallback's)."""

TREE_BUILD_SECONDS_PER_PARTITION = 3e-6
"""The level tree is not started unless this much per owned partition is left (building its owner
index reads every owned partition: about a second at 500,000, measured under load)."""

TREE_FIRST_TOPICS = 12
"""Up to this many topics, and with at least two partitions per member, the level tree runs before the
member MILP (it proves groups of many members and few topics); otherwise box bounds stay flat for long
(the hardness reductions: up to 24 topics of one partition over 16 members) and the member MILP, small
there, goes first."""

TREE_ONLY_MEMBERS = 50
"""From this many members, a group with more than :data:`TREE_FIRST_TOPICS` topics gets the level tree
alone: its narrow boxes end in one MILP each (:mod:`~kipopt.formulations.consumers.level_box`), while the
member MILP's big-M rows relax too far to move the bound. Measured on 10,000-partition groups of 100
members and 20 topics (production grid, 60 s limit): the tree alone proves 4 of 40 optimal, 2 before;
on one of the new ones, after the member MILP's half, it ended 1,010 against 986."""

MILP_PROBE_PAIRS = 200
"""Up to this many (member, partition group) pairs, when the level tree goes first, it gets only a short
probe (:data:`TREE_PROBE_SECONDS`) before the member MILP, and the rest after it: a few members with many
partitions each have level boxes of 10^12 to 10^21 vectors, which the tree does not close in a minute,
while their MILP of 37 to 134 pairs proves them in 0.3 to 3.7 s (measured on 1,000 partitions over ten
members, ten topics; the tree then took 8 to 26 s)."""

TREE_PROBE_SECONDS = 1.0
"""The level tree's first turn before a small member MILP (:data:`MILP_PROBE_PAIRS`): enough for the
groups it proves at once (most proved groups of the oracle benchmark take under 0.5 s)."""

MILP_MARGIN = 0.1
"""The member MILP's HiGHS stops this share of its turn (at least 0.2 s) before the turn's end, so that its
answer and bound come back from the child before the deadline kills it (HiGHS stops at its own limit only
between nodes: on 10,000 partitions over 100 members it was killed with both lost)."""

MILP_DEFAULT_SECONDS = 60.0
"""The whole method's time when the caller sets no limit (the level tree and the MILP share what the
dec-min stage leaves of it; the dec-min answer is already in hand)."""


def milp_pairs(lay: Layout) -> int:
    """Columns of the rule's MILP, roughly: (member, partition group) pairs."""
    per_topic = {t: len(gs) for t, gs in lay.groups_of_topic.items()}
    return sum(per_topic[t] for ts in lay.member_topics for t in ts)


@dataclass
class Best:
    """The best answer in hand, its value, the best bound, and what the stages said."""

    assignment: dict[str, tuple[str, ...]]
    objective: float
    bound: float
    info: dict

    @property
    def proven(self) -> bool:
        return self.objective <= self.bound

    def offer(self, instance: ConsumersInstance, answer, bound: float | None, by: str) -> None:
        if bound is not None:
            self.bound = max(self.bound, bound)
        if answer is not None and not balanced_violations(instance, answer):
            value = balanced_objective(instance, answer)
            if value < self.objective:
                self.assignment, self.objective = answer, value
                self.info["answer"] = f"{by} (less balanced than dec-min, cheaper)"


def _tree_stage(instance, lay, best: Best, deadline: float, threads, least, size: int) -> None:
    """The level tree (:mod:`~kipopt.formulations.consumers.level_tree`) until ``deadline``."""
    if deadline - time.perf_counter() <= STAGES_LEAST_SECONDS + TREE_BUILD_SECONDS_PER_PARTITION * len(owners(instance)):
        return
    # a leaf LP in flight may pass the deadline by its last crossover: stop the search a little early
    margin = 0.05 * (deadline - time.perf_counter())
    found = search_tree(instance, lay, best.objective, deadline - margin, threads, best=least, answer=best.assignment)
    if found is not None:
        best.info.update(found.info)
        best.offer(instance, found.assignment, found.bound, "the level tree")


def _milp_needs(size: int) -> float:
    """The turn the member MILP of ``size`` pairs needs before it is worth running (:data:`MILP_FIT_BUILDS`)."""
    return MILP_FIT_BUILDS * MILP_BUILD_SECONDS_PER_PAIR * size


def _milp_stage(instance, lay, best: Best, deadline: float, threads, least, size: int) -> None:
    """The rule's MILP over (member, partition group) flows until ``deadline``, when its build fits."""
    left = deadline - time.perf_counter()
    if left <= max(0.05, _milp_needs(size)):
        return
    # in a child the deadline kills: HiGHS' MIP overran its own limit by 9 s at 100,000 x 5,000 (measured)
    budget = max(0.01, left - max(0.2, MILP_MARGIN * left))
    done = call_highs_before(Deadline(deadline), lambda: solve_members(instance, lay, budget, threads, least,
                                                                      below=best.objective))
    if done is None:
        best.info["milp_status"] = "stopped at the deadline"
        return
    better, _, milp_bound, milp_info = done
    best.info.update(milp_info)
    best.offer(instance, better, milp_bound, "the rule's MILP")


def _stage_order(lay: Layout, total: int, size: int) -> list[tuple[Callable, Callable[[float], float]]]:
    """The exact stages in turn, each with its share of the time left: the level tree first up to
    :data:`TREE_FIRST_TOPICS` topics with two partitions per member (after a short probe only when the
    member MILP is small, :data:`MILP_PROBE_PAIRS`), the member MILP first otherwise; a first of two
    stages gets half the time left, the last stage all of it; from :data:`TREE_ONLY_MEMBERS` members and
    more than :data:`TREE_FIRST_TOPICS` topics the tree alone."""
    half, rest = (lambda left: left / 2), (lambda left: left)
    if size > MILP_MAX_COLUMNS:  # the MILP's build alone would eat the time
        return [(_tree_stage, rest)]
    if len(lay.topics) > TREE_FIRST_TOPICS and len(lay.members) >= TREE_ONLY_MEMBERS:
        return [(_tree_stage, rest)]
    if len(lay.topics) > TREE_FIRST_TOPICS or total < 2 * len(lay.members):
        return [(_milp_stage, half), (_tree_stage, rest)]
    if size <= MILP_PROBE_PAIRS:
        return [(_tree_stage, lambda left: min(TREE_PROBE_SECONDS, left / 4)), (_milp_stage, half), (_tree_stage, rest)]
    # the tree keeps the whole time when the MILP would not get its turn in the other half (_milp_stage's test)
    return [(_tree_stage, lambda left: left / 2 if left / 2 > _milp_needs(size) else left), (_milp_stage, rest)]


def run_balanced(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    """``exact.balanced``: the dec-min answer (two network LPs), then, unless that is already proven
    (uniform subscriptions, or the balance-free bound met), the level tree
    (:mod:`~kipopt.formulations.consumers.level_tree`: branch and bound over topic levels),
    then the rule's own MILP over (member, partition group) flows
    (:mod:`~kipopt.formulations.consumers.member_milp`); each settles optimality or raises the bound,
    and its answer replaces the dec-min one when cheaper. The dec-min and fallback answers are priced
    by :func:`layout_objective` (linear, no evaluator index: the façade re-evaluates every answer
    after the method and reports a mismatch as an error).
    """
    t0 = time.perf_counter()
    lay = layout(instance)
    total = sum(g.size for g in lay.groups)
    stages = None
    if options.time_limit is not None:  # keep time for the fallback, its bound and its price
        stages = max(0.01, options.time_limit - (time.perf_counter() - t0) - FALLBACK_SECONDS_PER_PARTITION * total)
    if stages is not None and stages <= STAGES_LEAST_SECONDS:  # no time for the LPs: the fallback answers
        assignment, status, info = None, "time_limit", {"stages": "skipped: the time limit leaves them nothing"}
    else:
        assignment, status, info = solve_balanced(instance, stages, options.threads, lay)
    bound = free_bound(instance, lay)
    if assignment is None:
        fallback = greedy_balanced(instance, lay)
        return MethodResult(fallback, Status.FEASIBLE, layout_objective(instance, lay, fallback), bound, info=info,
                            message=f"HiGHS ended with {status}: returning a least-loaded greedy assignment")
    objective = layout_objective(instance, lay, assignment)
    proven = status == "optimal" and (_uniform(lay) or objective <= bound)
    limit = MILP_DEFAULT_SECONDS if options.time_limit is None else options.time_limit
    deadline = options.deadline_at if options.deadline_at is not None else t0 + limit
    # the dec-min answer at the balance-free least cross-rack: every better answer gives each partition
    # to a subscriber at its group's least cost, so only those pairs enter the search and the MILP
    least = cheapest(lay) if not proven and layout_cross(lay, assignment) == least_cross(lay) else None
    best = Best(assignment, objective, objective if proven else bound, info)
    size = milp_pairs(lay)
    for stage, turn in _stage_order(lay, total, size):
        if best.proven:
            break
        left = deadline - time.perf_counter()
        stage(instance, lay, best, time.perf_counter() + turn(left), options.threads, least, size)
    assignment, objective, bound, info, proven = best.assignment, best.objective, best.bound, best.info, best.proven
    if not proven:
        info["note"] = ("the best of the most balanced assignments, the level tree's and the MILP's; the rule "
                        "also admits less balanced pairwise-balanced ones: bound from the level tree, the MILP "
                        "or the balance-free relaxation")
    return MethodResult(assignment, Status.OPTIMAL if proven else Status.FEASIBLE, objective,
                        objective if proven else bound, info=info)


METHODS = [
    Method("exact.balanced", "consumers", "balanced", run_balanced,
           "pairwise balance (the sticky assignor's), minimum cross-rack, then fewest revocations: the most "
           "balanced (dec-min) answer by two network LPs over (topic, rack set) x (rack, subscription) groups, "
           "then a branch and bound over topic-level boxes (one small MILP per level vector, pruned by bounds), "
           "then the rule's MILP over (member, partition group) flows, to prove or improve it"),
]
