"""A descent over topic-level vectors: the level tree's early answers.

The level tree searches best first on its bounds. Where those stay flat over many boxes (groups with
many topics), best first reaches single vectors in no useful order, and the answer in hand stays the
dec-min one: on a 100-member, 20-topic group of the production grid, 1,549 after 60 s, where vectors
near the dec-min one hold 1,528. Better answers early make every later bound prune more.

From the least loads ``λ`` of the answer in hand, moves change one topic's level by one, or two
topics' levels by one each. Each neighbour is screened by its leaf LP (a lower bound for the vector,
stopped at the best answer's cutoff); those below the best answer are tried cheapest first with
their MILP, and the first that improves is taken. Single moves are screened before pairs (fewer, and
often enough). The descent stops at a vector no move improves, or at its deadline.

The sweep (:func:`sweep`) runs before the descent, on every group the tree's root does not settle: it
tries the vectors that lower the least loads of every topic outside the ``r`` largest by one. Lower
levels on the smaller topics let the members that subscribe only to those drop one partition, which
the owners of partitions of the large topics take and keep. On the groups measured the leaf LP's value
rose on both sides of one minimum in ``r``, so a walk from a first guess finds it in a few leaf LPs. At
10,000 x 1,000 (10 topics) ``r = 3`` holds 2,388, the proven optimum, where the dec-min answer holds
2,470 and the tree alone found 2,388 after 2.2 s; at 100,000 x 5,000, 23,549 against the dec-min
24,154; on the paper grid's five 100,000 x 1,000 x 50 groups 0.6 to 1.0 % below the dec-min answer.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np


def least_levels(member_topics: list[np.ndarray], loads: np.ndarray, topics: int) -> np.ndarray:
    """``λ_t``: the least load over topic t's subscribers (``member_topics[m]``: m's topic indices)."""
    lam = np.full(topics, np.iinfo(np.int64).max, dtype=np.int64)
    for ts, load in zip(member_topics, loads):
        if len(ts):
            np.minimum.at(lam, ts, int(load))
    return np.where(lam == np.iinfo(np.int64).max, 0, lam)


def moves(vector: np.ndarray, lo: np.ndarray, hi: np.ndarray, pairs: bool) -> list[np.ndarray]:
    """The neighbours of ``vector`` inside ``[lo, hi]``: one level changed by one, or (``pairs``) two."""
    T = len(vector)
    out = []
    steps = [(t, d) for t in range(T) for d in (-1, 1) if lo[t] <= vector[t] + d <= hi[t]]
    if not pairs:
        for t, d in steps:
            v = vector.copy()
            v[t] += d
            out.append(v)
        return out
    for i, (t, d) in enumerate(steps):
        for u, e in steps[i + 1:]:
            if u != t:
                v = vector.copy()
                v[t] += d
                v[u] += e
                out.append(v)
    return out


def descend(vector: np.ndarray, lo: np.ndarray, hi: np.ndarray, screen: Callable[[np.ndarray], float],
            solve: Callable[[np.ndarray], None], best: Callable[[], float], until: float,
            tries: int = 5) -> dict:
    """Improve the answer in hand from ``vector``: ``screen(v)`` is v's leaf LP bound (``inf`` when it
    cannot beat ``best()``), ``solve(v)`` runs v's MILP and makes its answer the best in hand when
    better; at most ``tries`` MILPs per move. Returns counts for the search's statistics."""
    stats = {"local_moves": 0, "local_screened": 0, "local_milps": 0}
    current = vector.copy()
    while time.perf_counter() < until:
        moved = False
        for pairs in (False, True):
            scored = []
            for v in moves(current, lo, hi, pairs):
                if time.perf_counter() >= until:
                    return stats
                value = screen(v)
                stats["local_screened"] += 1
                if value < best():
                    scored.append((value, v))
            scored.sort(key=lambda s: s[0])
            for value, v in scored[:tries]:
                if value >= best() or time.perf_counter() >= until:
                    break
                before = best()
                solve(v)
                stats["local_milps"] += 1
                if best() < before:
                    current, moved = v, True
                    stats["local_moves"] += 1
                    break
            if moved:
                break
        if not moved:
            break
    return stats


