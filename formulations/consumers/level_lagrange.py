"""Bounds of level vectors and boxes by pricing the partition groups' supply rows (Lagrangian relaxation).

The leaf model of a level vector (:mod:`~kipopt.formulations.consumers.level_warm`) ties its member nodes
together only through the supply rows: each partition group's flows sum to its size ``s_g``. Priced at
``π_g`` instead, what is left splits by node, and each node's part is a tiny problem solved exactly here
for all nodes at once. A node of one member either stays at its base level ``μ`` (mode 0: holds exactly
``μ`` partitions, of any topic it may hold) or goes one above (mode 1: ``μ + 1``, only of topics at level
``μ`` or more); in either mode the cheapest partitions at prices ``c - π_g`` (``c - 1 - π_g`` for one it
owns and may keep) are taken greedily, each arc up to its cap. So for *every* ``π``::

    L(π) = Σ_g π_g s_g + Σ_v min over v's modes  <=  the vector's least objective (model units, no ``O``)

(weak duality; no optimality of ``π`` is needed). The keep hull and the B rows of the leaf LP are not
needed here: inside one mode they hold by the count and the arcs' caps. So ``L`` at the supply row duals
of the leaf LP's own optimum is at least that LP's value, and above it where the LP mixes the two modes
(measured at 100,000 x 5,000: ``-55,790`` where the LP says ``-55,899``).

What it is for: the duals that the leaves' solves leave behind (:attr:`WarmLP.carried
<kipopt.formulations.highs.WarmLP.carried>`) carry over to other vectors through their supply part alone,
with every node's own rows priced afresh, where weak duality on the whole LP keeps the old node prices
(:func:`~kipopt.formulations.consumers.level_duals.dual_bounds`). On the level tree of a 100,000 x 5,000
group each of the 21 leaf LPs it solved by interior point after the sweep (2-3 s each) was already
settled by this bound (10-90 ms), equal to that LP's value on 19 of them.

A box ``[lo, hi]`` of vectors is bounded the same way with each node's problem relaxed over the box:
every base level ``μ`` between the node's least and greatest (one problem each), an arc open when its
topic's highest level reaches ``μ - 1``, of mode 1 when it reaches ``μ``, capped as at its highest level.
A node of several members (plain members of one class and rack, owning nothing) is relaxed to any count
from ``n μ`` to ``n (μ + 1)`` on every open arc.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kipopt.formulations.consumers import level_policy as policy
from kipopt.formulations.consumers.level_search import _mu
from kipopt.formulations.consumers.level_warm import LeafLP, relax_rounded, relax_rounded_each, relax_settled
from kipopt.formulations.highs import HighsResult

MAX_UNITS = 4_000_000
"""A box whose (base level, arc) pairs exceed this many is not bounded here (``-inf``): the root box of a
100,000 x 5,000 group has about 30 base levels per node over 86,000 arcs."""


def prices(leaf: LeafLP, row_dual: np.ndarray) -> np.ndarray:
    """The supply rows' part of a leaf or box LP's row duals (its last rows, one per partition group)."""
    return np.asarray(row_dual[len(row_dual) - len(leaf.group_sizes):], dtype=np.float64)


def lagrangian_bound(leaf: LeafLP, hi: np.ndarray, mu_lo: np.ndarray, mu_hi: np.ndarray, price: np.ndarray) -> float:
    """``L(price)`` for the box of highest levels ``hi`` whose nodes' base levels run from ``mu_lo`` to
    ``mu_hi`` (:func:`~kipopt.formulations.consumers.level_warm.box_terms`; a vector's where the box is one),
    in rule units: rounded up, plus ``O``; ``inf`` where some node can fill no mode (no vector of the box
    has an assignment), ``-inf`` where the box is too wide to bound here (:data:`MAX_UNITS`)."""
    units = _units(leaf, hi, mu_lo, mu_hi)
    return -math.inf if units is None else _priced(leaf, units, price)


@dataclass(frozen=True)
class _Units:
    """A box's node problems, whatever the prices: one per (node, base level ``μ``) pair (node-major,
    levels ascending), each unit (an arc's pool flow or keep) repeated for each pair of its node with its
    caps in either mode; each pair's count range (mode 0) and whether its node is a single member."""

    group: np.ndarray         # per unit: its partition group
    base_cost: np.ndarray     # per unit: its cost before prices
    pair: np.ndarray          # per unit: its pair
    cap: np.ndarray           # per unit: its cap at the pair's base level (mode 0)
    high_cap: np.ndarray      # per unit: its cap one level above (mode 1: topics at level μ or more)
    pair_mu: np.ndarray
    least: np.ndarray
    most: np.ndarray
    single: np.ndarray
    node_starts: np.ndarray   # per node: its first pair


@dataclass(frozen=True)
class ArcUnits:
    """A leaf family's units: each arc's pool flow, then each keep arc's keep (its owner's own partitions);
    with their node-major order (by node, in their own order within each)."""

    node: np.ndarray
    group: np.ndarray
    cost: np.ndarray           # before prices
    owned: np.ndarray          # the keep's cap (``inf`` for a pool flow)
    natural: np.ndarray        # the units, node-major
    slot: np.ndarray           # per unit: its place in ``natural``
    first: np.ndarray          # per node: its first place
    count: np.ndarray          # per node: its units


def arc_units(leaf: LeafLP) -> ArcUnits:
    """The family's :class:`ArcUnits`."""
    net, ka = leaf.net, leaf.keep_arc
    node = np.r_[net.arc_node, net.arc_node[ka]]
    natural = np.argsort(node, kind="stable")
    slot = np.empty_like(natural)
    slot[natural] = np.arange(len(natural))
    return ArcUnits(node, np.r_[net.arc_group, net.arc_group[ka]],
                    np.r_[net.arc_cost.astype(np.float64), net.arc_cost[ka] - 1.0],
                    np.r_[np.full(len(net.arc_node), np.inf), net.arc_owned[ka].astype(np.float64)], natural, slot,
                    np.searchsorted(node[natural], np.arange(len(net.nodes))),
                    np.bincount(node, minlength=len(net.nodes)))


def repeated(units: ArcUnits, pair_node: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every unit of a node, repeated for each of the node's pairs (``pair_node``: each pair's node), in the
    node-major order: per repeated unit its pair, its place in that order and where its pair's units start."""
    reps = units.count[pair_node]
    pair = np.repeat(np.arange(len(pair_node)), reps)
    base = np.repeat(np.cumsum(reps) - reps, reps)
    return pair, units.first[pair_node[pair]] + np.arange(len(pair)) - base, base


def unit_caps(leaf: LeafLP, units: ArcUnits, unit: np.ndarray, n: np.ndarray, mu: np.ndarray,
              level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The caps of units ``unit`` of nodes of ``n`` members at base level ``mu``, their topics at ``level``: in
    mode 0 (open where the topic may sit at ``μ - 1`` or ``μ``) and one level up (mode 1: topics at ``μ`` or more)."""
    cap = np.minimum(np.minimum(leaf.group_sizes[units.group[unit]], n * (np.minimum(mu, level) + 1.0)),
                     units.owned[unit])
    cap = np.where(level >= mu - 1, cap, 0.0)
    return cap, np.where(level >= mu, cap, 0.0)


def _units(leaf: LeafLP, hi: np.ndarray, mu_lo: np.ndarray, mu_hi: np.ndarray) -> _Units | None:
    """The box's :class:`_Units`, or ``None`` above :data:`MAX_UNITS`."""
    net, sp = leaf.net, leaf.space
    mu_lo, mu_hi = np.asarray(mu_lo, dtype=np.int64), np.asarray(mu_hi, dtype=np.int64)
    width = mu_hi - mu_lo + 1
    un = arc_units(leaf)
    if int((width * un.count).sum()) > MAX_UNITS:
        return None
    node_starts = np.cumsum(width) - width
    pair_node = np.repeat(np.arange(len(net.nodes)), width)
    pair_mu = mu_lo[pair_node] + (np.arange(len(pair_node)) - np.repeat(node_starts, width))
    pair, place, _ = repeated(un, pair_node)
    unit = un.natural[place]
    n = net.node_size[pair_node].astype(np.float64)
    top = hi[sp.group_topic[un.group[unit]]].astype(np.int64)   # each unit's topic at its highest level
    cap, high_cap = unit_caps(leaf, un, unit, n[pair], pair_mu[pair], top)
    base = n * pair_mu
    single = n == 1
    return _Units(un.group[unit], un.cost[unit], pair, cap, high_cap, pair_mu, base,
                  np.where(single, base, base + n), single, node_starts)


def _priced(leaf: LeafLP, units: _Units, price: np.ndarray) -> float:
    """``L(price)`` over the box's :class:`_Units`, in rule units (as :func:`lagrangian_bound`)."""
    pairs = len(units.pair_mu)
    c = units.base_cost - price[units.group]
    low = _fill(units.pair, c, units.cap, units.least, units.most, pairs)
    high = _fill(units.pair, c, units.high_cap, units.pair_mu + 1.0, units.pair_mu + 1.0, pairs)
    values = np.where(units.single, np.minimum(low, high), low)
    per_node = np.minimum.reduceat(values, units.node_starts) if len(values) else values
    total = float(price @ leaf.group_sizes) + float(per_node.sum())
    if not math.isfinite(total):
        return math.inf
    return math.ceil(total - 1e-6) + leaf.space.owned_total


def _fill(pair: np.ndarray, cost: np.ndarray, cap: np.ndarray, least: np.ndarray, most: np.ndarray,
          pairs: int) -> np.ndarray:
    """Per pair the least ``Σ cost·take`` with ``0 <= take <= cap`` and ``least <= Σ take <= most``: the
    cheapest units first, every negative one up to ``most``, then the cheapest others up to ``least``
    (``inf`` where the caps cannot reach ``least``)."""
    order = np.lexsort((cost, pair))
    return fill_sorted(pair[order], cost[order], cap[order], least, most, pairs)


def fill_sorted(p: np.ndarray, c: np.ndarray, k: np.ndarray, least: np.ndarray, most: np.ndarray,
                pairs: int, unit_start: np.ndarray | None = None, reach: np.ndarray | None = None) -> np.ndarray:
    """:func:`_fill` for units already in order: by pair, the cheapest first within each. A caller that
    prices one set of units many times may pass what does not depend on the order within a pair: each
    unit's pair's first unit (``unit_start``) and each pair's total cap (``reach``)."""
    done = np.cumsum(k)
    if unit_start is None:
        unit_start = np.searchsorted(p, np.arange(pairs))[p]
    before = done - k - np.r_[0.0, done][unit_start]
    want = np.clip(np.bincount(p, weights=np.where(c < 0, k, 0.0), minlength=pairs), least, most)
    take = np.clip(want[p] - before, 0.0, k)
    value = np.bincount(p, weights=take * c, minlength=pairs)
    if reach is None:
        reach = np.bincount(p, weights=k, minlength=pairs)
    return np.where(reach >= least - 1e-9, value, np.inf)


def best_lagrangian(leaf: LeafLP, hi: np.ndarray, mu_lo: np.ndarray, mu_hi: np.ndarray,
                    duals: list[np.ndarray | None], enough: float = math.inf) -> float:
    """The best :func:`lagrangian_bound` over the supply prices of ``duals`` (``None`` skipped; ``-inf`` for
    none), stopping at the first that reaches ``enough``."""
    best, units = -math.inf, None
    for dual in duals:
        if dual is not None:
            units = units or _units(leaf, hi, mu_lo, mu_hi)
            if units is None:
                return -math.inf
            best = max(best, _priced(leaf, units, prices(leaf, dual)))
            if best >= enough:
                break
    return best


def pricing_pays(leaf: LeafLP) -> bool:
    """Whether the family's leaves and boxes are bounded here: their LP has more than
    ``level_policy.PRICED_MIN_COLUMNS`` columns."""
    return leaf.base.num_col > policy.PRICED_MIN_COLUMNS


PRICED = "bound above the cutoff at the carried duals' supply prices (Lagrangian)"
"""The message of a leaf :func:`priced_out` settles (the level tree counts them)."""


def priced_out(leaf: LeafLP, vector: np.ndarray, cutoff: float | None) -> HighsResult | None:
    """``vector`` settled with no solve by the Lagrangian bound at the supply prices of the duals the family's
    solves left (:attr:`WarmLP.carried <kipopt.formulations.highs.WarmLP.carried>`): status ``cutoff`` (its
    bound, model units) when that bound is above ``cutoff``, ``infeasible`` when no node can fill its count;
    ``None`` otherwise, and for leaves of at most ``level_policy.PRICED_MIN_COLUMNS`` columns."""
    if cutoff is None or not pricing_pays(leaf) or not leaf.warm.carried:
        return None
    owned = leaf.space.owned_total
    value = vector_floor(leaf, vector, cutoff + owned + 1e-9)
    if value == math.inf:
        return HighsResult("infeasible", None, None, None, False, "no node can fill its count (supply prices)")
    if value - owned > cutoff:
        return HighsResult("cutoff", None, float(value - owned), None, False, PRICED)
    return None


def vector_floor(leaf: LeafLP, vector: np.ndarray, enough: float = math.inf) -> float:
    """The best Lagrangian bound on ``vector``'s assignments (rule units) at the supply prices of the duals
    the family's solves left (:func:`best_lagrangian`, stopping at ``enough``): ``-inf`` without any, ``inf``
    where no node can fill its count. At 10,000 x 1,000 it takes 5-12 ms, and on the level tree's sweep it
    met the leaf LP's value at five of six vectors (0.03-0.9 s each by LP)."""
    if not leaf.warm.carried:
        return -math.inf
    mu = _mu(leaf.space, vector[None])[0, leaf.net.node_class]   # each node's base level at the vector
    return best_lagrangian(leaf, vector, mu, mu, leaf.warm.carried, enough)


def settled_or_priced(leaf: LeafLP, vector: np.ndarray, cutoff: float | None) -> HighsResult | None:
    """:func:`~kipopt.formulations.consumers.level_warm.relax_settled` (weak duality on the carried duals),
    else :func:`priced_out`."""
    return relax_settled(leaf, vector, cutoff) or priced_out(leaf, vector, cutoff)


def rounded_or_priced(leaf: LeafLP, vector: np.ndarray, time_limit: float | None = None,
                      cutoff: float | None = None, start=None, meanwhile=None):
    """:func:`~kipopt.formulations.consumers.level_warm.relax_rounded` unless :func:`priced_out` settles
    ``vector`` (``meanwhile()`` still run)."""
    priced = priced_out(leaf, vector, cutoff)
    if priced is None:
        return relax_rounded(leaf, vector, time_limit, cutoff, start, meanwhile)
    if meanwhile is not None:
        meanwhile()
    return priced, None


def rounded_or_priced_each(leaf: LeafLP, vectors: list[np.ndarray], time_limit: float | None = None,
                           cutoff: float | None = None, meanwhile=None) -> list:
    """:func:`~kipopt.formulations.consumers.level_warm.relax_rounded_each` for the vectors
    :func:`priced_out` does not settle, in order with those it does."""
    priced = [priced_out(leaf, v, cutoff) for v in vectors]
    solved = iter(relax_rounded_each(leaf, [v for v, p in zip(vectors, priced) if p is None], time_limit, cutoff,
                                     meanwhile))
    return [(p, None) if p is not None else next(solved) for p in priced]
