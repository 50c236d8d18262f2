"""Closed-form bounds of a box of topic levels, valid for every vector in it, and the box's shaving and
halving: what :mod:`~kipopt.formulations.consumers.level_tree` bounds and splits its boxes with.

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

A box to be split is first shaved: per topic its halves and its two end levels are bounded, whatever of
those cannot beat the best answer in hand is cut, and the cuts (one topic's narrower range raises other
classes' ``μ⁻``) are bounded again until none is left; the rest is halved, on the topic whose halves'
weaker bound is the highest (strong branching on the closed form). On the 10,000 × 1,000 benchmark
group, from the dec-min answer, this took 808 boxes against 2,490 for halving alone (before the peak of
``g_m`` above), the same proof. The shaving loop (:func:`shave_box`) takes its bounds as a function, so
:mod:`~kipopt.formulations.consumers.level_duals` shaves with a box relaxation's duals in the same way.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from kipopt._scipy import sparse
from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, cheapest, least_cross, topic_levels
from kipopt.formulations.consumers.level_search import LevelSpace, level_base

if TYPE_CHECKING:
    import scipy.sparse as sps


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

    @property
    def q(self) -> int:
        """``⌊P / M⌋`` over every member (the count the coupling, the certificate and its floor read around)."""
        return self.total // len(self.space.member_class)

    @property
    def extra(self) -> int:
        """``r = P - q M``: the partitions left once every member holds ``q``."""
        return self.total - self.q * len(self.space.member_class)


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
    sps = sparse()  # here, not above: see tree()

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


def root_box(lay: Layout, space: LevelSpace) -> tuple[np.ndarray, np.ndarray]:
    """The root box, per topic: its least and greatest level in any pairwise balanced assignment."""
    lo, hi, _, _ = topic_levels(lay, dict(zip(lay.topics, space.sizes.tolist())), space.classes, space.count)
    return (np.array([lo[t] for t in lay.topics], dtype=np.int64),
            np.array([hi[t] for t in lay.topics], dtype=np.int64))


def tree(instance: ConsumersInstance, lay: Layout, restrict: bool, space: LevelSpace | None = None) -> Tree:
    """The index every box's bound reads (over ``space``, :func:`~kipopt.formulations.consumers.level_search.level_base`'s,
    when in hand)."""
    # scipy.sparse is imported on the first tree made (0.05 s through kipopt._scipy, 0.12 s as usual): where
    # the tree's start is made beside the dec-min stages (level_start), so is the import
    sps = sparse()

    space = level_base(instance, lay) if space is None else space
    lo, hi = root_box(lay, space)
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
    return Tree(space, lo, hi, int(space.sizes.sum()),
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
    # levels as int32 and masks as bools: the (pairs, boxes) arrays are what a batch's time goes to
    # (memory traffic: 24,000 pairs x 200 boxes on a 50-topic group)
    hi_t, lo_t = np.ascontiguousarray(hi.T, dtype=np.int32), np.ascontiguousarray(lo.T, dtype=np.int32)
    hi_p = np.take(hi_t, pr.topic, axis=0)                                    # (pairs, B)
    mu_lo, mu_hi = _class_levels(pr, np.take(lo_t, pr.topic, axis=0)), _class_levels(pr, hi_p)  # (classes, B)
    # no dense products here (nor below): BLAS threads would spin on a second core after each one
    base = (pr.members[:, None] * mu_lo).sum(axis=0)
    feasible = (base <= tr.total) & ((pr.members[:, None] * (mu_hi + 1)).sum(axis=0) >= tr.total)
    mu_hi_p = np.repeat(mu_hi, pr.counts, axis=0)
    below_top = hi_p - mu_hi_p
    ok = hi_p >= np.repeat(mu_lo, pr.counts, axis=0) - 1
    possible = ok.astype(np.float64)
    take = np.minimum(below_top, 0, out=hi_p)   # min(μ⁺, hi) - μ⁺, in hi_p's place (not needed after)
    take += mu_hi_p + 1
    take = take * pr.pair_members[:, None]
    take *= possible
    feasible &= (pr.by_topic @ take >= sp.sizes[:, None]).all(axis=0)
    feasible &= (pr.held @ possible >= pr.members[:, None] * mu_lo).all(axis=0)
    k = tr.keep @ possible                                                    # (owners, B)
    low, high = mu_lo[tr.owner_pos], mu_hi[tr.owner_pos]
    low_kept = np.minimum(k, low).sum(axis=0)
    at_top = tr.keep @ (ok & (below_top >= 0)).astype(np.float64)            # keepable of topics at μ⁺
    gain = _capped_gain(tr, below_top, ok, low, high, k, at_top).sum(axis=0)
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
    through ``g(ℓ) <= min(ℓ, k)``. ``possible``: per (class, topic) pair and box, whether the class may
    hold the topic (bool); ``below_top``: per pair and box, ``hi_t - μ⁺_c``;
    ``at_top``: ``k(μ⁺ + 1)``, which the caller has."""
    # a count below μ⁻ (top - d < low) gives at most min(low - 1, k) <= base: no mask needed
    base = np.minimum(low, k)
    top = (high + 1).astype(np.float64)                                       # (owners, B)
    peak = np.maximum(base, np.minimum(top - PEAK_LEVELS, k))
    np.maximum(peak, np.minimum(top, at_top), out=peak)
    for d in range(1, PEAK_LEVELS):
        np.maximum(peak, np.minimum(top - d, tr.keep @ (possible & (below_top >= -d)).astype(np.float64)), out=peak)
    return peak - base


