"""The rule ``balanced`` exactly, over member classes: a compact MILP whose size follows the classes.

Notation as in :mod:`kipopt.formulations.consumers.rules`. The rule's balance
constraint holds iff there are integers ``λ_t`` (one per topic) with

    x_m >= λ_t   for every subscriber m of t,
    x_o <= λ_t + 1   for every member o that holds a partition of t

(take ``λ_t`` the least load of t's subscribers). Two members with the same
subscription ``S`` hold counts within one of each other: a member holding
anything holds some ``t ∈ S``, so ``x_o <= λ_t + 1 <= x_m + 1``. Hence each
subscription class c has a *base* ``Λ_c`` (its least count) and every member
holds ``Λ_c`` ("low") or ``Λ_c + 1`` ("high"). With ``Λ_c >= λ_t`` for
``t ∈ S_c``, a low member may hold t iff ``Λ_c <= λ_t + 1`` and a high one iff
``Λ_c = λ_t``.

Member groups h: the members of one (rack, class) that own nothing (``n_h``
of them, interchangeable), and each member that owns something alone
(``n_h = 1``). For h of class c, with ``A_h`` the partitions it receives of
topics with ``Λ_c = λ_t`` and ``B_h`` those of topics with ``Λ_c = λ_t + 1``
(which only low members may hold), ``η_h = A_h + B_h - n_h Λ_c`` members are
high, and a split among the members exists iff

    n_h Λ_c <= A_h + B_h <= n_h (Λ_c + 1)   and   B_h <= Λ_c (n_h - η_h),

the last being linear for a fixed ``Λ_c``: ``(Λ_c + 1) B_h + Λ_c A_h <= Λ_c (Λ_c + 1) n_h``
(high members take ``Λ_c + 1`` of A each; low members the whole B and the
rest of A). ``Λ_c`` is chosen by binaries over ``[L_c, U_c]``
(:func:`~kipopt.formulations.consumers.groups.level_bounds`, which hold for
every pairwise balanced assignment), so that row is written per level with a
big M. Topic links, with binaries ``α_{t,c}`` (A allowed) and ``γ_{t,c}``
(B allowed)::

    Λ_c >= λ_t,   Λ_c - λ_t <= M (1 - α_{t,c}),   Λ_c - λ_t <= 1 + M (1 - γ_{t,c})
    Σ_{g ∈ t, h ∈ c} a_{g,h} <= P_t α_{t,c},   Σ b_{g,h} <= P_t γ_{t,c}

Flows ``a_{g,h}, b_{g,h}`` from partition groups g (topic, replica racks)
cover each g exactly; an owner m keeps ``k_{g,m} <= min(owned_{g,m}, a + b)``
of its own partitions of g. Objective ``W Σ cross(g, h)(a + b) - Σ k + O``,
the rule's scalar exactly: for every valid assignment the model has a point
of equal value (counts, ``λ`` and the flows read off it), and every integer
point reads back (:func:`read_back`) into a valid assignment at most that
value (partitions it deals from a pool may be the owner's own, which only
helps). So the MILP optimum is the rule's optimum and its dual bound a valid
bound for the rule.

Size: topics × levels and classes × levels binaries, per member group and
level two aggregate flows per topic, and one flow per (partition group,
member group): it grows with classes, racks, rack sets, owners and the level
ranges ``U_c - L_c``, never with partitions or ownerless members. Measured:
its LP relaxation is weak (the level binaries mix far-apart levels), and
HiGHS proves the (member, partition group) MILP of
:mod:`~kipopt.formulations.consumers.member_milp` much faster (60 × 12,
mixed: seconds against over 20 s); ``exact.balanced`` uses that one and this
model is an exact cross-check (tests).

Complexity of the rule. The decision version ("a valid assignment of value
at most k?") is NP-complete in the strong sense, and each criterion alone is
already hard (:mod:`kipopt.theory.balanced_reduction`, proof in
``paper/notes/balanced_complexity.tex``): satisfiability with every literal
occurring at most twice (NP-complete, Tovey 1984) reduces to "zero
cross-rack partitions?" with two racks and nothing owned, and to "zero
revocations?" with no racks, on instances whose topics have one partition,
whose topics have at most four subscribers and whose members subscribe to at
most four topics. The gadget is the low/high choice above: a member holding
0 caps a witness at 1, the witness caps a clause topic's holders at 2, so a
literal node (holding its own partition) takes a clause's partition only
while it holds none of its variable's 4-cycle of topics; those nodes are
then independent on the cycle, all positive or all negative. In NP: an assignment is as long
as the instance and :func:`~kipopt.formulations.consumers.rules.balanced_violations`
and the objective check it in linear time. As the reduced optimum is 0
exactly on yes-instances, no polynomial algorithm approximates either
criterion (or the scalar objective) within any factor unless P = NP.
Polynomial cases: one subscription class (every member holds ``floor(P/M)``
or ``ceil(P/M)``: a transportation problem with an interval row per member
group, totally unimodular; the dec-min stage solves it), and no racks with
nothing owned (every valid assignment costs 0, and moving a partition from a
holder to a subscriber holding two fewer lowers ``Σ x_m²``, so such moves
reach one in ``O(P²)`` steps). Both MILPs are exact in general; only their
running time depends on the instance's hardness.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, class_counts, level_bounds
from kipopt.formulations.consumers.rules import owners
from kipopt.formulations.highs import ArrayLP, SparseBuilder, solve_lp


@dataclass(frozen=True)
class MemberGroup:
    """Members of one (rack, class) that own nothing, or one owner alone."""

    rack: int
    cls: int
    members: tuple[int, ...]
    owner: bool


@dataclass(frozen=True)
class LevelModel:
    layout: Layout
    groups: tuple[MemberGroup, ...]
    owned: dict[tuple[int, int], list[int]]   # (partition group, member) -> owned partition numbers
    owned_total: int
    base: dict[int, tuple[np.ndarray, np.ndarray]]  # class -> (levels, their binary columns)
    lam: dict[str, tuple[np.ndarray, np.ndarray]]   # topic -> (levels, their binary columns)
    flows: np.ndarray     # rows (g, h, column)
    keeps: np.ndarray     # rows (g, h, column)
    lp: ArrayLP


def member_groups(lay: Layout, owned: dict[tuple[int, int], list[int]], member_class: np.ndarray
                  ) -> tuple[MemberGroup, ...]:
    is_owner = np.zeros(len(lay.members), dtype=bool)
    is_owner[[m for _, m in owned]] = True
    plain: dict[tuple[int, int], list[int]] = defaultdict(list)
    alone = []
    for i in range(len(lay.members)):
        key = (int(lay.member_rack[i]), int(member_class[i]))
        if is_owner[i]:
            alone.append(MemberGroup(key[0], key[1], (i,), True))
        else:
            plain[key].append(i)
    return tuple(MemberGroup(r, c, tuple(ms), False) for (r, c), ms in plain.items()) + tuple(alone)


def owned_by_group(instance: ConsumersInstance, lay: Layout) -> dict[tuple[int, int], list[int]]:
    """(partition group, member index) -> the partition numbers that member owns there, ascending
    (:func:`~kipopt.formulations.consumers.rules.owners`)."""
    owned: dict[tuple[int, int], list[int]] = defaultdict(list)
    for p, m in owners(instance).items():
        t, _, number = p.rpartition("-")
        owned[(int(lay.group_of_partition[t][int(number)]), lay.member_index[m])].append(int(number))
    for v in owned.values():
        v.sort()
    return dict(owned)


def level_model(instance: ConsumersInstance, lay: Layout) -> LevelModel:
    """Build the MILP of the module docstring."""
    classes, member_class, count, sizes = class_counts(instance, lay)
    L, U = level_bounds(lay, sizes, classes, count)
    owned = owned_by_group(instance, lay)
    weight = len(owners(instance)) + 1
    groups = member_groups(lay, owned, member_class)
    b = SparseBuilder()

    def cols(n, lower=0.0, upper=np.inf, integer=True, price=0.0):
        return b.add_cols(n, lower, upper, integer, price)

    lam_hi = {t: min(int(U[c]) for c, ts in enumerate(classes) if t in ts) for t in lay.topics}
    lam_lo = {t: min(min(int(L[c]) for c, ts in enumerate(classes) if t in ts), lam_hi[t]) for t in lay.topics}
    lam = {t: _levels(b, cols, lam_lo[t], lam_hi[t]) for t in lay.topics}
    base = {c: _levels(b, cols, int(L[c]), int(U[c])) for c, topics in enumerate(classes) if topics}
    for c, topics in enumerate(classes):
        for t in topics:
            _not_below(b, base[c], lam[t])
    switch = {(t, c): _switches(b, cols, base[c], lam[t]) for c, topics in enumerate(classes) for t in topics}
    flows, keeps = [], []
    per_partition_group: dict[int, list[int]] = defaultdict(list)
    for h, grp in enumerate(groups):
        topics = sorted(classes[grp.cls], key=lay.topics.index)
        if not topics:
            continue
        per_topic: dict[str, list[int]] = {}
        for t in topics:
            per_topic[t] = []
            for g in lay.groups_of_topic[t]:
                y = int(cols(1, 0.0, lay.groups[g].size, price=weight * float(lay.cross[g, grp.rack]))[0])
                flows.append((g, h, y))
                per_topic[t].append(y)
                per_partition_group[g].append(y)
                if grp.owner and (g, grp.members[0]) in owned:
                    k = int(cols(1, 0.0, len(owned[(g, grp.members[0])]), price=-1.0)[0])
                    keeps.append((g, h, k))
                    b.add_row([k, y], [1.0, -1.0], -np.inf, 0.0)
        _split(b, cols, base[grp.cls], {t: (per_topic[t], switch[(t, grp.cls)], sizes[t]) for t in topics},
               len(grp.members))
    for g, members in per_partition_group.items():
        b.add_row(members, 1.0, lay.groups[g].size, lay.groups[g].size)
    lp = b.build()
    return LevelModel(lay, groups, owned, len(owners(instance)), base, lam,
                      np.array(flows, dtype=np.int64).reshape(-1, 3), np.array(keeps, dtype=np.int64).reshape(-1, 3), lp)


def _levels(b: SparseBuilder, cols, low: int, high: int) -> tuple[np.ndarray, np.ndarray]:
    """An integer in ``[low, high]`` as one binary per value (``Σ = 1``): ``(values, columns)``."""
    values = np.arange(low, high + 1)
    pick = cols(len(values), 0.0, 1.0)
    b.add_row(pick, 1.0, 1.0, 1.0)
    return values, pick


def _at_least(level: tuple[np.ndarray, np.ndarray], k: int) -> np.ndarray:
    """The columns whose sum is ``[value >= k]``."""
    values, pick = level
    return pick[values >= k]


def _not_below(b: SparseBuilder, base, lam) -> None:
    """``Λ_c >= λ_t``, threshold by threshold: ``[λ_t >= k] <= [Λ_c >= k]``."""
    for k in range(int(lam[0][0]) + 1, int(lam[0][-1]) + 1):
        plus, minus = _at_least(lam, k), _at_least(base, k)
        b.add_row(np.r_[plus, minus].astype(np.int64), np.r_[np.ones(len(plus)), -np.ones(len(minus))],
                  -np.inf, 0.0)


def _switches(b: SparseBuilder, cols, base, lam) -> dict[int, tuple[int | None, int | None]]:
    """Per base level k of class c: ``μ_k <= [Λ_c = k] ∧ [λ_t = k]`` (t open to every member at k)
    and ``ν_k <= [Λ_c = k] ∧ [λ_t = k - 1]`` (t open to the low members only)."""
    lam_col = dict(zip((int(v) for v in lam[0]), (int(c) for c in lam[1])))
    found = {}
    for k, pick in zip(base[0], base[1]):
        k = int(k)
        pair = []
        for j in (k, k - 1):
            if j not in lam_col:
                pair.append(None)
                continue
            s = int(cols(1, 0.0, 1.0, integer=False)[0])
            b.add_row([s, int(pick)], [1.0, -1.0], -np.inf, 0.0)
            b.add_row([s, lam_col[j]], [1.0, -1.0], -np.inf, 0.0)
            pair.append(s)
        found[k] = (pair[0], pair[1])
    return found


def _split(b: SparseBuilder, cols, base, topics: dict, n: int) -> None:
    """A member group's flows by base level k and topic: ``A_{t,k}`` (any member) and ``B_{t,k}``
    (low members only), capped by the switches, and per level ``n k π_k <= Σ_t (A + B) <= n (k + 1) π_k``
    and ``(k + 1) Σ B + k Σ A <= k (k + 1) n π_k`` (the convex hull of each level's case)."""
    values, pick = base
    parts: dict[int, tuple[list[int], list[int]]] = {int(k): ([], []) for k in values}
    for t, (ys, switch, size) in topics.items():
        mine = []
        for k in values:
            k = int(k)
            for kind, (s, cap) in enumerate(((switch[k][0], min(size, n * (k + 1))), (switch[k][1], min(size, n * k)))):
                if s is None or cap <= 0:
                    continue
                v = int(cols(1, 0.0, np.inf, integer=False)[0])
                b.add_row([v, s], [1.0, -float(cap)], -np.inf, 0.0)
                parts[k][kind].append(v)
                mine.append(v)
        b.add_row(np.r_[mine, ys].astype(np.int64), np.r_[np.ones(len(mine)), -np.ones(len(ys))], 0.0, 0.0)
    for k, p in zip(values, pick):
        k = int(k)
        a_k, b_k = parts[k]
        both = np.r_[a_k, b_k, int(p)].astype(np.int64)
        ones = np.ones(len(a_k) + len(b_k))
        b.add_row(both, np.r_[ones, -n * k], 0.0, np.inf)
        b.add_row(both, np.r_[ones, -n * (k + 1.0)], -np.inf, 0.0)
        b.add_row(both, np.r_[np.full(len(a_k), float(k)), np.full(len(b_k), k + 1.0), -k * (k + 1.0) * n], -np.inf, 0.0)


def read_back(model: LevelModel, x: np.ndarray) -> dict[str, tuple[str, ...]]:
    """Partitions per member from an integer point of the model (see the module docstring)."""
    lay = model.layout
    v = np.rint(x).astype(np.int64)
    lists: list[list[str]] = [[] for _ in lay.members]
    kept: dict[tuple[int, int], int] = {(int(g), int(h)): int(v[k]) for g, h, k in model.keeps}
    taken: list[set[int]] = [set() for _ in lay.groups]
    for (g, h), n in kept.items():
        m = model.groups[h].members[0]
        mine = model.owned[(g, m)][:n]
        lists[m].extend(f"{lay.groups[g].topic}-{p}" for p in mine)
        taken[g].update(mine)
    pools = [[p for p in grp.partitions if p not in taken[g]] for g, grp in enumerate(lay.groups)]
    cursor = [0] * len(lay.groups)
    level = {t: int(vs[int(np.argmax(v[cs]))]) for t, (vs, cs) in model.lam.items()}
    got: dict[int, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for g, h, col in model.flows:
        g, h = int(g), int(h)
        grp, topic = model.groups[h], lay.groups[g].topic
        amount = int(v[col]) - kept.get((g, h), 0)
        at = cursor[g]
        cursor[g] = at + amount
        if grp.owner:  # one member: its kept partitions are already dealt
            lists[grp.members[0]].extend(f"{topic}-{p}" for p in pools[g][at:at + amount])
            continue
        low = _chosen(model.base[grp.cls], v)
        got[h][int(level[topic] != low)].extend(f"{topic}-{p}" for p in pools[g][at:at + amount])
    if any(c != len(p) for c, p in zip(cursor, pools)):
        raise ValueError("the flows do not cover every partition")
    for h, (a_list, b_list) in got.items():
        grp = model.groups[h]
        low = _chosen(model.base[grp.cls], v)
        high = len(a_list) + len(b_list) - low * len(grp.members)
        if not 0 <= high <= len(grp.members) or len(b_list) > low * (len(grp.members) - high):
            raise ValueError(f"member group {h}: {len(a_list)} + {len(b_list)} partitions do not split at level {low}")
        order = a_list[:(low + 1) * high] + b_list + a_list[(low + 1) * high:]
        at = 0
        for i, m in enumerate(grp.members):
            share = low + 1 if i < high else low
            lists[m].extend(order[at:at + share])
            at += share
    return {m: tuple(lists[i]) for i, m in enumerate(lay.members)}


def _chosen(level: tuple[np.ndarray, np.ndarray], v: np.ndarray) -> int:
    values, pick = level
    return int(values[int(np.argmax(v[pick]))])


def solve_levels(instance: ConsumersInstance, lay: Layout, time_limit: float | None = None,
                 threads: int | None = None):
    """``(assignment or None, status, bound in rule units, info)`` of the level MILP."""
    return timed_solve(lambda: level_model(instance, lay), read_back, time_limit, threads, "level")


def timed_solve(build_model, read, time_limit: float | None, threads: int | None, prefix: str,
                below: float | None = None):
    """Build a consumer MILP (``.lp``, ``.owned_total``, optionally ``.start``), solve it in what the
    build left of ``time_limit`` and read it back with ``read(model, x)``: ``(assignment or None,
    status, bound in rule units, info)``, ``info`` keys starting with ``prefix``.

    ``below``: the rule value of an answer already in hand; HiGHS then prunes every node that cannot
    beat it (objectives are integers); when nothing beats it the status is ``optimal`` with no
    answer and the bound ``below``, and any bound returned is at most ``below``."""
    t0 = time.perf_counter()
    model = build_model()
    build = time.perf_counter() - t0
    left = None if time_limit is None else max(0.01, time_limit - build)
    start = getattr(model, "start", None)  # a known feasible point, HiGHS' first incumbent
    cutoff = None if below is None else below - model.owned_total - 0.5
    result = solve_lp(model.lp, time_limit=left, threads=threads, start=start, cutoff=cutoff)
    info = {f"{prefix}_columns": model.lp.num_col, f"{prefix}_rows": model.lp.num_row,
            f"{prefix}_status": result.status, f"{prefix}_build_seconds": round(build, 6),
            f"{prefix}_seconds": round(time.perf_counter() - t0, 6)}
    bound = None if result.bound is None else float(result.bound) + model.owned_total
    if below is not None:
        if result.objective is not None and result.objective + model.owned_total > below - 0.5:
            # HiGHS may still report a point at or above the cutoff (an integral root, say; its objective
            # a hair below an integer): not wanted, the objectives being integers
            result = replace(result, x=None, objective=None,
                             status="infeasible" if result.status == "optimal" else result.status)
        if result.status == "infeasible":
            return None, "optimal", float(below), dict(info, **{f"{prefix}_status": "nothing below the cutoff"})
        bound = None if bound is None else min(bound, float(below))
    if result.x is None:
        return None, result.status, bound, info
    return read(model, result.x), result.status, bound, info
