"""The hot topic's node bound by slots: how many undecided topics ``H`` can take and still leave ``k`` downs.

Notation as in :mod:`~kipopt.formulations.consumers.level_hot` (a node ``lo ⊆ H ⊆ hi``, ``F = hi \\ lo``
its undecided topics, the members that may go down those with no topic in ``lo``). That module's node
bound takes every member's up value at ``hi`` and every down at ``lo``; its crowding strikes, for ``k``
downs, each topic that alone leaves fewer than ``k`` of them. Jointly the undecided topics in ``H`` leave
far fewer: on seed 1 of the paper grid's open cell a typical node has six topics in ``lo``, 25 to 35
undecided and about 100 members able to go down, and every undecided topic put into ``H`` strikes 3 to 15
of them; keeping 80 takes all but five or so out of ``H``.

Let ``J = H ∩ F`` and ``j = |J|``. The members left to go down number at most ``avail(j)``, the most that
any ``j`` undecided topics leave (:func:`available`), so ``k ≤ avail(j)``; and a member's up value, which
grows with its keepable partitions of ``H`` (the module docstring of
:mod:`~kipopt.formulations.consumers.level_hot`), is at most its value with ``lo`` and its own ``j``
undecided topics of most keepable partitions. Per ``θ``::

    saved ≤ max_j max_{k ≤ avail(j)} [best k + r up values with j slots + best k down values] + (1 - θ) E

``avail(j)`` is bounded without search: a member with ``s`` undecided topics is struck by ``J`` as soon
as one of them is in it, so ``1[struck] ≥ |J ∩ S_m| / min(s, j)``, and the members struck weigh at least
the sum of the ``j`` smallest per-topic shares (exact for ``j = 1``); for ``j = 2`` every pair is counted
exactly; ``avail`` does not grow with ``j``. That bound is loose from ``j = 3`` on (a member of several
undecided topics counts a fraction per topic, and a set ``J`` that strikes few members mostly strikes it
once): on seed 1's nodes the most that 5 to 10 topics leave is about 4.5 fewer per topic, the bound 1 to 3.
So where the bound still beats a cutoff, :meth:`SlotNode.least` asks, for each ``j`` that beats it from some
``k ≤ avail(j)`` on, whether any ``j`` topics leave that ``k`` (:func:`reachable`, a breadth-first search
that stops at the first such set and gives up, keeping the bound, past :data:`FRONTIER` partial sets);
where none do, ``avail(j)`` drops below ``k``. Where the hot topic is undecided (the root only: the search
branches on it first) the bound is not taken.

Measured on 238 nodes of seed 1's search (target 91, every 20th node it visited from 10,286 without this
bound): the node bound of :mod:`~kipopt.formulations.consumers.level_hot` settles 152, with the slots 213
and, refined, 234. With ``avail`` taken as what a greedy choice of topics leaves (not a bound; it met the
exact value on every node checked) the search from 12,471 on seed 0 closes in 2,305 nodes, where it took
37,077 without the slots. An exact ``avail`` for every ``j`` up to 8 by depth-first search costs 20 to
1,270 ms a node: the refinement asks only what the cutoff needs, and mostly far from the answer. With it
the search from 12,471 on seed 0 closes in 2,879 nodes and 102 s (37,077 nodes and 917 s without the slots,
the same hour, one core each). Probing each undecided topic of a node with this bound before branching (the
topic put into ``H`` strikes its subscribers) decides 37 to 40 of the 38 to 43 undecided topics of seed 1's
widest open nodes, where the probes of :mod:`~kipopt.formulations.consumers.level_hot` decide none; but at
190 to 300 ms a node (and far more at the widest, where :func:`reachable` meets hundreds of members) the
search took longer, even with only nodes of 35 or more undecided topics probed so: not kept.
"""

from __future__ import annotations

import math

import numpy as np


