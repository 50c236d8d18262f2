"""Ports of Kafka's two replica placers (KIP-36), following Kafka at commit 1eb7644 (4.0.0-SNAPSHOT).

* ``kafka.adminutils`` follows ``org.apache.kafka.admin.AdminUtils.assignReplicasToBrokers``
  (ZooKeeper mode and ``kafka-reassign-partitions --generate``): a rack-alternated
  broker list, leaders round-robin over it, followers at an increasing shift,
  skipping brokers whose rack (or which itself) already holds a replica.
* ``kafka.striped`` follows ``org.apache.kafka.metadata.placement.StripedReplicaPlacer``
  (KRaft topic creation) driven by ``java.util.Random(seed)``.

Both ignore ``current``; neither Kafka algorithm reads an existing assignment.
Kafka's refusals (RF above the broker count, racks on only some brokers for
AdminUtils) become ``status: infeasible`` with Kafka's message and no assignment.

>>> from kipopt.instance import from_dict
>>> kip36 = from_dict({"format": 1, "family": "replicas", "partitions": 6, "replication_factor": 3,
...     "brokers": [{"id": i, "rack": r} for i, r in enumerate(["rack1", "rack1", "rack2", "rack2", "rack3", "rack3"])]})
>>> rack_alternated_brokers(kip36.rack_of)
[0, 2, 4, 1, 3, 5]
>>> assign_replicas_to_brokers(kip36)[0]
(0, 2, 4)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Protocol

from kipopt.errors import NotApplicableError
from kipopt.instance import ReplicasInstance, java_string_key
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status
from kipopt.solvers.java_util import JavaRandom, TreeTieError, collections_shuffle, hashmap_order, \
    java_rem, java_string_hash, spread_hash, to_int16, to_int32


class KafkaRefusal(Exception):
    """Kafka throws (``InvalidReplicationFactorException``, ``AdminOperationException``)."""


# --------------------------------------------------------------------------- AdminUtils


def rack_alternated_brokers(rack_of: Mapping[int, str]) -> list[int]:
    """``AdminUtils.getRackAlternatedBrokerList``: racks by name, brokers by id, round-robin over racks.

    >>> rack_alternated_brokers({0: "a", 1: "a", 2: "a", 3: "b", 4: "c", 5: "c"})
    [0, 3, 4, 1, 5, 2]
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[r]) for r in sorted(by_rack, key=java_string_key)]
    result: list[int] = []
    depth = 0
    while len(result) < len(rack_of):
        result.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return result


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    """``AdminUtils.replicaIndex`` with Java's int arithmetic (the shift sum wraps, then a long)."""
    offset = 1 + java_rem(to_int32(shift + j), n - 1)
    return java_rem(first + offset, n)


def _check(instance: ReplicasInstance) -> None:
    n, rf = len(instance.brokers), instance.replication_factor
    if rf > n:
        raise KafkaRefusal(f"Replication factor: {rf} larger than available brokers: {n}.")


def _start(pid: int, start_index: int, n: int) -> int:
    first = java_rem(to_int32(pid + start_index), n)
    if first < 0:
        raise KafkaRefusal(f"partition id {pid} + start_index {start_index} overflows a Java int "
                           "(Kafka throws IndexOutOfBoundsException)")
    return first


def _pick(arranged: list[int], i: int) -> int:
    if i < 0:
        raise KafkaRefusal("Java int overflow in the replica shift (Kafka throws IndexOutOfBoundsException)")
    return arranged[i]


def _partition_shifts(instance: ReplicasInstance, n: int):
    """Each partition id with the replica shift in force for it.

    The fixed start index is also the first shift (Kafka uses one number for both); the shift goes up by
    one at every id that is a positive multiple of ``n``, the very first id included.
    """
    shift = instance.start_index
    for pid in instance.partition_ids:
        if pid > 0 and pid % n == 0:
            shift = to_int32(shift + 1)
        yield pid, shift


def _rack_unaware(instance: ReplicasInstance) -> dict[int, tuple[int, ...]]:
    brokers = list(instance.broker_ids)
    n, rf, fixed = len(brokers), instance.replication_factor, instance.start_index
    out: dict[int, tuple[int, ...]] = {}
    for pid, shift in _partition_shifts(instance, n):
        first = _start(pid, fixed, n)
        out[pid] = (brokers[first],) + tuple(_pick(brokers, _replica_index(first, shift, j, n))
                                             for j in range(rf - 1))
    return out


