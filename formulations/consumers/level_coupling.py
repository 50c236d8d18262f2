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
topics. :func:`best_split` searches the topic sets depth first (largest topics first, into ``H`` before
out of it, pruned by the larger of each side's best completion), and the level tree
(:mod:`~kipopt.formulations.consumers.level_tree`) scores the best set it finds by its leaf LP, whose
rounded answer is kept when it beats the one in hand. It proposes, it proves nothing: the partitions'
flow can cost revocations the max-min does not count. On the paper grid's five groups of 100,000
partitions over 1,000 members and 50 topics (``benchmarks/bench_open_groups.py``) its set holds 10,094 on
one, where the sweep's best held 10,101 (and a 600-second search still did); on the other four its set's
leaf LP is worse than the sweep's answer.
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


def coupling(tr: Tree) -> Coupling:
    """The coupling of the tree's group (its keepable partitions at the least cross-rack cost)."""
    sp, pr = tr.space, tr.pairs
    members = len(sp.member_class)
    q = tr.total // members
    keep = (tr.keep @ pr.by_topic.T).toarray()                   # (owners, topics)
    owned = keep.sum(axis=1)
    topics = sp.member_of[pr.classes].astype(np.float64)           # (classes with topics, topics)
    others = pr.members - np.bincount(tr.owner_pos, minlength=len(pr.classes))
    low = owned <= q - 1
    sinks = np.vstack([topics[others > 0], topics[tr.owner_pos[low]]])
    weight = np.r_[others[others > 0], np.ones(int(low.sum()))]
    return Coupling(q, tr.total - q * members, keep[owned >= q + 1], sinks, weight)


def best_split(c: Coupling, order: np.ndarray, until: float) -> tuple[float, np.ndarray, bool]:
    """The best ``min(G, S + r)`` found by depth-first search over topic sets, deciding topics in ``order``
    (into ``H`` first), pruned by ``min(G_max, S_max)``, until ``until`` (a ``time.perf_counter()``
    instant): ``(value, H as 0/1 per topic, closed)``; ``closed`` when the search ended by itself (the
    value is then the maximum over every set)."""
    T = len(order)
    best, best_set = -math.inf, np.zeros(T)
    stack = [(0, np.zeros(T), np.ones(T))]
    while stack:
        if time.perf_counter() >= until:
            return best, best_set, False
        depth, high, free = stack.pop()
        g_max, s_max, g_min, s_min = c.bounds(high, free)
        for value, chosen in ((min(g_min, s_max), high), (min(g_max, s_min), high + free)):
            if value > best:
                best, best_set = value, chosen.copy()
        if min(g_max, s_max) <= best or depth == T:
            continue
        t = order[depth]
        up, rest = high.copy(), free.copy()
        up[t], rest[t] = 1.0, 0.0
        stack.append((depth + 1, high, rest))
        stack.append((depth + 1, up, rest))
    return best, best_set, True


def coupled_vector(tr: Tree, start: np.ndarray, until: float) -> np.ndarray | None:
    """The level vector of :func:`best_split`'s set (``start`` on it, one lower elsewhere, within the root
    box), searched until ``until``; ``None`` where the coupling does not apply (``start`` not all ``q``, no
    owner that could gain, or no set saving anything)."""
    c = coupling(tr)
    if not len(c.keep) or not (start == c.q).all():
        return None
    value, high, _ = best_split(c, np.argsort(-tr.space.sizes, kind="stable"), until)
    if value <= 0:
        return None
    return np.clip(np.where(high > 0, start, start - 1), tr.lo, tr.hi)
