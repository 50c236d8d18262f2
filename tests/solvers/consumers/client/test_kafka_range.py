"""The client ``RangeAssignor`` port: Kafka's own ``RangeAssignorTest`` scenarios and generated instances.

Kafka's tests compare each member's partitions as a set (``assertAssignment``
and ``verifyRackAssignment`` sort or hash them), and so do these, static
members (``group_instance_id``) included.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kipopt.datasets import generate
from kipopt.instance import from_dict
from kipopt.solvers.consumers.client.range import range_assign, use_rack_aware_assignment

from consumer_ports import (as_sets, check_port, consumer_params, expected_sets, generate_from, kafka_mismatches,
                            kafka_rack_case, racks, range_balanced, replica_racks)

NULL3 = [None, None, None]


def verify(topics, rf, broker_racks, consumer_racks, consumer_topics, expected, mismatches, prefer=False):
    """``AbstractPartitionAssignorTest.verifyRackAssignment`` on the port."""
    inst = kafka_rack_case(topics, rf, broker_racks, consumer_racks, consumer_topics)
    got = range_assign(inst, prefer_rack_aware_logic=prefer).assignment
    check_port(inst, got)
    assert as_sets(got) == expected_sets([m.id for m in inst.members], expected)
    if mismatches >= 0:
        assert kafka_mismatches(inst, got) == mismatches


def verify_non_rack_aware(topics, consumer_topics, expected):
    """``RangeAssignorTest.verifyNonRackAwareAssignment``: every way rack awareness stays off."""
    verify(topics, 3, NULL3, racks(3), consumer_topics, expected, -1)
    verify(topics, 3, racks(3), NULL3, consumer_topics, expected, -1)
    verify(topics, 3, racks(3), racks(3), consumer_topics, expected, 0)
    verify(topics, 4, racks(4), racks(3), consumer_topics, expected, 0)
    verify(topics, 3, racks(3), ["d", "e", "f"], consumer_topics, expected, -1)
    verify(topics, 3, racks(3), [None, "e", "f"], consumer_topics, expected, -1)
    verify(topics, 3, racks(3), racks(3), consumer_topics, expected, 0, prefer=True)


def test_use_rack_aware_assignment_switch():
    """AbstractPartitionAssignorTest.testUseRackAwareAssignment."""
    all_racks, two = {"a", "b", "c"}, {"a", "b"}
    on_all = [frozenset(all_racks)] * 10
    subset = [frozenset("abc"[i % 3]) for i in range(10)]
    assert not use_rack_aware_assignment(set(), [frozenset()] * 10)
    assert not use_rack_aware_assignment(set(), on_all)
    assert not use_rack_aware_assignment(all_racks, [])
    assert not use_rack_aware_assignment({"d"}, on_all)
    assert not use_rack_aware_assignment(all_racks, on_all)
    assert not use_rack_aware_assignment(two, on_all)
    assert not use_rack_aware_assignment({"a", "d"}, on_all)
    assert use_rack_aware_assignment(all_racks, subset)
    assert use_rack_aware_assignment(two, subset)
    assert use_rack_aware_assignment({"a", "d"}, subset)
    assert not use_rack_aware_assignment(set(), on_all, True)
    assert not use_rack_aware_assignment(all_racks, [], True)
    assert not use_rack_aware_assignment({"d"}, on_all, True)
    assert use_rack_aware_assignment(all_racks, on_all, True)
    assert use_rack_aware_assignment(two, on_all, True)
    assert use_rack_aware_assignment(two, subset, True)


# --------------------------------------------------------------------------- the RackConfig-parameterised tests

RACK_CONFIGS = ("NO_BROKER_RACK", "NO_CONSUMER_RACK", "BROKER_AND_CONSUMER_RACK")


def plural(config: str, topics: dict[str, int], consumer_topics: list[list[str]], max_consumers: int = 3):
    """``initializeRacks`` + ``partitionInfos`` + ``subscription``: RF = max_consumers, three brokers per rack
    (so every partition is on every rack), consumer i on rack i mod racks; the test flag forces rack logic."""
    broker_racks_n = max_consumers if config != "NO_BROKER_RACK" else 0
    brokers = ([racks(6)[i % broker_racks_n] for i in range(broker_racks_n * max_consumers)]
               if broker_racks_n else [None] * max_consumers)
    spec = {name: {"racks": replica_racks(n, max_consumers, brokers, 0)} for name, n in topics.items()}
    n_racks = broker_racks_n or 6
    members = [{"id": f"consumer{i + 1}", "rack": racks(6)[i % n_racks] if config != "NO_CONSUMER_RACK" else None,
                "topics": ts} for i, ts in enumerate(consumer_topics)]
    inst = from_dict({"format": 1, "family": "consumers", "topics": spec, "members": members})
    got = range_assign(inst, prefer_rack_aware_logic=True).assignment
    check_port(inst, got)
    return as_sets(got)


@pytest.mark.parametrize("config", RACK_CONFIGS)
def test_plural_scenarios(config):
    """RangeAssignorTest: one consumer one/many topics, unsubscribed topics, two consumers, mixed topics."""
    assert plural(config, {"topic1": 3}, [["topic1"]]) == {"consumer1": {"topic1-0", "topic1-1", "topic1-2"}}
    assert plural(config, {"topic1": 3, "other": 3}, [["topic1"]]) == {"consumer1": {"topic1-0", "topic1-1", "topic1-2"}}
    assert plural(config, {"topic1": 1, "topic2": 2}, [["topic1", "topic2"]]) == {
        "consumer1": {"topic1-0", "topic2-0", "topic2-1"}}
    assert plural(config, {"topic1": 1}, [["topic1"], ["topic1"]]) == {"consumer1": {"topic1-0"}, "consumer2": set()}
    assert plural(config, {"topic1": 2}, [["topic1"], ["topic1"]]) == {"consumer1": {"topic1-0"},
                                                                       "consumer2": {"topic1-1"}}
    assert plural(config, {"topic1": 3, "topic2": 2}, [["topic1"], ["topic1", "topic2"], ["topic1"]]) == {
        "consumer1": {"topic1-0"}, "consumer2": {"topic1-1", "topic2-0", "topic2-1"}, "consumer3": {"topic1-2"}}
    assert plural(config, {"topic1": 3, "topic2": 3}, [["topic1", "topic2"]] * 2) == {
        "consumer1": {"topic1-0", "topic1-1", "topic2-0", "topic2-1"}, "consumer2": {"topic1-2", "topic2-2"}}


def test_one_consumer_without_topics_gets_nothing():
    inst = from_dict({"format": 1, "family": "consumers", "topics": {"topic1": {"racks": [["a"]]}},
                      "members": [{"id": "consumer1", "rack": "a", "topics": []}]})
    assert range_assign(inst).assignment == {"consumer1": ()}


# --------------------------------------------------------------------------- the rack-aware tests

T672 = {"t1": 6, "t2": 7, "t3": 2}
ALL3 = ["t1", "t2", "t3"]


def test_rack_aware_assignment_with_uniform_subscription():
    consumer_topics = [ALL3] * 3
    verify_non_rack_aware(T672, consumer_topics, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1",
                                                  "t1-4, t1-5, t2-5, t2-6"])
    verify(T672, 1, racks(3), racks(3), consumer_topics,
           ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"], 0)
    verify(T672, 2, racks(3), racks(3), consumer_topics,
           ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"], 1)
    verify(T672, 3, racks(2), racks(3), consumer_topics,
           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"], 4)


def test_rack_aware_assignment_with_non_equal_subscription():
    consumer_topics = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(T672, consumer_topics, ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                                                  "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"])
    verify(T672, 1, racks(3), racks(3), consumer_topics,
           ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"], 2)
    verify(T672, 2, racks(3), racks(3), consumer_topics,
           ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"], 0)
    verify(T672, 3, racks(2), racks(3), consumer_topics,
           ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"], 2)


T555 = {"t1": 5, "t2": 5, "t3": 5}


def test_rack_aware_assignment_with_uniform_partitions():
    """Co-partitioning wins over rack alignment."""
    consumer_topics = [ALL3] * 3
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
    verify_non_rack_aware(T555, consumer_topics, plain)
    verify(T555, 1, racks(3), racks(3), consumer_topics, plain, 10)
    verify(T555, 2, racks(3), racks(3), consumer_topics, plain, 5)
    verify(T555, 3, racks(2), racks(3), consumer_topics, plain, 3)


def test_rack_aware_assignment_with_uniform_partitions_non_equal_subscription():
    consumer_topics = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(T555, consumer_topics, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
                                                  "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"])
    verify(T555, 1, racks(3), racks(3), consumer_topics,
           ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"], 9)
    verify(T555, 2, racks(3), racks(3), consumer_topics,
           ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"], 0)
    verify(T555, 3, racks(2), racks(3), consumer_topics,
           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"], 2)


def test_rack_aware_assignment_with_co_partitioning():
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks = ["a", "b", "b", "a"]
    consumer_topics = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    plain = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
    verify(topics, 3, racks(2), consumer_racks, consumer_topics, plain, -1)
    verify(topics, 2, racks(2), consumer_racks, consumer_topics, plain, 0)
    verify(topics, 1, racks(2), consumer_racks, consumer_topics,
           ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"], 0)

    consumer_topics = [["t1", "t2", "t3", "t4"]] * 4
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
    verify(topics, 3, racks(2), consumer_racks, consumer_topics, plain, -1)
    verify(topics, 2, racks(2), consumer_racks, consumer_topics, plain, 0)
    verify(topics, 1, racks(2), consumer_racks, consumer_topics,
           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"], 0)
    verify(topics, 1, racks(3), consumer_racks, consumer_topics,
           ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"], 6)


def test_co_partitioned_assignment_with_same_subscription():
    """Topics t7..t9 have no metadata in Kafka's test (dropped silently); the format needs them absent."""
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    every = [f"t{i}" for i in range(1, 10)]
    consumer_topics = [every] * 3
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
             "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"]
    verify(topics, 3, NULL3, racks(3), consumer_topics, plain, -1)
    verify(topics, 3, racks(3), racks(3), consumer_topics, plain, 0, prefer=True)
    verify(topics, 2, racks(3), racks(3), consumer_topics,
           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
            "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3"], 0, prefer=True)


