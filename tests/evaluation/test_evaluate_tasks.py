"""The tasks evaluator, checked against numbers computed by hand."""

from __future__ import annotations

import pytest

from kipopt import TaskRoles, evaluate, from_dict

from examples import TASKS_SPEC_EXAMPLE as SPEC_EXAMPLE

@pytest.fixture
def spec_instance():
    return from_dict(SPEC_EXAMPLE)


def test_spec_example_costs(spec_instance):
    """The spec's own example solution: p2's standby 0_0 reads a changelog on r3/r1 from r2 (10),
    p1's standby 0_1 is new (non-overlap 1); actives stay where they were and are in-rack."""
    solution = {"p1": TaskRoles(("0_0",), ("0_1",)), "p2": TaskRoles(("0_1",), ("0_0",))}
    m = evaluate(spec_instance, solution).metrics
    assert (m["active_traffic_cost"], m["active_non_overlap_cost"]) == (0, 0)
    assert (m["standby_traffic_cost"], m["standby_non_overlap_cost"]) == (10, 1)
    assert m["total_cost"] == 11


def test_swapped_actives_cost_moves_and_traffic(spec_instance):
    """Swapping the actives moves both (2 x non-overlap 1); p1 (r1) reading input-1 (r2, r3) is cross-rack."""
    solution = {"p1": TaskRoles(("0_1",)), "p2": TaskRoles(("0_0",))}
    evaluation = evaluate(spec_instance, solution)
    assert evaluation.metrics["active_traffic_cost"] == 10
    assert evaluation.metrics["active_non_overlap_cost"] == 2
    assert evaluation.metrics["standby_shortfall"] == 2
    assert evaluation.metrics["standby_shortfall_min"] == 0
    assert evaluation.feasible


def test_caught_up_ranks(spec_instance):
    """0_1 on p1 (lag 12000 > 10000) while p2 is caught up: one active not among the most caught-up."""
    solution = {"p1": TaskRoles(("0_1",)), "p2": TaskRoles(("0_0",))}
    assert evaluate(spec_instance, solution).metrics["actives_not_caught_up"] == 1
    sticky = {"p1": TaskRoles(("0_0",)), "p2": TaskRoles(("0_1",))}
    assert evaluate(spec_instance, sticky).metrics["actives_not_caught_up"] == 0


def test_hard_rules_are_named(spec_instance):
    """Each broken rule is reported under its own name with a count."""
    solution = {"p1": TaskRoles(("0_0", "0_0"), ("0_0",)), "p2": TaskRoles(("0_0",))}
    evaluation = evaluate(spec_instance, solution)
    counts = {v.rule: v.count for v in evaluation.violations}
    assert counts == {"duplicate_in_list": 1, "active_standby_colocated": 1, "duplicate_active": 1,
                      "unassigned_active": 1}
    assert not evaluation.feasible


def test_loads_per_thread(spec_instance):
    """Load is divided by capacity (stream threads): p1 has 2 threads."""
    solution = {"p1": TaskRoles(("0_0", "0_1")), "p2": TaskRoles((), ("0_0",))}
    m = evaluate(spec_instance, solution).metrics
    assert m["per_client"]["p1"]["active_per_thread"] == 1.0
    assert m["active_imbalance"] == 2
    assert m["total_per_thread_imbalance"] == 0.0


def test_tag_distinctness_counts_values_not_hosts():
    """Two hosts in the same zone give one distinct zone where two were possible."""
    data = {
        "format": 1, "family": "tasks",
        "topics": {"in": {"racks": [["a"]]}, "cl": {"racks": [["a"]]}},
        "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]}},
        "clients": {c: {"rack": "a", "tags": {"zone": z}} for c, z in (("x", "z1"), ("y", "z1"), ("w", "z2"))},
        "config": {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"]},
    }
    instance = from_dict(data)
    same_zone = {"x": TaskRoles(("0_0",)), "y": TaskRoles((), ("0_0",)), "w": TaskRoles()}
    other_zone = {"x": TaskRoles(("0_0",)), "y": TaskRoles(), "w": TaskRoles((), ("0_0",))}
    assert evaluate(instance, same_zone).metrics["tag_distinct"]["zone"] == {"distinct": 1, "best": 2,
                                                                              "shortfall": 1}
    assert evaluate(instance, other_zone).metrics["tag_shortfall"] == 0


def test_cost_partitions_all_counts_changelogs_for_actives(spec_instance):
    """With the kipopt-only key "all", an active also pays for its changelog's racks (KIP-925 text)."""
    data = dict(SPEC_EXAMPLE, config=dict(SPEC_EXAMPLE["config"], rack_aware_assignment_cost_partitions="all"))
    instance = from_dict(data)
    solution = {"p1": TaskRoles(("0_0",)), "p2": TaskRoles(("0_1",))}
    # p1 (r1): input-0 on r1/r2 local, changelog-0 on r3/r1 local; p2 (r2): input-1 local, changelog-1 local.
    assert evaluate(instance, solution).metrics["active_traffic_cost"] == 0
    moved = {"p1": TaskRoles(("0_1",)), "p2": TaskRoles(("0_0",))}
    # p1: input-1 (r2,r3) cross, changelog-1 (r1,r2) local; p2: input-0 local, changelog-0 (r3,r1) cross.
    assert evaluate(instance, moved).metrics["active_traffic_cost"] == 20
    assert evaluate(spec_instance, moved).metrics["active_traffic_cost"] == 10
