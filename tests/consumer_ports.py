"""Shared helpers for the consumer-assignor port tests.

``kafka_rack_case`` rebuilds the inputs of Kafka's
``AbstractPartitionAssignorTest.verifyRackAssignment`` as a kipopt instance
(consumers ``consumer0..``, brokers laid out round-robin over ``brokerRacks``,
replica ``j`` of partition ``i`` on broker ``(i + j + offset) mod brokers``,
the offset growing topic by topic); ``check_port`` is the re-evaluation every
port's output goes through.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from hypothesis import strategies as st

from kipopt import evaluate
from kipopt.datasets import generate
from kipopt.instance import ConsumersInstance, from_dict


def replica_racks(partitions: int, rf: int, broker_racks: Sequence[str | None], offset: int) -> list[list[str]]:
    """``AbstractPartitionAssignorTest.partitionInfos``: the racks (nulls dropped, deduplicated) per partition."""
    out = []
    for i in range(partitions):
        racks: list[str] = []
        for j in range(rf):
            rack = broker_racks[(i + j + offset) % len(broker_racks)]
            if rack is not None and rack not in racks:
                racks.append(rack)
        out.append(racks)
    return out


def kafka_rack_case(topics: Mapping[str, int], rf: int, broker_racks: Sequence[str | None],
                    consumer_racks: Sequence[str | None], consumer_topics: Sequence[Sequence[str]],
                    owned: Sequence[Sequence[str]] = ()) -> ConsumersInstance:
    topic_specs, offset = {}, 0
    for name, n in topics.items():
        topic_specs[name] = {"racks": replica_racks(n, rf, broker_racks, offset)}
        offset += n
    members = [{"id": f"consumer{i}", "rack": rack, "topics": [t for t in ts if t in topics],
                "owned": list(owned[i]) if i < len(owned) else []}
               for i, (rack, ts) in enumerate(zip(consumer_racks, consumer_topics))]
    return from_dict({"format": 1, "family": "consumers", "topics": topic_specs, "members": members})


def racks(n: int) -> list[str]:
    """``AbstractPartitionAssignorTest.racks(n)``: a, b, c, ... cycling over six names."""
    return ["abcdef"[i % 6] for i in range(n)]


def as_sets(assignment: Mapping[str, Sequence[str]]) -> dict[str, set[str]]:
    return {m: set(ps) for m, ps in assignment.items()}


def expected_sets(members: Sequence[str], expected: Sequence[str]) -> dict[str, set[str]]:
    """Kafka's expected strings (``"t1-0, t1-3"``) as sets per member."""
    return {m: {p for p in e.split(", ") if p} for m, e in zip(members, expected)}


def kafka_mismatches(instance: ConsumersInstance, assignment: Mapping[str, Sequence[str]]) -> int:
    """Kafka's test count: partitions given to a member with a rack that holds none of their replicas."""
    racks_of = instance.partition_racks
    return sum(1 for m in instance.members if m.rack is not None
               for p in assignment[m.id] if m.rack not in racks_of[p])


def check_port(instance: ConsumersInstance, assignment: Mapping[str, Sequence[str]]) -> dict:
    """Every member listed; no partition unassigned, doubled or given to a non-subscriber. Returns the metrics."""
    assert set(assignment) == {m.id for m in instance.members}
    ev = evaluate(instance, dict(assignment))
    assert ev.violations == [], ev.violations
    for m in instance.members:
        assert len(set(assignment[m.id])) == len(assignment[m.id])
    return ev.metrics


def range_balanced(instance: ConsumersInstance, assignment: Mapping[str, Sequence[str]]) -> bool:
    """Per topic, every subscriber holds ``P div N`` or ``P div N + 1`` partitions, exactly ``P mod N`` the latter."""
    for name, topic in instance.topics.items():
        subs = [m.id for m in instance.members if name in m.topics]
        if not subs:
            continue
        counts = [sum(1 for p in assignment[m] if p.rpartition("-")[0] == name) for m in subs]
        floor, extra = divmod(topic.partitions, len(subs))
        if sorted(counts) != [floor] * (len(subs) - extra) + [floor + 1] * extra:
            return False
    return True


consumer_params = st.fixed_dictionaries({
    "seed": st.integers(0, 10_000),
    "racks": st.integers(1, 4),
    "topics": st.integers(1, 6),
    "partitions": st.integers(1, 60),
    "members": st.integers(1, 12),
    "replication_factor": st.integers(1, 3),
    "subscriptions": st.sampled_from(["equal", "mixed"]),
    "rackless_members": st.sampled_from([0.0, 0.3, 1.0]),
    "rackless_partitions": st.sampled_from([0.0, 0.2]),
    "skew": st.sampled_from([0.0, 1.0]),
})
"""Generator parameters for hypothesis: small groups over every switch of rack awareness."""


def generate_from(params: Mapping, **overrides) -> ConsumersInstance:
    """``generate("consumers", ...)`` from drawn ``consumer_params`` (made consistent) and overrides."""
    p = {k: v for k, v in params.items() if k != "seed"}
    p["partitions"] = max(p["partitions"], p["topics"])
    p["replication_factor"] = min(p["replication_factor"], p["racks"])
    return generate("consumers", params["seed"], **{**p, **overrides})
