"""3-dimensional matching reduces to ``tag_standby``, ``joint`` and tagged ``rack_standby``: machine checks.

For random small triple sets (every element covered): the exact methods' proven optima meet the value
the proof predicts (0 tag shortfall iff a perfect matching; ``10 q − 8 ν`` for ``rack_standby``), a
perfect matching maps forward to an assignment of that value, and an optimum maps back to a matching.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt import api
from kipopt.theory.tag_reduction import (NON_OVERLAP, TRAFFIC, is_matching, largest_matching, matching_of,
                                         rack_standby_instance, rack_standby_optimum, rack_standby_solution,
                                         tag_instance, tag_solution)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def triple_sets(draw, max_q: int = 3):
    """q and a duplicate-free list of triples over 0 .. q-1 in which every element occurs."""
    q = draw(st.integers(1, max_q))
    element = st.integers(0, q - 1)
    triples = draw(st.lists(st.tuples(element, element, element), max_size=q + 2))
    for k in range(3):
        for v in sorted(set(range(q)) - {t[k] for t in triples}):
            t = list(draw(st.tuples(element, element, element)))
            t[k] = v
            triples.append(tuple(t))
    return q, sorted(set(triples))


def _perfect(q, triples):
    from itertools import combinations
    return next((list(c) for c in combinations(triples, q) if is_matching(c)), None)


def _optimal(solution):
    assert solution.status.value == "optimal", solution.message
    assert not solution.metrics["violations"]


@SETTINGS
@given(triple_sets())
def test_tag_shortfall_is_zero_iff_a_perfect_matching_exists(case):
    q, triples = case
    x = tag_instance(q, triples)
    solution = api.solve(x, "exact.tag_standby")
    _optimal(solution)
    perfect = _perfect(q, triples)
    assert (solution.metrics["tag_shortfall"] == 0) == (perfect is not None), triples
    if perfect is not None:
        chosen = matching_of(solution.assignment, triples)
        assert len(chosen) == q and is_matching(chosen)
        built = api.load_assignment(x, tag_solution(triples, perfect))
        scored = api.score(x, built, "tag_standby")
        assert scored["violations"] == 0 and scored["criteria"]["tag_shortfall"] == 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(triple_sets())
def test_joint_tags_stage_is_zero_iff_a_perfect_matching_exists(case):
    q, triples = case
    solution = api.solve(tag_instance(q, triples), "exact.joint")
    _optimal(solution)
    criteria = solution.metrics["criteria"]
    assert criteria["caught_up"] == 0 and criteria["standbys"] == 0
    perfect = _perfect(q, triples) is not None
    assert (criteria["tags"] == 0) == perfect, triples
    if perfect:
        chosen = matching_of(solution.assignment, triples)
        assert len(chosen) == q and is_matching(chosen)


@SETTINGS
@given(triple_sets())
def test_rack_standby_optimum_is_ten_q_minus_eight_times_the_largest_matching(case):
    q, triples = case
    x = rack_standby_instance(q, triples)
    solution = api.solve(x, "exact.rack_standby")
    _optimal(solution)
    assert solution.objective == rack_standby_optimum(q, triples), triples
    used = matching_of(solution.assignment, triples)
    assert is_matching(used) and len(used) == largest_matching(q, triples)
    perfect = _perfect(q, triples)
    if perfect is not None:
        built = api.load_assignment(x, rack_standby_solution(q, triples, perfect))
        scored = api.score(x, built, "rack_standby")
        assert scored["violations"] == 0 and scored["objective"] == 2 * q * NON_OVERLAP
    else:
        assert solution.objective > 2 * q * NON_OVERLAP and TRAFFIC > 2 * NON_OVERLAP


def test_an_element_in_no_triple_is_refused():
    with pytest.raises(ValueError, match="every element"):
        tag_instance(2, [(0, 0, 0), (0, 1, 1)])
