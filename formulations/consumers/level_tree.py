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
``μ⁻_m = max_{t ∈ S_c} lo_t`` and ``μ⁺_m = max_{t ∈ S_c} hi_t``: every vector of the box has
``μ⁻_m <= μ_m <= μ⁺_m`` and gives m a count ``x_m ∈ [μ⁻_m, μ⁺_m + 1]``. Member m may hold topic t
only if ``λ_t >= μ_m - 1``, possible in the box only if ``hi_t >= μ⁻_m - 1``; let ``k_m`` be m's
owned partitions of such topics that it reads at the least cross-rack cost of their partition group.
An answer that could beat one at the balance-free least cross-rack count ``X`` has exactly ``X``
cross-rack partitions, so every other owned partition is revoked, and m keeps at most
``min(k_m, x_m)``. More: at count ``x_m = ℓ`` it holds only topics with ``λ_t >= ℓ - 1``, so it
keeps at most ``g_m(ℓ) = min(ℓ, k_m(ℓ))`` with ``k_m(ℓ)`` its keepable partitions of possible topics
with ``hi_t + 1 >= ℓ`` (a member that owns much of a topic whose level stays low cannot keep it by
rising). With ``Σ_m x_m = P`` and each unit of count above ``μ⁻_m`` keeping at most one more
partition, up to the peak of ``g_m``::

    kept <= Σ_m min(k_m, μ⁻_m) + min(P - Σ_m μ⁻_m, Σ_m (max_{μ⁻_m <= ℓ <= μ⁺_m + 1} g_m(ℓ) - min(k_m, μ⁻_m)))

(the :data:`PEAK_LEVELS` highest counts are looked at one by one, the lower ones through
``g_m(ℓ) <= min(ℓ, k_m)``, which costs one sparse product per count; on the 10,000 × 1,000 benchmark
group the tree needs 156 boxes with it, 808 with ``min(k_m, μ⁺_m + 1)`` in its place) and the box's
bound is ``W X + O - kept`` (``W = O + 1``). Answers with more cross-rack partitions cost at least
``W (X + 1) > W X + O``, so the bound holds for them too. At a single vector a high member
(``μ + 1``) holds only topics with ``λ_t = μ``: it gains a kept partition over a low one only if it
owns at least ``μ + 1`` keepable partitions of those, and exactly ``P - Σ μ_m`` members are high;
the leaf bound counts that.

A box is also dropped when no vector in it admits any valid assignment:
``Σ_c n_c μ⁻_c <= P <= Σ_c n_c (μ⁺_c + 1)``; every topic's partitions fit in
what its possible holders may take (``min(μ⁺ + 1, hi_t + 1)`` each); every
class's least count fits in its possible topics. When the answer in hand is
at the least cross-rack count, a box in which some partition group has no
possible holder at its least cost cannot beat it either.

Search: best first on the bound. A box to be split is first shaved: per topic its halves
and its two end levels are bounded, whatever of those cannot beat the best answer in hand is cut,
and the cuts (one topic's narrower range raises other classes' ``μ⁻``) are bounded again until none
is left; the rest is halved. On the 10,000 × 1,000 benchmark group, from the dec-min answer, this
took 808 boxes against 2,490 for halving alone (before the peak of ``g_m`` above), the same proof. A
single vector is first bounded by the LP relaxation of its MILP
(:func:`~kipopt.formulations.consumers.level_search.fixed_model`), warm-started from the vector
before and stopped as soon as its dual objective shows that the vector cannot beat the best answer
in hand (a cutoff whose dual bound is re-checked here by weak duality,
:func:`~kipopt.formulations.highs.dual_bound`); before any solve, the row duals of the last leaf LP
solved to optimality are tried, which by weak duality bound every vector's LP and settle most leaves
(:class:`~kipopt.formulations.highs.WarmLP`). Otherwise the relaxation's high counts are rounded and
fixed and the LP solved again (:func:`~kipopt.formulations.consumers.level_warm.round_high`): an
integral answer, checked against the rule, becomes the best in hand early, so that later relaxations
stop at the cutoff, and settles the vector when it meets its relaxation. An unsettled vector is put
back and solved as a MILP (seeking only answers below the best in hand) when it comes up again. The
least bound of the open boxes is a valid bound on the rule's optimum whenever the time limit stops
the search.

