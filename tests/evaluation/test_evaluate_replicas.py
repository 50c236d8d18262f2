"""The replicas evaluator, checked by hand on KIP-36's six-broker example."""

from __future__ import annotations

import pytest

from kipopt import evaluate
from kipopt.errors import InstanceError


from replica_cases import KIP36_ASSIGNMENT, KIP36_SIX_BROKERS, cluster


@pytest.fixture
def kip36():
    return cluster(KIP36_SIX_BROKERS, 6, 3)


def test_kip36_round_robin_is_perfect(kip36):
    """Each broker holds 3 replicas and leads 1 partition; every partition spans the 3 racks."""
    e = evaluate(kip36, KIP36_ASSIGNMENT)
    assert e.feasible
    m = e.metrics
    assert m["replicas_per_broker"] == {b: 3 for b in range(6)}
    assert m["leaders_per_broker"] == {b: 1 for b in range(6)}
    assert (m["replica_imbalance"], m["leader_imbalance"]) == (0, 0)
    assert (m["racks_required"], m["racks_spanned_min"], m["rack_shortfall"]) == (3, 3, 0)
    assert "moves" not in m  # no current assignment


def test_each_hard_rule_by_name(kip36):
    """Partition 0 twice on broker 0, partition 1 with two replicas in rack1 and rack2 only,
    partition 2 with 4 replicas, partition 5 missing."""
    bad = {0: (0, 0, 4), 1: (0, 1, 2), 2: (4, 1, 3, 5), 3: (1, 3, 5), 4: (3, 5, 0)}
    e = evaluate(kip36, bad)
    counts = {v.rule: v.count for v in e.violations}
    assert counts == {"duplicate_broker": 1, "wrong_replica_count": 1, "unassigned_partition": 1,
                      "rack_spread": 2, "missing_partition": 1}
    m = e.metrics
    # partition 0 spans rack1, rack3 (short 1); partition 1 spans rack1, rack2 (short 1)
    assert (m["rack_shortfall"], m["partitions_short_of_racks"]) == (2, 2)
    assert m["duplicate_replicas"] == 1
    # broker 0: p0, p1, p4 -> 3; broker 1: p1, p2, p3 -> 3; 2: p1 -> 1; 3: p2, p3, p4 -> 3;
    # 4: p0, p2 -> 2; 5: p2, p3, p4 -> 3
    assert m["replicas_per_broker"] == {0: 3, 1: 3, 2: 1, 3: 3, 4: 2, 5: 3}
    assert m["leaders_per_broker"] == {0: 2, 1: 1, 2: 0, 3: 1, 4: 1, 5: 0}
    assert (m["replica_imbalance"], m["replicas_min"], m["replicas_max"]) == (2, 1, 3)
    assert (m["leader_imbalance"], m["leaders_min"], m["leaders_max"]) == (2, 0, 2)


def test_moves_against_current():
    """Two of partition 0's replicas stay; partition 1 moves entirely; partition 2 was not placed before."""
    inst = cluster(KIP36_SIX_BROKERS, 3, 3, current={0: (0, 2, 4), 1: (1, 3, 5)})
    e = evaluate(inst, {0: (2, 0, 5), 1: (0, 2, 4), 2: (1, 3, 5)})
    assert (e.metrics["moves"], e.metrics["partitions_moved"]) == (1 + 3 + 3, 3)
    assert e.metrics["leaders_changed"] == 3


def test_more_replicas_than_racks_needs_every_rack():
    """Two racks, RF 3: both racks must appear; a partition on one rack only is short by one."""
    inst = cluster([2, 2], 2, 3)
    e = evaluate(inst, {0: (0, 1, 2), 1: (0, 1, 1)})
    assert e.metrics["racks_required"] == 2
    assert {v.rule: v.count for v in e.violations} == {"duplicate_broker": 1, "rack_spread": 1}


def test_rackless_cluster_has_no_rack_rule():
    inst = cluster({0: None, 1: None, 2: None}, 1, 2)
    e = evaluate(inst, {0: (0, 1)})
    assert e.feasible and e.metrics["racks_required"] is None


def test_rackless_broker_is_a_rack_of_its_own_in_a_mixed_cluster():
    inst = cluster({0: "a", 1: None, 2: "a"}, 1, 2)
    assert evaluate(inst, {0: (0, 1)}).feasible
    assert [v.rule for v in evaluate(inst, {0: (0, 2)}).violations] == ["rack_spread"]


def test_unknown_broker_is_bad_input(kip36):
    with pytest.raises(InstanceError, match=r"assignment\.0\[1\]"):
        evaluate(kip36, {"assignment": {"0": [0, 9, 2]}})


def test_asked_again_answers_for_the_assignment_as_it_is_now():
    """The last evaluation is given again only for the same, unchanged assignment (a million-partition
    solve asks three times); a changed mapping, a mutated list row or another instance is evaluated afresh."""
    from kipopt.evaluation.replicas import evaluate_replicas
    from kipopt.instance import from_dict
    inst = from_dict({"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
                      "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}]})
    a = {0: (0, 2), 1: (1, 2)}
    first = evaluate_replicas(inst, a)
    again = evaluate_replicas(inst, a)
    assert again.metrics == first.metrics and again.metrics is not first.metrics
    again.metrics["replica_imbalance"] = 99  # a caller's edit does not leak into the next answer
    assert evaluate_replicas(inst, a).metrics["replica_imbalance"] == first.metrics["replica_imbalance"]
    a[1] = (1, 0)
    assert [v.rule for v in evaluate_replicas(inst, a).violations] == ["rack_spread"]
    rows = {0: [0, 2], 1: [1, 2]}
    assert not evaluate_replicas(inst, rows).violations
    rows[1][1] = 0
    assert [v.rule for v in evaluate_replicas(inst, rows).violations] == ["rack_spread"]
    other = from_dict({"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
                       "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"}, {"id": 2, "rack": "b"}]})
    assert [v.rule for v in evaluate_replicas(other, a).violations] == []