def _rack_aware(instance: ReplicasInstance) -> dict[int, tuple[int, ...]]:
    rack_of = instance.rack_of
    if any(r is None for r in rack_of.values()):
        raise KafkaRefusal("Not all brokers have rack information for replica rack aware assignment.")
    num_racks = len(set(rack_of.values()))
    arranged = rack_alternated_brokers(rack_of)
    n, rf, fixed = len(arranged), instance.replication_factor, instance.start_index
    out: dict[int, tuple[int, ...]] = {}
    for pid, shift in _partition_shifts(instance, n):
        first = _start(pid, fixed, n)
        out[pid] = _followers(arranged, rack_of, first, to_int32(shift * num_racks), rf, num_racks)
    return out


def _followers(arranged: list[int], rack_of: Mapping[int, str], first: int, shift: int, rf: int,
               num_racks: int) -> tuple[int, ...]:
    """One partition: leader at ``first``, then the skip loop with a cursor carried across replicas."""
    n = len(arranged)
    leader = arranged[first]
    replicas, racks, brokers = [leader], {rack_of[leader]}, {leader}
    k = 0
    for _ in range(rf - 1):
        while True:
            broker = _pick(arranged, _replica_index(first, shift, k, n))
            rack = rack_of[broker]
            k += 1
            if (rack not in racks or len(racks) == num_racks) and (broker not in brokers or len(brokers) == n):
                replicas.append(broker)
                racks.add(rack)
                brokers.add(broker)
                break
    return tuple(replicas)


def assign_replicas_to_brokers(instance: ReplicasInstance) -> dict[int, tuple[int, ...]]:
    """``AdminUtils.assignReplicasToBrokers(brokers sorted by id, partitions, rf, start_index, start_partition_id)``.

    Raises :class:`KafkaRefusal` where Kafka throws.
    """
    _check(instance)
    if all(b.rack is None for b in instance.brokers):
        return _rack_unaware(instance)
    return _rack_aware(instance)


# --------------------------------------------------------------------------- StripedReplicaPlacer


class RandomSource(Protocol):
    def next_int(self, bound: int | None = None) -> int: ...


@dataclass
class BrokerList:
    """``StripedReplicaPlacer.BrokerList``: a rotating cursor that yields each broker once per epoch."""

    brokers: list[int] = field(default_factory=list)
    index: int = 0
    offset: int = 0
    epoch: int = 0

    def initialize(self, rnd: RandomSource) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rnd.next_int(len(self.brokers))

    def next(self, epoch: int) -> int:
        """The next broker of this epoch, or -1 once every broker has been returned."""
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


@dataclass
class Rack:
    fenced: BrokerList = field(default_factory=BrokerList)
    unfenced: BrokerList = field(default_factory=BrokerList)

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


def _optional_hash(rack: str | None) -> int:
    """``Optional<String>.hashCode()``: the string's hash, 0 when empty."""
    return 0 if rack is None else java_string_hash(rack)


def _rack_hash_order(names: list[str | None], racks: Mapping[str | None, Rack]) -> list[str | None]:
    """The iteration order of ``RackList.racks`` (a ``HashMap<Optional<String>, Rack>`` filled by ``put`` in
    first-seen order). Where rack names share a ``String.hashCode`` in a tree bin Java orders them by
    ``System.identityHashCode`` (``Optional`` is not ``Comparable``), which changes from run to run. That
    order cannot change the placement when every rack that may ever share a tree bin with such names (a bin
    exists only in a table of 64 or more, so: every rack in their residue class modulo 64) holds one broker:
    each then draws one ``nextInt(1)`` in ``initialize``, whatever its place. Then any tie-break gives Kafka's
    answer; otherwise there is none to reproduce, and the method does not apply."""
    try:
        return hashmap_order(names, _optional_hash)
    except TreeTieError:
        pass
    counts = Counter(_optional_hash(n) for n in names)
    tied = {spread_hash(h) & 63 for h, c in counts.items() if c > 1}
    shared = [n for n in names if spread_hash(_optional_hash(n)) & 63 in tied]
    crowded = [n for n in shared if len(racks[n].fenced.brokers) + len(racks[n].unfenced.brokers) != 1]
    if crowded:
        def label(n: str | None) -> str:
            return "no rack" if n is None else repr(n)
        same = ", ".join(label(n) for n in names if counts[_optional_hash(n)] > 1)
        raise NotApplicableError("kafka.striped", f"brokers: racks of one Java hash code ({same}) share a HashMap "
                                 f"tree bin, where Kafka orders them by System.identityHashCode, and "
                                 f"{label(crowded[0])} holds more than one broker: Kafka's placement changes from "
                                 f"run to run")
    return hashmap_order(names, _optional_hash, key_order=lambda n: (n is not None, java_string_key(n or "")))


