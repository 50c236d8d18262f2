"""``exact.joint`` by client types (:mod:`kipopt.formulations.tasks.joint_grouped`): the same lexicographic
optimum as the per-client model, a bound valid for the rule, and HiGHS' stale-start answer caught."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt import api
from kipopt.datasets import generate
from kipopt.formulations.highs import solve_lexicographic
from kipopt.formulations.tasks import joint, joint_grouped, joint_realize
from kipopt.formulations.tasks.joint_stages import JointScores, priority_order
from kipopt.methods import SolveOptions
from kipopt.solution import Status

FAST = settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def joint_instances(draw):
    clients = draw(st.integers(2, 6))
    return generate("tasks", draw(st.integers(0, 10_000)), tasks=draw(st.integers(3, 14)), clients=clients,
                    subtopologies=draw(st.integers(1, 3)), tags=draw(st.integers(0, 2)),
                    tag_values=draw(st.integers(1, 3)), num_standby_replicas=draw(st.integers(0, 2)),
                    stateless_share=draw(st.sampled_from([0.0, 0.5])), caught_up=draw(st.sampled_from([0.0, 0.5, 1.0])),
                    new_clients=draw(st.integers(0, clients - 1)), max_capacity=draw(st.integers(1, 3)),
                    acceptable_recovery_lag=draw(st.sampled_from([0, 10_000])))


def _per_client_optimum(instance, order):
    """The per-client program solved from scratch (no start), as stage values of the rule."""
    model = joint.joint_model(instance)
    res = solve_lexicographic(model.lp, [model.objectives[s] for s in order])
    assert res.status == "optimal"
    return [int(round(v)) + model.constants[s] for v, s in zip(res.values, order)]


@FAST
@given(joint_instances(), st.sampled_from([(), ("traffic",), ("balance", "non_overlap")]))
def test_grouped_bound_is_the_per_client_optimum_and_realized_answers_meet_it(instance, first):
    order = priority_order(instance, first)
    grouped = joint_realize.solve_grouped(instance, first, start=joint.joint_start(instance))
    assert grouped.result.status == "optimal"
    optimum = _per_client_optimum(instance, order)
    bounds = grouped.bounds()
    assert [bounds[s] for s in order] <= optimum  # a relaxation: lexicographically no more
    if grouped.assignment is not None:
        values = JointScores.of(instance).stages(instance, grouped.assignment)
        assert [values[s] for s in order] == [bounds[s] for s in order] == optimum


@FAST
@given(joint_instances())
def test_exact_joint_is_optimal_with_bound_equal_to_objective(instance):
    s = api.solve(instance, "exact.joint")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == [] and s.bound == s.objective


def test_the_grouped_model_has_no_column_per_client_and_task():
    """5,000 tasks on 250 clients of 9 types: the per-client model would have 2.5 million columns."""
    x = generate("tasks", 1, tasks=1_000, clients=250, subtopologies=100, inputs=2, changelogs=1,
                 replication_factor=2, racks=3, stateless_share=0.0)
    scores = JointScores.of(x)
    model = joint_grouped.build(x, scores, joint_grouped.grouping(x, scores))
    assert model.builder.num_col < 40 * len(x.tasks) < (2 * len(x.tasks)) * len(x.clients) / 10
    assert joint_grouped.grouped_size(x) is None


def test_a_stale_start_from_highs_is_not_taken_for_the_optimum():
    """HiGHS 1.16 answered 'optimal' with the start's columns (traffic 80) and its own objective (50): the
    lexicographic solve must not fix the stage at 80 (found on this instance)."""
    import random

    rnd = random.Random(13)
    x = generate("tasks", 13, tasks=rnd.randint(3, 14), clients=rnd.randint(2, 6), tags=rnd.randint(0, 2),
                 num_standby_replicas=rnd.randint(0, 2), stateless_share=rnd.choice([0.0, 0.5]),
                 caught_up=rnd.choice([0.0, 0.5, 1.0]), new_clients=rnd.randint(0, 1))
    order = priority_order(x)
    model = joint.joint_model(x)
    start = joint.greedy_start(x, model, JointScores.of(x))
    res = solve_lexicographic(model.lp, [model.objectives[s] for s in order], start=start,
                              lower_bounds=[-model.constants[s] for s in order])
    assert list(res.values) == list(res.bounds)
    assert [int(v) + model.constants[s] for v, s in zip(res.values, order)] == _per_client_optimum(x, order)
    assert float(model.objectives["traffic"] @ np.rint(res.x)) == res.values[order.index("traffic")]


def test_a_deadline_inside_the_grouped_model_keeps_a_valid_bound():
    x = generate("tasks", 2, tasks=400, clients=40, tags=2, num_standby_replicas=1)
    r = joint.run_joint(x, SolveOptions(time_limit=0.5))
    exact = api.solve(x, "exact.joint")
    assert r.bound is not None and r.bound <= exact.objective <= r.objective


def test_the_flow_fill_realizes_what_the_greedy_does(monkeypatch):
    """Where the greedy fill is not used, the maximum flow realizes the same optimum."""
    x = generate("tasks", 5, tasks=40, clients=9, tags=2, num_standby_replicas=2)
    order = priority_order(x)
    greedy = joint_realize.solve_grouped(x, start=joint.joint_start(x))
    monkeypatch.setattr(joint_realize, "_fill_greedy", lambda *args: None)
    flow = joint_realize.solve_grouped(x, start=joint.joint_start(x))
    assert greedy.assignment is not None and flow.assignment is not None
    scores = JointScores.of(x)
    for solution in (greedy, flow):
        values = scores.stages(x, solution.assignment)
        assert [values[s] for s in order] == [solution.bounds()[s] for s in order]
