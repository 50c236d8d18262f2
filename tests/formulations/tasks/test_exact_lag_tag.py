"""``exact.lag_active`` and ``exact.tag_standby``: brute force, grouped vs ungrouped, ports, KIP-708, time limits."""

from __future__ import annotations

import itertools

import numpy as np

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.api import solve
from kipopt.datasets import generate
from kipopt.datasets.scenarios import load_scenario, scenario_solutions
from kipopt.formulations.tasks import lag_active
from kipopt.formulations.tasks import tag_standby
from kipopt.formulations.tasks.rules import (lag_active_levels, lag_active_objective, standby_target,
                                            tag_standby_levels, tag_standby_objective)
from kipopt.instance import from_dict, to_dict
from kipopt.methods import SolveOptions, methods, rules
from kipopt.solution import Status, TaskRoles, current_assignment, parse_solution

FAST = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _untagged(instance):
    """The same instance with no configured tags (the rule then counts every tag key in use)."""
    d = to_dict(instance)
    d["config"]["rack_aware_assignment_tags"] = []
    return from_dict(d)


@st.composite
def task_instances(draw, max_tasks: int, max_clients: int, max_standbys: int = 2):
    """Generated instances with caught-up, lagging and stateless tasks, 1-3 tag dimensions."""
    clients = draw(st.integers(2, max_clients))
    instance = generate(
        "tasks", draw(st.integers(0, 10_000)), tasks=draw(st.integers(2, max_tasks)), subtopologies=2,
        clients=clients, tags=draw(st.integers(1, 3)), tag_values=draw(st.integers(1, 3)),
        num_standby_replicas=draw(st.integers(0, max_standbys)), caught_up=draw(st.sampled_from([0.0, 0.5, 1.0])),
        stateless_share=draw(st.sampled_from([0.0, 0.5])), new_clients=draw(st.integers(0, clients - 1)),
        max_capacity=draw(st.integers(1, 3)), acceptable_recovery_lag=draw(st.sampled_from([0, 10_000])))
    return _untagged(instance) if draw(st.booleans()) else instance


# --------------------------------------------------------------------------- brute force


def brute_lag_active(instance) -> float:
    """Minimum rule objective over every placement of every task on one client."""
    tasks, clients = instance.task_ids, instance.client_ids
    best = None
    for combo in itertools.product(range(len(clients)), repeat=len(tasks)):
        a = lag_active.to_assignment(tasks, clients, __import__("numpy").array(combo))
        value = lag_active_objective(instance, a)
        best = value if best is None else min(best, value)
    return best


def brute_tag_standby(instance) -> float:
    """Minimum rule objective over every choice of σ standby clients per stateful task."""
    clients, sigma = instance.client_ids, standby_target(instance)
    owner = {t: c for c in clients for t in instance.clients[c].active}
    stateful = [t for t in instance.task_ids if instance.tasks[t].stateful]
    choices = [list(itertools.combinations([c for c in clients if c != owner[t]], sigma)) for t in stateful]
    best = None
    for combo in itertools.product(*choices):
        a = {c: TaskRoles(instance.clients[c].active, tuple(t for t, ch in zip(stateful, combo) if c in ch))
             for c in clients}
        value = tag_standby_objective(instance, a)
        best = value if best is None else min(best, value)
    return best


@FAST
@given(task_instances(max_tasks=6, max_clients=3))
def test_lag_active_brute_force(instance):
    """Tiny instances: the exact optimum is the minimum over all placements."""
    s = solve(instance, "exact.lag_active")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
    assert s.objective == s.bound == brute_lag_active(instance)


@FAST
@given(task_instances(max_tasks=4, max_clients=5))
def test_tag_standby_brute_force(instance):
    """Tiny instances: the exact optimum is the minimum over all standby choices."""
    s = solve(instance, "exact.tag_standby")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
    assert s.objective == s.bound == brute_tag_standby(instance)


# --------------------------------------------------------------------------- grouped vs ungrouped


@FAST
@given(task_instances(max_tasks=24, max_clients=6))
def test_lag_active_grouped_equals_ungrouped(instance):
    """Pools and classes lose nothing: the per-task model reaches the same stage values."""
    r = lag_active.run_lag_active(instance, SolveOptions())
    assignment, values = lag_active.solve_ungrouped(instance)
    assert r.status is Status.OPTIMAL
    assert r.objective == lag_active_objective(instance, assignment)
    assert tuple(r.info["stage_values"]) == values


