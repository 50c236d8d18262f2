"""The KIP-848 server-side assignors' input, ``org.apache.kafka.coordinator.group.modern.GroupSpecImpl``.

Built from a consumers instance exactly as the porting contract (§7) says,
so that the ports of ``UniformAssignor`` and the server ``RangeAssignor``
iterate in Kafka's order:

* topic ids are :func:`~kipopt.solvers.java_util.topic_uuid` (MD5 of the name);
* the members are a ``HashMap`` filled by ``put`` in instance order, so
  ``memberIds()`` is Java's HashMap order over the member ids;
* a member's subscribed topics are a ``HashSet<Uuid>`` filled in its
  ``topics`` order;
* its current assignment walks ``owned`` in instance order into a
  ``HashMap<Uuid, HashSet<Integer>>`` by ``computeIfAbsent`` (a topic new to
  its bucket goes to the *head* of the chain), copied with ``put`` into a
  fresh ``HashMap`` (kept immutable, as the assignors require);
* a member's ``instanceId`` is its ``group_instance_id`` (static membership;
  only the server ``RangeAssignor`` reads it);
* the subscription type is homogeneous when every topic set is equal.

Orders are stored explicitly (tuples in iteration order), so Kafka's own
unit tests, which build their ``GroupSpec`` by hand (``TreeMap`` members,
``LinkedHashMap`` assignments, fixed ``Uuid`` strings), can be expressed too.

A server-side target assignment holds each partition once, so an instance
where two members claim the same partition has no server-side equivalent:
:func:`single_owner` is the ``requires`` check of the server methods.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[], []]}},
...     "members": [{"id": "a", "topics": ["t"], "owned": ["t-1"]}, {"id": "b", "topics": ["t"], "owned": ["t-1"]}]})
>>> single_owner(x)
'members[1].owned[0]: partition t-1 is also claimed by a; the KIP-848 server-side assignors need one owner per partition'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Mapping

from kipopt.instance import ConsumersInstance, java_string_key
from kipopt.solvers.java_util import hashmap_order, integer_hash, small_hashmap_order, topic_uuid, uuid_hash

Uuid = tuple[int, int]
"""A Kafka ``Uuid`` as (most, least) significant bits, signed: tuple order is ``Uuid.compareTo``."""


@dataclass(frozen=True)
class MemberSpec:
    """``MemberSubscriptionAndAssignmentImpl``: subscriptions and current assignment, in iteration order."""

    id: str
    topics: tuple[Uuid, ...]
    assignment: tuple[tuple[Uuid, tuple[int, ...]], ...] = ()
    instance_id: str | None = None


@dataclass(frozen=True)
class GroupSpec:
    """``GroupSpecImpl`` plus the ``SubscribedTopicDescriber`` (partition counts and names by topic id)."""

    members: tuple[MemberSpec, ...]  # memberIds() order
    partitions: Mapping[Uuid, int]
    names: Mapping[Uuid, str]
    homogeneous: bool

    @cached_property
    def assigned(self) -> frozenset[tuple[Uuid, int]]:
        """``invertedMemberAssignment`` as a set: what ``isPartitionAssigned`` answers."""
        return frozenset((t, p) for m in self.members for t, ps in m.assignment for p in ps)

    def num_partitions(self, topic: Uuid) -> int:
        """``SubscribedTopicDescriber.numPartitions``: -1 for a topic the metadata does not know."""
        return self.partitions.get(topic, -1)


def _current_assignment(owned: tuple[str, ...], ids: Mapping[str, Uuid],
                        topic_hash: Callable[[Uuid], int]) -> tuple[tuple[Uuid, tuple[int, ...]], ...]:
    sets: dict[Uuid, list[int]] = {}
    calls = []  # one computeIfAbsent per owned partition
    for text in owned:
        name, _, p = text.rpartition("-")  # validated: "<topic>-<partition>"
        calls.append(ids[name])
        sets.setdefault(ids[name], []).append(int(p))
    by_compute_if_absent = small_hashmap_order(calls, topic_hash, head_insertion=True)
    return tuple((tid, tuple(small_hashmap_order(sets[tid], integer_hash)))
                 for tid in small_hashmap_order(by_compute_if_absent, topic_hash))


def group_spec(instance: ConsumersInstance, current: bool = True) -> GroupSpec:
    """The §7 server-side inputs of ``instance`` (``current=False`` leaves out the current assignments,
    which the server ``RangeAssignor`` never reads)."""
    ids = {name: topic_uuid(name) for name in instance.topics}
    topic_hash = {tid: uuid_hash(tid) for tid in ids.values()}.__getitem__
    by_id = instance.member_by_id
    members = []
    for mid in hashmap_order(m.id for m in instance.members):
        m = by_id[mid]
        members.append(MemberSpec(mid, tuple(small_hashmap_order((ids[t] for t in m.topics), topic_hash)),
                                  _current_assignment(m.owned, ids, topic_hash) if current else (),
                                  m.group_instance_id))
    topic_sets = {frozenset(m.topics) for m in instance.members}
    return GroupSpec(tuple(members), {ids[n]: t.partitions for n, t in instance.topics.items()},
                     {ids[n]: n for n in instance.topics}, len(topic_sets) == 1)


def to_assignment(spec: GroupSpec, target: Mapping[str, Mapping[Uuid, object]]) -> dict[str, tuple[str, ...]]:
    """A ``GroupAssignment`` as a kipopt assignment: every member, its partitions sorted by (topic, partition)."""
    out = {}
    for m in spec.members:
        parts = [(spec.names[t], p) for t, ps in target.get(m.id, {}).items() for p in ps]
        parts.sort(key=lambda tp: (java_string_key(tp[0]), tp[1]))
        out[m.id] = tuple(f"{t}-{p}" for t, p in parts)
    return out


def in_instance_order(instance: ConsumersInstance, assignment: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The members of a solution listed as the instance lists them (Kafka's map order means nothing there)."""
    return {m.id: assignment.get(m.id, ()) for m in instance.members}


def single_owner(instance: ConsumersInstance) -> str | None:
    """Why the server-side assignors do not apply (a partition claimed twice), or ``None``."""
    claimed: dict[str, str] = {}
    for i, m in enumerate(instance.members):
        for j, p in enumerate(m.owned):
            first = claimed.setdefault(p, m.id)
            if first != m.id:
                return (f"members[{i}].owned[{j}]: partition {p} is also claimed by {first}; "
                        "the KIP-848 server-side assignors need one owner per partition")
    return None
