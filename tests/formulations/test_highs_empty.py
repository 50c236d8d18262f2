"""A model without columns (nothing to place) is answered without HiGHS, which calls it "Empty", an error."""

from __future__ import annotations

import numpy as np

from kipopt.formulations.highs import ArrayLP, solve_lp
from kipopt.instance import from_dict
from kipopt.api import solve


def _empty(row_lower: list[float], row_upper: list[float]) -> ArrayLP:
    empty = np.zeros(0)
    return ArrayLP(empty, empty, empty, np.array(row_lower, float), np.array(row_upper, float),
                   np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), empty)


def test_rows_that_admit_zero_make_an_optimal_empty_model():
    r = solve_lp(_empty([0.0, -1.0], [0.0, 2.0]))
    assert (r.status, r.objective, r.bound, r.x.tolist()) == ("optimal", 0.0, 0.0, [])


def test_a_row_that_needs_activity_makes_it_infeasible():
    assert solve_lp(_empty([1.0], [2.0]), integer=True).status == "infeasible"


def test_exact_rack_standby_without_standbys_is_optimal():
    """Found by the round-trip property test: no standby to place made HiGHS answer 'error'."""
    instance = from_dict({
        "format": 1, "family": "tasks", "topics": {"t": {"racks": [[]]}},
        "tasks": {"0_0": {"inputs": ["t-0"], "changelogs": []}},
        "clients": {"a": {"active": ["0_0"]}}, "config": {"num_standby_replicas": 0}})
    s = solve(instance, "exact.rack_standby")
    assert (s.status.value, s.objective, s.bound) == ("optimal", 0, 0)
