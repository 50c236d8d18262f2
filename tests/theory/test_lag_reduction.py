"""Set cover reduces to ``lag_active``'s sub-topology spread stage: machine checks.

For random small set systems: ``exact.lag_active``'s proven optimum has stages 1 and 2 at 0 and stage 3
equal to the padding's spread + one per set + the smallest cover; the sets an optimum uses are a
smallest cover; and a smallest cover maps forward to an assignment of that value.
"""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt import api
from kipopt.theory.lag_reduction import (cover_of, expected_spread, lag_instance, lag_solution,
                                         smallest_cover)


@st.composite
def set_systems(draw):
    """Up to 4 elements, up to 5 non-empty sets, every element covered (a singleton added if not)."""
    n = draw(st.integers(1, 4))
    sets = draw(st.lists(st.sets(st.integers(0, n - 1), min_size=1), min_size=1, max_size=5))
    sets = [sorted(s) for s in sets]
    sets += [[e] for e in range(n) if all(e not in s for s in sets)]
    return n, sets


def _a_smallest_cover(n, sets):
    tau = smallest_cover(n, sets)
    return next(list(c) for c in combinations(range(len(sets)), tau)
                if {e for i in c for e in sets[i]} == set(range(n)))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(set_systems())
def test_the_spread_stage_optimum_is_padding_plus_sets_plus_the_smallest_cover(case):
    n, sets = case
    x = lag_instance(n, sets)
    solution = api.solve(x, "exact.lag_active")
    assert solution.status.value == "optimal" and not solution.metrics["violations"]
    criteria = solution.metrics["criteria"]
    assert criteria["not_caught_up"] == 0 and criteria["balance_excess"] == 0
    assert criteria["subtopology_spread"] == expected_spread(n, sets), sets
    used = cover_of(solution.assignment, sets)
    assert {e for i in used for e in sets[i]} == set(range(n)) and len(used) == smallest_cover(n, sets)
    built = api.load_assignment(x, lag_solution(n, sets, _a_smallest_cover(n, sets)))
    scored = api.score(x, built, "lag_active")
    assert scored["violations"] == 0
    assert scored["criteria"]["subtopology_spread"] == expected_spread(n, sets)
    assert scored["criteria"]["balance_excess"] == 0 and scored["criteria"]["not_caught_up"] == 0


def test_an_uncovered_element_and_a_non_cover_are_refused():
    with pytest.raises(ValueError, match="every element"):
        lag_instance(2, [[0]])
    with pytest.raises(ValueError, match="not a cover"):
        lag_solution(2, [[0], [1]], [0])