@FAST
@given(task_instances(max_tasks=20, max_clients=7, max_standbys=3))
def test_tag_standby_grouped_equals_ungrouped(instance):
    """Profile classes lose nothing: the per-task model reaches the same objective."""
    r = tag_standby.run_tag_standby(instance, SolveOptions())
    res, chosen = tag_standby.solve_ungrouped(instance)
    assert r.status is Status.OPTIMAL and res.status == "optimal"
    assert r.objective == tag_standby_objective(instance, tag_standby.to_assignment(instance, chosen))


# --------------------------------------------------------------------------- properties on larger instances


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(task_instances(max_tasks=80, max_clients=12, max_standbys=3))
def test_exact_properties(instance):
    """Both methods: optimal, feasible, stage 1 at its proven optimum, never worse than the start."""
    la, ts = solve(instance, "exact.lag_active"), solve(instance, "exact.tag_standby")
    for s in (la, ts):
        assert s.status is Status.OPTIMAL and s.metrics["violations"] == [] and s.gap == 0
    assert lag_active_levels(instance, la.assignment).not_caught_up == 0
    assert la.metrics["actives_not_caught_up"] == 0
    start = current_assignment(instance)
    assert la.objective <= lag_active_objective(instance, {c: TaskRoles(r.active) for c, r in start.items()})


def test_tag_standby_model_is_small():
    """2,000 tasks on 100 clients with 2 tag dimensions: the grouped model has a few hundred columns."""
    x = generate("tasks", 1, tasks=2000, clients=100, tags=2)
    r = tag_standby.run_tag_standby(x, SolveOptions())
    assert r.status is Status.OPTIMAL and r.info["model"] == "tag-standby-grouped"
    assert r.info["columns"] <= r.info["profiles"] * (100 + 10) + 2


def test_repeated_profile_options():
    """σ larger than the distinct profiles: options use a profile twice and the Gale-Ryser read-back works."""
    x = generate("tasks", 5, tasks=30, clients=8, tags=1, tag_values=2, num_standby_replicas=4)
    r = tag_standby.run_tag_standby(x, SolveOptions())
    res, chosen = tag_standby.solve_ungrouped(x)
    assert r.status is Status.OPTIMAL
    assert r.objective == tag_standby_objective(x, tag_standby.to_assignment(x, chosen))


# --------------------------------------------------------------------------- KIP-708 and edge cases


@pytest.mark.parametrize("name", ["kip708_nine_clients", "kip708_six_nodes"])
def test_kip708_ideal_distribution(name):
    """Both KIP-708 examples reach the ideal: every tag value distinct over each task's hosts (D = 0),
    and the exact choice is as good as the KIP's own options."""
    x = load_scenario(name)
    s = solve(x, "exact.tag_standby")
    assert s.status is Status.OPTIMAL and s.metrics["tag_shortfall"] == 0
    for data in scenario_solutions(name).values():
        assert s.objective <= tag_standby_objective(x, parse_solution(x, data))


def test_no_standbys_wanted():
    """num_standby_replicas = 0: no standbys at all, optimal."""
    x = generate("tasks", 2, tasks=12, clients=4, num_standby_replicas=0)
    s = solve(x, "exact.tag_standby")
    assert s.status is Status.OPTIMAL and not any(r.standby for r in s.assignment.values())


def test_more_standbys_than_clients():
    """More standbys asked for than clients allow: every other client gets one (σ = |C| - 1)."""
    x = generate("tasks", 3, tasks=10, clients=3, num_standby_replicas=5)
    s = solve(x, "exact.tag_standby")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
    assert tag_standby_levels(x, s.assignment).standby_imbalance >= 0


def test_tag_standby_needs_unique_actives():
    """A task active nowhere cannot keep its active: the method names the field (exit 2 on the CLI)."""
    d = to_dict(generate("tasks", 1, tasks=6, clients=3))
    for c in d["clients"].values():
        c["active"] = [t for t in c["active"] if t != "0_0"]
    from kipopt.errors import InstanceError
    with pytest.raises(InstanceError, match="0_0"):
        solve(from_dict(d), "exact.tag_standby")


