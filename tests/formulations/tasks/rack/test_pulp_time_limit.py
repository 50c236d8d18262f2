"""PuLP's HiGHS models stopped at their time limit: an LP's point is no answer."""

from __future__ import annotations

import pytest

from kipopt.datasets import generate
from kipopt.formulations.tasks.rack.pulp_models import _solve, active_model, solve_active_pulp
from kipopt.formulations.tasks.rack.rules import active_bounds, active_problem


@pytest.fixture(scope="module")
def problem():
    x = generate("tasks", 21, tasks=167, clients=10, strategy="balance_subtopology", num_standby_replicas=2)
    return active_problem(x, active_bounds(x, "rack_active"))


@pytest.mark.parametrize("limit", [1e-6, 1e-3])
def test_an_lp_stopped_at_its_limit_is_no_answer(problem, limit):
    """PuLP reports such a run "Optimal, integer feasible" when its objective is finite; the point was every
    task unplaced, priced at 967 against an optimum of 157, and ``exact.rack_active`` answered ``error``."""
    prob, _ = active_model(problem)
    assert _solve(prob, mip=False, time_limit=limit, threads=None) == "time_limit"
    stopped = solve_active_pulp(problem, limit)
    assert stopped.placement is None and stopped.status == "time_limit"
    done = solve_active_pulp(problem, None)
    assert done.status == "optimal" and (done.placement >= 0).all()
