"""kafka.eager_sticky: Kafka's ``StickyAssignorTest`` and the ``AbstractStickyAssignorTest`` scenarios that apply.

Ported from clients/src/test at commit 1eb7644. The eager assignor reads
owned partitions and generation from the user data only
(``StickyAssignor.memberData``): Kafka's ``buildSubscriptionV2Above`` puts
them there, and that is what a member's ``owned``/``generation`` stand for.
Kafka's rack scenarios (``verifyRackAssignment``) put owned partitions in the
subscription's ``ownedPartitions`` with no user data, which the eager assignor
never reads: their kipopt counterparts have no ``owned`` (the expected lists
equal the fresh ones, as Kafka's ``StickyAssignor`` branches say).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings

from kipopt import api
from kipopt.instance import ConsumersInstance, from_dict
from kipopt.solvers.consumers.client.abstract_sticky import sticky_inputs
from kipopt.solvers.consumers.client.cooperative_sticky import cooperative_sticky_assign
from kipopt.solvers.consumers.client.sticky import eager_sticky_assign, user_data_partitions
from consumer_ports import check_port, consumer_params, generate_from, kafka_mismatches, kafka_rack_case, racks

GEN = 1  # AbstractStickyAssignorTest.generationId
BROKER_RACKS = {"no_broker_rack": [None, None, None], "broker_racks": ["a", "b", "c"]}


def group(partitions: dict[str, int], members: list[tuple[list[str], list[str], int]], broker_racks=(None,),
          names: list[str] | None = None) -> ConsumersInstance:
    """Members ``consumer1..`` as (topics, owned in user data, generation); replicas as Kafka's ``partitionInfos``."""
    topics, offset = {}, 0
    for t, n in partitions.items():
        topics[t] = {"racks": [[r] if (r := broker_racks[(i + offset) % len(broker_racks)]) else [] for i in range(n)]}
        offset += n
    names = names or [f"consumer{i + 1}" for i in range(len(members))]
    ms = [{"id": name, "topics": ts, "owned": owned, "generation": gen}
          for name, (ts, owned, gen) in zip(names, members)]
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": ms})


def eager(x: ConsumersInstance) -> dict[str, list[str]]:
    result = eager_sticky_assign(x).assignment
    out = {m.id: [f"{t}-{p}" for t, p in result.get(m.id, [])] for m in x.members}
    check_port(x, out)
    return out


def fully_balanced(assignment: dict[str, list[str]]) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1


def tps(topic: str, *ps: int) -> list[str]:
    return [f"{topic}-{p}" for p in ps]


# --------------------------------------------------------------------------- StickyAssignorTest


@pytest.mark.parametrize("brokers", BROKER_RACKS)
@pytest.mark.parametrize("n,expected1", [(3, ["topic-1"]), (4, ["topic-1", "topic-3"])])
def test_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation(brokers, n, expected1):
    x = group({"topic": n}, [(["topic"], tps("topic", 0, 1), GEN), (["topic"], tps("topic", 0, 2), GEN),
                             (["topic"], [], GEN)], BROKER_RACKS[brokers])
    a = eager(x)
    assert a == {"consumer1": expected1, "consumer2": ["topic-2"], "consumer3": ["topic-0"]}
    assert fully_balanced(a)


@pytest.mark.parametrize("brokers", BROKER_RACKS)
@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations1(brokers, equal):
    every = ["topic", "topic2"]
    c2_topics = every if equal else ["topic"]
    parts = {"topic": 6, "topic2": 6}
    r1 = eager(group(parts, [(every, [], -1), (c2_topics, [], -1), (every, [], -1)], BROKER_RACKS[brokers]))
    assert [len(v) for v in r1.values()] == [4, 4, 4]
    r2 = eager(group(parts, [(every, r1["consumer1"], GEN), (c2_topics, r1["consumer2"], GEN)], BROKER_RACKS[brokers]))
    assert [len(v) for v in r2.values()] == [6, 6]
    if equal:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert set(r2["consumer2"]) & set(r1["consumer3"])
    r3 = eager(group(parts, [(c2_topics, r2["consumer2"], 2), (every, r1["consumer3"], 1)], BROKER_RACKS[brokers],
                     names=["consumer2", "consumer3"]))
    assert [len(v) for v in r3.values()] == [6, 6]
    assert not set(r3["consumer2"]) & set(r3["consumer3"])