class RackList:
    """``StripedReplicaPlacer.RackList``; brokers are ``(id, rack or None, fenced)`` in iteration order."""

    def __init__(self, rnd: RandomSource, brokers: Iterable[tuple[int, str | None, bool]]):
        self.random = rnd
        self.racks: dict[str | None, Rack] = {}
        names: list[str | None] = []
        self.num_total = self.num_unfenced = 0
        for broker, rack_name, fenced in brokers:
            rack = self.racks.get(rack_name)
            if rack is None:
                names.append(rack_name)
                rack = self.racks[rack_name] = Rack()
            (rack.fenced if fenced else rack.unfenced).brokers.append(broker)
            self.num_unfenced += not fenced
            self.num_total += 1
        self.hash_order = _rack_hash_order(names, self.racks)  # racks.values() iterates in HashMap order
        for name in self.hash_order:
            self.racks[name].fenced.initialize(rnd)
            self.racks[name].unfenced.initialize(rnd)
        # OptionalStringComparator: the empty rack first, then String.compareTo order
        self.rack_names = sorted(names, key=lambda r: (r is not None, java_string_key(r or "")))
        self.epoch = 0
        self.offset = rnd.next_int(len(self.rack_names)) if self.rack_names else 0

    def validate(self, rf: int) -> None:
        if rf <= 0:
            raise KafkaRefusal(f"Invalid replication factor {rf}: the replication factor must be positive.")
        if rf > self.num_total:
            raise KafkaRefusal(f"The target replication factor of {rf} cannot be reached because only "
                               f"{self.num_total} broker(s) are registered.")
        if self.num_unfenced == 0:
            raise KafkaRefusal("All brokers are currently fenced.")

    def shuffle(self) -> None:
        collections_shuffle(self.rack_names, self.random)
        for name in self.hash_order:
            collections_shuffle(self.racks[name].fenced.brokers, self.random)
            collections_shuffle(self.racks[name].unfenced.brokers, self.random)

    def place(self, rf: int) -> list[int]:
        """One partition: leader from the rack at ``offset`` (or the next with an unfenced broker), then stripes."""
        self.validate(rf)
        if self.epoch == self.num_unfenced and self.num_unfenced > 1:
            self.shuffle()
            self.epoch = 0
        if self.offset == len(self.rack_names):
            self.offset = 0
        n = len(self.rack_names)
        first = self.offset
        for _ in range(n + 1):
            leader = self.racks[self.rack_names[first]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first = (first + 1) % n
        else:
            raise KafkaRefusal("no rack yields an unfenced leader (Kafka would loop forever)")
        brokers = [leader]
        rack_index, skip = self.offset, first
        for _ in range(1, rf):
            follower, rack_index, skip = self._follower(rack_index, skip)
            brokers.append(follower)
        self.epoch += 1
        self.offset += 1
        return brokers

    def _follower(self, rack_index: int, skip: int) -> tuple[int, int, int]:
        """Step the rack cursor until a rack yields a broker; the leader's rack is passed over once, undrawn."""
        n = len(self.rack_names)
        for _ in range(2 * n + 2):
            result = -1
            if rack_index == skip:
                skip = -1
            else:
                result = self.racks[self.rack_names[rack_index]].next(self.epoch)
            rack_index = (rack_index + 1) % n
            if result >= 0:
                return result, rack_index, skip
        raise KafkaRefusal("no rack yields a follower (Kafka would loop forever)")


def striped_place(instance: ReplicasInstance, seed: int = 0) -> dict[int, tuple[int, ...]]:
    """``new StripedReplicaPlacer(new Random(seed)).place(...)``; keys ``start_partition_id + i``.

    Raises :class:`KafkaRefusal` where Kafka throws.
    """
    brokers = [(b, instance.rack_of[b], False) for b in instance.broker_ids]
    rack_list = RackList(JavaRandom(seed), brokers)
    rf = to_int16(instance.replication_factor)  # PlacementSpec holds a short
    rack_list.validate(rf)
    start = instance.start_partition_id
    return {start + i: tuple(rack_list.place(rf)) for i in range(instance.partitions)}


# --------------------------------------------------------------------------- methods


def _run_adminutils(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    try:
        return MethodResult(assign_replicas_to_brokers(instance))
    except KafkaRefusal as exc:
        return MethodResult({}, Status.INFEASIBLE, message=str(exc))


def _run_striped(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    seed = 0 if options.seed is None else options.seed
    try:
        return MethodResult(striped_place(instance, seed), seed=seed)
    except KafkaRefusal as exc:
        return MethodResult({}, Status.INFEASIBLE, message=str(exc), seed=seed)


METHODS = [
    Method("kafka.adminutils", "replicas", "spread", _run_adminutils,
           "AdminUtils.assignReplicasToBrokers (KIP-36, ZooKeeper mode) with the instance's start_index",
           kafka_class="org.apache.kafka.admin.AdminUtils"),
    Method("kafka.striped", "replicas", "spread", _run_striped,
           "KRaft StripedReplicaPlacer driven by java.util.Random(seed)",
           kafka_class="org.apache.kafka.metadata.placement.StripedReplicaPlacer"),
]
RULES: list = []