def available(member_of: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per ``j`` (0 to the number of topics), at most how much weight of members is left with no topic
    among any ``j`` of the columns of ``member_of`` (members × topics, bool), floored, nonincreasing."""
    topics = member_of.shape[1]
    total = float(weight.sum())
    cover = member_of.astype(np.float64)
    shares = cover * weight[:, None]
    single = weight @ cover
    struck = np.zeros(topics + 1)
    if topics:
        spread = cover.sum(axis=1)
        j = np.arange(1, topics + 1)
        fractional = (weight[:, None] / np.maximum(np.minimum(spread[:, None], j[None, :]), 1.0)).T @ cover
        struck[1:] = np.cumsum(np.sort(fractional, axis=1), axis=1)[j - 1, j - 1]
        struck[1:] = np.maximum(struck[1:], np.sort(single))
    if topics >= 2:
        pairs = single[:, None] + single[None, :] - shares.T @ cover
        np.fill_diagonal(pairs, math.inf)
        struck[2] = max(struck[2], float(pairs.min()))
    return np.floor(np.minimum.accumulate(total - struck) + 1e-9)


def applies(hot, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether the node has an undecided topic and the hot topic is decided."""
    return bool((hi & ~lo).any()) and bool(lo[hot.hot] or not hi[hot.hot])


ROUNDS = 3
""":meth:`SlotNode.least` refines ``avail`` at most this many times per node."""


class SlotNode:
    """What a node's slots bound reads that no multiplier changes: the members that may go down by
    undecided topic, ``avail``, and per member and ``j`` its count change, ``Δcap`` and whether it may go up
    (``(j = 0..|F|) × members``)."""

    def __init__(self, hot, lo: np.ndarray, hi: np.ndarray):
        r = self.rows = hot.rows
        self.hot = hot
        free = np.flatnonzero(hi & ~lo)
        may_down = ~(r.subs & lo[None, :]).any(axis=1)
        self.member_of, self.weight = r.subs[np.ix_(may_down, free)], r.weight[may_down]
        self.avail = available(self.member_of, self.weight).astype(np.int64)
        self.count, self.cap, self.can_up = (a.T[:, hot.spread] for a in _slotted_ups(hot, lo, free))
        self.downs = hot.spread[may_down[hot.spread]]

    def values(self, thetas: np.ndarray) -> np.ndarray:
        """Per multiplier, the bound with :func:`available`'s ``avail``."""
        return _by_slot(self._paired(thetas), self.avail)

    def least(self, thetas: np.ndarray, cutoff: float) -> int:
        """The floored least over ``thetas`` of the bound, ``avail`` refined until the bound is at most
        ``cutoff``, a refinement fails, or :data:`ROUNDS` pass: at the best multiplier, each ``j`` that still
        lets the pairs beat the cutoff from some ``k ≤ avail(j)`` on is tried, and where no ``j`` topics leave
        that ``k`` (:func:`reachable`) ``avail(j)`` drops below it."""
        paired, avail = self._paired(thetas), self.avail.copy()
        values = _by_slot(paired, avail)
        for _ in range(ROUNDS):
            least = int(floored(values[None, :])[0])
            if least <= cutoff:
                return least
            beats = paired[int(np.argmin(values))] >= cutoff + 1 - 1e-9           # j × k
            first = np.where(beats.any(axis=1), beats.argmax(axis=1), len(avail) + avail[0] + 1)
            for j in np.flatnonzero(first <= avail):
                if first[j] > avail[j]:
                    continue
                if reachable(self.member_of, self.weight, int(j), float(avail[0] - first[j])):
                    return least
                avail[j:] = np.minimum(avail[j:], first[j] - 1)
            values = _by_slot(paired, avail)
        return int(floored(values[None, :])[0])

    def _paired(self, thetas: np.ndarray) -> np.ndarray:
        """Per multiplier, ``j`` and ``k``, what ``k`` pairs save with ``j`` slots, whatever ``avail``, plus
        ``(1 - θ) E`` (θ × j × k; ``-inf`` past the ups)."""
        count, cap, can_up = self.count, self.cap, self.can_up
        top = int(self.avail[0]) + self.rows.extra
        if 0 < top < count.shape[1]:
            # a member's value grows with j: one below the top-th best at j = 0 even at j = |F| is never needed
            ends = np.where(can_up[[0, -1], None], count[[0, -1], None] + thetas[:, None] * cap[[0, -1], None],
                            -np.inf)
            least = np.partition(ends[0], count.shape[1] - top, axis=1)[:, count.shape[1] - top]
            needed = (ends[1] >= least[:, None]).any(axis=0)
            count, cap, can_up = count[:, needed], cap[:, needed], can_up[:, needed]
        ups = np.where(can_up[None], count[None] + thetas[:, None, None] * cap[None], -np.inf)
        cum_up = cumulative(best_first(ups, top))                           # θ × j × the pairs' ups + 1
        hot = self.hot
        cum_down = cumulative(-np.sort(-(hot.down_count + thetas[:, None] * hot.down_cap)[:, self.downs], axis=1))
        ks = np.arange(cum_down.shape[1])
        at = ks + self.rows.extra
        paired = cum_up[:, :, np.minimum(at, cum_up.shape[2] - 1)] + cum_down[:, None, :]
        return np.where(at < cum_up.shape[2], paired, -np.inf) + ((1.0 - thetas) * hot.overload)[:, None, None]


def _by_slot(paired: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """Per multiplier, the most the pairs save with ``k ≤ avail(j)`` downs for ``j`` slots (``paired``: θ × j ×
    k)."""
    ks = np.arange(min(int(avail[0]), paired.shape[2] - 1) + 1)
    slots = np.searchsorted(-avail, -ks, side="right") - 1            # the most j leaving k downs
    return paired[:, slots, ks].max(axis=1)


def reachable(member_of: np.ndarray, weight: np.ndarray, j: int, budget: float) -> bool:
    """Whether some ``j`` columns of ``member_of`` (rows × topics, bool) touch rows of weight at most
    ``budget`` together (``True`` also when the search passes :data:`FRONTIER` partial sets: the caller
    then keeps its bound). Breadth first over the sets in increasing column order, each partial set
    dropped once what it touches, plus the least any one of the columns it still needs adds, exceeds the
    budget; the rows as bits (a row of weight ``w`` as ``w`` bits)."""
    topics = member_of.shape[1]
    if j == 0:
        return True
    if j > topics or budget < 0:
        return False
    masks = _bits(np.repeat(member_of, weight.astype(np.int64), axis=0))      # topics × words
    cost = _popcount(masks)
    order = np.argsort(cost, kind="stable")
    order = order[cost[order] <= budget]
    masks, n = masks[order], len(order)
    cols = np.arange(n)
    unions = np.zeros((1, masks.shape[1]), dtype=np.uint64)
    last = np.full(1, -1)
    for depth in range(1, j + 1):
        need = j - depth                                                  # columns still to add after this one
        grown = unions[:, None, :] | masks[None, :, :]                    # sets × topics × words
        touched = _popcount(grown)
        ok = (cols[None, :] > last[:, None]) & (cols[None, :] <= n - 1 - need) & (touched <= budget)
        parent, col = np.nonzero(ok)
        if not len(parent):
            return False
        if depth == j:
            return True
        unions, last, touched = grown[parent, col], col, touched[parent, col]
        adds = _popcount(masks[None, :, :] & ~unions[:, None, :])         # sets × topics
        adds = np.where(cols[None, :] > last[:, None], adds, np.iinfo(np.int64).max)
        keep = touched + adds.min(axis=1) <= budget
        unions, last = unions[keep], last[keep]
        if not len(last):
            return False
        if len(last) * n > FRONTIER:
            return True
    return True


FRONTIER = 200_000
""":func:`reachable` gives up (answers ``True``) once its partial sets times the topics pass this."""


def _bits(rows: np.ndarray) -> np.ndarray:
    """Per column of ``rows`` (bool), its rows as bits in 64-bit words (columns × words)."""
    packed = np.packbits(rows, axis=0, bitorder="little").T
    pad = (-packed.shape[1]) % 8
    return np.ascontiguousarray(np.pad(packed, ((0, 0), (0, pad)))).view(np.uint64)


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits per row of 64-bit words (the last axis)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words).sum(axis=-1, dtype=np.int64)
    return _BYTE_COUNT[words.view(np.uint8)].sum(axis=-1, dtype=np.int64)




def cumulative(values: np.ndarray) -> np.ndarray:
    """Running sums along the last axis, from 0 (the first ``k`` items: index ``k``)."""
    zero = np.zeros(values.shape[:-1] + (1,), dtype=values.dtype)
    return np.concatenate([zero, np.cumsum(values, axis=-1)], axis=-1)


def floored(values: np.ndarray) -> np.ndarray:
    """Per row, the least over the multipliers, floored; -1 where no pairing exists (every value -inf)."""
    least = values.min(axis=1)
    finite = np.isfinite(least)
    return np.where(finite, np.floor(np.where(finite, least, 0.0) + 1e-9), -1).astype(np.int64)


def best_first(values: np.ndarray, top: int) -> np.ndarray:
    """The ``top`` largest along the last axis, largest first (all of them when there are fewer)."""
    if top < values.shape[-1]:
        values = np.partition(values, values.shape[-1] - top - 1, axis=-1)[..., values.shape[-1] - top:]
    return -np.sort(-values, axis=-1)


def _slotted_ups(hot, lo: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row and ``j`` (rows × (|F| + 1)): the count change and ``Δcap`` at ``q + 1`` holding ``lo`` and the
    row's ``j`` undecided topics of most keepable partitions, and whether it may then go up (the hot topic
    decided: in ``lo`` or out of ``hi``)."""
    r, h, q = hot.rows, hot.hot, hot.rows.q
    best_first = -np.sort(-hot.keep_other[free].T, axis=1)
    k_other = (lo.astype(np.float64) @ hot.keep_other)[:, None] + np.concatenate(
        [np.zeros((len(best_first), 1)), np.cumsum(best_first, axis=1)], axis=1)
    has_hot = (lo[h] & r.subs[:, h])[:, None]
    keep_h = r.keep[:, h][:, None]
    count = np.minimum(k_other + np.where(has_hot, keep_h, 0.0), q + 1) - hot.kept_q[:, None]
    cap = np.where(has_hot, np.minimum(q + 1, np.maximum(keep_h, q + 1 - k_other)), 0.0) - hot.cap_q[:, None]
    in_lo = (r.subs & lo[None, :]).any(axis=1)[:, None]
    in_free = r.subs[:, free].any(axis=1)[:, None]
    can_up = in_lo | (in_free & (np.arange(len(free) + 1) >= 1)[None, :])
    return count, cap, can_up


_BYTE_COUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)
