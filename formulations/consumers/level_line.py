"""The level tree's line: the kinds of its items and the scans that pick leaves to solve beside one popped.

The level tree (:mod:`~kipopt.formulations.consumers.level_tree`) keeps its open items in a heap, each
``(bound, width, seq, kind, lo, hi, relaxed, start)``: a box ``[lo, hi]`` of topic-level vectors (a leaf
where ``lo == hi``) with a bound valid for every vector in it. Where a large leaf LP keeps one core busy
(interior point in a child), a second leaf is solved beside it: the leaves of least bound in line, wherever
they stand among the boxes (:func:`take_leaves`), else the vector nearest the popped one in a box of least
bound (:func:`nearest_inside`), whose value the tree keeps for when its leaf comes up. Both skip what the
duals in hand settle already (``settle``: a result, or ``None`` where they do not).
"""

from __future__ import annotations

import heapq
from typing import Callable

import numpy as np

BOX, LEAF, RELAXED, SPLIT, ENUMERATED = 0, 1, 2, 3, 4
"""Item kinds. ``RELAXED``: a leaf whose LP is solved (its MILP runs when it comes up again); ``SPLIT``: in a
box whose MILP did not settle it, split only; ``ENUMERATED``: a small box as its vectors
(:mod:`~kipopt.formulations.consumers.level_enum`)."""

Settle = Callable[[np.ndarray], object]


def take_leaves(heap: list, best: float, known: dict, wanted: int, settle: Settle) -> tuple[list, list, int]:
    """Take out of ``heap`` its leaves below ``best`` whose LP is not ``known``, least bound first, until
    ``wanted`` of them are not settled: ``(unsettled as (vector, bound), settled as (vector, bound, result),
    how many were taken)``."""
    more: list = []
    dropped: list = []
    taken: set[int] = set()
    leaves = sorted((i for i, item in enumerate(heap) if item[3] == LEAF and item[0] < best
                     and tuple(item[4].tolist()) not in known), key=lambda i: heap[i][:3])
    for i in leaves:
        if len(more) >= wanted:
            break
        bound, vector = heap[i][0], heap[i][4]
        taken.add(i)
        settled = settle(vector)
        if settled is None:
            more.append((vector, bound))
        else:
            dropped.append((vector, bound, settled))
    if taken:
        heap[:] = [item for i, item in enumerate(heap) if i not in taken]
        heapq.heapify(heap)
    return more, dropped, len(taken)


def nearest_inside(heap: list, popped: np.ndarray, wanted: int, best: float, known: dict, settle: Settle,
                   tries: int) -> tuple[list[np.ndarray], list[tuple[np.ndarray, object]]]:
    """Up to ``wanted`` vectors, each the one nearest ``popped`` in a box of least bound below ``best`` (of the
    first ``tries`` boxes in line; not ``known``, nor settled): ``(those vectors, the settled ones met on the
    way with their results)``. The boxes stay in line."""
    out: list[np.ndarray] = []
    settled_on_way: list[tuple[np.ndarray, object]] = []
    if wanted <= 0:
        return out, settled_on_way
    boxes = heapq.nsmallest(tries, (item for item in heap if item[3] in (BOX, SPLIT) and item[0] < best),
                            key=lambda item: item[:3])
    for item in boxes:  # a few only: each try bounds its vector by every carried dual
        vector = np.clip(popped, item[4], item[5])
        seen = out + [v for v, _ in settled_on_way]
        if tuple(vector.tolist()) in known or any((vector == v).all() for v in seen):
            continue
        settled = settle(vector)
        if settled is not None:
            settled_on_way.append((vector, settled))
            continue
        out.append(vector)
        if len(out) >= wanted:
            break
    return out, settled_on_way
