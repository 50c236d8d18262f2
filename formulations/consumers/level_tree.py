"""The rule ``balanced`` by branch and bound over boxes of topic levels.

The level lemma of :mod:`~kipopt.formulations.consumers.level_search` makes
the rule's optimum the least, over topic-level vectors ``λ``, of a small MILP
with ``λ`` fixed. That module enumerates the whole box of
:func:`~kipopt.formulations.consumers.groups.topic_levels`, which grows as
(levels per topic) ^ topics: 6 · 10^11 vectors for ten topics at 10,000
partitions. Here the box is split instead, one topic's range at a time, and a
sub-box is dropped as soon as a bound valid for *every* vector in it reaches
the best answer in hand.

Bound of a box ``[lo, hi]`` (rule units). For a member m of class c let
``μ⁻_m = max_{t ∈ S_c} lo_t`` and ``μ⁺_m = max_{t ∈ S_c} hi_t``: every vector
of the box has ``μ⁻_m <= μ_m <= μ⁺_m`` and gives m a count
``x_m ∈ [μ⁻_m, μ⁺_m + 1]``. Member m may hold topic t only if
``λ_t >= μ_m - 1``, possible in the box only if ``hi_t >= μ⁻_m - 1``; let
``k_m`` be m's owned partitions of such topics that it reads at the least
cross-rack cost of their partition group. An answer that could beat one at
the balance-free least cross-rack count ``X`` has exactly ``X`` cross-rack
partitions, so every other owned partition is revoked, and m keeps at most
``min(k_m, x_m)``. With ``Σ_m x_m = P`` and each unit of count above ``μ⁻_m``
keeping at most one more partition::

    kept <= Σ_m min(k_m, μ⁻_m) + min(P - Σ_m μ⁻_m, Σ_m max(0, min(k_m, μ⁺_m + 1) - μ⁻_m))

and the box's bound is ``W X + O - kept`` (``W = O + 1``). Answers with more
cross-rack partitions cost at least ``W (X + 1) > W X + O``, so the bound holds
for them too. At a single vector a high member (``μ + 1``) holds only topics
with ``λ_t = μ``: it gains a kept partition over a low one only if it owns at
least ``μ + 1`` keepable partitions of those, and exactly
``P - Σ μ_m`` members are high; the leaf bound counts that.

A box is also dropped when no vector in it admits any valid assignment:
``Σ_c n_c μ⁻_c <= P <= Σ_c n_c (μ⁺_c + 1)``; every topic's partitions fit in
what its possible holders may take (``min(μ⁺ + 1, hi_t + 1)`` each); every
class's least count fits in its possible topics. When the answer in hand is
at the least cross-rack count, a box in which some partition group has no
possible holder at its least cost cannot beat it either.

Search: best first on the bound. A single vector is first bounded by the LP
relaxation of its MILP (:func:`~kipopt.formulations.consumers.level_search.fixed_model`),
put back, and solved as a MILP (seeking only answers below the best in hand)
when it comes up again. The least bound of the open boxes is a valid bound on
the rule's optimum whenever the time limit stops the search.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from itertools import count as counter

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, cheapest, least_cross, topic_levels
from kipopt.formulations.consumers.level_search import LevelSpace, SearchResult, arcs, fixed_model, level_base, read_back
from kipopt.formulations.consumers.level_warm import leaf_lp, relax
from kipopt.formulations.highs import solve_lp


@dataclass(frozen=True)
class Tree:
    """What every box's bound reads: the level space, owners' keepable partitions, the root box."""

    space: LevelSpace
    lo: np.ndarray            # root box, per topic
    hi: np.ndarray
    total: int                # partitions
    owner_class: np.ndarray   # per owner (members with keepable partitions), its class
    keep_owner: np.ndarray    # per (owner, topic) pair with keepable partitions: owner index
    keep_topic: np.ndarray    # ... topic index
    keep_count: np.ndarray    # ... how many
    least: int                # balance-free least cross-rack partitions X
    pairs: "Pairs"            # the subscriptions, and which may read each group at its least cost


@dataclass(frozen=True)
class Pairs:
    """The (class, topic) subscriptions, sorted by class: a box's per-class and per-topic quantities are
    computed on these instead of on the dense (classes × topics) grid, half of which is empty."""

    cls: np.ndarray           # per pair: its class
    topic: np.ndarray         # per pair: its topic
    classes: np.ndarray       # the classes with at least one topic
    starts: np.ndarray        # per such class, its first pair
    by_topic: np.ndarray      # (pairs, topics) 0/1: sums per topic by one product
    keep: np.ndarray          # per keepable (owner, topic) entry of the tree: its pair
    reach: np.ndarray | None  # (pairs, groups) 0/1: the pair's class reads the group (of its topic) at least cost


def pairs(space: LevelSpace, owner_class: np.ndarray, keep_topic: np.ndarray,
          reach: np.ndarray | None) -> Pairs:
    cls, topic = np.nonzero(space.member_of)  # row-major: sorted by class
    classes, starts = np.unique(cls, return_index=True)
    by_topic = np.zeros((len(cls), space.member_of.shape[1]))
    by_topic[np.arange(len(cls)), topic] = 1.0
    index = np.full(space.member_of.shape, -1, dtype=np.int64)
    index[cls, topic] = np.arange(len(cls))
    per_group = None
    if reach is not None:  # (groups, classes) -> (pairs, groups), only where the group is of the pair's topic
        per_group = (reach[:, cls].T & (space.group_topic[None, :] == topic[:, None])).astype(np.float64)
    return Pairs(cls, topic, classes, starts, by_topic, index[owner_class, keep_topic], per_group)


def tree(instance: ConsumersInstance, lay: Layout, restrict: bool) -> Tree:
    space = level_base(instance, lay)
    lo, hi, _, _ = topic_levels(lay, dict(zip(lay.topics, space.sizes.tolist())), space.classes, space.count)
    best = cheapest(lay)
    keep: dict[tuple[int, int], int] = {}
    for (g, m), numbers in space.owned.items():
        t = int(space.group_topic[g])
        if space.member_of[space.member_class[m], t] and lay.cross[g, lay.member_rack[m]] <= best[g]:
            keep[(m, t)] = keep.get((m, t), 0) + len(numbers)
    members = np.array(sorted({m for m, _ in keep}), dtype=np.int64)
    position = {int(m): i for i, m in enumerate(members)}
    keeps = np.array([(position[m], t, n) for (m, t), n in keep.items()], dtype=np.int64).reshape(-1, 3)
    reach = (space.class_cross <= best[:, None]) if restrict else None  # (groups, classes): at least cost
    owner_class = space.member_class[members]
    return Tree(space, np.array([lo[t] for t in lay.topics], dtype=np.int64),
                np.array([hi[t] for t in lay.topics], dtype=np.int64), int(space.sizes.sum()),
                owner_class, keeps[:, 0], keeps[:, 1], keeps[:, 2], least_cross(lay, best),
                pairs(space, owner_class[keeps[:, 0]], keeps[:, 1], reach))


def _levels(tr: Tree, levels: np.ndarray) -> np.ndarray:
    """``max_{t ∈ S_c} levels_t`` per box and class, ``(B, C)`` (0 for a class without topics)."""
    pr = tr.pairs
    out = np.zeros((len(levels), tr.space.member_of.shape[0]), dtype=np.int64)
    if len(pr.cls):
        out[:, pr.classes] = np.maximum(np.maximum.reduceat(levels[:, pr.topic], pr.starts, axis=1), 0)
    return out


def box_bounds(tr: Tree, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The module docstring's bound of each box (rows of ``lo``, ``hi``); ``inf`` where no vector of the
    box admits a valid assignment."""
    sp, pr = tr.space, tr.pairs
    lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
    mu_lo, mu_hi = _levels(tr, lo), _levels(tr, hi)
    n = np.where(sp.member_of.any(axis=1), sp.count, 0)
    base = mu_lo @ n
    feasible = (base <= tr.total) & ((mu_hi + 1) @ n >= tr.total)
    hi_p = hi[:, pr.topic]
    possible = hi_p >= mu_lo[:, pr.cls] - 1                                          # (B, pairs)
    take = np.minimum(mu_hi[:, pr.cls] + 1, hi_p + 1) * n[pr.cls]
    feasible &= (np.where(possible, take, 0) @ pr.by_topic >= sp.sizes[None]).all(axis=1)
    if len(pr.cls):
        held = np.add.reduceat(np.where(possible, sp.sizes[pr.topic], 0), pr.starts, axis=1)
        feasible &= (held >= n[pr.classes] * mu_lo[:, pr.classes]).all(axis=1)
    bound = np.full(len(lo), float(sp.weight * tr.least + sp.owned_total))
    ok = possible[:, pr.keep]                                                        # (B, keeps)
    k = _per_owner(tr, tr.keep_count * ok)
    point = (lo == hi).all(axis=1)
    low, high = mu_lo[:, tr.owner_class], mu_hi[:, tr.owner_class]
    low_kept = np.minimum(k, low).sum(axis=1)
    gain = np.maximum(0, np.minimum(k, high + 1) - low).sum(axis=1)
    if point.any():  # at a single vector a member gains one only when high on its topics at level μ
        top = lo[point][:, tr.keep_topic] == low[point][:, tr.keep_owner]
        k_top = _per_owner(tr, tr.keep_count * top)
        gain[point] = (k_top >= low[point] + 1).sum(axis=1)
    kept = low_kept + np.minimum(tr.total - base, gain)
    bound -= kept
    if pr.reach is not None:  # some partition group has no possible holder at its least cost
        reach = possible.astype(np.float64) @ pr.reach
        bound = np.where((reach > 0).all(axis=1), bound, float(sp.weight * (tr.least + 1)))
    return np.where(feasible, bound, np.inf)


