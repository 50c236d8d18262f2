"""Port of ``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (Kafka ``1eb7644``), method ``kafka.round_robin``.

Kafka's ``assign(partitionsPerTopic, subscriptions)``:

1. the members, sorted as ``MemberInfo`` (static members first by
   ``group.instance.id``, then the dynamic ones by member id;
   :mod:`.member_info`), form a circular iterator;
2. every subscribed topic that has partitions, in name order (a ``TreeSet``),
   partitions ascending, goes to the next member of the circle that subscribes
   to its topic: the iterator skips members that do not, and moves one past
   the member it gave the partition to.

**No racks.** At this commit ``RoundRobinAssignor`` overrides only the
rack-less ``assign(Map<String, Integer>, ...)``; ``AbstractPartitionAssignor``
hands it partition counts, so KIP-881 rack matching never applies and the port
ignores racks too. It ignores owned partitions and generations as well.

Its rule is ``balanced``: round robin aims at whole-group count balance (every
partition to the next member in turn). With equal subscriptions it meets that
rule's balance (and also the per-topic quota of ``range``); with mixed
subscriptions the skipping can leave a member two or more partitions behind a
member holding a partition of one of its topics, which the solution reports as
a ``balance`` violation (Kafka's documented weakness, not a port error). Not
being sticky, it is charged the revocations the rule counts.

Kafka's skip loop costs O(N) per partition on mixed subscriptions; the port
finds the same member by bisecting each topic's subscriber positions in the
circle, O(P log N).

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers",
...     "topics": {"t0": {"racks": [[]]}, "t1": {"racks": [[], []]}, "t2": {"racks": [[], [], []]}},
...     "members": [{"id": "c0", "topics": ["t0"]}, {"id": "c1", "topics": ["t0", "t1"]},
...                 {"id": "c2", "topics": ["t0", "t1", "t2"]}]})
>>> round_robin_assign(x)
{'c0': ('t0-0',), 'c1': ('t1-0',), 'c2': ('t1-1', 't2-0', 't2-1', 't2-2')}
"""

from __future__ import annotations

from bisect import bisect_left

from kipopt.instance import ConsumersInstance, java_string_key
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solvers.consumers.client.member_info import member_info_key

KAFKA_CLASS = "org.apache.kafka.clients.consumer.RoundRobinAssignor"


def round_robin_assign(instance: ConsumersInstance) -> dict[str, tuple[str, ...]]:
    """``new RoundRobinAssignor().assign(cluster, groupSubscription)``: member -> partitions in Kafka's order."""
    circle = sorted(instance.members, key=member_info_key)
    positions: dict[str, list[int]] = {}  # per topic, its subscribers' places in the circle (ascending)
    for place, member in enumerate(circle):
        for topic in member.topics:
            positions.setdefault(topic, []).append(place)
    result: dict[str, list[str]] = {m.id: [] for m in instance.members}
    cursor = 0  # the circle's place that peek() returns
    for topic in sorted(positions, key=java_string_key):
        places = positions[topic]
        for p in range(instance.topics[topic].partitions):
            i = bisect_left(places, cursor)
            place = places[i] if i < len(places) else places[0]
            result[circle[place].id].append(f"{topic}-{p}")
            cursor = (place + 1) % len(circle)
    return {mid: tuple(parts) for mid, parts in result.items()}


def _run(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    return MethodResult(round_robin_assign(instance))


METHODS = [
    Method("kafka.round_robin", "consumers", "balanced", _run,
           "client RoundRobinAssignor: partitions by topic name in turn over the members (static members "
           "first by group.instance.id), skipping non-subscribers; no racks (Java applies none), not sticky",
           kafka_class=KAFKA_CLASS),
]
RULES: list = []
