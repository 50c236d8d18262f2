"""Port of the client-side ``org.apache.kafka.clients.consumer.RangeAssignor`` (KIP-881 rack matching).

Follows Kafka at commit 1eb7644 (4.0.0-SNAPSHOT), inside the frame of
``org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor``:

1. the subscribed topics go into a ``HashMap`` (iterated in Java order), each
   topic's subscribers sorted by member id (``String.compareTo``; the format
   has no ``group.instance.id``);
2. rack awareness is decided per topic (``useRackAwareAssignment``): off when
   no subscriber has a rack, when the subscribers' racks hold no replica of
   the topic, or when every partition sits on every rack the topic uses;
   rack matching runs when *any* topic needs it;
3. rack matching: topics with the same subscribers and the same partition
   count (when some subscriber has a rack) are *co-partitioned*: partition
   ``p`` of all of them goes to the first subscriber that rack-matches ``p``
   in every one and still has quota; a topic alone in its group takes, per
   subscriber in order, its lowest rack-matching partitions up to the quota;
4. plain range over what is left: each subscriber in order takes the
   lowest-numbered leftovers up to ``P div N`` (+1 while extras last);
5. member lists sorted by (topic, partition) when rack matching ran, else in
   assignment order.

A rack-less member matches every partition; a partition with no rack (an
empty rack list: one replica on the rack-less node, §7) matches only
rack-less members.

Kafka scans every unassigned partition for every subscriber (O(P·N) per
topic); this port finds the same partitions through per-rack queues with
lazy deletion (a subscriber always takes the lowest matching partitions, and
a subscriber that has lost its quota never regains it), in O(P·RF + N).

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers",
...     "topics": {"t": {"racks": [["a"], ["b"], ["a"], ["b"]]}},
...     "members": [{"id": "c1", "rack": "b", "topics": ["t"]}, {"id": "c2", "rack": "a", "topics": ["t"]}]})
>>> r = range_assign(x)
>>> r.assignment, r.rack_aware
({'c1': ('t-1', 't-3'), 'c2': ('t-0', 't-2')}, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from kipopt.instance import ConsumersInstance, java_string_key
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solvers.consumers.client.member_info import member_info_key
from kipopt.solvers.java_util import hashmap_order

NO_RACK = None


@dataclass(frozen=True)
class RangeResult:
    """Kafka's answer (member -> partitions, in Kafka's list order) and whether rack matching ran."""

    assignment: dict[str, tuple[str, ...]]
    rack_aware: bool


def use_rack_aware_assignment(consumer_racks: set[str], partition_racks: Sequence[frozenset[str]],
                              prefer_rack_aware_logic: bool = False) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment`` over one scope of consumers and partitions.

    >>> use_rack_aware_assignment({"a"}, [frozenset("ab"), frozenset("ab")])
    False
    >>> use_rack_aware_assignment({"a"}, [frozenset("a"), frozenset("b")])
    True
    >>> use_rack_aware_assignment({"d"}, [frozenset("a"), frozenset("b")])
    False
    """
    union = frozenset().union(*partition_racks)
    if not consumer_racks or consumer_racks.isdisjoint(union):
        return False
    if prefer_rack_aware_logic:
        return True
    return any(racks != union for racks in partition_racks)


@dataclass
class _TopicState:
    """``RangeAssignor.TopicAssignmentState``: one topic's subscribers, quotas and leftovers.

    ``racks`` are the partitions' replica racks; Kafka computes them (its
    ``partitionRacks``) only when some subscriber has a rack, which decides
    the co-partitioning group key.
    """

    topic: str
    consumers: tuple[str, ...]  # in MemberInfo order
    consumer_racks: tuple[Optional[str], ...]
    racks: tuple[frozenset[str], ...]
    has_consumer_racks: bool
    needs_rack_aware: bool
    floor: int = 0
    extra: int = 0
    assigned_count: list[int] = field(default_factory=list)
    assigned: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        n, p = len(self.consumers), len(self.racks)
        self.floor, self.extra = divmod(p, n)
        self.assigned_count = [0] * n
        self.assigned = [False] * p

    def max_assignable(self, c: int) -> int:
        return max(0, self.floor + (1 if self.extra > 0 else 0) - self.assigned_count[c])

    def on_assigned(self, c: int, parts: list[int]) -> None:
        self.assigned_count[c] += len(parts)
        if self.assigned_count[c] > self.floor:
            self.extra -= 1
        for p in parts:
            self.assigned[p] = True


class _Queue:
    """Partitions in ascending order with lazy deletion: ``take`` returns the lowest unassigned ones."""

    __slots__ = ("items", "head")

    def __init__(self, items: list[int]):
        self.items = items
        self.head = 0

    def take(self, assigned: list[bool], limit: int) -> list[int]:
        items, i, out = self.items, self.head, []
        while i < len(items) and assigned[items[i]]:
            i += 1
        self.head = i
        while i < len(items) and len(out) < limit:
            if not assigned[items[i]]:
                out.append(items[i])
            i += 1
        return out


def _topic_order(instance: ConsumersInstance) -> list[str]:
    """``partitionsPerTopic``'s HashMap order: filled by put in the order of the HashSet of subscribed topics,
    itself added member by member, members in HashMap order (the two orders part where topic names collide
    into a tree bin)."""
    by_id = instance.member_by_id
    members = hashmap_order(m.id for m in instance.members)
    return hashmap_order(hashmap_order(t for mid in members for t in by_id[mid].topics))


