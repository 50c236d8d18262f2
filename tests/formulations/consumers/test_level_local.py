"""The descent over level vectors: its neighbourhoods, and that it follows single and paired moves."""

from __future__ import annotations

import numpy as np

from kipopt.formulations.consumers.level_local import descend, least_levels, moves


def test_least_levels_is_each_topics_least_subscriber_load():
    member_topics = [np.array([0, 1]), np.array([1]), np.array([], dtype=np.int64), np.array([0, 2])]
    assert least_levels(member_topics, np.array([5, 3, 9, 4]), 4).tolist() == [4, 3, 4, 0]


def test_moves_stay_in_the_box():
    v, lo, hi = np.array([1, 0]), np.array([0, 0]), np.array([2, 0])
    assert sorted(m.tolist() for m in moves(v, lo, hi, pairs=False)) == [[0, 0], [2, 0]]
    assert moves(v, lo, hi, pairs=True) == []  # the second topic cannot move
    assert len(moves(np.array([1, 1, 1]), np.zeros(3, int), np.full(3, 2), pairs=True)) == 12


def _run(f, start, lo, hi, until=float("inf")):
    best = {"value": f(start), "at": start}

    def solve(v):
        if f(v) < best["value"]:
            best.update(value=f(v), at=v)
    stats = descend(start, lo, hi, lambda v: f(v) - 0.5, solve, lambda: best["value"], until)
    return best, stats


def test_descent_reaches_a_separable_minimum_by_single_moves():
    target = np.array([3, -2, 0])
    best, stats = _run(lambda v: float(((v - target) ** 2).sum()), np.zeros(3, int), np.full(3, -5), np.full(3, 5))
    assert best["value"] == 0 and best["at"].tolist() == target.tolist()
    assert stats["local_moves"] == 5


def test_descent_takes_paired_moves_when_no_single_one_helps():
    # moving one topic alone costs 10; both together gain 2 a step
    best, _ = _run(lambda v: 10.0 * abs(v[0] - v[1]) - (v[0] + v[1]), np.zeros(2, int), np.zeros(2, int), np.full(2, 3))
    assert best["at"].tolist() == [3, 3] and best["value"] == -6


def test_descent_stops_at_its_deadline():
    best, stats = _run(lambda v: float(v.sum()), np.zeros(2, int), np.full(2, -9), np.zeros(2, int), until=0.0)
    assert stats["local_screened"] == 0 and best["value"] == 0