def box_bound(tr: Tree, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """:func:`box_bounds` of one box; ``None`` when no vector in it admits a valid assignment."""
    value = float(box_bounds(tr, lo, hi)[0])
    return None if math.isinf(value) else value


def _per_owner(tr: Tree, weights: np.ndarray) -> np.ndarray:
    """Sum ``(B, pairs)`` weights per owner: ``(B, owners)``."""
    B, owners = len(weights), len(tr.owner_class)
    flat = (np.arange(B)[:, None] * owners + tr.keep_owner[None]).ravel()
    return np.bincount(flat, weights=weights.ravel(), minlength=B * owners).reshape(B, owners).astype(np.int64)


def _children(tr: Tree, lo: np.ndarray, hi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Halve the topic whose halves' weaker bound is the highest (strong branching: every candidate's
    halves are bounded in one batch); ties go to the one with more partitions times levels left."""
    wide = np.flatnonzero(hi > lo)
    mid = (lo[wide] + hi[wide]) // 2
    los = np.repeat(lo[None], 2 * len(wide), axis=0)
    his = np.repeat(hi[None], 2 * len(wide), axis=0)
    rows = np.arange(len(wide))
    his[2 * rows, wide] = mid
    los[2 * rows + 1, wide] = mid + 1
    bounds = box_bounds(tr, los, his).reshape(-1, 2)
    score = np.lexsort(((hi[wide] - lo[wide]) * tr.space.sizes[wide], bounds.max(axis=1), bounds.min(axis=1)))
    pick = int(score[-1])
    return [(los[2 * pick + j], his[2 * pick + j], float(bounds[pick, j])) for j in (0, 1)]


BOX, LEAF, RELAXED = 0, 1, 2


def search_tree(instance: ConsumersInstance, lay: Layout, incumbent: float | None = None,
                deadline: float | None = None, threads: int | None = None,
                best: np.ndarray | None = None) -> SearchResult | None:
    """Best assignment over every topic-level vector, by branch and bound (module docstring); arguments
    and result as :func:`~kipopt.formulations.consumers.level_search.search_levels`, with no box limit."""
    t0 = time.perf_counter()
    if not lay.topics:
        return None
    tr = tree(instance, lay, restrict=best is not None)
    sp = tr.space
    net = arcs(sp, best if incumbent is not None else None)
    best_value = math.inf if incumbent is None else float(incumbent)
    found = None
    seq = counter()
    heap: list = []
    stats = {"level_boxes": 0, "level_relaxed": 0, "level_infeasible": 0, "level_milps": 0}

    def push(bound: float, kind: int, lo: np.ndarray, hi: np.ndarray) -> None:
        # ties go to the narrower box (depth first among equals): with flat bounds a breadth-first
        # order would never reach a single vector
        if bound < best_value:
            heapq.heappush(heap, (bound, int((hi - lo).sum()), next(seq), kind, lo, hi))

    push(float(box_bounds(tr, tr.lo, tr.hi)[0]), LEAF if (tr.lo == tr.hi).all() else BOX, tr.lo, tr.hi)
    open_bound = math.inf
    warm = None
    while heap and heap[0][0] < best_value:
        if deadline is not None and deadline - time.perf_counter() <= 0.01:
            open_bound = heap[0][0]
            break
        bound, _, _, kind, lo, hi = heapq.heappop(heap)
        stats["level_boxes"] += 1
        if kind == BOX:
            for l2, h2, b2 in _children(tr, lo, hi):
                push(b2, LEAF if (l2 == h2).all() else BOX, l2, h2)
            continue
        left = None if deadline is None else deadline - time.perf_counter()
        if kind == LEAF:
            warm = warm or leaf_lp(sp, net, threads)
            lp = relax(warm, lo, left)
            stats["level_relaxed"] += 1
            if lp.status == "infeasible":
                stats["level_infeasible"] += 1
                continue
            if lp.status != "optimal" or lp.objective is None:
                open_bound = bound
                break
            relaxed = max(bound, math.ceil(lp.objective - 1e-6) + sp.owned_total)
            push(float(relaxed), RELAXED, lo, hi)  # its MILP runs when it comes up again
            continue
        model = fixed_model(sp, lo, net)
        cutoff = None if not math.isfinite(best_value) else best_value - sp.owned_total - 0.5
        result = solve_lp(model.lp, integer=True, time_limit=left, threads=threads, cutoff=cutoff)
        stats["level_milps"] += 1
        if result.status == "infeasible":
            continue
        found, best_value = _better(sp, model, result, found, best_value)
        if result.status != "optimal":  # HiGHS' bound holds only up to the cutoff
            cut = math.inf if cutoff is None else cutoff
            open_bound = bound if result.bound is None else max(bound, min(float(result.bound), cut) + sp.owned_total)
            break
    if heap:
        open_bound = min(open_bound, heap[0][0])
    info = dict(stats, level_seconds=round(time.perf_counter() - t0, 6), level_search="tree")
    return SearchResult(found, None if found is None else best_value, float(min(best_value, open_bound)), info)


def _better(sp: LevelSpace, model, result, found, best_value: float):
    if result.x is None or result.objective is None:
        return found, best_value
    value = float(round(result.objective)) + sp.owned_total
    if value < best_value:
        return read_back(sp, model, result.x), value
    return found, best_value
