"""KAFKA-19909's rack-aware homogeneous uniform builder (``proposal.server_uniform_rack``).

The pull request's own ``AssignorHelpersTest`` (rack match and when the rack
strategy applies) is ported as is; the builder's behaviour is checked on
small groups worked by hand from the Java (rack pass, revocation of owned
partitions on the wrong rack, where the extra partitions go) and, on
generated groups, for the rule's hard constraints and balance.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt import solve
from kipopt.datasets import generate
from kipopt.instance import from_dict
from kipopt.solvers.consumers.group.proposal_uniform_homogeneous import is_rack_match, proposal_uniform_assign, \
    use_rack_aware_assignment
from kipopt.solvers.consumers.group.uniform import uniform_assign
from kipopt.solvers.consumers.group.spec import group_spec

TOPIC = "t"


# --------------------------------------------------------------------------- AssignorHelpersTest (the PR's own)


def test_is_rack_match_with_empty_member_rack_id():
    assert not is_rack_match(None, {"rack1", "rack2"})


def test_is_rack_match_with_matching_rack():
    assert is_rack_match("rack1", {"rack1", "rack2"})


def test_is_rack_match_with_non_matching_rack():
    assert not is_rack_match("rack3", {"rack1", "rack2"})


def test_is_rack_match_with_empty_partition_racks():
    assert not is_rack_match("rack1", set())


def test_use_rack_aware_assignment_with_empty_member_racks():
    per_partition = {(TOPIC, 0): frozenset({"rack1"}), (TOPIC, 1): frozenset({"rack2"})}
    assert not use_rack_aware_assignment(set(), {"rack1", "rack2"}, per_partition)


def test_use_rack_aware_assignment_with_disjoint_racks():
    per_partition = {(TOPIC, 0): frozenset({"rack3"}), (TOPIC, 1): frozenset({"rack4"})}
    assert not use_rack_aware_assignment({"rack1", "rack2"}, {"rack3", "rack4"}, per_partition)


def test_use_rack_aware_assignment_with_all_partitions_having_same_racks():
    per_partition = {(TOPIC, 0): frozenset({"rack1", "rack2"}), (TOPIC, 1): frozenset({"rack1", "rack2"})}
    assert not use_rack_aware_assignment({"rack1", "rack2"}, {"rack1", "rack2"}, per_partition)


def test_use_rack_aware_assignment_with_different_racks_per_partition():
    per_partition = {(TOPIC, 0): frozenset({"rack1"}), (TOPIC, 1): frozenset({"rack2"})}
    assert use_rack_aware_assignment({"rack1", "rack2"}, {"rack1", "rack2"}, per_partition)


# --------------------------------------------------------------------------- the builder, worked by hand


def _group(racks, members):
    return from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": racks}},
                      "members": members})


ALTERNATING = [["r1"], ["r2"], ["r1"], ["r2"]]


def test_rack_pass_gives_each_partition_to_the_first_unfilled_member_on_its_rack():
    """a (r1), b (r2), nothing owned: t-0 -> a, t-1 -> b (a does not match), t-2 -> a, t-3 -> b; the released
    builder hands out contiguous ranges instead (a: t-0, t-1), two partitions off-rack."""
    inst = _group(ALTERNATING, [{"id": "a", "rack": "r1", "topics": ["t"]}, {"id": "b", "rack": "r2", "topics": ["t"]}])
    assignment, _ = proposal_uniform_assign(inst)
    assert assignment == {"a": ("t-0", "t-2"), "b": ("t-1", "t-3")}
    assert uniform_assign(group_spec(inst)) == {"a": ("t-0", "t-1"), "b": ("t-2", "t-3")}
    assert solve(inst, "proposal.server_uniform_rack").metrics["cross_rack"] == 0


def test_owned_partitions_on_the_wrong_rack_are_revoked_even_within_quota():
    """Rack awareness ranks above stickiness: a owns t-1 (on r2), b owns t-0 (on r1); both are revoked and
    join the unassigned list after t-2, t-3 (member order), then the rack pass swaps them."""
    inst = _group(ALTERNATING, [{"id": "a", "rack": "r1", "topics": ["t"], "owned": ["t-1"]},
                                {"id": "b", "rack": "r2", "topics": ["t"], "owned": ["t-0"]}])
    assignment, _ = proposal_uniform_assign(inst)
    assert assignment == {"a": ("t-0", "t-2"), "b": ("t-1", "t-3")}
    assert solve(inst, "proposal.server_uniform_rack").metrics["criteria"]["revoked"] == 2


def test_owned_partitions_on_the_right_rack_are_kept():
    inst = _group(ALTERNATING, [{"id": "a", "rack": "r1", "topics": ["t"], "owned": ["t-2"]},
                                {"id": "b", "rack": "r2", "topics": ["t"], "owned": ["t-3"]}])
    assignment, _ = proposal_uniform_assign(inst)
    assert assignment == {"a": ("t-0", "t-2"), "b": ("t-1", "t-3")}


def test_extra_partitions_go_to_the_last_unfilled_members():
    """5 partitions, 2 rack-less members, nothing owned: each gives its tentative extra back, then
    ``assignRemainingPartitions`` hands the one extra to the *last* unfilled member (b); the released
    builder at ``KAFKA_COMMIT`` gives it to the first member visited (a)."""
    inst = _group([[]] * 5, [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}])
    assignment, _ = proposal_uniform_assign(inst)
    assert assignment == {"a": ("t-0", "t-1"), "b": ("t-2", "t-3", "t-4")}
    assert uniform_assign(group_spec(inst)) == {"a": ("t-0", "t-1", "t-2"), "b": ("t-3", "t-4")}


def test_without_the_rack_strategy_a_balanced_owned_assignment_stays():
    """Every partition on the same racks: the rack strategy is off and nothing moves (stickiness)."""
    inst = _group([["r1", "r2"]] * 4, [{"id": "a", "rack": "r1", "topics": ["t"], "owned": ["t-0", "t-3"]},
                                       {"id": "b", "rack": "r2", "topics": ["t"], "owned": ["t-1", "t-2"]}])
    assignment, _ = proposal_uniform_assign(inst)
    assert assignment == {"a": ("t-0", "t-3"), "b": ("t-1", "t-2")}


def test_mixed_subscriptions_use_the_released_heterogeneous_builder():
    inst = generate("consumers", 3, partitions=30, members=6, topics=3, conflicts=0.0, subscriptions="mixed",
                    racks=3)
    spec = group_spec(inst)
    assert not spec.homogeneous
    assert proposal_uniform_assign(inst)[0] == uniform_assign(spec)


# --------------------------------------------------------------------------- generated groups


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), partitions=st.integers(2, 80), members=st.integers(1, 10),
       rf=st.integers(1, 3), rackless=st.sampled_from([0.0, 0.3]))
def test_balanced_and_complete_on_generated_groups(seed, partitions, members, rf, rackless):
    """Every subscribed partition once, to a subscriber, and counts within one of each other (balance first)."""
    inst = generate("consumers", seed, partitions=partitions, members=members, topics=2, conflicts=0.0,
                    subscriptions="equal", racks=3, replication_factor=rf, rackless_partitions=rackless)
    s = solve(inst, "proposal.server_uniform_rack")
    assert s.metrics["violations"] == []
    counts = [len(v) for v in s.assignment.values()]
    assert max(counts) - min(counts) <= 1


def test_fewer_cross_rack_partitions_than_the_released_builder_on_one_replica_topics():
    """Single-replica partitions on 3 racks, a fresh group: the rack pass cuts cross-rack partitions."""
    released = proposal = 0
    for seed in range(5):
        inst = generate("consumers", seed, partitions=60, members=7, topics=3, conflicts=0.0,
                        subscriptions="equal", racks=3, replication_factor=1)
        released += solve(inst, "kafka.server_uniform").metrics["cross_rack"]
        proposal += solve(inst, "proposal.server_uniform_rack").metrics["cross_rack"]
    assert proposal < released


@pytest.mark.parametrize("seed", range(3))
def test_never_below_the_exact_optimum(seed):
    inst = generate("consumers", seed, partitions=40, members=6, topics=2, conflicts=0.0, subscriptions="equal",
                    racks=3, replication_factor=2)
    s, e = solve(inst, "proposal.server_uniform_rack"), solve(inst, "exact.balanced")
    assert s.objective >= e.bound
