"""The hot topic's local search: a two-level set of large bound, which ``exact.balanced`` scores.

:func:`best_set` climbs over the sets ``H`` that :mod:`~kipopt.formulations.consumers.level_hot` bounds (one
topic in or out, else an exchange), then kicks; :func:`hot_vector` turns its set into the level vector the
level tree (:mod:`~kipopt.formulations.consumers.level_tree`) scores once it has searched
:data:`~kipopt.formulations.consumers.level_local.HOT_AFTER_SECONDS`. What it finds on the paper grid's open
groups, and how often it meets the best set on small ones, is measured in
:mod:`~kipopt.formulations.consumers.level_hot`'s docstring.
"""

from __future__ import annotations

import time

import numpy as np

from kipopt.formulations.consumers.level_bounds import Tree
from kipopt.formulations.consumers.level_hot import Hot, hot_rows

KICKS = 8
KICK_TOPICS = 3
""":func:`best_set` stops after this many climbs in a row, each from the set in hand with this many random
topics flipped, find no better set (on seed 4 of the paper grid's open cell the first kick finds a set of
bound 101 where the first climb ended at 100: rounded leaf answers 11,146 and 11,149)."""


def best_set(hot: Hot, until: float) -> tuple[int, np.ndarray]:
    """A two-level set ``H`` of large bound, and that bound: an iterated local search. A climb takes the best
    of the sets one topic away (in or out; ``h`` stays in), or, when none is better, the best of those one
    exchange away, until neither improves. It climbs from ``{h}``, then from the set in hand with
    :data:`KICK_TOPICS` random topics flipped (a fixed seed), kept when no worse, until :data:`KICKS` climbs in
    a row find nothing better or ``until`` (a ``time.perf_counter()`` instant). A heuristic: the bound
    steers it to sets whose leaf LPs are good answers (the relaxation is tight where it was checked), not
    to a proof."""
    T = hot.rows.subs.shape[1]
    others = np.flatnonzero(np.arange(T) != hot.hot)
    rng = np.random.default_rng(0)
    best = current = _climb(hot, np.arange(T) == hot.hot, until)
    misses = 0
    while misses < KICKS and len(others) >= KICK_TOPICS and time.perf_counter() < until:
        kicked = current[1].copy()
        kicked[rng.choice(others, size=KICK_TOPICS, replace=False)] ^= True
        found = _climb(hot, kicked, until)
        current = found if found[0] >= current[0] else current
        best, misses = (found, 0) if found[0] > best[0] else (best, misses + 1)
    return best


def _climb(hot: Hot, high: np.ndarray, until: float) -> tuple[int, np.ndarray]:
    value = hot.bound(high, high)[0]
    while time.perf_counter() < until:
        moved = _best_move(hot, high, _flips(high, hot.hot), until)
        if moved is None or moved[0] <= value:
            moved = _best_move(hot, high, _exchanges(high, hot.hot), until)
        if moved is None or moved[0] <= value:
            break
        value, high = moved
    return value, high


def _flips(high: np.ndarray, hot: int) -> list[np.ndarray]:
    one = np.eye(len(high), dtype=bool)
    return [high ^ one[t] for t in range(len(high)) if t != hot]


def _exchanges(high: np.ndarray, hot: int) -> list[np.ndarray]:
    one = np.eye(len(high), dtype=bool)
    return [high ^ one[a] ^ one[b] for a in np.flatnonzero(high) if a != hot for b in np.flatnonzero(~high)]


def _best_move(hot: Hot, high: np.ndarray, sets: list[np.ndarray], until: float) -> tuple[int, np.ndarray] | None:
    """The first of ``sets`` with the largest bound (``None`` when ``until`` passes first)."""
    best = None
    for s in sets:
        if time.perf_counter() >= until:
            return None
        value = hot.bound(s, s)[0]
        if best is None or value > best[0]:
            best = (value, s)
    return best


def hot_vector(tr: Tree, start: np.ndarray, until: float) -> np.ndarray | None:
    """The level vector of :func:`best_set`'s set (``start`` on it, one lower elsewhere, within the root box),
    searched until ``until``; ``None`` where the bound does not apply (``start`` not all ``q``, no topic
    overloaded, or the rows do not apply) or the set saves nothing."""
    hot = hot_rows(tr)
    if hot is None or not (start == hot.rows.q).all():
        return None
    value, high = best_set(hot, until)
    if value <= 0:
        return None
    return np.clip(np.where(high, start, start - 1), tr.lo, tr.hi)
