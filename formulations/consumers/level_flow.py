"""A flow bound for a whole box of topic levels: every vector's partitions as one transportation LP.

The level tree's closed-form box bound
(:func:`~kipopt.formulations.consumers.level_tree.box_bounds`) pools what every member could keep
and caps it by the partitions left above the members' least counts; it never asks whether the
partitions a member would keep are of topics it may hold at that count, nor whether the other
partitions still find holders. On groups with many topics it stays flat: on a 100-member, 20-topic
group of the production grid it bounds the box ``λ ∈ {99, 100}^20`` by 1,206 where the box holds
nothing below 1,501. Here one LP per box says what every vector of the box must satisfy. Nodes and
arcs as :func:`~kipopt.formulations.consumers.level_search.arcs` (an owner alone, or the ``n_v``
interchangeable members of one rack and class owning nothing); for the box ``[lo, hi]`` let
``μ⁻_v``, ``μ⁺_v`` be the greatest ``lo_t``, ``hi_t`` over v's topics::

    min  Σ_a W cross(a) (z_a + k_a) - Σ_a k_a        (+ O: rule units)
    s.t. n_v μ⁻_v <= Σ_{a ∈ v} (z_a + k_a) <= n_v (μ⁺_v + 1)     every node v
         Σ_{a ∈ g} (z_a + k_a) = s_g                             every partition group g
         0 <= z_a <= n_v (min(μ⁺_v, hi_t) + 1),  0 <= k_a <= o_a   (0 unless hi_t >= μ⁻_v - 1)

Valid for every vector ``λ`` of the box (with ``μ_c = max_{t ∈ S_c} λ_t``, the level lemma of
:mod:`~kipopt.formulations.consumers.level_search`): a member holds ``μ_c`` or ``μ_c + 1``, within
``[μ⁻, μ⁺ + 1]``; it holds topic t only if ``λ_t >= μ_c - 1``, impossible in the box when
``hi_t < μ⁻ - 1``; a holder of t holds at most ``λ_t + 1 <= hi_t + 1`` in all; an owner keeps at
most what it owns (``k``), and what an assignment gives a node splits into kept and pool partitions
(``z``). So every valid assignment of the box is a point of this LP at its own value, and the LP's
optimum bounds the box. It is a network matrix (a transportation problem with ranged node rows):
its vertex is integral and its optimum an integer.

On that group the LP bounds ``{99, 100}^20`` by 1,501, ``{98..101}^20`` by 1,453 and
``{95..105}^20`` by 1,309 (closed form: 1,206, 1,170 and lower). The pattern is the same for every
box (only bounds change), so one HiGHS object re-solves each box from the last basis
(:class:`~kipopt.formulations.highs.BoundsLP`), and the row duals of the last optimum often settle a
box with no solve at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kipopt.formulations.consumers.level_search import Arcs, LevelSpace, _mu
from kipopt.formulations.highs import ArrayLP, BoundsLP, build_csc

FLOW_EAGER_COLUMNS = 10_000
"""Up to this many columns every box gets its LP. Above, the tree starts with its closed-form bounds alone
and adds the LPs late (:data:`~kipopt.formulations.consumers.level_tree.FLOW_LATE_BOXES`): on the 10,000 x
1,000 benchmark group (17,000 columns) a box's LP took 28 ms against 2 ms for its closed form, and the
proof 4.1 s with them from the start (76 boxes) against 1.7 s without (156 boxes); a 100-member,
20-topic group has about 2,000 to 5,000."""

FLOW_MAX_COLUMNS = 50_000
"""Above this many columns, no LP (it runs in process, no child the deadline kills). The production grid's
100,000 x 1,000 x 50 groups have about 44,000: there, four box LPs in a 60 s limit raised the bound
from 129 to 6,812 (answer 11,247)."""


@dataclass(frozen=True)
class FlowBound:
    """The pattern: columns ``[z (arcs) | k (keep arcs)]``, rows ``[count (nodes) | supply (groups)]``."""

    space: LevelSpace
    net: Arcs
    keep_arc: np.ndarray
    base: ArrayLP
    family: BoundsLP
    miss: float     # the bound of a box with no valid assignment over these arcs
    eager: bool     # at most FLOW_EAGER_COLUMNS: every box from the first


def flow_bound_lp(space: LevelSpace, net: Arcs, miss: float, threads: int | None = None) -> FlowBound | None:
    """The pattern over ``net``'s arcs; ``miss`` is what a box whose LP is infeasible is bounded by
    (``inf``, or with least-cost arcs only, the value of one more cross-rack partition). ``None`` above
    :data:`FLOW_MAX_COLUMNS`."""
    N, K = len(net.nodes), len(net.arc_node)
    keep_arc = np.flatnonzero(net.arc_owned > 0)
    if K + len(keep_arc) > FLOW_MAX_COLUMNS:
        return None
    rows = np.r_[net.arc_node, net.arc_node[keep_arc], N + net.arc_group, N + net.arc_group[keep_arc]]
    cols = np.r_[np.arange(K), K + np.arange(len(keep_arc)), np.arange(K), K + np.arange(len(keep_arc))]
    start, index, value = build_csc(K + len(keep_arc), cols, rows, np.ones(len(rows)))
    cost = net.arc_cost.astype(np.float64)
    sizes = np.array([g.size for g in space.layout.groups], dtype=np.float64)
    base = ArrayLP(cost=np.r_[cost, cost[keep_arc] - 1.0], lower=np.zeros(K + len(keep_arc)),
                   upper=np.zeros(K + len(keep_arc)), row_lower=np.r_[np.zeros(N), sizes],
                   row_upper=np.r_[np.zeros(N), sizes], start=start, index=index, value=value)
    return FlowBound(space, net, keep_arc, base, BoundsLP(base, threads), miss,
                     K + len(keep_arc) <= FLOW_EAGER_COLUMNS)


def box_lp(fb: FlowBound, lo: np.ndarray, hi: np.ndarray) -> ArrayLP:
    """The module docstring's LP of the box ``[lo, hi]`` (objective without ``O``): the pattern with the
    box's bounds."""
    sp, net = fb.space, fb.net
    mu_lo, mu_hi = _mu(sp, np.stack([lo, hi]))[:, net.node_class].astype(np.float64)
    t = sp.group_topic[net.arc_group]
    node = net.arc_node
    live = hi[t] >= mu_lo[node] - 1
    sizes = fb.base.row_lower[len(net.nodes):]
    cap = np.minimum(sizes[net.arc_group], net.node_size[node] * (np.minimum(mu_hi[node], hi[t]) + 1.0))
    cap = np.where(live, cap, 0.0)
    owned = np.minimum(net.arc_owned[fb.keep_arc].astype(np.float64), cap[fb.keep_arc])
    n = net.node_size.astype(np.float64)
    return replace(fb.base, upper=np.r_[cap, owned],
                   row_lower=np.r_[n * mu_lo, sizes], row_upper=np.r_[n * (mu_hi + 1.0), sizes])


def flow_bound(fb: FlowBound, lo: np.ndarray, hi: np.ndarray, cutoff: float | None = None,
               time_limit: float | None = None) -> float | None:
    """The box's bound in rule units; above ``cutoff`` (model units, as the tree's) it may be any value
    above it (the solve stops there); ``None`` when the solve did not finish."""
    result = fb.family.solve(box_lp(fb, lo, hi), time_limit, cutoff)
    if result.status == "infeasible":
        return fb.miss
    if result.status == "cutoff":
        return math.ceil(float(result.bound) - 1e-6) + fb.space.owned_total
    if result.status != "optimal" or result.objective is None:
        return None
    return math.ceil(result.objective - 1e-6) + fb.space.owned_total