# --------------------------------------------------------------------------- list order and the switch


def test_lists_follow_kafka_order():
    """Without rack matching, a member's list is in assignment order (topics in HashMap order);
    with it, sorted by (topic, partition)."""
    inst = kafka_rack_case({"t4": 2, "t1": 2}, 1, NULL3, [None, None], [["t1", "t4"]] * 2)
    plain = range_assign(inst)
    assert not plain.rack_aware
    # "t4".hashCode() lands in bucket 0, "t1" in bucket 13: Kafka's HashMap puts t4 first
    assert plain.assignment["consumer0"] == ("t4-0", "t1-0")
    aware = range_assign(kafka_rack_case({"t4": 2, "t1": 2}, 1, racks(2), ["a", "b"], [["t1", "t4"]] * 2))
    assert aware.rack_aware and list(aware.assignment["consumer0"]) == sorted(aware.assignment["consumer0"])


def test_member_order_is_java_string_order():
    inst = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[]] * 3}},
                      "members": [{"id": i, "topics": ["t"]} for i in ("p2", "p10", "p1")]})
    assert range_assign(inst).assignment == {"p2": ("t-2",), "p10": ("t-1",), "p1": ("t-0",)}


def test_rackless_partitions_match_only_rackless_members():
    inst = from_dict({"format": 1, "family": "consumers",
                      "topics": {"t": {"racks": [[], ["a"], ["b"], ["a"]]}},
                      "members": [{"id": "c1", "rack": "a", "topics": ["t"]}, {"id": "c2", "rack": "b", "topics": ["t"]}]})
    r = range_assign(inst)
    assert r.rack_aware and r.assignment == {"c1": ("t-1", "t-3"), "c2": ("t-0", "t-2")}


