"""The level tree's line scans (level_line): which leaves are solved beside one popped, and the vectors
inside boxes of least bound."""

from __future__ import annotations

import heapq

import numpy as np

from kipopt.formulations.consumers.level_line import BOX, LEAF, RELAXED, SPLIT, nearest_inside, take_leaves


def _item(bound, kind, lo, hi=None, seq=[0]):
    seq[0] += 1
    lo = np.array(lo)
    hi = lo.copy() if hi is None else np.array(hi)
    return (float(bound), int((hi - lo).sum()), seq[0], kind, lo, hi, False, None)


def _line(*items):
    heap = list(items)
    heapq.heapify(heap)
    return heap


def test_take_leaves_takes_the_least_unsolved_leaves_below_the_best_until_enough_are_unsettled():
    heap = _line(_item(5, LEAF, [1, 1]), _item(3, LEAF, [2, 2]), _item(4, LEAF, [3, 3]), _item(2, BOX, [0, 0], [4, 4]),
                 _item(1, RELAXED, [5, 5]), _item(9, LEAF, [6, 6]), _item(3.5, LEAF, [7, 7]))
    known = {(7, 7): 3.5}                      # its LP was solved before: not taken
    settle = lambda v: "settled" if v[0] == 2 else None   # noqa: E731 - the carried duals settle [2, 2]
    more, dropped, taken = take_leaves(heap, 8.0, known, 2, settle)
    assert [(v.tolist(), b) for v, b in more] == [([3, 3], 4.0), ([1, 1], 5.0)]
    assert [(v.tolist(), b, s) for v, b, s in dropped] == [([2, 2], 3.0, "settled")]
    assert taken == 3
    assert sorted(tuple(item[4].tolist()) for item in heap) == [(0, 0), (5, 5), (6, 6), (7, 7)]
    assert heap[0][0] == 1.0 and all(heap[i][:3] <= heap[c][:3] for i in range(len(heap))
                                     for c in (2 * i + 1, 2 * i + 2) if c < len(heap))   # still a heap
    assert take_leaves(heap, 8.0, known, 0, settle) == ([], [], 0)


def test_nearest_inside_clips_the_popped_vector_into_boxes_of_least_bound_and_leaves_them_in_line():
    heap = _line(_item(2, BOX, [0, 0], [1, 1]), _item(3, SPLIT, [4, 4], [6, 6]), _item(4, BOX, [0, 5], [2, 9]),
                 _item(1, LEAF, [3, 3]), _item(9, BOX, [7, 7], [8, 8]))
    before = list(heap)
    popped = np.array([3, 3])
    settle = lambda v: "settled" if v.tolist() == [4, 4] else None   # noqa: E731
    out, met = nearest_inside(heap, popped, 5, 8.0, {(2, 5): 1.0}, settle, tries=10)
    assert [v.tolist() for v in out] == [[1, 1]]             # [2, 5] is known; the box at 9 is above the best
    assert [(v.tolist(), s) for v, s in met] == [([4, 4], "settled")]
    assert heap == before
    out, _ = nearest_inside(heap, popped, 1, 8.0, {}, lambda v: None, tries=10)
    assert [v.tolist() for v in out] == [[1, 1]]
    assert nearest_inside(heap, popped, 0, 8.0, {}, settle, tries=10) == ([], [])