@pytest.mark.parametrize("method", ["exact.lag_active", "exact.tag_standby"])
def test_time_limit_returns_an_answer(method):
    """A tiny time limit still returns a feasible assignment with a bound no larger than its objective."""
    x = generate("tasks", 4, tasks=600, clients=40, num_standby_replicas=2)
    s = solve(x, method, time_limit=0.001)
    assert s.status in (Status.OPTIMAL, Status.FEASIBLE) and s.metrics["violations"] == []
    assert s.bound is not None and s.bound <= s.objective


# --------------------------------------------------------------------------- ports of the rules

PORTS = sorted(name for name, m in methods().items()
               if m.rule in ("lag_active", "tag_standby") and not m.exact)


@pytest.mark.parametrize("port", PORTS)
@pytest.mark.parametrize("seed", range(6))
def test_exact_never_worse_than_port(port, seed):
    """Every registered port of a rule is feasible for it, and the exact method is never worse."""
    rule = rules()[methods()[port].rule]
    x = generate("tasks", seed, tasks=40 + 10 * seed, clients=4 + seed, num_standby_replicas=seed % 3,
                 new_clients=seed % 2, stateless_share=0.34, tags=1 + seed % 3)
    p, e = solve(x, port), solve(x, rule.exact_method)
    assert p.metrics["violations"] == [], p.metrics["violations"]
    assert e.status is Status.OPTIMAL and e.objective <= p.objective


def test_tag_standby_fallbacks(monkeypatch):
    """Read-back failing, then the per-task model out of time: a greedy answer, feasible, with the
    grouped model's bound (never an error without an answer). The model's own fallbacks, so the guard
    (which answers with its start when no time is left, ``tests/test_limits.py``) is bypassed."""
    from kipopt.formulations.tasks import guard
    monkeypatch.setattr(guard, "run_guarded",
                        lambda instance, options, run, start, objective=None: run(instance, options))
    x = generate("tasks", 4, tasks=200, clients=20, num_standby_replicas=2)
    exact = solve(x, "exact.tag_standby")
    monkeypatch.setattr(tag_standby, "disaggregate", lambda *args: None)
    s = solve(x, "exact.tag_standby", time_limit=1e-9)
    assert s.status is Status.FEASIBLE and s.metrics["violations"] == []
    assert s.metrics["model"] == "tag-standby-greedy"
    assert s.bound <= exact.objective <= s.objective


@FAST
@given(task_instances(max_tasks=30, max_clients=8, max_standbys=4))
def test_greedy_standbys_feasible(instance):
    """The greedy fallback always meets the rule's hard constraints."""
    import numpy as np
    clients = instance.client_ids
    owner = np.array([clients.index(c) for t in instance.task_ids for c in clients if t in instance.clients[c].active])
    stateful = np.array([instance.tasks[t].stateful for t in instance.task_ids])
    capacity = np.array([instance.clients[c].capacity for c in clients])
    chosen = tag_standby.greedy_standbys(tag_standby.profiles(instance), owner, stateful, standby_target(instance),
                                         capacity)
    assert rules()["tag_standby"].violations(instance, tag_standby.to_assignment(instance, chosen)) == []


# --------------------------------------------------------------------------- size of the grouped model


@FAST
@given(task_instances(max_tasks=40, max_clients=8))
def test_lag_model_size_estimate_bounds_the_model(instance):
    """The memory check's column count (no model built) is never below the model's."""
    p = lag_active.lag_problem(instance)
    b, _, _ = lag_active.build_model(p)
    assert lag_active.lag_columns(instance)[0] >= b.num_col


def test_lag_model_grows_with_the_classes_not_with_subtopologies_times_clients():
    """Every task stateful with one or two most caught-up clients: no pool, so no (sub-topology, client)
    block; the columns are the (class, allowed client) arcs of classes with a choice plus the levels."""
    x = generate("tasks", 4, tasks=400, clients=60, subtopologies=40, stateless_share=0.0, caught_up=0.0)
    p = lag_active.lag_problem(x)
    assert (p.task_class >= 0).all()
    b, cols, _ = lag_active.build_model(p)
    G, C = len(p.groups), p.num_clients
    choice = np.diff(p.class_ptr) > 1
    assert b.num_col == int(np.diff(p.class_ptr)[choice].sum()) + 2 * G + 3 < G * C
    assert len(cols.mv) == 0 and len(cols.st) == 0
    r = lag_active.run_lag_active(x, SolveOptions())
    assert r.status is Status.OPTIMAL
    assignment, values = lag_active.solve_ungrouped(x)
    assert tuple(r.info["stage_values"]) == values