Box relaxations. A box taken from the queue is first bounded by the leaves' own LP written for the
whole box (:func:`~kipopt.formulations.consumers.level_warm.relax_box`: per member node its count range
and, where the box fixes its base level, its high members' rows and its owner's keep hull; per
partition group its size; arcs open only where some vector of the box lets the node hold the topic):
when that bound reaches the best answer the box is dropped, when it only rises the box goes back in
line with it. The closed form pools what every member could keep; the LP also asks whether those
partitions and all the others find holders, and, once a node's base level is fixed, whether its high
members can hold their extra partition. It shares the leaves' HiGHS model and duals (one pattern), so a
box is often settled by the last optimum's duals and otherwise re-solved from the last basis. On a
100-member, 20-topic group of the production grid it bounds the box ``λ ∈ {99, 100}^20`` by 1,501 where
the closed form says 1,206 (the best vector: 1,526); an earlier transportation LP over the same boxes
(count ranges and supplies only) gave the same bound there but stayed far below the leaves' LPs inside
the box (1,501 at a vector whose LP is 1,549), and that group took 154 s to prove with it against
24 s with these. Above :data:`BOX_LP_MAX_COLUMNS` columns only the closed form runs.

Early answers. On groups with at most :data:`LOCAL_MAX_ARCS` arcs, the descent of
:mod:`~kipopt.formulations.consumers.level_local` first improves the answer in hand from its least
loads (at most :data:`LOCAL_TIME_SHARE` of the time): best first on flat bounds reaches single
vectors in no useful order, and every bound prunes more below a better answer.

Narrow boxes in one MILP. Where the leaves pile up (from :data:`CUBE_AFTER_LEAVES` leaf LPs on), a box
at most :data:`~kipopt.formulations.consumers.level_box.CUBE_WIDTH` wide per topic, with at least
:data:`~kipopt.formulations.consumers.level_box.CUBE_TOPICS` topics undecided and a small enough model,
is settled by one MILP over all its vectors (:mod:`~kipopt.formulations.consumers.level_box`, member
counts explicit; exact over the box): nothing below the best answer ends it, a better optimum sends
its vector straight to the leaf MILP (an answer at once), and a MILP stopped by its share of the time
leaves the box split as any other, with its bound, and its parts searched by leaves only until a
better answer turns up (:data:`~kipopt.formulations.consumers.level_box.CUBE_TIME_SHARE`).

