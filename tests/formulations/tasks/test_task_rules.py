"""The ``lag_active`` and ``tag_standby`` rules: levels, lexicographic encoding, hard constraints."""

from __future__ import annotations

from dataclasses import astuple

import pytest

from kipopt.datasets import generate
from kipopt.datasets.scenarios import load_scenario, scenario_solutions
from kipopt.evaluation import evaluate
from kipopt.formulations.tasks.rules import (BALANCE_FACTOR, lag_active_levels, lexicographic, standby_target,
                                            tag_standby_levels, thread_imbalance, weight)
from kipopt.instance import from_dict, to_dict
from kipopt.methods import rules
from kipopt.solution import TaskRoles, current_assignment, parse_solution


def _tiny(**config) -> object:
    return from_dict({
        "format": 1, "family": "tasks",
        "topics": {"in": {"racks": [[], [], []]}, "cl": {"racks": [[], [], []]}},
        "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"], "end_offset": 50000},
                  "0_1": {"inputs": ["in-1"], "changelogs": ["cl-1"], "end_offset": 50000},
                  "1_0": {"inputs": ["in-2"]}},
        "clients": {"a": {"tags": {"zone": "z1", "cluster": "k1"}, "capacity": 2, "active": ["0_0", "1_0"],
                          "lags": {"0_0": 0, "0_1": 30000}},
                    "b": {"tags": {"zone": "z2", "cluster": "k1"}, "active": ["0_1"], "lags": {"0_1": 0}},
                    "c": {"tags": {"zone": "z1", "cluster": "k2"}}},
        "config": {"num_standby_replicas": 1, **config}})


def test_registered():
    """Both rules are registered for the tasks family, minimised, naming their exact methods."""
    for name, method in (("lag_active", "exact.lag_active"), ("tag_standby", "exact.tag_standby")):
        rule = rules()[name]
        assert (rule.family, rule.exact_method, rule.sense) == ("tasks", method, "min")


def test_current_assignment_levels():
    """The starting assignment is on caught-up clients, balanced per thread, unmoved."""
    x = _tiny()
    levels = lag_active_levels(x, current_assignment(x))
    # counts a=2 (cap 2), b=1, c=0: ⌈2/2⌉, ⌈1⌉, ⌈0⌉ -> 1; ⌊..⌋ min 0 -> I = 1, within the factor
    assert astuple(levels) == (0, 0, 1 + 1, 0)
    assert rules()["lag_active"].violations(x, current_assignment(x)) == []


def test_lagging_active_counts_and_moves():
    """0_1 on a (lag 30000 > 10000) is not caught up and counts as a move; c without state too."""
    x = _tiny()
    moved = {"a": TaskRoles(("0_0", "0_1", "1_0")), "b": TaskRoles(), "c": TaskRoles()}
    levels = lag_active_levels(x, moved)
    assert levels.not_caught_up == 1 and levels.movements == 1
    # a holds 3 on 2 threads: ⌈3/2⌉ = 2, min ⌊0⌋ = 0 -> I = 2, one beyond the factor
    assert levels.balance_excess == 2 - BALANCE_FACTOR
    assert levels.not_caught_up == evaluate(x, moved).metrics["actives_not_caught_up"]


def test_no_caught_up_client_ranks_by_lag():
    """With nobody within the acceptable lag, the least lagging client is the most caught up."""
    x = _tiny(acceptable_recovery_lag=0)
    on_b = {"a": TaskRoles(("0_0", "1_0")), "b": TaskRoles(("0_1",)), "c": TaskRoles()}
    on_c = {"a": TaskRoles(("0_0", "1_0")), "b": TaskRoles(), "c": TaskRoles(("0_1",))}
    assert lag_active_levels(x, on_b).not_caught_up == 0
    assert lag_active_levels(x, on_c).not_caught_up == 1  # c has no state: lag 50000 > b's 0


def test_lag_active_violations_on_broken_assignments():
    """A task with no active and a task active twice are both reported."""
    x = _tiny()
    broken = {"a": TaskRoles(("0_0",)), "b": TaskRoles(("0_0", "0_1")), "c": TaskRoles()}
    found = {v.rule: v.count for v in rules()["lag_active"].violations(x, broken)}
    assert found == {"unassigned_active": 1, "duplicate_active": 1}


def test_tag_standby_violations_on_broken_assignments():
    """Changed actives and wrong standby counts (too few, too many, on the active) are reported."""
    x = _tiny()
    assert standby_target(x) == 1
    rule = rules()["tag_standby"]
    good = {"a": TaskRoles(("0_0", "1_0"), ("0_1",)), "b": TaskRoles(("0_1",)), "c": TaskRoles((), ("0_0",))}
    assert rule.violations(x, good) == []
    cases = {
        "active_changed": {"a": TaskRoles(("0_0",), ("0_1",)), "b": TaskRoles(("0_1", "1_0")),
                           "c": TaskRoles((), ("0_0",))},
        "standby_count": {"a": TaskRoles(("0_0", "1_0"), ("0_1",)), "b": TaskRoles(("0_1",), ("0_0",)),
                          "c": TaskRoles((), ("0_0",))},
    }
    for name, assignment in cases.items():
        assert name in {v.rule for v in rule.violations(x, assignment)}
    on_active = {"a": TaskRoles(("0_0", "1_0"), ("0_1", "0_0")), "b": TaskRoles(("0_1",)), "c": TaskRoles()}
    assert {v.rule for v in rule.violations(x, on_active)} == {"standby_count"}
    assert "active_standby_colocated" in {v.rule for v in evaluate(x, on_active).violations}