def test_every_rack_holding_every_partition_turns_rack_awareness_off():
    inst = generate("consumers", 5, racks=3, replication_factor=3, members=9, partitions=40)
    r = range_assign(inst)
    assert not r.rack_aware
    assert check_port(inst, r.assignment)["cross_rack"] == 0


# --------------------------------------------------------------------------- generated instances

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(consumer_params)
def test_generated_instances_are_range_balanced_and_valid(params):
    inst = generate_from(params)
    r = range_assign(inst)
    metrics = check_port(inst, r.assignment)
    assert range_balanced(inst, r.assignment)
    if params["replication_factor"] == params["racks"] and params["rackless_partitions"] == 0:
        # every rack holds every partition: Kafka switches rack awareness off, and nothing is cross-rack
        assert not r.rack_aware and metrics["cross_rack"] == 0


# --------------------------------------------------------------------------- static members (group.instance.id)


def static_group(partitions: dict[str, list[list[str]]], members: list[tuple[str, str | None, str | None]]):
    """Members as (member id, group instance id, rack), all subscribed to every topic."""
    ms = []
    for mid, instance_id, rack in members:
        m = {"id": mid, "rack": rack, "topics": list(partitions)}
        if instance_id is not None:
            m["group_instance_id"] = instance_id
        ms.append(m)
    return from_dict({"format": 1, "family": "consumers",
                      "topics": {t: {"racks": rs} for t, rs in partitions.items()}, "members": ms})


