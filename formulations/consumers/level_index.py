"""The rule ``balanced`` as a level-indexed MILP: loads and topic levels as one binary per value.

Notation as in :mod:`kipopt.formulations.consumers.member_milp`, whose model
this one restates with every integer of a small window indexed by its value
(an extended formulation). Per topic t, ``w_{t,j} = [λ_t = j]`` over the box
``[λ_lo, λ_hi]`` of :func:`~kipopt.formulations.consumers.groups.topic_levels`;
per class c, ``v_{c,k} = [Λ_c = k]``; per member m of class c,
``z_{m,k} = [x_m = k]`` over ``[L_c, U_c]`` and, per topic t it subscribes to,
``u_{m,t,k}`` ("m holds exactly k and holds some of t")::

    min  W Σ cross(g, m) y_{g,m} - Σ q_{g,m}                                  (+ O)
    s.t. Σ_m y_{g,m} = s_g                        every partition group g
         Σ_g y_{g,m} = Σ_k k z_{m,k},   Σ_k z_{m,k} = Σ_j w_{t,j} = Σ_k v_{c,k} = 1
         z_{m,k} <= v_{c,k} + v_{c,k-1}            members of a class within one of each other
         z_{m,k} <= Σ_{j <= k} w_{t,j}             t ∈ S(m): x_m >= λ_t
         u_{m,t,k} <= z_{m,k},  u_{m,t,k} <= w_{t,k} + w_{t,k-1}
         Σ_{g ∈ t} y_{g,m} <= Σ_k min(P_t, k) u_{m,t,k}
         q_{g,m} <= min(owned_{g,m}, y_{g,m})

with ``y, q, z, w, v`` integer and ``u`` continuous (with ``z, w`` integral
its range is ``[0, 0]`` or ``[0, 1]``, so it may as well be). Exactness: by
the level lemma of :mod:`~kipopt.formulations.consumers.level_search`, an
assignment meets the rule iff some ``λ`` has every subscriber of t at least
``λ_t`` and every holder of t at most ``λ_t + 1``; a holder at load k then has
``λ_t ∈ {k - 1, k}``, which is what ``u`` allows. The class rows are valid
(:mod:`~kipopt.formulations.consumers.levels`). So the integer points are the
valid assignments' flows, read back as in :func:`member_milp.read_back`.

Why: the member MILP links ``x_m``, ``λ_t`` and "m holds t" by big-M rows,
whose relaxation lets every member hold every topic at a fractional level.
Here each link is a disaggregated implication between value indicators, so
the relaxation already knows which loads may hold which topics at each level
(the same strengthening as an incremental-to-indexed reformulation of a
scheduling model). The model grows with members × (partition groups + topics
× levels), never with partitions. :func:`start_point` turns a valid assignment
(the dec-min answer) into a starting incumbent for HiGHS.

Measured (2026-11-25, the first 12 groups of ``benchmarks/bench_oracle_balanced.py``,
11 to 99 members, 2 to 8 topics, both models given the dec-min value as a
cutoff, 20 s each, one interleaved run on the loaded shared 2-core machine):
the relaxation is *not* stronger than the member MILP's (root LP bound
9.5 / 11.0 / 14.2 / 72.8 here against 9.2 / 12.5 / 15.0 / 73.4 there on
groups 0, 4, 9, 6, whose optima are 11 / 24 / 82 / 90): the gap lies in
whether the levels can be met at least cross-rack cost at all, which both
relaxations average away. It proved 8 of 12 groups in 114 CPU s against 11
of 12 in 49 CPU s for the member MILP. So ``exact.balanced`` does not use
it; it stays an exact cross-check (tests against brute force and the member
MILP).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, class_counts, subscription_classes, topic_levels
from kipopt.formulations.consumers.levels import owned_by_group, timed_solve
from kipopt.formulations.consumers.member_milp import MemberModel, read_back
from kipopt.formulations.consumers.rules import owners
from kipopt.formulations.highs import SparseBuilder


@dataclass(frozen=True)
class IndexedModel:
    """The MILP as a :class:`MemberModel` (flows, keeps, read-back shared) and its value indicators."""

    members: MemberModel
    lam: dict[str, tuple[int, np.ndarray]]      # topic -> (least level, column per level)
    base: dict[int, tuple[int, np.ndarray]]     # class -> (least level, column per level)
    load: dict[int, tuple[int, np.ndarray]]     # member -> (least level, column per level)
    holds: dict[tuple[int, str], dict[int, int]]  # (member, topic) -> level k -> u column

    @property
    def lp(self):
        return self.members.lp

    @property
    def owned_total(self) -> int:
        return self.members.owned_total


def indexed_model(instance: ConsumersInstance, lay: Layout, best: np.ndarray | None = None) -> IndexedModel:
    """Build the MILP of the module docstring; ``best`` as in :func:`member_milp.member_model`."""
    classes, member_class, count, sizes = class_counts(instance, lay)
    lam_lo, lam_hi, L, U = topic_levels(lay, sizes, classes, count)
    owned = owned_by_group(instance, lay)
    weight = len(owners(instance)) + 1
    b = SparseBuilder()

    def pick(low: int, high: int) -> tuple[int, np.ndarray]:
        cols = b.add_cols(max(0, high - low + 1), 0.0, 1.0, integer=True)
        b.add_row(cols, 1.0, 1.0, 1.0)
        return low, cols

    lam = {t: pick(lam_lo[t], lam_hi[t]) for t in lay.topics}
    base = {c: pick(int(L[c]), int(U[c])) for c, ts in enumerate(classes) if ts}
    load: dict[int, tuple[int, np.ndarray]] = {}
    holds: dict[tuple[int, str], dict[int, int]] = {}
    flows, keeps = [], []
    per_group: list[list[int]] = [[] for _ in lay.groups]
    for m in range(len(lay.members)):
        c = int(member_class[m])
        if not classes[c]:
            continue
        low, z = load[m] = pick(int(L[c]), int(U[c]))
        levels = range(low, low + len(z))
        for k, col in zip(levels, z):
            near = [_at(base[c], j) for j in (k, k - 1)]
            b.add_row([int(col)] + [j for j in near if j is not None],
                      [1.0] + [-1.0] * sum(j is not None for j in near), -np.inf, 0.0)
        mine = []
        for t in sorted(classes[c], key=lay.topics.index):
            t_low, w = lam[t]
            for k, col in zip(levels, z):  # x_m >= λ_t: at load k, λ_t <= k
                below = w[:max(0, k - t_low + 1)]
                if len(below) < len(w):
                    b.add_row(np.r_[int(col), below].astype(np.int64), np.r_[1.0, -np.ones(len(below))], -np.inf, 0.0)
            ys = []
            for g in lay.groups_of_topic[t]:
                if best is not None and lay.cross[g, lay.member_rack[m]] > best[g]:
                    continue
                y = int(b.add_cols(1, 0.0, min(lay.groups[g].size, int(U[c])), integer=True,
                                   cost=weight * float(lay.cross[g, lay.member_rack[m]]))[0])
                flows.append((g, m, y))
                ys.append(y)
                per_group[g].append(y)
                if (g, m) in owned:
                    q = int(b.add_cols(1, 0.0, len(owned[(g, m)]), integer=True, cost=-1.0)[0])
                    keeps.append((g, m, q))
                    b.add_row([q, y], [1.0, -1.0], -np.inf, 0.0)
            mine += ys
            holds[(m, t)] = {}
            caps = []
            for k, col in zip(levels, z):
                near = [j for j in (_at(lam[t], k), _at(lam[t], k - 1)) if j is not None]
                if not near or min(sizes[t], k) <= 0:
                    continue
                u = int(b.add_cols(1, 0.0, 1.0)[0])
                holds[(m, t)][k] = u
                b.add_row([u, int(col)], [1.0, -1.0], -np.inf, 0.0)
                b.add_row([u] + near, [1.0] + [-1.0] * len(near), -np.inf, 0.0)
                caps.append((u, float(min(sizes[t], k))))
            b.add_row(ys + [u for u, _ in caps], np.r_[np.ones(len(ys)), [-cap for _, cap in caps]], -np.inf, 0.0)
        b.add_row(mine + [int(col) for col in z], np.r_[np.ones(len(mine)), -np.arange(low, low + len(z))], 0.0, 0.0)
    for g, ys in enumerate(per_group):
        b.add_row(ys, 1.0, lay.groups[g].size, lay.groups[g].size)
    members = MemberModel(lay, owned, len(owners(instance)), np.array(flows, dtype=np.int64).reshape(-1, 3),
                          np.array(keeps, dtype=np.int64).reshape(-1, 3), b.build())
    return IndexedModel(members, lam, base, load, holds)


def _at(level: tuple[int, np.ndarray], k: int) -> int | None:
    low, cols = level
    return int(cols[k - low]) if 0 <= k - low < len(cols) else None


def start_point(instance: ConsumersInstance, model: IndexedModel, assignment: dict[str, tuple[str, ...]]
                ) -> np.ndarray | None:
    """The model's point of a valid ``assignment`` (``None`` when it uses a pair or level the model
    left out, e.g. under ``best``): HiGHS' first incumbent."""
    lay = model.members.layout
    x = np.zeros(model.lp.num_col)
    flow_col = {(int(g), int(m)): int(col) for g, m, col in model.members.flows}
    keep_col = {(int(g), int(m)): int(col) for g, m, col in model.members.keeps}
    owner_of = owners(instance)
    loads = np.array([len(assignment.get(m, ())) for m in lay.members], dtype=np.int64)
    held: set[tuple[int, str]] = set()
    for i, m in enumerate(lay.members):
        for p in assignment.get(m, ()):
            t, _, number = p.rpartition("-")
            g = int(lay.group_of_partition[t][int(number)])
            if (g, i) not in flow_col:
                return None
            x[flow_col[(g, i)]] += 1
            held.add((i, t))
            if owner_of.get(p) == m:
                x[keep_col[(g, i)]] += 1
    subscribers: dict[str, list[int]] = {t: [] for t in lay.topics}
    for i, topics in enumerate(lay.member_topics):
        for t in topics:
            subscribers[t].append(i)
    level = {t: int(loads[ms].min()) for t, ms in subscribers.items() if ms}
    classes, member_class = subscription_classes(lay)
    least = {c: int(min(loads[member_class == c])) for c in model.base}
    picks = [(model.lam[t], level[t]) for t in model.lam] + [(model.base[c], least[c]) for c in model.base]
    picks += [(model.load[i], int(loads[i])) for i in model.load]
    for indicator, k in picks:
        col = _at(indicator, k)
        if col is None:
            return None
        x[col] = 1.0
    for (i, t), by_level in model.holds.items():
        if (i, t) in held:
            if int(loads[i]) not in by_level:
                return None
            x[by_level[int(loads[i])]] = 1.0
    return x


def solve_indexed(instance: ConsumersInstance, lay: Layout, time_limit: float | None = None,
                  threads: int | None = None, best: np.ndarray | None = None,
                  incumbent: dict[str, tuple[str, ...]] | None = None, below: float | None = None):
    """``(assignment or None, status, bound in rule units, info)``; ``incumbent`` a valid assignment
    given to HiGHS as its starting point, ``below`` as in
    :func:`~kipopt.formulations.consumers.levels.timed_solve`."""
    def build():
        model = indexed_model(instance, lay, best)
        start = None if incumbent is None else start_point(instance, model, incumbent)
        return _Started(model, start)

    return timed_solve(build, lambda started, x: read_back(started.model.members, x), time_limit, threads,
                       "indexed", below)


@dataclass(frozen=True)
class _Started:
    model: IndexedModel
    start: np.ndarray | None

    @property
    def lp(self):
        return self.model.lp

    @property
    def owned_total(self) -> int:
        return self.model.owned_total