@pytest.mark.parametrize("brokers", BROKER_RACKS)
@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations2(brokers, equal):
    every = ["topic", "topic2", "topic3"]
    c1_topics = every if equal else ["topic"]
    c3_topics = every if equal else ["topic", "topic2"]
    parts = {"topic": 4, "topic2": 4, "topic3": 4}
    r1 = eager(group(parts, [(c1_topics, [], -1), (every, [], -1), (c3_topics, [], -1)], BROKER_RACKS[brokers]))
    assert [len(v) for v in r1.values()] == [4, 4, 4]
    r2 = eager(group(parts, [(every, r1["consumer2"], 1)], BROKER_RACKS[brokers], names=["consumer2"]))
    assert len(r2["consumer2"]) == 12 and set(r1["consumer2"]) <= set(r2["consumer2"])
    r3 = eager(group(parts, [(c1_topics, r1["consumer1"], 1), (every, r2["consumer2"], 2),
                             (c3_topics, r1["consumer3"], 1)], BROKER_RACKS[brokers]))
    assert [len(v) for v in r3.values()] == [4, 4, 4]


@pytest.mark.parametrize("brokers", BROKER_RACKS)
@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_conflicting_previous_generations(brokers, equal):
    every = ["topic", "topic2", "topic3"]
    c1_topics = every if equal else ["topic"]
    c2_topics = every if equal else ["topic", "topic2"]
    c1 = (tps("topic", 0, 1, 2) + tps("topic2", 2, 3) + tps("topic3", 0)) if equal else tps("topic", 0, 1, 2, 3)
    c2 = tps("topic", 0, 1) + tps("topic2", 0, 1, 2, 3)
    c3 = tps("topic", 2, 3) + tps("topic3", 0, 1, 2, 3)
    a = eager(group({"topic": 4, "topic2": 4, "topic3": 4}, [(c1_topics, c1, 1), (c2_topics, c2, 2), (every, c3, 2)],
                    BROKER_RACKS[brokers]))
    assert [len(v) for v in a.values()] == [4, 4, 4]
    assert set(a["consumer2"]) <= set(c2) and set(a["consumer3"]) <= set(c3)


@pytest.mark.parametrize("brokers", BROKER_RACKS)
def test_schema_backward_compatibility(brokers):
    """consumer2's user data has the version-0 schema (no generation): generation -1 with owned partitions."""
    a = eager(group({"topic": 3}, [(["topic"], tps("topic", 0, 2), 1), (["topic"], tps("topic", 1), -1),
                                   (["topic"], [], -1)], BROKER_RACKS[brokers]))
    assert [len(v) for v in a.values()] == [1, 1, 1]
    assert set(a["consumer1"]) <= {"topic-0", "topic-2"} and a["consumer2"] == ["topic-1"]


def test_assignor_with_old_version_subscriptions():
    a = eager(group({"topic1": 3}, [(["topic1"], ["topic1-0"], GEN), (["topic1"], ["topic1-1"], GEN),
                                    (["topic1"], [], GEN)]))
    assert a == {"consumer1": ["topic1-0"], "consumer2": ["topic1-1"], "consumer3": ["topic1-2"]}


def test_member_data_will_honor_user_data():
    """``serializeTopicPartitionAssignment`` groups by topic (a ``computeIfAbsent`` HashMap): topic1 before topic2."""
    assert user_data_partitions((("topic1", 0), ("topic2", 1)), GEN - 1) == (("topic1", 0), ("topic2", 1))
    assert user_data_partitions((("topic2", 1), ("topic1", 0)), GEN) == (("topic1", 0), ("topic2", 1))
    assert user_data_partitions((), -1) == ()


