"""``RoundRobinAssignorTest`` (Kafka 1eb7644) against :mod:`kipopt.solvers.consumers.client.round_robin`.

Kafka's ``assign(partitionsPerTopic, subscriptions)`` takes topics without
racks: here every partition has no known rack. A subscription to a topic the
metadata does not know cannot be written in the kipopt format (the validator
refuses it), so ``testOneConsumerNonexistentTopic`` has no counterpart.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kipopt import api
from kipopt.datasets import generate
from kipopt.instance import ConsumersInstance, from_dict
from kipopt.solvers.consumers.client.round_robin import round_robin_assign

T1, T2 = "topic1", "topic2"


def group(partitions: dict[str, int], members: list[tuple[str, list[str], str | None]]) -> ConsumersInstance:
    """Rack-less partitions; members as (member id, topics, group instance id or None)."""
    topics = {t: {"racks": [[] for _ in range(n)]} for t, n in partitions.items()}
    ms = []
    for mid, subscribed, instance_id in members:
        m = {"id": mid, "topics": subscribed}
        if instance_id is not None:
            m["group_instance_id"] = instance_id
        ms.append(m)
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": ms})


def parts(*tps: tuple[str, int]) -> tuple[str, ...]:
    return tuple(f"{t}-{p}" for t, p in tps)


def test_one_consumer_no_topic():
    x = group({"topic": 1}, [("consumer", [], None)])
    assert round_robin_assign(x) == {"consumer": ()}


def test_one_consumer_one_topic():
    x = group({"topic": 3}, [("consumer", ["topic"], None)])
    assert round_robin_assign(x)["consumer"] == parts(("topic", 0), ("topic", 1), ("topic", 2))


def test_only_assigns_partitions_from_subscribed_topics():
    x = group({"topic": 3, "other": 3}, [("consumer", ["topic"], None)])
    assert round_robin_assign(x)["consumer"] == parts(("topic", 0), ("topic", 1), ("topic", 2))


def test_one_consumer_multiple_topics():
    x = group({T1: 1, T2: 2}, [("consumer", [T1, T2], None)])
    assert round_robin_assign(x)["consumer"] == parts((T1, 0), (T2, 0), (T2, 1))


def test_two_consumers_one_topic_one_partition():
    x = group({"topic": 1}, [("consumer1", ["topic"], None), ("consumer2", ["topic"], None)])
    assert round_robin_assign(x) == {"consumer1": parts(("topic", 0)), "consumer2": ()}


def test_two_consumers_one_topic_two_partitions():
    x = group({"topic": 2}, [("consumer1", ["topic"], None), ("consumer2", ["topic"], None)])
    assert round_robin_assign(x) == {"consumer1": parts(("topic", 0)), "consumer2": parts(("topic", 1))}


def test_multiple_consumers_mixed_topics():
    x = group({T1: 3, T2: 2}, [("consumer1", [T1], None), ("consumer2", [T1, T2], None), ("consumer3", [T1], None)])
    assert round_robin_assign(x) == {"consumer1": parts((T1, 0)),
                                     "consumer2": parts((T1, 1), (T2, 0), (T2, 1)),
                                     "consumer3": parts((T1, 2))}


def test_two_dynamic_consumers_two_topics_six_partitions():
    x = group({T1: 3, T2: 3}, [("consumer1", [T1, T2], None), ("consumer2", [T1, T2], None)])
    assert round_robin_assign(x) == {"consumer1": parts((T1, 0), (T1, 2), (T2, 1)),
                                     "consumer2": parts((T1, 1), (T2, 0), (T2, 2))}


def test_two_static_consumers_two_topics_six_partitions():
    """consumer-a sorts before consumer-b by member id, but instance ids decide."""
    x = group({T1: 3, T2: 3}, [("consumer-b", [T1, T2], "instance1"), ("consumer-a", [T1, T2], "instance2")])
    assert round_robin_assign(x) == {"consumer-b": parts((T1, 0), (T1, 2), (T2, 1)),
                                     "consumer-a": parts((T1, 1), (T2, 0), (T2, 2))}


def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions():
    x = group({T1: 3, T2: 3}, [("consumer-b", [T1, T2], "instance1"), ("consumer-a", [T1, T2], None)])
    assert round_robin_assign(x) == {"consumer-b": parts((T1, 0), (T1, 2), (T2, 1)),
                                     "consumer-a": parts((T1, 1), (T2, 0), (T2, 2))}


def test_static_member_round_robin_assignment_persistent():
    statics = [(f"consumer{i}", [T1, T2], f"instance{i}") for i in (1, 2, 3)]
    expected = {"consumer1": parts((T1, 0), (T2, 1)), "consumer2": parts((T1, 1), (T2, 2)),
                "consumer3": parts((T1, 2))}
    first = round_robin_assign(group({T1: 3, T2: 3}, statics + [("consumer4", [T1, T2], None)]))
    assert first == {**expected, "consumer4": parts((T2, 0))}
    second = round_robin_assign(group({T1: 3, T2: 3}, statics + [("consumer5", [T1, T2], None)]))
    assert second == {**expected, "consumer5": parts((T2, 0))}


def test_static_member_round_robin_assignment_persistent_after_member_id_changes():
    expected = {"instance1": parts((T1, 0), (T1, 3), (T2, 1), (T2, 4)),
                "instance2": parts((T1, 1), (T1, 4), (T2, 2)),
                "instance3": parts((T1, 2), (T2, 0), (T2, 3))}

    def by_instance(members):
        x = group({T1: 5, T2: 5}, members)
        result = round_robin_assign(x)
        return {m.group_instance_id: result[m.id] for m in x.members}

    before = [("consumer1", [T1, T2], "instance1"), ("consumer2", [T1, T2], "instance2"),
              ("consumer3", [T1, T2], "instance3")]
    after = [("consumer1", [T1, T2], "instance1"), ("consumer5", [T1, T2], "instance2"),
             ("consumer4", [T1, T2], "instance3")]
    assert by_instance(before) == expected
    assert by_instance(after) == expected


# --------------------------------------------------------------------------- properties


def direct_round_robin(x: ConsumersInstance) -> dict[str, tuple[str, ...]]:
    """A literal transcription (circular iterator, skip loop), against the bisecting port."""
    from kipopt.solvers.consumers.client.member_info import member_info_key
    from kipopt.instance import java_string_key
    circle = sorted(x.members, key=member_info_key)
    out: dict[str, list[str]] = {m.id: [] for m in x.members}
    i = 0
    for t in sorted({t for m in x.members for t in m.topics}, key=java_string_key):
        for p in range(x.topics[t].partitions):
            while t not in circle[i % len(circle)].topics:
                i += 1
            out[circle[i % len(circle)].id].append(f"{t}-{p}")
            i += 1
    return {k: tuple(v) for k, v in out.items()}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), members=st.integers(1, 15), static=st.sampled_from([0.0, 0.5, 1.0]),
       subscriptions=st.sampled_from(["equal", "mixed"]))
def test_port_equals_direct_transcription_and_ignores_racks(seed, members, static, subscriptions):
    x = generate("consumers", seed, members=members, static_members=static, subscriptions=subscriptions,
                 topics=4, partitions=30)
    assert round_robin_assign(x) == direct_round_robin(x)
    solution = api.solve(x, "kafka.round_robin")
    names = {v["rule"] for v in solution.metrics["violations"]}
    assert not names & {"unsubscribed", "unassigned_partition", "duplicate_partition"}
    if subscriptions == "equal":
        assert not names, "with equal subscriptions round robin meets the balanced rule"


def test_registered_with_rule_and_kafka_class():
    from kipopt.methods import get_method
    m = get_method("kafka.round_robin")
    assert (m.family, m.rule, m.kafka_class) == ("consumers", "balanced",
                                                 "org.apache.kafka.clients.consumer.RoundRobinAssignor")
