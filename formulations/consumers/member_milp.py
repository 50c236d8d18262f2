"""The rule ``balanced`` exactly as a MILP over (member, partition group) flows.

The rule's own MILP (:func:`~kipopt.formulations.consumers.pulp_models.pairwise_model`)
with partitions aggregated by partition group (topic, replica racks): no
rule can tell two partitions of a group apart, and revocations only ask how
many of its own partitions of g a member keeps. Per member m (subscription
``S``, count ``x_m``), topic t, partition group g::

    min  W Σ cross(g, m) y_{g,m} - Σ k_{g,m}                     (+ O)
    s.t. Σ_m y_{g,m} = s_g,   x_m = Σ_g y_{g,m},   k_{g,m} <= min(owned_{g,m}, y_{g,m})
         x_m >= λ_t                                   t ∈ S(m)
         Σ_{g ∈ t} y_{g,m} <= min(P_t, U_m, λ^max_t + 1) h_{t,m}
         x_m <= λ_t + 1 + M (1 - h_{t,m})
         Λ_c <= x_m <= Λ_c + 1                          m in subscription class c
         Σ_{g ∈ t} y_{g,m} <= λ_t + 1                   t ∈ S(m)

with ``y, k, x, λ, Λ`` integer and ``h`` binary, and ``x_m >= x_{m'}`` for
consecutive interchangeable members ``m < m'`` (one rack, one class, owning
nothing: permuting their partitions changes nothing the rule or the
objective sees, so some optimum is ordered so). The last two rows are valid cuts
(two members of one subscription hold counts within one of each other: see
:mod:`~kipopt.formulations.consumers.levels`); ``[L_c, U_c]`` and the range of
``λ_t`` come from :func:`~kipopt.formulations.consumers.groups.topic_levels`. It
grows with members × partition groups, never with partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, class_counts, topic_levels
from kipopt.formulations.consumers.levels import owned_by_group, timed_solve
from kipopt.formulations.consumers.rules import owners
from kipopt.formulations.highs import ArrayLP, SparseBuilder


@dataclass(frozen=True)
class MemberModel:
    layout: Layout
    owned: dict[tuple[int, int], list[int]]
    owned_total: int
    flows: np.ndarray   # rows (g, member, column)
    keeps: np.ndarray   # rows (g, member, column)
    lp: ArrayLP


def member_model(instance: ConsumersInstance, lay: Layout, best: np.ndarray | None = None,
                 symmetry: bool = True) -> MemberModel:
    """The MILP; with ``best`` (per partition group, a cross-rack cost) only the pairs at that cost
    (valid when some optimum, hence every one, gives every partition to such a subscriber). With
    ``symmetry``, interchangeable members (one rack, one class, owning nothing) hold non-increasing
    counts in member order: swapping two such members' partitions changes neither the rule nor the
    objective, so some optimum is ordered so, and HiGHS need not branch over their permutations."""
    classes, member_class, count, sizes = class_counts(instance, lay)
    lam_lo, lam_hi, L, U = topic_levels(lay, sizes, classes, count)
    owned = owned_by_group(instance, lay)
    weight = len(owners(instance)) + 1
    b = SparseBuilder()

    def cols(n, lower=0.0, upper=np.inf, integer=True, price=0.0):
        return b.add_cols(n, lower, upper, integer, price)

    lam = {t: int(cols(1, lam_lo[t], lam_hi[t])[0]) for t in lay.topics}
    base = {c: int(cols(1, int(L[c]), int(U[c]))[0]) for c, ts in enumerate(classes) if ts}
    flows, keeps = [], []
    per_group: list[list[int]] = [[] for _ in lay.groups]
    owning = {m for _, m in owned}
    last_of: dict[tuple[int, int], int] = {}   # (rack, class) -> x column of its last plain member
    for m in range(len(lay.members)):
        c = int(member_class[m])
        topics = sorted(classes[c], key=lay.topics.index)
        if not topics:
            continue
        hi = int(U[c])
        x = int(cols(1, int(L[c]), hi)[0])
        b.add_row([x, base[c]], [1.0, -1.0], 0.0, 1.0)
        if symmetry and m not in owning:
            key = (int(lay.member_rack[m]), c)
            if key in last_of:
                b.add_row([last_of[key], x], [1.0, -1.0], 0.0, np.inf)
            last_of[key] = x
        mine = []
        for t in topics:
            ys = []
            for g in lay.groups_of_topic[t]:
                if best is not None and lay.cross[g, lay.member_rack[m]] > best[g]:
                    continue
                y = int(cols(1, 0.0, min(lay.groups[g].size, hi), price=weight * float(lay.cross[g, lay.member_rack[m]]))[0])
                flows.append((g, m, y))
                ys.append(y)
                per_group[g].append(y)
                if (g, m) in owned:
                    k = int(cols(1, 0.0, len(owned[(g, m)]), price=-1.0)[0])
                    keeps.append((g, m, k))
                    b.add_row([k, y], [1.0, -1.0], -np.inf, 0.0)
            mine += ys
            h = int(cols(1, 0.0, 1.0)[0])
            b.add_row(ys + [h], np.r_[np.ones(len(ys)), -float(min(sizes[t], hi, lam_hi[t] + 1))], -np.inf, 0.0)
            b.add_row([x, lam[t]], [1.0, -1.0], 0.0, np.inf)
            b.add_row(ys + [lam[t]], np.r_[np.ones(len(ys)), -1.0], -np.inf, 1.0)  # cut: holders hold <= λ_t + 1
            big = float(max(0, hi - lam_lo[t] - 1))
            b.add_row([x, lam[t], h], [1.0, -1.0, big], -np.inf, 1.0 + big)
        b.add_row(mine + [x], np.r_[np.ones(len(mine)), -1.0], 0.0, 0.0)
    for g, ys in enumerate(per_group):
        b.add_row(ys, 1.0, lay.groups[g].size, lay.groups[g].size)
    lp = b.build()
    return MemberModel(lay, owned, len(owners(instance)), np.array(flows, dtype=np.int64).reshape(-1, 3),
                       np.array(keeps, dtype=np.int64).reshape(-1, 3), lp)


def read_back(model: MemberModel, x: np.ndarray) -> dict[str, tuple[str, ...]]:
    """Each member keeps its first ``k`` owned partitions of g and takes the rest of ``y`` from g's pool."""
    lay = model.layout
    v = np.rint(x).astype(np.int64)
    lists: list[list[str]] = [[] for _ in lay.members]
    kept = {(int(g), int(m)): int(v[k]) for g, m, k in model.keeps}
    taken: list[set[int]] = [set() for _ in lay.groups]
    for (g, m), n in kept.items():
        mine = model.owned[(g, m)][:n]
        lists[m].extend(f"{lay.groups[g].topic}-{p}" for p in mine)
        taken[g].update(mine)
    pools = [[p for p in grp.partitions if p not in taken[g]] for g, grp in enumerate(lay.groups)]
    cursor = [0] * len(lay.groups)
    for g, m, col in model.flows:
        g, m = int(g), int(m)
        amount = int(v[col]) - kept.get((g, m), 0)
        at = cursor[g]
        cursor[g] = at + amount
        lists[m].extend(f"{lay.groups[g].topic}-{p}" for p in pools[g][at:at + amount])
    if any(c != len(p) for c, p in zip(cursor, pools)):
        raise ValueError("the flows do not cover every partition")
    return {m: tuple(lists[i]) for i, m in enumerate(lay.members)}


def solve_members(instance: ConsumersInstance, lay: Layout, time_limit: float | None = None,
                  threads: int | None = None, best: np.ndarray | None = None, symmetry: bool = True,
                  below: float | None = None):
    """``(assignment or None, status, bound in rule units, info)``; ``best``, ``symmetry`` as in
    :func:`member_model`, ``below`` (an incumbent's value: only better answers are sought) as in
    :func:`~kipopt.formulations.consumers.levels.timed_solve`."""
    return timed_solve(lambda: member_model(instance, lay, best, symmetry), read_back, time_limit, threads, "milp",
                       below)
