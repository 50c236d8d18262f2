"""The count coupling of the topic levels, as a search over topic sets: where the sweep's family misses.

Notation as in :mod:`~kipopt.formulations.consumers.rules`; ``q = ⌊P/M⌋``, ``r = P - qM``. Take the
two-level vectors around a dec-min answer whose members all hold ``q`` or ``q + 1`` (its least loads all
``q``): the topics of a set ``H`` at level ``q``, the others at ``q - 1``. An owner keeps a partition more
than at ``q`` only by holding ``q + 1``, all of topics in ``H`` (:mod:`~kipopt.formulations.consumers.level_search`'s
lemma: a high member holds only topics at its level); by the count coupling ``Σ x = P``, beyond the
``r`` spare ones each such member needs a member at ``q - 1``, whose topics must all lie outside ``H``
(every subscriber of a topic holds at least its level); a member that goes down losing none of its own
partitions owns at most ``q - 1``. So, flows aside, the revocations saved against everyone at ``q`` are
at most::

    min(G(H), S(H) + r)    G: owners with at least q + 1 keepable partitions of topics in H,
                           S: members owning at most q - 1 whose topics all lie outside H

The sweep of :mod:`~kipopt.formulations.consumers.level_local` tries only ``H`` = the ``r`` largest
topics. :func:`best_split` searches the topic sets depth first, deciding at once every topic that would
leave either side too small to beat the best set in hand, and the level tree
(:mod:`~kipopt.formulations.consumers.level_tree`) scores the best set it finds by its leaf LP, whose
rounded answer is kept when it beats the one in hand. There it proposes and proves nothing: the
partitions' flow can cost revocations the max-min does not count. When the search closes, the owned
partitions beyond ``q`` less its maximum bound every assignment whose least loads all lie in
``{q - 1, q}``. On the paper grid's five groups of 100,000 partitions over 1,000 members and 50 topics
(``benchmarks/bench_open_groups.py``) it closes on all five (maxima 64 to 77, in 40 to 110 s). On one,
its set holds 10,094, where the sweep's best held 10,101 (and a 600-second search still did), and
10,094 is the 10,158 partitions owned beyond ``q`` less its maximum 64: the answer is optimal over that
two-level box, and :mod:`~kipopt.formulations.consumers.level_certificate` extends the bound to every
level vector. On the other four its set's leaf LP is worse than the sweep's answer.

The max-min as one MILP for HiGHS is no substitute (measured 2026-11-30 on that group, one thread, beside
other jobs): topic, gainer and sink binaries, each gainer's knapsack row ``Σ_t k_{o,t} z_t ≥ (q + 1) g_o``
with ``g_o ≤ z_t`` for every topic it cannot spare, ``s_j ≤ w_j (1 - z_t)``, 611 columns after presolve.
HiGHS finds 64 but its bound is still 144 after 300 s (9,941 nodes), where this search closes in about
100 s: the LP puts every topic half in ``H``, and branching does not repair that quickly.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from kipopt.formulations.consumers.level_bounds import Tree


@dataclass(frozen=True)
class Coupling:
    """What ``min(G(H), S(H) + r)`` reads: ``q`` and ``r`` (``extra``); per owner with at least ``q + 1``
    keepable partitions, those per topic (``keep``); per group of members owning at most ``q - 1`` (a
    class's members owning nothing keepable, or one owner), its topics, 0/1 (``sinks``) and its members
    (``weight``)."""

    q: int
    extra: int
    keep: np.ndarray
    sinks: np.ndarray
    weight: np.ndarray

    def value(self, high: np.ndarray) -> float:
        """``min(G(H), S(H) + r)`` of the set ``high`` (0/1 per topic)."""
        return min(self.bounds(high, np.zeros_like(high))[2:])

    def bounds(self, high: np.ndarray, free: np.ndarray) -> tuple[float, float, float, float]:
        """``(G_max, S_max, G_min, S_min)`` (``S`` with the ``r`` spare) over the completions of a partial
        set: ``high`` in ``H``, ``free`` undecided (0/1 per topic)."""
        g_max = float(np.count_nonzero(self.keep @ (high + free) >= self.q + 1))
        g_min = float(np.count_nonzero(self.keep @ high >= self.q + 1))
        s_max = float(self.weight[self.sinks @ high == 0].sum()) + self.extra
        s_min = float(self.weight[self.sinks @ (high + free) == 0].sum()) + self.extra
        return g_max, s_max, g_min, s_min


def owned_by_topic(tr: Tree) -> tuple[np.ndarray, np.ndarray]:
    """Per owner of keepable partitions (the tree's owner rows), those partitions per topic; per class with
    topics (``tr.pairs.classes``), its members owning none."""
    pr = tr.pairs
    keep = (tr.keep @ pr.by_topic.T).toarray()
    return keep, pr.members - np.bincount(tr.owner_pos, minlength=len(pr.classes))


def stopped_gainers(keep: np.ndarray, slack: np.ndarray, state: np.ndarray,
                    undecided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which owners can still gain at a partial topic set (``state``: 1 in ``H``, 2 out; an owner gains while
    its keepable partitions out of ``H`` stay within ``slack``) and, per topic of ``undecided``, how many
    of them its move out of ``H`` would stop."""
    rem = slack - keep @ (state == 2)
    alive = rem >= 0
    return alive, (keep[np.ix_(alive, undecided)] > rem[alive, None]).sum(axis=0)


def coupling(tr: Tree) -> Coupling:
    """The coupling of the tree's group (its keepable partitions at the least cross-rack cost)."""
    sp, pr = tr.space, tr.pairs
    q = tr.q
    keep, others = owned_by_topic(tr)                                # (owners, topics), per class
    owned = keep.sum(axis=1)
    topics = sp.member_of[pr.classes].astype(np.float64)           # (classes with topics, topics)
    low = owned <= q - 1
    sinks = np.vstack([topics[others > 0], topics[tr.owner_pos[low]]])
    weight = np.r_[others[others > 0], np.ones(int(low.sum()))]
    return Coupling(q, tr.extra, keep[owned >= q + 1], sinks, weight)


def best_split(c: Coupling, until: float) -> tuple[float, np.ndarray, bool]:
    """The best ``min(G, S + r)`` found by depth-first search over topic sets until ``until`` (a
    ``time.perf_counter()`` instant): ``(value, H as 0/1 per topic, closed)``; ``closed`` when the search
    ended by itself (the value is then the maximum over every set).

    Each node asks only for a set better than the best in hand (``k = best + 1``). An undecided topic whose
    move into ``H`` would leave fewer than ``k`` sinks goes out of ``H``; one whose move out would leave
    fewer than ``k`` owners able to gain goes in; a topic forced both ways, or either side below ``k``,
    closes the node; repeated until no topic is forced. It then branches on the topic whose cheaper move
    still costs the largest share of its side, into ``H`` first. On the paper grid's five 50-topic groups
    this closes in 40 to 110 s (``benchmarks/bench_open_groups.py``), where the search pruned by the two
    sides' sizes alone did not close in 300 s."""
    search = _SplitSearch(c)
    stack = [np.zeros(c.keep.shape[1], dtype=np.int8)]   # per topic: 0 undecided, 1 in H, 2 out of H
    while stack:
        if time.perf_counter() >= until:
            return search.best, search.best_set, False
        node = search.settle(stack.pop())
        if node is not None:
            state, t = node
            out, into = state.copy(), state.copy()
            out[t], into[t] = 2, 1
            stack += [out, into]
    return search.best, search.best_set, True


class _SplitSearch:
    """:func:`best_split`'s best set in hand and its per-node propagation."""

    def __init__(self, c: Coupling):
        self.c = c
        self.slack = c.keep.sum(axis=1) - (c.q + 1)   # an owner gains while its keepable partitions out of H fit
        self.member = c.sinks > 0
        self.best, self.best_set = -math.inf, np.zeros(c.keep.shape[1])

    def settle(self, state: np.ndarray) -> tuple[np.ndarray, int] | None:
        """The node's state once every forced topic is decided, and the topic to branch on; ``None`` when
        the node cannot hold a set better than the best in hand (taking its two extreme completions)."""
        c = self.c
        while True:
            high, free = (state == 1).astype(np.float64), (state == 0).astype(np.float64)
            g_max, s_max, g_min, s_min = c.bounds(high, free)
            for value, chosen in ((min(g_min, s_max), high), (min(g_max, s_min), high + free)):
                if value > self.best:
                    self.best, self.best_set = value, chosen.copy()
            if min(g_max, s_max) <= self.best or not free.any():
                return None
            undecided = np.flatnonzero(free)
            _, lost_out = stopped_gainers(c.keep, self.slack, state, undecided)
            sinks = c.sinks @ high == 0
            lost_in = c.weight[sinks] @ self.member[np.ix_(sinks, undecided)]
            k = self.best + 1
            must_in, must_out = g_max - lost_out < k, s_max - lost_in < k
            if (must_in & must_out).any():
                return None
            if not (must_in.any() or must_out.any()):
                share = np.minimum(lost_out / g_max, lost_in / s_max)
                return state, int(undecided[np.argmax(share)])
            state = state.copy()
            state[undecided[must_in]], state[undecided[must_out]] = 1, 2


def coupled_vector(tr: Tree, start: np.ndarray, until: float) -> np.ndarray | None:
    """The level vector of :func:`best_split`'s set (``start`` on it, one lower elsewhere, within the root
    box), searched until ``until``; ``None`` where the coupling does not apply (``start`` not all ``q``, no
    owner that could gain, or no set saving anything)."""
    c = coupling(tr)
    if not len(c.keep) or not (start == c.q).all():
        return None
    value, high, _ = best_split(c, until)
    if value <= 0:
        return None
    return np.clip(np.where(high > 0, start, start - 1), tr.lo, tr.hi)
