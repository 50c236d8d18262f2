"""``solve_lexicographic``: two stages merged into one objective answer as the two stages do, and a stale
start handed back by HiGHS is never taken for the optimum."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.formulations.highs import LexResult, SparseBuilder, solve_lexicographic, split_merged


@st.composite
def knapsacks(draw):
    """Pick exactly ``k`` of ``n`` binaries; two integer stage costs in [0, 5]."""
    n = draw(st.integers(2, 7))
    k = draw(st.integers(1, n))
    first = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=float)
    second = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=float)
    return n, k, first, second


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(knapsacks())
def test_two_stages_merged_answer_as_the_two_stages(case):
    n, k, first, second = case
    b = SparseBuilder()
    x = b.add_cols(n, upper=1.0, integer=True)
    b.add_row(x, 1.0, k, k)
    lp = b.build()
    apart = solve_lexicographic(lp, [first, second])
    weight = int(second.sum()) + 1
    together = split_merged(solve_lexicographic(lp, [first * weight + second]), weight)
    assert together.status == apart.status == "optimal" and together.stopped is None
    assert together.values == apart.values == together.bounds


def test_a_stopped_merged_stage_bounds_the_first_and_proves_it_when_it_can():
    stopped = LexResult("feasible", np.zeros(1), (3.0, 2 * 10 + 7), (3.0, 2 * 10 + 4), 1)
    r = split_merged(stopped, 10)
    assert r.values == (3.0, 2, 7) and r.bounds == (3.0, 2, 4) and r.stopped == 2
    open_first = split_merged(LexResult("feasible", np.zeros(1), (3.0, 27), (3.0, 15), 1), 10)
    assert open_first.values == (3.0, 2, 7) and open_first.bounds == (3.0, 1) and open_first.stopped == 1
