"""The evaluator's numbers on the KIP scenarios agree with what the KIP texts compute."""

from __future__ import annotations

import pytest

from kipopt import TaskRoles, evaluate
from kipopt.datasets import load_scenario, scenario_solutions
from kipopt.solution import parse_solution


def _solutions(name):
    inst = load_scenario(name)
    return inst, {label: parse_solution(inst, s) for label, s in scenario_solutions(name).items()}


@pytest.mark.parametrize("name, copies", [("kip708_nine_clients", 3), ("kip708_six_nodes", 2)])
def test_kip708_ideal_distribution_scores_full_distinctness(name, copies):
    """KIP-708: every ideal distribution has as many distinct zones and clusters as hosts."""
    inst, solutions = _solutions(name)
    for label, assignment in solutions.items():
        m = evaluate(inst, assignment).metrics
        assert m["tag_shortfall"] == 0, label
        for tag in ("zone", "cluster"):
            assert m["tag_distinct"][tag] == {"distinct": copies, "best": copies, "shortfall": 0}, label
        assert m["standby_shortfall"] == 0


def test_kip708_same_cluster_standbys_fall_short():
    """Standbys on Node-2 and Node-3 (the active's cluster K8s_Cluster1) lose two cluster values."""
    inst = load_scenario("kip708_nine_clients")
    assignment = {c: TaskRoles() for c in inst.clients}
    assignment["Node-1"] = TaskRoles(("0_0",))
    assignment["Node-2"] = TaskRoles((), ("0_0",))
    assignment["Node-3"] = TaskRoles((), ("0_0",))
    m = evaluate(inst, assignment).metrics
    assert m["tag_distinct"]["cluster"] == {"distinct": 1, "best": 3, "shortfall": 2}
    assert m["tag_distinct"]["zone"]["shortfall"] == 0


def test_kip925_example_costs():
    """KIP-925 (weights 10 and 1): the starting assignment costs 20, the min-cost one 2 (two moves)."""
    inst, solutions = _solutions("kip925_two_tasks")
    initial = evaluate(inst, solutions["initial"]).metrics
    best = evaluate(inst, solutions["min_cost"]).metrics
    assert (initial["active_traffic_cost"], initial["active_non_overlap_cost"]) == (20, 0)
    assert (best["active_traffic_cost"], best["active_non_overlap_cost"]) == (0, 2)


def test_kip441_first_rebalance_puts_actives_on_caught_up_clients():
    """KIP-441 scale-in: I1 left, so its tasks T1 and T4 start orphaned; after the first rebalance every
    task is active on a most caught-up client, and putting T1 on I3 (no state) instead would not be."""
    for name in ("kip441_scale_in_a", "kip441_scale_in_b"):
        inst, solutions = _solutions(name)
        starting = {c: TaskRoles(cl.active, cl.standby) for c, cl in inst.clients.items()}
        orphaned = {v.rule: v.count for v in evaluate(inst, starting).violations}
        assert orphaned == {"unassigned_active": 2}, name
        first = solutions["first_rebalance"]
        assert evaluate(inst, first).metrics["actives_not_caught_up"] == 0, name
        i2, i3 = first["I2"], first["I3"]
        wrong = {"I2": TaskRoles(tuple(t for t in i2.active if t != "0_0")),
                 "I3": TaskRoles(i3.active + ("0_0",))}
        assert evaluate(inst, wrong).metrics["actives_not_caught_up"] == 1, name
