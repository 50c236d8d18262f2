"""The dec-min stages at scale.

Stage 1's window: every dec-min member count lies between the largest least count and the smallest
greatest count of any valid assignment (:func:`~kipopt.formulations.consumers.decmin.extreme_counts`), so
the convex flow's segments run over that window only. The face's description may tighten (a class whose
full range leaves a level below the window free holds no member there in any dec-min answer) but its
answers are the same: the same sum of squares and the same stage-2 optimum. Stage 2 on large groups:
interior point and crossover (a vertex, integral), in a child the time limit kills."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kipopt.datasets import generate
from kipopt.formulations.consumers import decmin
from kipopt.formulations.consumers.decmin import balance_face, balanced_problem, solve_balanced
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.formulations.highs import solve_tu_lp

from consumer_cases import _all_assignments, tiny_groups


def _counted(inst) -> list[list[int]]:
    """Per valid assignment, the counts of the members that subscribe to something."""
    lay = layout(inst)
    subscribed = [m for m, ts in zip(lay.members, lay.member_topics) if ts]
    return [[len(a[m]) for m in subscribed] for a in _all_assignments(inst)]


def _same(inst, lay, a, b) -> bool:
    """The two faces hold the same dec-min answers: the same sum of squares, the same stage-2 optimum,
    and the narrower description (``a``) within the window."""
    low, high = a.info["stage1_window"] if isinstance(a.info["stage1_window"], list) else (0, np.inf)
    has_topics = np.array([bool(c) for c in a.classes])
    values = [balanced_problem(inst, lay, face) for face in (a, b)]
    optima = [solve_tu_lp(v.lp)[0].objective for v in values]
    return (a.info["sum_squares"] == b.info["sum_squares"] and optima[0] == optima[1]
            and (a.low[has_topics] >= low).all() and (a.high[has_topics] <= high).all())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups())
def test_the_window_is_the_largest_least_and_the_smallest_greatest_count(inst):
    counts = _counted(inst)
    face = balance_face(inst, layout(inst))
    assert face.info["stage1_window"] == [max(min(c) for c in counts), min(max(c) for c in counts)]
    decmin_counts = [len(v) for v in solve_balanced(inst)[0].values()]
    lay = layout(inst)
    low, high = face.info["stage1_window"]
    assert all(low <= n <= high for n, ts in zip(decmin_counts, lay.member_topics) if ts)


@st.composite
def bipartite(draw):
    """Topics (their partitions), classes (their members) and the arcs between them, every class with one."""
    topics, classes = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    arcs = sorted({(draw(st.integers(0, topics - 1)), c) for c in range(classes)}
                  | set(draw(st.lists(st.tuples(st.integers(0, topics - 1), st.integers(0, classes - 1)), max_size=8))))
    count = np.array(draw(st.lists(st.integers(1, 4), min_size=classes, max_size=classes)))
    supply = np.array(draw(st.lists(st.integers(0, 12), min_size=topics, max_size=topics)), dtype=np.float64)
    return np.array([t for t, _ in arcs]), np.array([c for _, c in arcs]), count, supply


@settings(max_examples=200, deadline=None)
@given(bipartite())
def test_the_even_window_is_the_lps_where_it_answers(case):
    """The two maximum flows (everyone at ``⌊P / M⌋`` or one more) answer exactly when that is possible, and
    then as the two LPs do."""
    f_topic, f_class, count, supply = case
    assume(supply[np.unique(f_topic)].sum() == supply.sum())     # every topic with partitions has a subscriber
    with mock.patch.object(decmin, "_even_window", return_value=None):
        by_lps = decmin.extreme_counts(f_topic, f_class, count, supply)
    q, r = divmod(int(supply.sum()), int(count.sum()))
    even = decmin._even_window(f_topic, f_class, count, supply, np.unique(f_class))
    assert (even is not None) == (by_lps == (q, q + (r > 0)))
    assert even is None or even == by_lps


CASES = [dict(partitions=p, members=m, subscriptions="mixed", topics=t, seed=seed)
         for seed, (p, m, t) in enumerate([(40, 6, 4), (300, 9, 5), (2_000, 40, 8), (5_000, 120, 10),
                                           (900, 30, 3), (64, 64, 6)])]


@pytest.mark.parametrize("params", CASES, ids=lambda p: f"{p['partitions']}x{p['members']}x{p['topics']}")
def test_the_window_gives_the_full_ranges_face(params):
    inst = generate("consumers", **params)
    lay = layout(inst)
    narrowed = balance_face(inst, lay)
    with mock.patch.object(decmin, "extreme_counts", return_value=None):
        full = balance_face(inst, lay)
    assert _same(inst, lay, narrowed, full)
    assert narrowed.info["stage1_columns"] <= full.info["stage1_columns"]
    assert np.array_equal(narrowed.levels[0], full.levels[0]) and np.array_equal(narrowed.levels[1], full.levels[1])


def test_a_window_with_no_solution_falls_back_to_the_full_range():
    """A wrong window (as a numerical slip in its LPs could give) leaves the flow without a solution:
    stage 1 then solves the full range, and says so."""
    inst = generate("consumers", 3, partitions=600, members=20, subscriptions="mixed", topics=5)
    lay = layout(inst)
    right = balance_face(inst, lay)
    low, high = right.info["stage1_window"]
    with mock.patch.object(decmin, "extreme_counts", return_value=(high + 1, high + 1)):
        fallback = balance_face(inst, lay)
    assert _same(inst, lay, fallback, right)
    assert fallback.info["stage1_window"] == "no solution in the window: the full range"


@pytest.mark.parametrize("params", CASES[1:4], ids=lambda p: f"{p['partitions']}x{p['members']}x{p['topics']}")
@pytest.mark.parametrize("limit", [None, 60.0])
def test_stage2_by_interior_point_has_the_simplex_optimum(params, limit):
    inst = generate("consumers", **params)
    lay = layout(inst)
    simplex = solve_balanced(inst, limit, 1, lay)
    with mock.patch.object(decmin, "STAGE2_INTERIOR_COLUMNS", 0):
        interior = solve_balanced(inst, limit, 1, lay)
    assert interior[1] == simplex[1] == "optimal" and not interior[2]["ilp_fallback"]
    assert interior[2]["model_objective"] == simplex[2]["model_objective"]
    assert balanced_objective(inst, interior[0]) == balanced_objective(inst, simplex[0])
    assert not balanced_violations(inst, interior[0])


def test_stage2_by_interior_point_stops_at_its_time_limit():
    inst = generate("consumers", 2, partitions=5_000, members=120, subscriptions="mixed", topics=10)
    lay = layout(inst)
    problem = balanced_problem(inst, lay, balance_face(inst, lay))
    with mock.patch.object(decmin, "STAGE2_INTERIOR_COLUMNS", 0):
        result, _ = decmin._stage2(problem.lp, 1e-4, 1)
    assert result.status == "time_limit" and result.x is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups())
def test_the_even_windows_face_read_with_no_lp_is_the_lps(inst):
    """Where the window is even the face is read with no LP: the same dec-min answers (sum of squares,
    stage-2 optimum) as the narrowed flow's LP gives, every valid assignment with counts in the face's
    bounds pairwise balanced at that sum of squares."""
    lay = layout(inst)
    flat = balance_face(inst, lay)
    assume(flat is not None and "stage1_lp" in flat.info)
    with mock.patch.object(decmin, "_even_counts", return_value=(-1, -1)):
        by_lp = balance_face(inst, lay)
    assert by_lp is not None and "stage1_lp" not in by_lp.info
    assert _same(inst, lay, flat, by_lp)
    best = min(sum(n * n for n in c) for c in _counted(inst))
    assert flat.info["sum_squares"] == best


@pytest.mark.parametrize("params", [dict(partitions=5_000, members=50, topics=20, seed=4),
                                    dict(partitions=3_000, members=100, topics=12, seed=5)])
def test_an_even_window_solves_no_lp_at_scale(params):
    inst = generate("consumers", subscriptions="mixed", **params)
    lay = layout(inst)
    face = balance_face(inst, lay)
    assert face.info["stage1_lp"] == "none (even window)" and face.info["stage1_columns"] == 0
    with mock.patch.object(decmin, "_even_counts", return_value=(-1, -1)):
        by_lp = balance_face(inst, lay)
    assert _same(inst, lay, face, by_lp)
