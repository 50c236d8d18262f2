"""The rule ``balanced`` over a narrow box of topic levels as one MILP, member counts made explicit.

The level tree (:mod:`~kipopt.formulations.consumers.level_tree`) ends, on groups with many topics,
in boxes where every topic has one or two levels left: ``2^k`` vectors for ``k`` undecided topics,
each a leaf LP of its own (on a 100-member, 20-topic group: 34,000 leaf LPs in 30 s, all above the
best answer, the box bound below it). Here such a box is one MILP. Notation as in
:mod:`~kipopt.formulations.consumers.level_search`; nodes and arcs as its
:func:`~kipopt.formulations.consumers.level_search.arcs` (an owner alone, or the ``n_v``
interchangeable members of one rack and class owning nothing), box ``[lo, hi]``::

    z_{t,ℓ} = [λ_t >= ℓ]  (lo_t < ℓ <= hi_t, binary, non-increasing in ℓ)
    w_{v,ℓ} = members of node v holding exactly ℓ  (μ⁻_v <= ℓ <= μ⁺_v + 1, integer)
    y_{a,ℓ}, k_{a,ℓ}: the flow of arc a = (v, g) into v's members at ℓ, and what an owner keeps of it

    Σ_ℓ w_{v,ℓ} = n_v                       Σ_a y_{a,ℓ} = ℓ w_{v,ℓ}          Σ_{v,ℓ} y_{(v,g),ℓ} = s_g
    Σ_{ℓ' >= ℓ} w_{v,ℓ'} >= n_v z_{t,ℓ}      (t a topic of v: every subscriber of t holds at least λ_t)
    Σ_{g ∈ t} y_{(v,g),ℓ} <= min(P_t, n_v ℓ) z_{t,ℓ-1}    (a holder of t holds at most λ_t + 1)
    k_{a,ℓ} <= y_{a,ℓ},   k_{a,ℓ} <= min(o_a, ℓ) w_{v,ℓ},   Σ_{g ∈ t} k_{(v,g),ℓ} <= min(o_{v,t}, ℓ) z_{t,ℓ-1}

    min  Σ W cross(a) y - Σ k  (+ O)

with ``μ⁻_v``, ``μ⁺_v`` the greatest ``lo_t``, ``hi_t`` over v's topics (``z`` is 1 below ``lo_t``
and 0 above ``hi_t``, so those rows vanish or forbid). For integer ``z`` and ``w`` this is exactly
the rule with least loads ``λ`` (the level lemma: subscribers hold at least ``λ_t``, holders at most
``λ_t + 1``); the flows are then a network (each topic's arcs into ``(v, ℓ)`` bundled under one cap,
an owner's keep arcs under another), so ``y`` and ``k`` need no integrality. Its optimum is the least
over the box's vectors of their optimum, and its dual bound a bound for every vector of the box.

Measured on that group, whose tree ends in the 2^19 vectors of ``λ ∈ {99, 100}``: the box bound says
952, this model's LP relaxation 1,008 and its MILP proves that nothing beats the best answer, 1,009.
The relaxation weakens and slows as the box widens (levels 95-105: 860 in 22 s), so only boxes at
most :data:`CUBE_WIDTH` wide per topic are given to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kipopt.formulations.consumers.level_search import Arcs, LevelSpace, _mu
from kipopt.formulations.highs import ArrayLP, SparseBuilder

CUBE_WIDTH = 1
"""A box is given to the MILP when no topic has more than ``CUBE_WIDTH + 1`` levels left..."""

CUBE_TOPICS = 8
"""...and at least this many topics have more than one (256 vectors or more). With 4, the tree
proved 8-topic groups of 200 members and 2,000 partitions in 35 s instead of 0.09 s (a box's MILP
costs more than the few leaves the tree needs there); with 8 they are untouched and a 100-member,
20-topic group is still proven within the production grid's 60 s limit."""

CUBE_MAX_COLUMNS = 10_000
"""Above this many flow columns the box is split as any other: the MILP's binaries grow with the owners,
and at 1,000 owners (10,000 x 1,000, 16,000 leaf columns) one box took the whole time limit where the
warm leaf LPs, most settled by carried duals, prove the group in about a second. The boxes of a
100-member, 20-topic group have 3,000 to 6,500."""

CUBE_TIME_SHARE = 0.25
"""A box's MILP gets at most this share of the time left. A box it does not settle is split as any
other, its children bounded by at least the MILP's bound and, until a better answer turns up,
searched by leaves only. Measured on a 100-member, 20-topic group whose better answer those MILPs
did not find: letting the parts try again, each taking its share of what was left, spent the whole
limit on 20 MILPs, none settled; with leaves, one relaxation rounded found it (1,028) and seven MILPs
then proved it (48 s)."""

