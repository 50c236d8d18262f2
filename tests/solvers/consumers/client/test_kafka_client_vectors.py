"""Replay of Kafka's real client assignors (``data/kafka_client_vectors.json``) on generated groups.

The vectors were printed by Kafka's unmodified ``RangeAssignor``,
``RoundRobinAssignor``, ``CooperativeStickyAssignor`` and eager
``StickyAssignor`` (commit 1eb7644, javac 17) on static and dynamic members,
racks, mixed subscriptions and owned history; every port must give the same
lists, in Kafka's order.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kipopt.datasets import generate
from kipopt.instance import ConsumersInstance, from_dict
from kipopt.solvers.consumers.client.abstract_sticky import sticky_inputs
from kipopt.solvers.consumers.client.cooperative_sticky import cooperative_sticky_assign
from kipopt.solvers.consumers.client.range import range_assign
from kipopt.solvers.consumers.client.round_robin import round_robin_assign
from kipopt.solvers.consumers.client.sticky import eager_sticky_assign

DATA = json.loads((Path(__file__).parent / "data" / "kafka_client_vectors.json").read_text())
VECTORS = DATA["vectors"]
LARGE = json.loads((Path(__file__).parent / "data" / "kafka_client_vectors_large.json").read_text())
"""Groups of 64 to 185 members and up to 1,608 partitions: hash maps resized several times, and two members own
partitions of exactly 13 topics, where the user data's map resizes on a repeated topic."""


def _lists(instance: ConsumersInstance, assignment) -> dict[str, list[str]]:
    return {m.id: [p if isinstance(p, str) else f"{p[0]}-{p[1]}" for p in assignment.get(m.id, ())]
            for m in instance.members}


def ports(instance: ConsumersInstance) -> dict[str, dict[str, list[str]]]:
    return {
        "kafka.range": _lists(instance, range_assign(instance).assignment),
        "kafka.round_robin": _lists(instance, round_robin_assign(instance)),
        "kafka.cooperative_sticky": _lists(instance, cooperative_sticky_assign(sticky_inputs(instance)).partial),
        "kafka.eager_sticky": _lists(instance, eager_sticky_assign(instance).assignment),
    }


def test_vectors_cover_static_members_racks_mixed_subscriptions_and_history():
    assert DATA["kafka_commit"] == "1eb7644349cb07139d6a3c1ad1986979647cac99"
    params = [v["params"] for v in VECTORS]
    assert len(VECTORS) >= 300
    assert sum(p["static_members"] > 0 for p in params) >= 150
    assert sum(p["static_members"] == 0 for p in params) >= 50
    assert sum(p["subscriptions"] == "mixed" for p in params) >= 100
    assert sum(p["subscriptions"] == "equal" for p in params) >= 50
    assert sum(p["owned"] > 0 and p["conflicts"] > 0 for p in params) >= 100
    assert sum(p["rackless_members"] < 1 and p["racks"] > 1 for p in params) >= 100


def test_larger_vectors_come_from_the_same_kafka():
    assert LARGE["kafka_commit"] == DATA["kafka_commit"] and len(LARGE["vectors"]) == 24


@pytest.mark.parametrize("vector", VECTORS + LARGE["vectors"],
                         ids=lambda v: f"seed{v['seed']}-m{v['params']['members']}")
def test_ports_reproduce_kafkas_client_assignors(vector):
    instance = generate("consumers", vector["seed"], **vector["params"])
    mine = ports(instance)
    for method, java in vector["outputs"].items():
        assert mine[method] == java, method


COLLISIONS = json.loads((Path(__file__).parent / "data" / "kafka_client_collisions.json").read_text())


@pytest.mark.parametrize("case", COLLISIONS["cases"], ids=lambda c: c["name"])
def test_ports_follow_java_where_hash_codes_collide(case):
    """Topic names or member ids sharing one ``String.hashCode`` put tree bins in Java's maps, and then a
    HashMap filled in another HashMap's order iterates differently from it: ``partitionsPerTopic`` (filled
    from the HashSet of subscribed topics) and the sticky ``consumerToOwnedPartitions`` (filled from the
    subscriptions map). Kafka's lists, in order, for all four ports."""
    assert COLLISIONS["kafka_commit"] == "1eb7644349cb07139d6a3c1ad1986979647cac99"
    instance = from_dict(case["instance"])
    mine = ports(instance)
    for method, java in case["outputs"].items():
        assert mine[method] == {m.id: java.get(m.id, []) for m in instance.members}, method