def box_bound(tr: Tree, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """:func:`box_bounds` of one box; ``None`` when no vector in it admits a valid assignment."""
    value = float(box_bounds(tr, lo, hi)[0])
    return None if math.isinf(value) else value


def children(tr: Tree, lo: np.ndarray, hi: np.ndarray, best: float, until: float | None = None
             ) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Shave the box by its closed-form bounds (:func:`shave_box`), then halve it: the topic whose halves'
    weaker bound in the shave's last batch is the highest is halved (strong branching); ties go to the one
    with more partitions times levels left. Empty when the whole box cannot beat ``best``. A shave stopped
    at ``until`` (a ``time.perf_counter()`` value: the root's takes 3 s on a 50-topic group of 100,000
    partitions, which overran a 5-second limit by 2.5 s) halves the topic with the most partitions times
    levels left, each half bounded as the shaved box."""
    shaved = shave_box(lo, hi, best, lambda los, his: box_bounds(tr, los, his), until)
    if shaved is None:
        return []
    lo, hi, wide = shaved.lo, shaved.hi, shaved.wide
    work = (hi[wide] - lo[wide]) * tr.space.sizes[wide]
    if not len(shaved.los):  # a single vector, or a shave stopped at ``until``
        bound = float(box_bounds(tr, lo, hi)[0])
        return [(lo, hi, bound)] if not len(wide) else _halves(lo, hi, int(wide[np.argmax(work)]), (bound, bound))
    halves = shaved.bounds[:, :2]
    pick = int(np.lexsort((work, halves.max(axis=1), halves.min(axis=1)))[-1])
    return _halves(lo, hi, int(wide[pick]), halves[pick])


def _halves(lo: np.ndarray, hi: np.ndarray, topic: int, bounds) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The box halved on ``topic``, its lower and upper half with ``bounds[0]`` and ``bounds[1]``."""
    mid = (lo[topic] + hi[topic]) // 2
    low_hi, high_lo = hi.copy(), lo.copy()
    low_hi[topic], high_lo[topic] = mid, mid + 1
    return [(lo, low_hi, float(bounds[0])), (high_lo, hi, float(bounds[1]))]


@dataclass(frozen=True)
class Shaved:
    """A shaved box and the last batch bounded to shave it: per topic still wide, its lower and upper
    halves and its lowest and highest levels (rows ``4 i .. 4 i + 3`` of ``los``, ``his``; ``bounds``
    ``(wide, 4)``), none of which could be cut."""

    lo: np.ndarray
    hi: np.ndarray
    wide: np.ndarray
    los: np.ndarray
    his: np.ndarray
    bounds: np.ndarray

    @classmethod
    def unbatched(cls, lo: np.ndarray, hi: np.ndarray) -> "Shaved":
        """The box with no batch: a single vector, or a shave stopped at its deadline."""
        empty = np.zeros((0, len(lo)), dtype=lo.dtype)
        return cls(lo, hi, np.flatnonzero(hi > lo), empty, empty, np.zeros((0, 4)))


def shave_box(lo: np.ndarray, hi: np.ndarray, best: float, bounds_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
              until: float | None = None) -> Shaved | None:
    """Per topic, its lower and upper halves and its lowest and highest levels are bounded in one batch
    (``bounds_of(los, his)``: a bound valid for every vector of each box); whatever of those cannot beat
    ``best`` is cut from the box and the batch is bounded again, until nothing is cut. An end that was
    cut is tried twice as wide in the next batch, one that was not half as wide, down to one level (on a
    100,000-partition, 50-topic group the root's shave took 21 batches instead of 40, to the same box).
    ``None`` when the whole box cannot beat ``best``. Past ``until`` (a ``time.perf_counter()`` value) it
    returns the box shaved so far, with no batch (``los`` empty)."""
    lo, hi = lo.copy(), hi.copy()
    step_lo, step_hi = np.ones_like(lo), np.ones_like(hi)
    while True:
        wide = np.flatnonzero(hi > lo)
        if not len(wide):
            return Shaved.unbatched(lo, hi)
        rows, mid = np.arange(len(wide)), (lo[wide] + hi[wide]) // 2
        s_lo, s_hi = step_lo[wide], step_hi[wide]
        los = np.repeat(lo[None], 4 * len(wide), axis=0)
        his = np.repeat(hi[None], 4 * len(wide), axis=0)
        his[4 * rows, wide], los[4 * rows + 1, wide] = mid, mid + 1       # the halves
        his[4 * rows + 2, wide] = np.minimum(lo[wide] + s_lo - 1, hi[wide])  # the lowest and highest levels
        los[4 * rows + 3, wide] = np.maximum(hi[wide] - s_hi + 1, lo[wide])
        bounds = bounds_of(los, his).reshape(-1, 4)
        cut = bounds >= best
        if cut[:, :2].all(axis=1).any():
            return None
        if not (cut.any() or (s_lo > 1).any() or (s_hi > 1).any()):
            return Shaved(lo, hi, wide, los, his, bounds)
        lo[wide] = np.maximum(np.where(cut[:, 0], mid + 1, lo[wide]), np.where(cut[:, 2], lo[wide] + s_lo, lo[wide]))
        hi[wide] = np.minimum(np.where(cut[:, 1], mid, hi[wide]), np.where(cut[:, 3], hi[wide] - s_hi, hi[wide]))
        # an end cut doubles the next try there, a miss halves it (galloping): a range shaved level by level
        # took one batch per level
        step_lo[wide] = np.where(cut[:, 2], 2 * s_lo, np.maximum(1, s_lo // 2))
        step_hi[wide] = np.where(cut[:, 3], 2 * s_hi, np.maximum(1, s_hi // 2))
        if (lo > hi).any():
            return None
        if until is not None and time.perf_counter() >= until:
            return Shaved.unbatched(lo, hi)