CUBE_HIGHS_OPTIONS = {"mip_heuristic_run_rens": False, "mip_heuristic_run_rins": False,
                      "mip_heuristic_run_feasibility_jump": False, "mip_heuristic_run_root_reduced_cost": False}
"""HiGHS' sub-MIP and search heuristics off: the search only asks whether anything in the box beats
the best answer in hand, and the leaf machinery reads the answer back. Measured on the three slowest
boxes of a 100-member, 20-topic group: 9.9, 1.9 and 12.2 s with them, 1.0, 0.7 and 5.3 s without
(the sub-MIPs took 7.5 s of the first)."""


@dataclass(frozen=True)
class BoxModel:
    lp: ArrayLP
    z_topic: np.ndarray   # the topic of each z column
    z_cols: np.ndarray


def _ranges(counts: np.ndarray) -> np.ndarray:
    """``0..c-1`` for each ``c`` in ``counts``, concatenated."""
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) - np.repeat(ends - counts, counts)


def _node_levels(space: LevelSpace, net: Arcs, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(μ⁻_v, μ⁺_v)`` per node: its class's ``μ`` at ``lo`` and at ``hi``."""
    mu_lo, mu_hi = _mu(space, np.stack([lo, hi]))[:, net.node_class]
    return mu_lo, mu_hi


def _arc_levels(space: LevelSpace, net: Arcs, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per arc, its first level and how many levels it has: ``μ⁻_v .. min(μ⁺_v, hi_t) + 1``."""
    mlo, mhi = _node_levels(space, net, lo, hi)
    t = space.group_topic[net.arc_group]
    first = mlo[net.arc_node]
    return first, np.maximum(0, np.minimum(mhi[net.arc_node], hi[t]) + 2 - first)


def flow_columns(space: LevelSpace, net: Arcs, lo: np.ndarray, hi: np.ndarray) -> int:
    """How many flow columns :func:`box_model` would have (its size, known before building it)."""
    return int(_arc_levels(space, net, lo, hi)[1].sum())


def is_cube(lo: np.ndarray, hi: np.ndarray) -> bool:
    width = hi - lo
    return bool((width <= CUBE_WIDTH).all() and (width > 0).sum() >= CUBE_TOPICS)


def worth_a_milp(space: LevelSpace, net: Arcs, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether the level tree settles this box by :func:`box_model`."""
    return is_cube(lo, hi) and flow_columns(space, net, lo, hi) <= CUBE_MAX_COLUMNS


def box_model(space: LevelSpace, net: Arcs, lo: np.ndarray, hi: np.ndarray) -> BoxModel:
    """The module docstring's MILP of the box ``[lo, hi]``; objective without the constant ``O``."""
    b = SparseBuilder()
    N, T = len(net.nodes), len(lo)
    n = net.node_size.astype(np.int64)
    sizes_g = np.array([g.size for g in space.layout.groups], dtype=np.float64)
    # z_{t,ℓ}, consecutive per topic
    width = hi - lo
    z_topic = np.repeat(np.arange(T), width)
    z_start = np.cumsum(width) - width
    z_cols = b.add_cols(len(z_topic), 0.0, 1.0, integer=True)
    z_level = lo[z_topic] + 1 + _ranges(width)
    step = np.flatnonzero(z_level > lo[z_topic] + 1)
    b.add_rows(len(step), np.repeat(np.arange(len(step)), 2), np.stack([z_cols[step], z_cols[step] - 1], 1).ravel(),
               np.tile([1.0, -1.0], len(step)), -np.inf, 0.0)

    def z_col(t: np.ndarray, level: np.ndarray) -> np.ndarray:
        return z_cols[0] + z_start[t] + level - lo[t] - 1 if len(z_cols) else np.zeros(len(t), dtype=np.int64)

    # w_{v,ℓ}, consecutive per node
    mlo, mhi = _node_levels(space, net, lo, hi)
    levels = mhi - mlo + 2
    w_node = np.repeat(np.arange(N), levels)
    w_level = mlo[w_node] + _ranges(levels)
    w_start = np.cumsum(levels) - levels
    w_cols = b.add_cols(len(w_node), 0.0, n[w_node].astype(np.float64), integer=True)
    b.add_rows(N, w_node, w_cols, 1.0, n.astype(np.float64), n.astype(np.float64))
    # subscribers hold at least λ_t: Σ_{ℓ' >= ℓ} w_{v,ℓ'} - n_v z_{t,ℓ} >= 0
    pv, pt = np.nonzero(space.member_of[net.node_class])
    first = np.maximum(lo[pt], mlo[pv]) + 1
    per = np.maximum(0, hi[pt] - first + 1)
    rv, rt, rl = np.repeat(pv, per), np.repeat(pt, per), np.repeat(first, per) + _ranges(per)
    above = mhi[rv] + 2 - rl
    R = len(rv)
    rows = np.r_[np.repeat(np.arange(R), above), np.arange(R)]
    cols = np.r_[w_cols[0] + np.repeat(w_start[rv] + rl - mlo[rv], above) + _ranges(above), z_col(rt, rl)]
    b.add_rows(R, rows, cols, np.r_[np.ones(int(above.sum())), -n[rv].astype(np.float64)], 0.0, np.inf)
    # flows y_{a,ℓ} and keeps k_{a,ℓ}
    a_first, a_levels = _arc_levels(space, net, lo, hi)
    ya = np.repeat(np.arange(len(net.arc_node)), a_levels)
    yl = np.repeat(a_first, a_levels) + _ranges(a_levels)
    yv, yg = net.arc_node[ya], net.arc_group[ya]
    yt = space.group_topic[yg]
    y_cols = b.add_cols(len(ya), 0.0, np.minimum(sizes_g[yg], n[yv] * yl).astype(np.float64),
                        cost=net.arc_cost[ya].astype(np.float64))
    y_w = w_cols[0] + w_start[yv] + yl - mlo[yv]     # the w column of each flow's (node, level)
    owned = net.arc_owned[ya].astype(np.float64)
    ks = np.flatnonzero(owned > 0)
    cap = np.minimum(owned[ks], yl[ks].astype(np.float64))
    k_cols = b.add_cols(len(ks), 0.0, cap, cost=-1.0)   # y already carries the cross-rack cost of what is kept
    K = len(ks)
    b.add_rows(K, np.repeat(np.arange(K), 2), np.stack([k_cols, y_cols[ks]], 1).ravel(), np.tile([1.0, -1.0], K),
               -np.inf, 0.0)
    b.add_rows(K, np.repeat(np.arange(K), 2), np.stack([k_cols, y_w[ks]], 1).ravel(),
               np.stack([np.ones(K), -cap], 1).ravel(), -np.inf, 0.0)
    # each (node, level) holds ℓ per member: Σ_a y_{a,ℓ} - ℓ w_{v,ℓ} = 0
    NL = len(w_node)
    b.add_rows(NL, np.r_[y_w - w_cols[0], np.arange(NL)], np.r_[y_cols, w_cols],
               np.r_[np.ones(len(y_cols)), -w_level.astype(np.float64)], 0.0, 0.0)
    # a holder of t at ℓ needs λ_t >= ℓ - 1, where that is undecided in the box
    _topic_caps(b, yv, yt, yl, y_cols, np.minimum(space.sizes[yt], n[yv] * yl), lo, z_col)
    own_vt = np.zeros((N, T))
    np.add.at(own_vt, (net.arc_node, space.group_topic[net.arc_group]), net.arc_owned.astype(np.float64))
    _topic_caps(b, yv[ks], yt[ks], yl[ks], k_cols, np.minimum(own_vt[yv[ks], yt[ks]], yl[ks]), lo, z_col)
    # every partition group is covered
    G = len(sizes_g)
    b.add_rows(G, yg, y_cols, 1.0, sizes_g, sizes_g)
    return BoxModel(b.build(), z_topic, z_cols)


def _topic_caps(b: SparseBuilder, v: np.ndarray, t: np.ndarray, level: np.ndarray, cols: np.ndarray,
                cap: np.ndarray, lo: np.ndarray, z_col) -> None:
    """``Σ cols over (v, t, ℓ) <= cap · z_{t,ℓ-1}`` for each (node, topic, level) with ``ℓ - 1 > lo_t``."""
    sel = np.flatnonzero(level - 1 > lo[t])
    if not len(sel):
        return
    keys = np.stack([v[sel], t[sel], level[sel]], 1)
    uniq, row = np.unique(keys, axis=0, return_inverse=True)
    row = row.ravel()
    first = np.zeros(len(uniq), dtype=np.int64)
    first[row[::-1]] = sel[::-1]                       # one member of each key, for its cap
    R = len(uniq)
    b.add_rows(R, np.r_[row, np.arange(R)], np.r_[cols[sel], z_col(uniq[:, 1], uniq[:, 2] - 1)],
               np.r_[np.ones(len(sel)), -cap[first].astype(np.float64)], -np.inf, 0.0)


def box_levels(model: BoxModel, lo: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The level vector an integer point of :func:`box_model` chooses: ``λ_t = lo_t + Σ_ℓ z_{t,ℓ}``."""
    vector = lo.copy()
    np.add.at(vector, model.z_topic, np.rint(x[model.z_cols]).astype(np.int64))
    return vector