def test_tag_levels_agree_with_evaluator():
    """D is the evaluator's tag_shortfall; the better-spread standby has the lower objective."""
    x = _tiny(rack_aware_assignment_tags=["zone", "cluster"])
    spread = {"a": TaskRoles(("0_0", "1_0"), ("0_1",)), "b": TaskRoles(("0_1",)), "c": TaskRoles((), ("0_0",))}
    same = {"a": TaskRoles(("0_0", "1_0"), ("0_1",)), "b": TaskRoles(("0_1",), ("0_0",)), "c": TaskRoles()}
    for assignment in (spread, same):
        d = tag_standby_levels(x, assignment).tag_shortfall
        assert d == evaluate(x, assignment).metrics["tag_shortfall"]
    # 0_0 active on a (z1, k1): c (z1, k2) adds a cluster, b (z2, k1) adds a zone; both D = 1 for 0_0
    rule = rules()["tag_standby"]
    assert rule.objective(x, spread) == rule.objective(x, same)


def test_lexicographic_order():
    """A worse higher level is never paid back by any lower level (W = |T| + 1)."""
    x = generate("tasks", 3, tasks=20, clients=5)
    w = weight(x)
    assert w == 21
    worst_lower = lexicographic(x, (0, 20, 20, 20))
    assert lexicographic(x, (1, 0, 0, 0)) > worst_lower
    assert lexicographic(x, (0, 1, 0, 0)) > lexicographic(x, (0, 0, 20, 20))


def test_thread_imbalance_is_attainable():
    """Every thread holding ⌊T/K⌋ or ⌈T/K⌉ tasks has imbalance at most 1."""
    caps = {"a": 3, "b": 1, "c": 2}
    assert thread_imbalance({"a": 6, "b": 2, "c": 4}, caps) == 0
    assert thread_imbalance({"a": 7, "b": 2, "c": 4}, caps) == 1
    assert thread_imbalance({"a": 9, "b": 0, "c": 4}, caps) == 3


@pytest.mark.parametrize("label", ["first_rebalance", "second_rebalance"])
def test_kip441_scale_out_levels(label):
    """KIP-441's scale-out keeps every active on a caught-up client; the second rebalance runs after
    I3 has caught up on its warm-ups (T1, T3), and is balanced at the price of one move."""
    x = load_scenario("kip441_scale_out")
    if label == "second_rebalance":
        d = to_dict(x)
        d["clients"]["I3"]["lags"] = {"0_0": 0, "0_2": 0}
        x = from_dict(d)
    assignment = parse_solution(x, scenario_solutions("kip441_scale_out")[label])
    levels = lag_active_levels(x, assignment)
    second = label == "second_rebalance"
    # the catching-up assignment is unbalanced (I1 runs 2, I3 none): B = 2 - 1; the stable one is not
    assert astuple(levels) == ((0, 0, 0, 1) if second else (0, 1, 2, 0))
    assert rules()["lag_active"].violations(x, assignment) == []


def test_kip708_ideal_options_have_no_shortfall():
    """Both of KIP-708's ideal options for the nine clients, and both six-node picks, have D = 0."""
    for name in ("kip708_nine_clients", "kip708_six_nodes"):
        x = load_scenario(name)
        for label, data in scenario_solutions(name).items():
            assignment = parse_solution(x, data)
            assert tag_standby_levels(x, assignment).tag_shortfall == 0, (name, label)
            assert rules()["tag_standby"].violations(x, assignment) == [], (name, label)


@pytest.mark.parametrize("method", ["exact.rack_active", "exact.rack_standby", "exact.tag_standby",
                                    "exact.balanced_subtopology"])
@pytest.mark.parametrize("owners, field", [({"c0": ["0_0", "0_1"], "c1": ["0_1"]}, "clients.c1.active[0]"),
                                           ({"c0": ["0_0"], "c1": []}, "tasks.0_1")])
@pytest.mark.parametrize("limit", [None, 10.0])
def test_exact_methods_that_keep_the_owners_refuse_a_task_with_two_or_none(method, owners, field, limit):
    """A task active on two clients or none: exit 2 naming the field before anything is built, with or
    without a time limit (the guard's start read the owners first: an internal KeyError under a limit, and
    exact.rack_standby answered status error)."""
    from kipopt.api import solve
    from kipopt.errors import NotApplicableError
    d = to_dict(generate("tasks", 3, tasks=2, clients=2, subtopologies=1))
    d["clients"] = {c: dict(d["clients"][old], active=owners[c], standby=[])
                    for c, old in zip(("c0", "c1"), d["clients"])}
    with pytest.raises(NotApplicableError) as refused:
        solve(from_dict(d), method, time_limit=limit)
    assert field in str(refused.value)
