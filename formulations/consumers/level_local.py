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
"""

from __future__ import annotations

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