def lowered(vector: np.ndarray, sizes: np.ndarray, r: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``vector`` with every topic outside the ``r`` largest (by ``sizes``, ties by index) one level
    lower, within ``[lo, hi]``."""
    rank = np.empty(len(sizes), dtype=np.int64)
    rank[np.argsort(-np.asarray(sizes), kind="stable")] = np.arange(len(sizes))
    return np.clip(vector - (rank >= r), lo, hi)


def first_guess(sizes: np.ndarray, share: float = 0.6) -> int:
    """The fewest largest topics that hold ``share`` of the partitions (at least 1): where the sweep
    starts. The best ``r`` measured: 3 of 10 topics at 10,000 x 1,000 and 100,000 x 5,000 (63 % of the
    partitions), 7 and 10 of 50 on two 100,000 x 1,000 x 50 groups (58 %, 65 %)."""
    mass = np.cumsum(np.sort(np.asarray(sizes, dtype=np.float64))[::-1])
    return max(1, int(np.searchsorted(mass, share * mass[-1])) + 1) if len(mass) and mass[-1] > 0 else 1


def sweep(score: Callable[[list[int], float], list[float]], topics: int, until: float, r: int = 1,
          workers: int = 1) -> dict:
    """Seek the ``r`` in ``1 .. topics - 1`` with the least score (``score(rs, beat)``: for each ``r`` of ``rs``
    the leaf LP of :func:`lowered`'s vector; the caller keeps any answer it finds): from ``r``
    (:func:`first_guess`), both neighbours, then on in the direction that improved until a step does
    not improve or ``until``. Exact for a score with one minimum. ``score`` gets up to ``workers``
    values at a time, which it may solve at once: ``r`` with ``r - 1`` first (the side the measured
    minima lay on), and ``workers`` steps ahead at a time. ``beat`` is the score an ``r`` must be below
    to be walked to (``inf`` for the first guess): the caller may score an ``r`` whose answers it knows
    to cost at least ``beat`` by that bound instead of solving (the walk does not go there). Returns
    counts for the search's statistics."""
    if topics < 2 or time.perf_counter() >= until:
        return {"sweep_scores": 0}
    r = min(max(r, 1), topics - 1)
    tried: dict[int, float] = {}

    def run(rs: list[int]) -> None:
        rs = [q for q in rs if 0 < q < topics and q not in tried]
        for at in range(0, len(rs), workers):
            if time.perf_counter() >= until:
                return
            chunk = rs[at:at + workers]
            tried.update(zip(chunk, score(chunk, tried.get(r, math.inf))))

    run([r, r - 1][:workers])
    run([r - 1, r + 1])
    near = [q for q in (r - 1, r + 1) if q in tried]
    best = min(near, key=tried.__getitem__, default=None)
    if r in tried and best is not None and tried[best] < tried[r]:
        step, r = best - r, best
        while time.perf_counter() < until:
            run([r + step * k for k in range(1, workers + 1)])
            if r + step not in tried or tried[r + step] >= tried[r]:
                break
            while r + step in tried and tried[r + step] < tried[r]:
                r += step
    return {"sweep_scores": len(tried)}


# When the level tree (:mod:`~kipopt.formulations.consumers.level_tree`) runs the sweep and the descent

LOCAL_AFTER_BOXES = 500
"""The descent runs once the search has popped this many boxes without ending: the groups it proves
sooner do not need it (on the oracle benchmark's 50 groups of 10-100 members, a descent first took
their exact solves from 2.2 to 5.8 s in all)."""

LOCAL_TIME_SHARE = 0.25
"""The share of the time left that the descent of :mod:`~kipopt.formulations.consumers.level_local` may use."""

SWEEP_TIME_SHARE = 0.5
"""The share of the time left that the sweep of :mod:`~kipopt.formulations.consumers.level_local` may start
leaf LPs in (at 100,000 x 5,000 one takes about 3 s of the 10 s target)."""

COUPLING_SECONDS = 1.0
COUPLING_SHARE = 0.02
"""After the sweep, :func:`~kipopt.formulations.consumers.level_coupling.best_split` searches topic sets for at
most this long and this share of the time left (its set is then scored by one leaf LP). On the paper
grid's 50-topic groups of 100,000 partitions it finds the maximum in 0.1 s on three of five, in 0.3 s on
the fourth and 69 of 70 on the fifth within 1 s (closing takes 40 to 110 s); on 10 topics it closes in
about 3 ms."""

HOT_AFTER_SECONDS = 10.0
HOT_SECONDS = 3.0
HOT_SHARE = 0.05
HOT_LEAST_SECONDS = 0.5
"""Once the tree has searched this long without ending (its sweep done), where one topic is overloaded,
:func:`~kipopt.formulations.consumers.level_hot_local.best_set` searches two-level sets under the hot topic's bound
for at most ``HOT_SECONDS`` and ``HOT_SHARE`` of the time left, unless that leaves it less than
``HOT_LEAST_SECONDS``; its set is then scored by one leaf LP. The groups the tree proves sooner do not pay for
it (the paper grid's 10,000-partition mixed groups: median 4.8 s). On the four overloaded groups of the
paper grid's 100,000 x 1,000 x 50 cell it reaches, within 3 s, sets whose rounded leaf answers (12,471,
10,286, 10,714 and 11,146) are better than the tree's in 60 s (12,473, 10,291, 10,720, 11,149)."""

SWEEP_AFTER_BOXES = 50
SWEEP_AFTER_SHARE = 0.25
"""Where leaf LPs are cheap enough for box relaxations
(:data:`~kipopt.formulations.consumers.level_policy.BOX_LP_MAX_COLUMNS`) the sweep runs as soon
as the root box is shaved (at 10,000 x 1,000 the tree then proves the optimum in 96 boxes instead of
126). Above, it waits until the search has popped this many boxes, or reaches a box that is not a
plain box (a leaf, or one back with its relaxation), or has used this share of its time: there a
sweep LP takes seconds, and the closed-form boxes raise the bound cheaply first (at 100,000 x 5,000
from the root's 21,181 to about 23,000 in 0.3 s; a sweep run at once took the 4 s that left the bound
at 21,181 when the 10 s ran out)."""

LOCAL_MAX_ARCS = 5_000
"""The descent runs on groups whose leaf models have at most this many arcs (a 100-member, 20-topic group
has about 2,000). At 10,000 x 1,000 (16,000) its leaf MILPs take 0.85 s each, and it spent 8 s where
the tree alone proves the group in 1.5 s."""
