"""The dive on an optimum's face: what it answers is an optimum of the LP with the chosen columns integral."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kipopt.deadline import Deadline
from kipopt.formulations.highs import ArrayLP, WarmLP, build_csc
from kipopt.formulations.highs_face import dive_on_face
from kipopt.formulations.highs_lp import _highs, _result


def _lp(cost, rows: list[list[int]], lower: list[float], upper: list[float], col_upper=1.0) -> ArrayLP:
    n = len(cost)
    cols = np.array([j for r in rows for j in r], dtype=np.int64)
    at = np.array([i for i, r in enumerate(rows) for _ in r], dtype=np.int64)
    start, index, value = build_csc(n, cols, at, np.ones(len(cols)))
    return ArrayLP(np.asarray(cost, dtype=float), np.zeros(n), np.full(n, float(col_upper)),
                   np.asarray(lower, dtype=float), np.asarray(upper, dtype=float), start, index, value)


def _solved(lp: ArrayLP):
    h = _highs(lp, False, None, 1, False)
    h.run()
    return h, _result(h, False)


def _feasible(lp: ArrayLP, x: np.ndarray) -> bool:
    activity = np.zeros(lp.num_row)
    for j in range(lp.num_col):
        np.add.at(activity, lp.index[lp.start[j]:lp.start[j + 1]], lp.value[lp.start[j]:lp.start[j + 1]] * x[j])
    return bool(np.all(x >= lp.lower - 1e-7) and np.all(x <= lp.upper + 1e-7)
                and np.all(activity >= lp.row_lower - 1e-7) and np.all(activity <= lp.row_upper + 1e-7))


def _random_solved(seed: int, n: int, m: int):
    """A random covering LP with some rows capped (``n`` columns in [0, 2], ``m`` rows, integer costs of both
    signs), solved: ``(lp, its Highs object, the result)``."""
    rng = np.random.default_rng(seed)
    rows = [sorted(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False).tolist()) for _ in range(m)]
    cover = rng.integers(1, 3, m).astype(float)
    upper = np.where(rng.random(m) < 0.3, cover + rng.integers(0, 2, m), np.inf)
    lp = _lp(rng.integers(-2, 4, n), rows, cover, upper, col_upper=2.0)
    return (lp, *_solved(lp))


TRIANGLE = _lp([1, 1, 1], [[0, 1], [1, 2], [0, 2], [0, 1, 2]], [1, 1, 1, 2], [np.inf] * 4)
"""Each pair covers 1 and all three cover 2: value 2, a face with fractional vertices such as (1/2, 1/2, 1)
beside integral ones."""


def test_the_dive_leaves_a_fractional_vertex_for_an_integral_one_at_the_same_value():
    h, first = _solved(TRIANGLE)
    start = replace(first, x=np.array([0.5, 0.5, 1.0]))  # a fractional vertex of the same face
    got = dive_on_face(h, TRIANGLE, start, 3, Deadline.after(10))
    assert got is not None and got.status == "optimal" and got.objective == 2.0
    assert np.array_equal(got.x, np.round(got.x)) and _feasible(TRIANGLE, got.x)


def test_the_dive_gives_up_where_the_face_holds_no_integral_point_or_time_is_out():
    cycle = _lp([1, 1, 1], [[0, 1], [1, 2], [0, 2]], [1, 1, 1], [np.inf] * 3)
    h, first = _solved(cycle)
    assert first.objective == 1.5 and dive_on_face(h, cycle, first, 3, Deadline.after(10)) is None
    h, first = _solved(TRIANGLE)
    start = replace(first, x=np.array([0.5, 0.5, 1.0]))
    assert dive_on_face(h, TRIANGLE, start, 3, Deadline.after(0)) is None


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(3, 8), st.integers(2, 7), st.integers(1, 8))
def test_whatever_the_dive_answers_is_an_optimum_with_the_chosen_columns_integral(seed, n, m, k):
    k = min(k, n)
    lp, h, first = _random_solved(seed, n, m)
    if first.status != "optimal":
        return
    got = dive_on_face(h, lp, first, k, Deadline.after(10))
    if got is not None:
        assert got.status == "optimal" and abs(got.objective - first.objective) < 1e-6
        assert np.allclose(got.x[:k], np.round(got.x[:k])) and _feasible(lp, got.x)


def test_solve_then_answers_by_the_dive_where_the_rounding_falls_short(monkeypatch):
    def too_high(x: np.ndarray) -> np.ndarray:
        return np.ones(3)  # all three: value 3 where 2 is reachable
    for warm_columns in (WarmLP.WARM_COLUMNS, 1):  # in process, then in a child
        monkeypatch.setattr(WarmLP, "WARM_COLUMNS", warm_columns)
        first, second = WarmLP().solve_then(TRIANGLE, too_high, time_limit=30)
        assert first.objective == 2.0 and second.status == "optimal" and second.objective == 2.0
        assert np.array_equal(second.x, np.round(second.x))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(3, 8), st.integers(2, 7))
def test_every_point_of_the_face_is_an_optimum(seed, n, m):
    from kipopt.formulations.highs_face import _restrict_to_face
    rng = np.random.default_rng(seed + 1)
    lp, h, first = _random_solved(seed, n, m)
    if first.status != "optimal":
        return
    _restrict_to_face(h, lp, first)
    for _ in range(3):  # the face's points that other objectives pick
        h.changeColsCost(n, np.arange(n, dtype=np.int32), rng.normal(size=n))
        h.run()
        x = _result(h, False).x
        assert _feasible(lp, x) and abs(float(lp.cost @ x) - first.objective) < 1e-6