def test_user_data_order_after_the_map_resizes():
    """``groupPartitionsByTopic`` calls ``computeIfAbsent`` once per partition, and a call that finds the map
    past its threshold resizes it first, for a topic already there too. This member (seed 223846 of the
    generator, 263 members, 19 topics) owns partitions of 13 topics: the 13th new topic (s) fills the
    16-slot map past 12, and the next partition of s resizes it to 32 slots. Kafka's ``StickyAssignor``
    then kept its partitions in the order n, s, h, j, m, a, b, c, d, e (javac 17, commit 1eb7644); with
    the map left at 16 slots the order would start h, i, j."""
    owned = ["a-7", "a-17", "a-205", "a-278", "b-185", "c-62", "c-112", "c-240", "d-97", "e-89", "e-97", "h-2",
             "i-107", "j-94", "l-53", "m-60", "n-25", "o-28", "s-13", "s-65", "s-93"]
    tps = tuple((f"topic-{t.split('-')[0]}", int(t.split("-")[1])) for t in owned)
    order = list(dict.fromkeys(t[-1] for t, _ in user_data_partitions(tps, 8)))
    assert order == list("nosh" "ijlmabcde")
    assert list(dict.fromkeys(t[-1] for t, _ in user_data_partitions(tps[:19], 8)))[:3] == list("hij")


def test_eager_member_ignores_nothing_it_sent_in_user_data():
    """testMemberDataWithInconsistentData: only what the user data carries counts (here: owned t-1)."""
    x = group({"t": 2}, [(["t"], ["t-1"], GEN), (["t"], [], -1)])
    assert eager(x) == {"consumer1": ["t-1"], "consumer2": ["t-0"]}


# --------------------------------------------------------------------------- AbstractStickyAssignorTest


@pytest.mark.parametrize("brokers", BROKER_RACKS)
def test_all_consumers_reach_expected_quota_and_are_considered_filled(brokers):
    a = eager(group({"topic": 4}, [(["topic"], tps("topic", 0, 1), GEN), (["topic"], tps("topic", 2), GEN),
                                   (["topic"], [], GEN)], BROKER_RACKS[brokers]))
    assert a == {"consumer1": tps("topic", 0, 1), "consumer2": ["topic-2"], "consumer3": ["topic-3"]}


@pytest.mark.parametrize("brokers", BROKER_RACKS)
@pytest.mark.parametrize("second", [9, -1])
def test_owned_partitions_invalidated_for_stale_or_no_generation(brokers, second):
    owned = tps("topic", 0, 2) + tps("topic2", 1)
    a = eager(group({"topic": 3, "topic2": 3}, [(["topic", "topic2"], owned, 10), (["topic", "topic2"], owned, second)],
                    BROKER_RACKS[brokers]))
    assert set(a["consumer1"]) == set(owned)
    assert set(a["consumer2"]) == {"topic-1", "topic2-0", "topic2-2"}


@pytest.mark.parametrize("brokers", BROKER_RACKS)
def test_ensure_partitions_assigned_to_highest_generation(brokers):
    every = ["topic", "topic2", "topic3"]
    a = eager(group({"topic": 3, "topic2": 3, "topic3": 3},
                    [(every, ["topic-0", "topic2-0", "topic3-0"], 10), (every, ["topic-1", "topic2-1", "topic3-1"], 9),
                     (every, ["topic2-1", "topic3-0", "topic3-2"], 8)], BROKER_RACKS[brokers]))
    assert set(a["consumer1"]) == {"topic-0", "topic2-0", "topic3-0"}
    assert set(a["consumer2"]) == {"topic-1", "topic2-1", "topic3-1"}
    assert set(a["consumer3"]) == {"topic-2", "topic2-2", "topic3-2"}


