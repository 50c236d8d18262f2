"""The descent over level vectors: its neighbourhoods, and that it follows single and paired moves; the
sweep that lowers the smaller topics: its vectors, its first guess and its walk."""

from __future__ import annotations

import math

import numpy as np

from kipopt.formulations.consumers.level_local import descend, first_guess, least_levels, lowered, moves, sweep


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


def test_lowered_takes_one_level_off_every_topic_outside_the_largest():
    v, sizes = np.array([5, 5, 5, 5]), np.array([10, 40, 10, 20])
    lo, hi = np.array([0, 0, 5, 0]), np.full(4, 9)
    assert lowered(v, sizes, 1, lo, hi).tolist() == [4, 5, 5, 4]   # topic 2 may not go below 5
    assert lowered(v, sizes, 3, lo, hi).tolist() == [5, 5, 5, 5]   # ties by index: topic 0 is third
    assert lowered(v, sizes, 2, lo, hi).tolist() == [4, 5, 5, 5]
    assert lowered(v, sizes, 0, lo, hi).tolist() == [4, 4, 5, 4]


def test_first_guess_is_the_fewest_largest_topics_with_sixty_percent():
    assert first_guess(np.array([10, 40, 10, 20, 20])) == 2        # 40 + 20: exactly 60 of 100
    assert first_guess(np.array([30, 25, 20, 15, 10])) == 3        # 55 < 60 <= 75
    assert first_guess(np.array([70, 10, 20])) == 1
    assert first_guess(np.array([1.0 / k for k in range(1, 11)])) == 3   # Zipf over 10 topics: 63 %
    assert first_guess(np.array([0, 0])) == 1


def _walk(f, topics, start, until=float("inf"), workers=1, beats=None):
    seen, calls = [], []

    def score(rs, beat):
        assert 0 < len(rs) <= workers
        if beats is not None:
            beats.append(beat)
        seen.extend(rs)
        calls.append(list(rs))
        return [f(r) for r in rs]
    stats = sweep(score, topics, until, start, workers)
    return (stats, seen, calls) if workers > 1 else (stats, seen)


def test_sweep_walks_to_the_minimum_of_a_single_valley():
    stats, seen = _walk(lambda r: (r - 7) ** 2, 12, 2)
    assert seen == [2, 1, 3, 4, 5, 6, 7, 8] and stats["sweep_scores"] == 8
    _, seen = _walk(lambda r: (r - 1) ** 2, 12, 4)
    assert seen == [4, 3, 5, 2, 1]            # the walk stops at the end of the range


def test_sweep_tells_the_score_to_beat_and_a_bound_at_it_stops_the_walk():
    beats = []
    _, seen = _walk(lambda r: (r - 7) ** 2, 12, 5, beats=beats)
    assert seen == [5, 4, 6, 7, 8] and beats == [math.inf, 4, 4, 1, 0]   # the score of the r walked from
    # a caller that answers "at least beat" for r = 6 (a bound, no solve) keeps the walk where it is
    _, seen = _walk(lambda r: 4 if r == 6 else (r - 7) ** 2, 12, 5)
    assert seen == [5, 4, 6]


def test_sweep_with_two_workers_scores_pairs_and_finds_the_same_minimum():
    for f, topics, start in (((lambda r: (r - 7) ** 2), 12, 2), ((lambda r: (r - 1) ** 2), 12, 4),
                             ((lambda r: abs(r - 5)), 10, 5), ((lambda r: (r - 3) ** 2 + 0.5 * r), 20, 9)):
        _, alone = _walk(f, topics, start)
        _, seen, calls = _walk(f, topics, start, workers=2)
        assert min(seen, key=f) == min(alone, key=f)
        assert calls[0] == [start, start - 1]           # the first guess and its lower neighbour at once
        assert len(seen) == len(set(seen)) and len(seen) <= len(alone) + 1
    _, seen, calls = _walk(lambda r: (r - 7) ** 2, 12, 2, workers=2)
    assert calls == [[2, 1], [3], [4, 5], [6, 7], [8, 9]]


def test_sweep_stops_where_no_neighbour_improves_and_at_its_deadline():
    _, seen = _walk(lambda r: abs(r - 5), 10, 5)
    assert seen == [5, 4, 6]
    stats, seen = _walk(lambda r: -r, 10, 3, until=0.0)
    assert seen == [] and stats["sweep_scores"] == 0
    assert _walk(lambda r: 0.0, 1, 1)[0]["sweep_scores"] == 0