def rackless(n: int) -> list[list[str]]:
    return [[] for _ in range(n)]


def by_instance(inst) -> dict[str, set[str]]:
    got = range_assign(inst).assignment
    check_port(inst, got)
    return {m.group_instance_id: set(got[m.id]) for m in inst.members}


@pytest.mark.parametrize("second_instance", ["instance2", None])
def test_static_consumers_two_topics_six_partitions(second_instance):
    """testTwoStaticConsumersTwoTopicsSixPartitions / testOneStaticConsumerAndOneDynamicConsumer...: consumer-a
    sorts first by member id, but the instance id (or having one at all) decides."""
    inst = static_group({"topic1": rackless(3), "topic2": rackless(3)},
                        [("consumer-b", "instance1", None), ("consumer-a", second_instance, None)])
    assert as_sets(range_assign(inst).assignment) == {
        "consumer-b": {"topic1-0", "topic1-1", "topic2-0", "topic2-1"}, "consumer-a": {"topic1-2", "topic2-2"}}


def test_static_member_range_assignment_persistent():
    statics = [(f"consumer{i}", f"instance{i}", None) for i in (1, 2, 3)]
    parts = {"topic1": rackless(5), "topic2": rackless(4)}
    expected = {"consumer1": {"topic1-0", "topic1-1", "topic2-0"}, "consumer2": {"topic1-2", "topic2-1"},
                "consumer3": {"topic1-3", "topic2-2"}}
    for dynamic in ("consumer4", "consumer5"):
        got = as_sets(range_assign(static_group(parts, statics + [(dynamic, None, None)])).assignment)
        assert got == {**expected, dynamic: {"topic1-4", "topic2-3"}}


@pytest.mark.parametrize("rack_aware", [False, True])
def test_static_member_range_assignment_persistent_after_member_id_changes(rack_aware):
    """testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges and its rack-aware variant (RF 2 over
    three broker racks, consumers on racks a, b, c): swapping member ids keeps every instance's partitions."""
    if rack_aware:
        parts = {t: [sorted(rs) for rs in replica_racks(5, 2, racks(3), 0)] for t in ("topic1", "topic2")}
        expected = {"instance1": {"topic1-0", "topic1-2", "topic2-0", "topic2-2"},
                    "instance2": {"topic1-1", "topic1-3", "topic2-1", "topic2-3"},
                    "instance3": {"topic1-4", "topic2-4"}}
        member_racks = racks(3)
    else:
        parts = {"topic1": rackless(5), "topic2": rackless(5)}
        expected = {"instance1": {"topic1-0", "topic1-1", "topic2-0", "topic2-1"},
                    "instance2": {"topic1-2", "topic1-3", "topic2-2", "topic2-3"},
                    "instance3": {"topic1-4", "topic2-4"}}
        member_racks = NULL3
    before = [("consumer1", "instance1", member_racks[0]), ("consumer2", "instance2", member_racks[1]),
              ("consumer3", "instance3", member_racks[2])]
    after = [("consumer1", "instance1", member_racks[0]), ("consumer5", "instance2", member_racks[1]),
             ("consumer4", "instance3", member_racks[2])]
    assert by_instance(static_group(parts, before)) == expected
    assert by_instance(static_group(parts, after)) == expected