Measured on the production grid's 40 groups of 10,000 partitions, 100 members and 20 topics (60 s
limit, one thread, two at a time): before the flow bounds and the descent, 4 proven, median gap
13.9 % (up to 30.2 %); with them (the paper's data), 7 proven, median gap 1.09 % (up to 2.7 %).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from itertools import count as counter

import numpy as np
import scipy.sparse as sps

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, cheapest, least_cross, topic_levels
from kipopt.formulations.consumers.level_box import (CUBE_HIGHS_OPTIONS, CUBE_TIME_SHARE, box_levels, box_model,
                                                     worth_a_milp)
from kipopt.formulations.consumers.level_local import descend, least_levels
from kipopt.formulations.consumers.level_search import LevelSpace, SearchResult, arcs, fixed_model, level_base, read_back
from kipopt.formulations.consumers.level_warm import leaf_columns, leaf_lp, relax, relax_box, round_high
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.formulations.highs import solve_lp


@dataclass(frozen=True)
class Tree:
    """What every box's bound reads: the level space, owners' keepable partitions, the root box."""

    space: LevelSpace
    lo: np.ndarray            # root box, per topic
    hi: np.ndarray
    total: int                # partitions
    owner_pos: np.ndarray     # per owner (members with keepable partitions), its class's row in ``pairs.classes``
    keep: sps.csr_matrix      # (owners, pairs): keepable partitions of the pair's topic
    least: int                # balance-free least cross-rack partitions X
    pairs: "Pairs"            # the subscriptions, and which may read each group at its least cost


@dataclass(frozen=True)
class Pairs:
    """The (class, topic) subscriptions, sorted by class: a box's per-class and per-topic quantities are
    computed on these instead of on the dense (classes × topics) grid, half of which is empty. A box
    batch's arrays are laid out (pairs or classes, boxes): rows gather and reduce contiguously."""

    cls: np.ndarray           # per pair: its class
    topic: np.ndarray         # per pair: its topic
    classes: np.ndarray       # the classes with at least one topic
    starts: np.ndarray        # per such class, its first pair
    counts: np.ndarray        # ... its number of pairs
    members: np.ndarray       # ... its number of members (float)
    pair_members: np.ndarray  # per pair: its class's members (float)
    by_topic: sps.csr_matrix  # (topics, pairs) 0/1: sums per topic by one product
    held: sps.csr_matrix      # (classes, pairs): the pair's topic's partitions
    reach: sps.csr_matrix | None  # (groups, pairs) 0/1: the pair's class reads the group (of its topic) at least cost


def pairs(space: LevelSpace, reach: np.ndarray | None) -> Pairs:
    cls, topic = np.nonzero(space.member_of)  # row-major: sorted by class
    P = len(cls)
    classes, starts, counts = np.unique(cls, return_index=True, return_counts=True)
    members = space.count[classes].astype(np.float64)
    by_topic = sps.csr_matrix((np.ones(P), (topic, np.arange(P))), shape=(space.member_of.shape[1], P))
    row = np.repeat(np.arange(len(classes)), counts)
    held = sps.csr_matrix((space.sizes[topic].astype(np.float64), (row, np.arange(P))), shape=(len(classes), P))
    per_group = None
    if reach is not None:  # (groups, classes) -> (groups, pairs), only where the group is of the pair's topic
        per_group = sps.csr_matrix((reach[:, cls] & (space.group_topic[:, None] == topic[None, :])).astype(np.float64))
    return Pairs(cls, topic, classes, starts, counts, members, members[row], by_topic, held, per_group)


def tree(instance: ConsumersInstance, lay: Layout, restrict: bool) -> Tree:
    space = level_base(instance, lay)
    lo, hi, _, _ = topic_levels(lay, dict(zip(lay.topics, space.sizes.tolist())), space.classes, space.count)
    best = cheapest(lay)
    keep: dict[tuple[int, int], int] = {}
    for (g, m), numbers in space.owned.items():
        t = int(space.group_topic[g])
        if space.member_of[space.member_class[m], t] and lay.cross[g, lay.member_rack[m]] <= best[g]:
            keep[(m, t)] = keep.get((m, t), 0) + len(numbers)
    keeps = np.array([(m, t, n) for (m, t), n in keep.items()], dtype=np.int64).reshape(-1, 3)
    members, owner = np.unique(keeps[:, 0], return_inverse=True)
    reach = (space.class_cross <= best[:, None]) if restrict else None  # (groups, classes): at least cost
    pr = pairs(space, reach)
    pair_of = np.full(space.member_of.shape, -1, dtype=np.int64)
    pair_of[pr.cls, pr.topic] = np.arange(len(pr.cls))
    class_row = np.full(space.member_of.shape[0], -1, dtype=np.int64)
    class_row[pr.classes] = np.arange(len(pr.classes))
    keep_matrix = sps.csr_matrix((keeps[:, 2].astype(np.float64),
                                  (owner, pair_of[space.member_class[keeps[:, 0]], keeps[:, 1]])),
                                 shape=(len(members), len(pr.cls)))
    return Tree(space, np.array([lo[t] for t in lay.topics], dtype=np.int64),
                np.array([hi[t] for t in lay.topics], dtype=np.int64), int(space.sizes.sum()),
                class_row[space.member_class[members]], keep_matrix, least_cross(lay, best), pr)


def _class_levels(pr: Pairs, per_pair: np.ndarray) -> np.ndarray:
    """``max(0, max_{t ∈ S_c} level_t)`` per class with topics, from the levels at its pairs ``(pairs, B)``."""
    return np.maximum(np.maximum.reduceat(per_pair, pr.starts, axis=0), 0)


def box_bounds(tr: Tree, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The module docstring's bound of each box (rows of ``lo``, ``hi``); ``inf`` where no vector of the
    box admits a valid assignment."""
    sp, pr = tr.space, tr.pairs
    lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
    bound = np.full(len(lo), float(sp.weight * tr.least + sp.owned_total))
    if not len(pr.cls):  # nobody subscribes to anything: only an empty group of partitions fits
        return np.where(tr.total == 0, bound, np.inf)
    hi_p = np.take(hi.T, pr.topic, axis=0)                                    # (pairs, B)
    mu_lo, mu_hi = _class_levels(pr, np.take(lo.T, pr.topic, axis=0)), _class_levels(pr, hi_p)  # (classes, B)
    # no dense products here (nor below): BLAS threads would spin on a second core after each one
    base = (pr.members[:, None] * mu_lo).sum(axis=0)
    feasible = (base <= tr.total) & ((pr.members[:, None] * (mu_hi + 1)).sum(axis=0) >= tr.total)
    possible = (hi_p + 1 >= np.repeat(mu_lo, pr.counts, axis=0)).astype(np.float64)
    mu_hi_p = np.repeat(mu_hi, pr.counts, axis=0)
    take = np.minimum(mu_hi_p, hi_p) + 1.0
    take *= pr.pair_members[:, None] * possible
    feasible &= (pr.by_topic @ take >= sp.sizes[:, None]).all(axis=0)
    feasible &= (pr.held @ possible >= pr.members[:, None] * mu_lo).all(axis=0)
    k = tr.keep @ possible                                                    # (owners, B)
    low, high = mu_lo[tr.owner_pos], mu_hi[tr.owner_pos]
    low_kept = np.minimum(k, low).sum(axis=0)
    below_top = hi_p - mu_hi_p
    at_top = tr.keep @ (possible * (below_top >= 0))                         # keepable of topics at μ⁺
    gain = _capped_gain(tr, below_top, possible, low, high, k, at_top).sum(axis=0)
    point = (lo == hi).all(axis=1)
    if point.any():  # at a single vector a member gains one only when high on its topics at level μ
        gain[point] = (at_top[:, point] >= low[:, point] + 1).sum(axis=0)
    bound -= low_kept + np.minimum(tr.total - base, gain)
    if pr.reach is not None:  # some partition group has no possible holder at its least cost
        bound = np.where((pr.reach @ possible > 0).all(axis=0), bound, float(sp.weight * (tr.least + 1)))
    return np.where(feasible, bound, np.inf)


PEAK_LEVELS = 3
"""How many counts below ``μ⁺ + 1`` :func:`_capped_gain` looks at one by one; below those it takes
``min(ℓ, k_m)`` (an upper bound of ``g_m`` there). Exact when ``μ⁺ - μ⁻ + 1 < PEAK_LEVELS``."""


def _capped_gain(tr: Tree, below_top: np.ndarray, possible: np.ndarray, low: np.ndarray, high: np.ndarray,
                 k: np.ndarray, at_top: np.ndarray) -> np.ndarray:
    """Per owner and box, how many more it can keep at its best count than at its least: at count
    ``ℓ`` it holds only topics with ``λ_t >= ℓ - 1``, so it keeps at most ``g(ℓ) = min(ℓ, k(ℓ))`` with
    ``k(ℓ)`` its keepable partitions of possible topics with ``hi_t + 1 >= ℓ``. The counts
    ``ℓ = μ⁺ + 1 - d`` for ``d < PEAK_LEVELS`` are looked at one by one, every lower ``ℓ`` at once
    through ``g(ℓ) <= min(ℓ, k)``. ``below_top``: per (class, topic) pair and box, ``hi_t - μ⁺_c``;
    ``at_top``: ``k(μ⁺ + 1)``, which the caller has."""
    # a count below μ⁻ (top - d < low) gives at most min(low - 1, k) <= base: no mask needed
    base = np.minimum(low, k)
    top = (high + 1).astype(np.float64)                                       # (owners, B)
    peak = np.maximum(base, np.minimum(top - PEAK_LEVELS, k))
    np.maximum(peak, np.minimum(top, at_top), out=peak)
    for d in range(1, PEAK_LEVELS):
        np.maximum(peak, np.minimum(top - d, tr.keep @ (possible * (below_top >= -d))), out=peak)
    return peak - base


def box_bound(tr: Tree, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """:func:`box_bounds` of one box; ``None`` when no vector in it admits a valid assignment."""
    value = float(box_bounds(tr, lo, hi)[0])
    return None if math.isinf(value) else value


def _children(tr: Tree, lo: np.ndarray, hi: np.ndarray, best: float) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Shave the box, then halve it: per topic, its lower and upper halves and its lowest and highest
    levels are bounded in one batch; whatever of those cannot beat ``best`` is cut from the box and the
    batch is bounded again, until nothing is cut. Then the topic whose halves' weaker bound is the
    highest is halved (strong branching); ties go to the one with more partitions times levels left.
    Empty when the whole box cannot beat ``best``."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        wide = np.flatnonzero(hi > lo)
        if not len(wide):
            return [(lo, hi, float(box_bounds(tr, lo, hi)[0]))]
        rows, mid = np.arange(len(wide)), (lo[wide] + hi[wide]) // 2
        los = np.repeat(lo[None], 4 * len(wide), axis=0)
        his = np.repeat(hi[None], 4 * len(wide), axis=0)
        his[4 * rows, wide], los[4 * rows + 1, wide] = mid, mid + 1       # the halves
        his[4 * rows + 2, wide], los[4 * rows + 3, wide] = lo[wide], hi[wide]  # the lowest and highest levels
        bounds = box_bounds(tr, los, his).reshape(-1, 4)
        cut = bounds >= best
        if cut[:, :2].all(axis=1).any():
            return []
        if cut.any():
            lo[wide] = np.where(cut[:, 0], mid + 1, lo[wide] + cut[:, 2])
            hi[wide] = np.where(cut[:, 1], mid, hi[wide] - cut[:, 3])
            if (lo > hi).any():
                return []
            continue
        halves = bounds[:, :2]
        score = np.lexsort(((hi[wide] - lo[wide]) * tr.space.sizes[wide], halves.max(axis=1), halves.min(axis=1)))
        pick = int(score[-1])
        return [(los[4 * pick + j], his[4 * pick + j], float(halves[pick, j])) for j in (0, 1)]


BOX, LEAF, RELAXED, SPLIT = 0, 1, 2, 3   # SPLIT: in a box whose MILP did not settle it, split only


def search_tree(instance: ConsumersInstance, lay: Layout, incumbent: float | None = None,
                deadline: float | None = None, threads: int | None = None,
                best: np.ndarray | None = None, answer: dict[str, tuple[str, ...]] | None = None
                ) -> SearchResult | None:
    """Best assignment over every topic-level vector, by branch and bound (module docstring); arguments
    and result as :func:`~kipopt.formulations.consumers.level_search.search_levels`, with no box limit;
    ``answer`` (the incumbent's assignment) starts the descent of
    :mod:`~kipopt.formulations.consumers.level_local` from its least loads."""
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
    stats = {"level_boxes": 0, "level_relaxed": 0, "level_infeasible": 0, "level_cutoff": 0, "level_rounded": 0,
             "level_milps": 0, "level_cubes": 0, "level_box_lps": 0}

    def kind_of(lo: np.ndarray, hi: np.ndarray) -> int:
        return LEAF if (lo == hi).all() else BOX

    def push(bound: float, kind: int, lo: np.ndarray, hi: np.ndarray, relaxed: bool = False, start=None) -> None:
        # ties go to the narrower box (depth first among equals): with flat bounds a breadth-first
        # order would never reach a single vector. ``start``: the basis the box's relaxation (or its
        # parent's) ended at, which its own starts from (measured: 42 % fewer simplex iterations on a
        # 100-member, 20-topic group than from the last basis, which best first order leaves far away)
        if bound < best_value:
            heapq.heappush(heap, (bound, int((hi - lo).sum()), next(seq), kind, lo, hi, relaxed, start))

    push(float(box_bounds(tr, tr.lo, tr.hi)[0]), kind_of(tr.lo, tr.hi), tr.lo, tr.hi)
    open_bound = math.inf
    warm = None
    columns = leaf_columns(net)
    box_lps, eager = columns <= BOX_LP_MAX_COLUMNS, columns <= BOX_LP_EAGER_COLUMNS
    lps_at = t0 + max(BOX_LP_LATE_SECONDS, BOX_LP_LATE_SHARE * (deadline - t0)) if deadline is not None else math.inf
    failed_at = math.inf   # the best answer when a box's MILP last ran out of its turn

    def time_left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    def cutoff() -> float | None:
        # in model units (without O): an objective above best - O - 1 rounds up to the best, cannot beat it
        return None if not math.isfinite(best_value) else best_value - sp.owned_total - 0.5

    def proven(result, cut: float | None) -> float | None:
        """HiGHS' bound in rule units; it holds only up to the cutoff HiGHS ran with."""
        if result.bound is None:
            return None
        return min(float(result.bound), math.inf if cut is None else cut) + sp.owned_total

    def leaf_milp(vector: np.ndarray, bound: float) -> float | None:
        """The vector's MILP, seeking only answers below the best: ``None`` when that settles it, else
        (time ran out) the bound it leaves."""
        nonlocal found, best_value
        model = fixed_model(sp, vector, net)
        cut = cutoff()
        result = solve_lp(model.lp, integer=True, time_limit=time_left(), threads=threads, cutoff=cut)
        stats["level_milps"] += 1
        if result.status == "infeasible":
            return None
        found, best_value = _better(instance, sp, model, result, found, best_value)
        if result.status == "optimal":
            return None
        held = proven(result, cut)
        return bound if held is None else max(bound, held)

    def improve() -> None:
        """The descent from ``answer``'s least loads (:mod:`~kipopt.formulations.consumers.level_local`)."""
        nonlocal warm
        warm = warm or leaf_lp(sp, net, threads)

        def screen(vector: np.ndarray) -> float:
            lp = relax(warm, vector, time_left(), cutoff())
            return math.inf if lp.status != "optimal" else math.ceil(lp.objective - 1e-6) + sp.owned_total

        left = time_left()
        until = math.inf if left is None else time.perf_counter() + LOCAL_TIME_SHARE * left
        start = np.clip(_least_levels(lay, answer), tr.lo, tr.hi)
        stats.update(descend(start, tr.lo, tr.hi, screen, lambda v: leaf_milp(v, -math.inf),
                             lambda: best_value, until))

    descent = answer is not None and len(net.arc_node) <= LOCAL_MAX_ARCS
    while heap and heap[0][0] < best_value:
        if deadline is not None and time_left() <= 0.01:
            open_bound = heap[0][0]
            break
        if descent and stats["level_boxes"] >= LOCAL_AFTER_BOXES:
            descent = False
            improve()
            continue
        bound, _, _, kind, lo, hi, relaxed, start = heapq.heappop(heap)
        stats["level_boxes"] += 1
        left = time_left()
        late = stats["level_boxes"] > BOX_LP_LATE_BOXES or (deadline is not None and time.perf_counter() >= lps_at)
        if kind in (BOX, SPLIT) and not relaxed and box_lps and (eager or late):  # back in line if it rises
            warm = warm or leaf_lp(sp, net, threads)
            value = _box_value(sp, relax_box(warm, lo, hi, left, cutoff(), start))
            stats["level_box_lps"] += 1
            if value is not None and value >= best_value:
                continue
            if value is not None and value > bound:
                push(value, kind, lo, hi, True, warm.warm.basis)
                continue
        if kind == BOX and stats["level_relaxed"] >= CUBE_AFTER_LEAVES and worth_a_milp(sp, net, lo, hi):
            model = box_model(sp, net, lo, hi)
            cut = cutoff()
            turn = None if left is None else CUBE_TIME_SHARE * left
            result = solve_lp(model.lp, time_limit=turn, threads=threads, cutoff=cut, options=CUBE_HIGHS_OPTIONS)
            stats["level_cubes"] += 1
            if result.status == "infeasible":
                continue
            if result.status == "optimal" and result.x is not None:
                value = math.ceil(result.objective - 1e-6) + sp.owned_total
                stuck = leaf_milp(box_levels(model, lo, result.x), max(bound, value)) if value < best_value else None
                if stuck is not None:
                    open_bound = stuck
                    break
                continue
            held = proven(result, cut)  # not settled in its turn: split it, what HiGHS proved still holds
            bound = bound if held is None else max(bound, held)
            kind, failed_at = SPLIT, best_value
        if kind == SPLIT and best_value < failed_at:
            kind = BOX
        if kind in (BOX, SPLIT):  # below a box its MILP did not settle, leaves only until a better answer
            for l2, h2, b2 in _children(tr, lo, hi, best_value):
                push(max(b2, bound), SPLIT if kind == SPLIT and (l2 != h2).any() else kind_of(l2, h2), l2, h2,
                     start=start)
            continue
        if kind == LEAF:
            warm = warm or leaf_lp(sp, net, threads)
            lp = relax(warm, lo, left, cutoff(), start)
            stats["level_relaxed"] += 1
            if lp.status == "infeasible":
                stats["level_infeasible"] += 1
                continue
            if lp.status == "cutoff":
                stats["level_cutoff"] += 1
                continue
            if lp.status != "optimal" or lp.objective is None:
                open_bound = bound
                break
            bound = max(bound, math.ceil(lp.objective - 1e-6) + sp.owned_total)
            if bound >= best_value:
                continue
            left = time_left()
            rounded = round_high(warm, lo, lp.x, left)  # an early answer lets later relaxations stop at the cutoff
            if rounded is not None:
                before = best_value
                found, best_value = _better(instance, sp, *rounded, found, best_value)
                stats["level_rounded"] += best_value < before
                if best_value <= bound:  # the leaf's relaxation is met: nothing better here
                    continue
            push(float(bound), RELAXED, lo, hi)  # its MILP runs when it comes up again
            continue
        stuck = leaf_milp(lo, bound)
        if stuck is not None:
            open_bound = stuck
            break
    if heap:
        open_bound = min(open_bound, heap[0][0])
    info = dict(stats, level_seconds=round(time.perf_counter() - t0, 6), level_search="tree")
    return SearchResult(found, None if found is None else best_value, float(min(best_value, open_bound)), info)


BOX_LP_EAGER_COLUMNS = 10_000
"""Up to this many leaf LP columns every box gets its relaxation. Above, the tree starts with its closed-form
bounds alone and adds the relaxations late (:data:`BOX_LP_LATE_BOXES`): on the 10,000 x 1,000 benchmark
group (16,000 columns) its proof took 5.9 s with them from the start (76 boxes, 70 box LPs) against 1.6 s
without (156 boxes); a 100-member, 20-topic group has about 2,000 to 5,000."""

BOX_LP_MAX_COLUMNS = 50_000
"""Above this many columns, no box relaxations (a solve there runs interior point in a child, seconds each)."""

BOX_LP_LATE_BOXES = 300
BOX_LP_LATE_SHARE = 0.25
BOX_LP_LATE_SECONDS = 5.0
"""Models above :data:`BOX_LP_EAGER_COLUMNS` get box relaxations once the closed-form search has popped this
many boxes, or used this share of its time and at least these seconds: the 10,000 x 1,000 benchmark
group, proven in 156 boxes and 1.5 s, never gets them; a 100,000 x 1,000 x 50 group, which pops a
handful of boxes in a minute, gets them after 15 s."""

CUBE_AFTER_LEAVES = 200
"""Boxes go to the MILP of :mod:`~kipopt.formulations.consumers.level_box` only once this many leaf LPs have
been solved: until then the box relaxations and the leaves settle the group, or show that they do not.
Measured on four 100-member, 20-topic groups of the production grid (60 s limit): with the MILPs from the
start 38, 15, 31 and 33 s (two groups spent their time in box MILPs the box LPs did not need: 2 s
without them); without any, two were left unproven (1,115 and 1,008 against 1,116 and 1,009); from
200 leaves on, 2.1, 15.9, 31.0 and 2.4 s, all four proven."""

LOCAL_AFTER_BOXES = 500
"""The descent runs once the search has popped this many boxes without ending: the groups it proves
sooner do not need it (on the oracle benchmark's 50 groups of 10-100 members, a descent first took
their exact solves from 2.2 to 5.8 s in all)."""

LOCAL_TIME_SHARE = 0.25
"""The share of the time left that the descent of :mod:`~kipopt.formulations.consumers.level_local` may use."""

LOCAL_MAX_ARCS = 5_000
"""The descent runs on groups whose leaf models have at most this many arcs (a 100-member, 20-topic group
has about 2,000). At 10,000 x 1,000 (16,000) its leaf MILPs take 0.85 s each, and it spent 8 s where
the tree alone proves the group in 1.5 s."""


def _least_levels(lay: Layout, answer: dict[str, tuple[str, ...]]) -> np.ndarray:
    index = {t: i for i, t in enumerate(lay.topics)}
    loads = np.array([len(answer.get(m, ())) for m in lay.members], dtype=np.int64)
    member_topics = [np.array([index[t] for t in ts if t in index], dtype=np.int64) for ts in lay.member_topics]
    return least_levels(member_topics, loads, len(lay.topics))


def _better(instance: ConsumersInstance, sp: LevelSpace, model, result, found, best_value: float):
    """``(answer, value)``: ``result``'s, read back, when it beats ``best_value`` and the rule agrees (it
    meets the rule at the value the model says), else ``(found, best_value)``."""
    if result.x is None or result.objective is None:
        return found, best_value
    value = float(round(result.objective)) + sp.owned_total
    if value < best_value:
        answer = read_back(sp, model, result.x)
        if not balanced_violations(instance, answer) and balanced_objective(instance, answer) == value:
            return answer, value
    return found, best_value



def _box_value(sp: LevelSpace, result) -> float | None:
    """A box relaxation's bound in rule units: ``inf`` when no vector of the box has a valid assignment
    over the tree's arcs (with least-cost arcs only, none at the least cross-rack count, where the answer
    in hand is), ``None`` when the solve did not finish."""
    if result.status == "infeasible":
        return math.inf
    if result.status == "cutoff":
        return math.ceil(float(result.bound) - 1e-6) + sp.owned_total
    if result.status != "optimal" or result.objective is None:
        return None
    return math.ceil(result.objective - 1e-6) + sp.owned_total