@pytest.mark.parametrize("brokers", BROKER_RACKS)
def test_no_reassignment_on_current_members(brokers):
    every = ["topic", "topic2", "topic3", "topic1"]
    a = eager(group({"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3},
                    [(every, [], -1), (every, ["topic-0", "topic2-0", "topic1-0"], 9),
                     (every, ["topic3-2", "topic2-2", "topic1-1"], 8), (every, ["topic3-1", "topic-1", "topic-2"], 7)],
                    BROKER_RACKS[brokers]))
    assert set(a["consumer1"]) == {"topic1-2", "topic2-1", "topic3-0"}


@pytest.mark.parametrize("brokers", BROKER_RACKS)
def test_owned_partitions_invalidated_for_consumer_with_multiple_generation(brokers):
    a = eager(group({"topic": 3, "topic2": 3}, [(["topic", "topic2"], ["topic-0", "topic2-1", "topic-1"], 10),
                                                (["topic", "topic2"], ["topic-0", "topic2-1", "topic2-2"], 8)],
                    BROKER_RACKS[brokers]))
    assert set(a["consumer1"]) == {"topic-0", "topic2-1", "topic-1"}
    assert set(a["consumer2"]) == {"topic-2", "topic2-2", "topic2-0"}


TOPICS = {"t1": 6, "t2": 7, "t3": 2}
ALL = ["t1", "t2", "t3"]
UNIFORM = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
NON_EQUAL = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]


@pytest.mark.parametrize("subscriptions,rf,brokers,consumers,expected,mismatches", [
    ("uniform", 3, [None] * 3, racks(3), UNIFORM, -1), ("uniform", 3, racks(3), [None] * 3, UNIFORM, -1),
    ("uniform", 3, racks(3), racks(3), UNIFORM, 0), ("uniform", 3, racks(3), list("def"), UNIFORM, -1),
    ("uniform", 1, racks(3), racks(3), UNIFORM, 0), ("uniform", 2, racks(3), racks(3), UNIFORM, 0),
    ("uniform", 3, racks(2), racks(3), UNIFORM, 5),
    ("non_equal", 3, [None] * 3, racks(3), NON_EQUAL, -1), ("non_equal", 3, racks(3), racks(3), NON_EQUAL, 0),
    ("non_equal", 3, racks(3), [None, "e", "f"], NON_EQUAL, -1),
    ("non_equal", 1, racks(3), racks(3),
     ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"], 4),
    ("non_equal", 2, racks(3), racks(3),
     ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"], 0),
    ("non_equal", 3, racks(2), racks(3), NON_EQUAL, 5),
])
def test_rack_aware_assignment(subscriptions, rf, brokers, consumers, expected, mismatches):
    """testRackAwareAssignmentWith{Uniform,NonEqual}Subscription, production settings (preferRackAwareLogic off)."""
    topics = [ALL, ALL, ALL] if subscriptions == "uniform" else [ALL, ALL, ["t1", "t3"]]
    x = kafka_rack_case(TOPICS, rf, brokers, consumers, topics)
    a = eager(x)
    assert [", ".join(sorted(a[f"consumer{i}"])) for i in range(3)] == expected
    if mismatches >= 0:
        assert kafka_mismatches(x, a) == mismatches
    # the same group again, now with that assignment in its user data: kept as it is
    again = dataclasses.replace(x, members=tuple(dataclasses.replace(m, owned=tuple(a[m.id]), generation=GEN)
                                                 for m in x.members))
    assert {m: sorted(v) for m, v in eager(again).items()} == {m: sorted(v) for m, v in a.items()}


# --------------------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(params=consumer_params)
def test_eager_is_the_cooperative_target_ignores_instance_ids_and_meets_its_rule(params):
    """With the same owned partitions and generations both assignors run the same algorithm; the eager one
    returns it whole. Neither reads group.instance.id."""
    x = generate_from(params, owned=0.7, conflicts=0.2)
    statics = generate_from(params, owned=0.7, conflicts=0.2, static_members=1.0)
    target = cooperative_sticky_assign(sticky_inputs(x)).target
    mine = eager_sticky_assign(x).assignment
    assert {m: set(v) for m, v in mine.items()} == {m: set(v) for m, v in target.items()}
    assert eager_sticky_assign(statics).assignment == mine
    solution = api.solve(x, "kafka.eager_sticky")
    assert solution.metrics["violations"] == []
    assert solution.target is None


def test_registered_with_rule_and_kafka_class():
    from kipopt.methods import get_method
    m = get_method("kafka.eager_sticky")
    assert (m.family, m.rule, m.kafka_class) == ("consumers", "balanced", "org.apache.kafka.clients.consumer.StickyAssignor")
