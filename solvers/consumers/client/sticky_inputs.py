"""The inputs of Kafka's sticky assignors: ``AbstractStickyAssignor``'s view of a group (Kafka ``1eb7644``).

* :func:`sticky_inputs` builds, from a kipopt consumer instance, exactly the
  inputs ``AbstractPartitionAssignor.assign`` hands to ``assignPartitions``
  (reference §7): the subscriptions ``HashMap`` (member ids in Java hash-map
  order), each member's topics, ``ownedPartitions`` in instance order and
  generation (``-1`` = none), its rack, and ``partitionsPerTopic`` (subscribed
  topics with at least one partition, each partition with its replica racks);
* :class:`RackInfo` is ``AbstractStickyAssignor.RackInfo``, including the global
  rack-awareness switch of ``AbstractPartitionAssignor.useRackAwareAssignment``.

Both assignment builders (:mod:`.constrained_builder`, :mod:`.general_builder`)
and the driver (:mod:`.abstract_sticky`) read these types; they live apart from
the driver so that the driver can import the builders at the top.

Partitions are ``(topic, partition)`` tuples throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from kipopt.instance import ConsumersInstance, java_string_key, parse_partition
from kipopt.solvers.java_util import hashmap_order

TP = tuple[str, int]
DEFAULT_GENERATION = -1


class StickyAssignorError(Exception):
    """Kafka throws here (``IllegalStateException``, ``NullPointerException``): there is no Kafka result."""


@dataclass(frozen=True)
class StickyInputs:
    """What ``AbstractStickyAssignor.assignPartitions`` receives (reference §7).

    ``members`` iterate in the order of the subscriptions ``HashMap``;
    ``partition_counts`` is ``partitionsPerTopic`` (its order never matters);
    ``generation[m]`` is ``-1`` when the subscription carries none.
    """

    members: tuple[str, ...]
    topics: Mapping[str, tuple[str, ...]]
    owned: Mapping[str, tuple[TP, ...]]
    generation: Mapping[str, int]
    rack: Mapping[str, str | None]
    partition_counts: Mapping[str, int]
    partition_racks: Mapping[TP, frozenset[str]]


def sticky_inputs(instance: ConsumersInstance) -> StickyInputs:
    """The Kafka inputs of §7 for ``instance``; an empty replica-rack list is a rack-less partition."""
    ids = [m.id for m in instance.members]
    subscribed = {t for m in instance.members for t in m.topics}
    counts = {t: instance.topics[t].partitions for t in subscribed if instance.topics[t].partitions > 0}
    racks = {(t, p): frozenset(rs) for t in counts for p, rs in enumerate(instance.topics[t].racks)}
    return StickyInputs(
        members=tuple(hashmap_order(ids)),
        topics={m.id: tuple(m.topics) for m in instance.members},
        owned={m.id: tuple(parse_partition(p) for p in m.owned) for m in instance.members},
        generation={m.id: m.generation for m in instance.members},
        rack={m.id: m.rack or None for m in instance.members},
        partition_counts=counts,
        partition_racks=racks,
    )


def java_sorted(names: Iterable[str]) -> list[str]:
    """``Collections.sort`` of strings (``String.compareTo``)."""
    return sorted(names, key=java_string_key)


def member_ranks(members: Iterable[str]) -> dict[str, int]:
    """Each member id's position in ``String.compareTo`` order: the TreeSet tie-break, as an int."""
    return {m: i for i, m in enumerate(java_sorted(members))}


# --------------------------------------------------------------------------- RackInfo


class RackInfo:
    """``AbstractStickyAssignor.RackInfo``: consumer and partition racks, only while rack-aware.

    Rack awareness is decided once for the whole group (reference §1.4): off
    when no consumer has a rack, when consumer racks and replica racks are
    disjoint, or when every partition's rack set equals the union of replica
    racks. ``num_consumers_by_partition`` is computed whenever some consumer
    has a rack, even with rack awareness off, as in Kafka.
    """

    def __init__(self, inputs: StickyInputs):
        consumers_by_rack: dict[str, int] = {}
        for member in inputs.members:
            rack = inputs.rack[member]
            if rack:
                consumers_by_rack[rack] = consumers_by_rack.get(rack, 0) + 1
        partition_racks: Mapping[TP, frozenset[str]] = {}
        replica_racks: set[str] = set()
        if consumers_by_rack:
            partition_racks = inputs.partition_racks
            for racks in partition_racks.values():
                replica_racks.update(racks)
        self.rack_aware = use_rack_aware_assignment(set(consumers_by_rack), replica_racks, partition_racks.values())
        if self.rack_aware:
            self.consumer_racks = {m: inputs.rack[m] for m in inputs.members if inputs.rack[m]}
            self.partition_racks = partition_racks
        else:
            self.consumer_racks = {}
            self.partition_racks = {}
        self.num_consumers_by_partition = {
            tp: sum(consumers_by_rack.get(r, 0) for r in racks) for tp, racks in partition_racks.items()}

    def racks_mismatch(self, consumer: str, tp: TP) -> bool:
        rack = self.consumer_racks.get(consumer)
        if rack is None:
            return False
        racks = self.partition_racks.get(tp)
        return racks is None or rack not in racks

    def sort_partitions_by_rack_consumers(self, partitions: list[TP]) -> list[TP]:
        """Stable sort by how many consumers sit in the partition's racks (scarcest first)."""
        if not self.num_consumers_by_partition:
            return partitions
        counts = self.num_consumers_by_partition
        return sorted(partitions, key=lambda tp: counts.get(tp, 0))

    def next_rack_consumer(self, tp: TP, consumers: Sequence[str], first_index: int) -> int:
        """Index of the first consumer, circularly from ``first_index``, whose rack holds a replica; -1 if none."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            index = (first_index + i) % n
            rack = self.consumer_racks.get(consumers[index])
            if rack is not None and rack in racks:
                return index
        return -1


def use_rack_aware_assignment(consumer_racks: set[str], replica_racks: set[str],
                              racks_per_partition: Iterable[frozenset[str]]) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment`` (production: ``preferRackAwareLogic`` false).

    >>> use_rack_aware_assignment({"a"}, {"a", "b"}, [frozenset("ab"), frozenset("a")])
    True
    >>> use_rack_aware_assignment({"a"}, {"a", "b"}, [frozenset("ab"), frozenset("ab")])
    False
    """
    if not consumer_racks or consumer_racks.isdisjoint(replica_racks):
        return False
    return not all(racks == replica_racks for racks in racks_per_partition)