def _states(instance: ConsumersInstance, prefer_rack_aware_logic: bool) -> list[_TopicState]:
    subscribers: dict[str, list[str]] = {}
    for m in instance.members:
        for t in m.topics:
            subscribers.setdefault(t, []).append(m.id)
    by_id = instance.member_by_id
    states = []
    for topic in _topic_order(instance):
        consumers = tuple(sorted(subscribers[topic], key=lambda mid: member_info_key(by_id[mid])))
        racks_of = tuple(by_id[c].rack or NO_RACK for c in consumers)
        consumer_racks = {r for r in racks_of if r is not None}
        partition_racks = tuple(frozenset(rs) for rs in instance.topics[topic].racks)
        needs = use_rack_aware_assignment(consumer_racks, partition_racks, prefer_rack_aware_logic)
        states.append(_TopicState(topic, consumers, racks_of, partition_racks, bool(consumer_racks), needs))
    return states


def _rack_queues(state: _TopicState, partitions: Iterable[int]) -> dict[Optional[str], _Queue]:
    """A queue per rack (partitions with a replica there) and one for rack-less members (all partitions)."""
    by_rack: dict[Optional[str], list[int]] = {NO_RACK: []}
    for p in partitions:
        by_rack[NO_RACK].append(p)
        for r in state.racks[p]:
            by_rack.setdefault(r, []).append(p)
    return {r: _Queue(ps) for r, ps in by_rack.items()}


def _assign_with_racks(state: _TopicState, result: dict[str, list[tuple[str, int]]]) -> None:
    """``assignRanges(state, state::racksMatch, ...)`` for a topic alone in its group."""
    queues = _rack_queues(state, range(len(state.assigned)))
    empty = _Queue([])
    for c, consumer in enumerate(state.consumers):
        limit = state.max_assignable(c)
        if limit <= 0:
            continue
        parts = queues.get(state.consumer_racks[c], empty).take(state.assigned, limit)
        if parts:
            result[consumer].extend((state.topic, p) for p in parts)
            state.on_assigned(c, parts)


def _assign_co_partitioned(states: list[_TopicState], result: dict[str, list[tuple[str, int]]]) -> None:
    """``assignCoPartitionedWithRackMatching``: partition p of every topic to one rack-matching member.

    The topics of a group share subscribers and partition count and are
    assigned together here only, so their quotas move in lockstep: one
    topic's quota stands for all. A member that has lost its quota never
    regains it, so per-rack member queues with lazy deletion find Kafka's
    "first remaining member" without scanning every member.
    """
    lead = states[0]
    members_by_rack: dict[Optional[str], list[int]] = {}
    for c, rack in enumerate(lead.consumer_racks):
        members_by_rack.setdefault(rack, []).append(c)
    heads = {r: 0 for r in members_by_rack}

    def first_eligible(rack: Optional[str]) -> int | None:
        queue = members_by_rack.get(rack)
        if queue is None:
            return None
        i = heads[rack]
        while i < len(queue) and lead.max_assignable(queue[i]) <= 0:
            i += 1
        heads[rack] = i
        return queue[i] if i < len(queue) else None

    for p in range(len(lead.assigned)):
        common = frozenset.intersection(*(s.racks[p] for s in states))
        candidates = [c for c in map(first_eligible, (NO_RACK, *common)) if c is not None]
        if not candidates:
            continue
        c = min(candidates)
        for s in states:
            result[s.consumers[c]].append((s.topic, p))
            s.on_assigned(c, [p])


def _assign_ranges(state: _TopicState, result: dict[str, list[tuple[str, int]]]) -> None:
    """``assignRanges(state, (c, tp) -> true, ...)``: the lowest leftovers, member by member."""
    left = [p for p, done in enumerate(state.assigned) if not done]
    at = 0
    for c, consumer in enumerate(state.consumers):
        if at >= len(left):
            break
        take = left[at:at + state.max_assignable(c)]
        if take:
            at += len(take)
            result[consumer].extend((state.topic, p) for p in take)
            state.on_assigned(c, take)


def _rack_matching(states: list[_TopicState], result: dict[str, list[tuple[str, int]]]) -> None:
    """``assignWithRackMatching``: group by subscribers, then by ``partitionRacks.size()``."""
    groups: dict[tuple, list[_TopicState]] = {}
    for s in states:
        size = len(s.racks) if s.has_consumer_racks else 0
        groups.setdefault((s.consumers, size), []).append(s)
    for (_, size), group in groups.items():
        if len(group) > 1:
            if size > 0:
                _assign_co_partitioned(group, result)
        elif group[0].needs_rack_aware:
            _assign_with_racks(group[0], result)


def range_assign(instance: ConsumersInstance, prefer_rack_aware_logic: bool = False) -> RangeResult:
    """``new RangeAssignor().assign(cluster, groupSubscription)`` on the §7 inputs of ``instance``.

    ``prefer_rack_aware_logic`` is Kafka's package-private test flag (forces
    rack matching on wherever consumer and replica racks meet); production
    never sets it.
    """
    states = _states(instance, prefer_rack_aware_logic)
    result: dict[str, list[tuple[str, int]]] = {m.id: [] for m in instance.members}
    rack_aware = any(s.needs_rack_aware for s in states)
    if rack_aware:
        _rack_matching(states, result)
    for s in states:
        _assign_ranges(s, result)
    if rack_aware:
        for parts in result.values():
            parts.sort(key=lambda tp: (java_string_key(tp[0]), tp[1]))
    assignment = {m: tuple(f"{t}-{p}" for t, p in parts) for m, parts in result.items()}
    return RangeResult(assignment, rack_aware)


def _run(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    result = range_assign(instance)
    return MethodResult(result.assignment, info={"rack_aware": result.rack_aware})


METHODS = [
    Method("kafka.range", "consumers", "range", _run,
           "client RangeAssignor (KIP-881): per-topic ranges, rack matching and co-partitioning when Kafka "
           "switches rack awareness on",
           kafka_class="org.apache.kafka.clients.consumer.RangeAssignor"),
]
RULES: list = []
