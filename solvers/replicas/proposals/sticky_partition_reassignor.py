"""KAFKA-1792 (open pull request apache/kafka#18903): ``--generate`` that keeps the current placement.

Port of ``org.apache.kafka.tools.reassign.StickyPartitionReassignor`` at commit
``337a3b53965335850195653106fdc3777cad7f8d`` of the pull request (the version with leader scores),
registered as ``proposal.sticky_reassign``. The pull request's command passes every partition of the
topics to move with its current replicas and the brokers of ``--broker-list`` (racks unless
``--disable-rack-aware``); a kipopt replicas instance is one topic, so the reassignor balances that
topic alone.

Each replica (partition, index) may move to another broker when that does not worsen the partition's
spread over brokers (Σ count², ``brokerImprovementScore ≤ 0``) nor over racks (Σ count² per rack, only
when every broker has a rack); a leader (index 0) move also carries the change of Σ leaders² over
brokers (``leaderImprovementScore``), computed when the replica's moves are (re)computed and left as
is afterwards, as in the Java. Repeatedly the best move is executed:

* from-brokers by replica count descending, to-brokers ascending (ties by id), stopping at a
  to-broker that would worsen the global Σ count² and at a from-broker that improves it nowhere;
* per (from, to) the first move of a ``TreeSet`` ordered by: already-moved replicas that improve
  something first, then rack, broker, leader improvement, moved before unmoved, to-broker id, replica;
* a candidate counts when it improves something or the global score; among candidates the same
  order with the global improvement first.

until no move is left. The output keeps each replica's index, so a leader moves with replica 0.
Hash orders do not matter: every ordered set has a total order. Where the Java throws (some brokers
with racks and others without, a replica on an unknown broker) the method answers ``infeasible`` with
Kafka's message. The port answers exactly as the pull request's class compiled with javac 17 on 1,330
random clusters (64 kept as test vectors).

>>> sticky_reassign({("t", 0): [0, 1], ("t", 1): [0, 1], ("t", 2): [0, 1]}, [(0, None), (1, None), (2, None)])
{('t', 0): [2, 1], ('t', 1): [0, 2], ('t', 2): [0, 1]}
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status

TopicPartition = tuple[str, int]
MoveKey = tuple  # the comparator's fields in order; unique per (replica, to-broker)


class ReassignorRefusal(Exception):
    """The Java throws a ``RuntimeException``."""


@dataclass(eq=False)
class _Partition:
    id: TopicPartition
    replicas: list["_Replica"] = field(default_factory=list)
    per_broker: dict[int, int] = field(default_factory=dict)
    per_rack: dict[str | None, int] = field(default_factory=dict)


@dataclass(eq=False)
class _Replica:
    partition: _Partition
    index: int
    broker: int
    is_leader: bool
    moved: bool = False
    moves: dict[int, MoveKey] | None = None  # to-broker -> its key, the replica's ``possibleMoves``

    @property
    def order(self) -> tuple[str, int, int]:
        """``ReplicaId.compareTo``: topic, partition, replica index."""
        return self.partition.id[0], self.partition.id[1], self.index


def _did_improve(rack: int, broker: int, leader: int) -> bool:
    return rack < 0 or broker < 0 or leader < 0


def _move_key(replica: _Replica, to: int, rack: int, broker: int, leader: int) -> MoveKey:
    """``MovableFromScoreComparator``'s fields, so tuple order is the ``TreeSet``'s order."""
    first = 0 if _did_improve(rack, broker, leader) and replica.moved else 1
    return first, rack, broker, leader, 0 if replica.moved else 1, to, replica.order


class StickyPartitionReassignor:
    """The reassignor's state; :meth:`reassign` runs it to the end."""

    def __init__(self, current: Mapping[TopicPartition, Sequence[int]], brokers: Sequence[tuple[int, str | None]]):
        racked = sum(1 for _, rack in brokers if rack is not None)
        if 0 < racked < len(brokers):
            raise ReassignorRefusal("Not all brokers have rack information for replica rack aware assignment.")
        self.rack_aware = racked > 0
        self.rack_of = dict(brokers)
        self.racks = set(self.rack_of.values())
        self.count: dict[int, int] = {b: 0 for b in self.rack_of}
        self.leaders: dict[int, int] = {b: 0 for b in self.rack_of}
        self.partitions: list[_Partition] = []
        self.replicas: list[_Replica] = []
        self._init_replicas(current)
        # possibleMoves: per (from, to) a heap of keys with lazy deletion, the live keys and their counts
        self.heaps: dict[tuple[int, int], list] = {}
        self.live: dict[tuple[tuple[str, int, int], int], MoveKey] = {}
        self.live_pairs: dict[tuple[int, int], int] = {}
        self.live_from: dict[int, int] = {}
        self.pushed = 0  # a tie-breaker for the heap: one move can sit twice in it, stale once
        for replica in self.replicas:
            self._update_moves(replica, self._possible_moves(replica))

    def _init_replicas(self, current: Mapping[TopicPartition, Sequence[int]]) -> None:
        for tp, brokers in current.items():
            partition = _Partition(tp)
            self.partitions.append(partition)
            for i, b in enumerate(brokers):
                if b not in self.rack_of:
                    raise ReassignorRefusal(f"Replica assignment for {tp[0]}-{tp[1]} {i} references unknown broker {b}")
                self.count[b] += 1
                if i == 0:
                    self.leaders[b] += 1
                replica = _Replica(partition, i, b, i == 0)
                partition.replicas.append(replica)
                partition.per_broker[b] = partition.per_broker.get(b, 0) + 1
                rack = self.rack_of[b]
                partition.per_rack[rack] = partition.per_rack.get(rack, 0) + 1
                self.replicas.append(replica)

    # ------------------------------------------------------------------ scores (Σ count² differences)

    @staticmethod
    def _shift(count_from: int, count_to: int) -> int:
        """How Σ c² changes when one unit goes from a bin holding ``count_from`` to one holding ``count_to``."""
        return 2 * (count_to - count_from) + 2

    def _possible_moves(self, replica: _Replica) -> dict[int, MoveKey]:
        """``getPossibleMovesForReplica``: every to-broker whose move worsens neither spread of the partition."""
        p, here = replica.partition, replica.broker
        here_rack = self.rack_of[here]
        moves: dict[int, MoveKey] = {}
        for to in self.rack_of:
            if to == here:
                continue
            broker = self._shift(p.per_broker.get(here, 0), p.per_broker.get(to, 0))
            if broker > 0:
                continue
            rack = 0
            if self.rack_aware and self.rack_of[to] != here_rack:
                rack = self._shift(p.per_rack.get(here_rack, 0), p.per_rack.get(self.rack_of[to], 0))
            if rack > 0:
                continue
            leader = self._shift(self.leaders[here], self.leaders[to]) if replica.is_leader else 0
            moves[to] = _move_key(replica, to, rack, broker, leader)
        return moves

    # ------------------------------------------------------------------ the global possible moves

    def _remove(self, replica: _Replica, to: int) -> None:
        del self.live[(replica.order, to)]
        pair = (replica.broker, to)
        self.live_pairs[pair] -= 1
        self.live_from[replica.broker] -= 1

    def _add(self, replica: _Replica, to: int, key: MoveKey) -> None:
        self.live[(replica.order, to)] = key
        pair = (replica.broker, to)
        self.pushed += 1
        heapq.heappush(self.heaps.setdefault(pair, []), (key, self.pushed, replica))
        self.live_pairs[pair] = self.live_pairs.get(pair, 0) + 1
        self.live_from[replica.broker] = self.live_from.get(replica.broker, 0) + 1

    def _update_moves(self, replica: _Replica, new: dict[int, MoveKey] | None) -> None:
        """``updatePossibleMoves``: moves whose key changed are removed and added again, gone ones removed."""
        old = replica.moves or {}
        new = new or {}
        for to, key in old.items():
            if new.get(to) != key:
                self._remove(replica, to)
        for to, key in new.items():
            if old.get(to) != key:
                self._add(replica, to, key)
        replica.moves = new or None

    def _first(self, source: int, to: int) -> tuple[MoveKey, _Replica]:
        """``TreeSet.first()`` of the (from, to) moves."""
        heap = self.heaps[(source, to)]
        while True:
            key, _, replica = heap[0]
            if self.live.get((replica.order, to)) == key and replica.broker == source:
                return key, replica
            heapq.heappop(heap)

    # ------------------------------------------------------------------ the loop

    def _best_move(self) -> tuple[tuple, _Replica, int] | None:
        """``getBestMove``: the best candidate over (from, to) pairs, in ``MovableScoreComparator`` order."""
        by_count = sorted(self.rack_of, key=lambda b: (self.count[b], b))
        best = None
        for source in reversed(by_count):
            if not self.live_from.get(source):
                continue
            could_improve = False
            for to in by_count:
                if to == source:
                    continue
                shift = self._shift(self.count[source], self.count[to])
                if shift > 0:
                    break
                could_improve = True
                if not self.live_pairs.get((source, to)):
                    continue
                (_, rack, broker, leader, unmoved, _, order), replica = self._first(source, to)
                if _did_improve(rack, broker, leader) or shift < 0:
                    improved = shift < 0 or _did_improve(rack, broker, leader)
                    key = (0 if improved and replica.moved else 1, shift, rack, broker, leader, unmoved, to, order)
                    if best is None or key < best[0]:
                        best = (key, replica, to)
            if not could_improve:
                break
        return best

    def _move(self, replica: _Replica, to: int) -> None:
        source, p = replica.broker, replica.partition
        self.count[source] -= 1
        self.count[to] += 1
        if replica.is_leader:
            self.leaders[source] -= 1
            self.leaders[to] += 1
        for counts, a, b in ((p.per_broker, source, to), (p.per_rack, self.rack_of[source], self.rack_of[to])):
            counts[a] -= 1
            counts[b] = counts.get(b, 0) + 1
        self._update_moves(replica, None)
        replica.moved, replica.broker = True, to
        self._update_moves(replica, self._possible_moves(replica))
        for sibling in p.replicas:
            if sibling is not replica:
                self._update_moves(sibling, self._possible_moves(sibling))

    def reassign(self, max_moves: int | None = None) -> dict[TopicPartition, list[int]]:
        """``reassign()``: moves until none is left; each partition's brokers by replica index."""
        limit = max_moves if max_moves is not None else 4 * len(self.replicas) * max(len(self.rack_of), 1) + 16
        for _ in range(limit):
            best = self._best_move()
            if best is None:
                return {p.id: [r.broker for r in p.replicas] for p in self.partitions}
            self._move(best[1], best[2])
        raise ReassignorRefusal(f"no fixed point after {limit} moves (the Java would keep moving)")


def sticky_reassign(current: Mapping[TopicPartition, Sequence[int]],
                    brokers: Sequence[tuple[int, str | None]]) -> dict[TopicPartition, list[int]]:
    """``new StickyPartitionReassignor(current, brokers).reassign()``; ``brokers`` as (id, rack or None)."""
    return StickyPartitionReassignor(current, brokers).reassign()


# --------------------------------------------------------------------------- the method


def requires_current(instance: ReplicasInstance) -> str | None:
    """Why a proposal that moves the current replicas does not apply, or ``None``."""
    if instance.current is None:
        return "current: the proposal moves the current replicas; the instance has no current assignment"
    for pid in instance.partition_ids:
        brokers = instance.current.get(pid)
        if brokers is None:
            return f"current: partition {pid} has no current replicas; the proposal only moves existing ones"
        if len(brokers) != instance.replication_factor:
            return (f"current.{pid}: {len(brokers)} replicas, replication_factor is {instance.replication_factor}; "
                    "the proposal keeps each partition's replica count")
    return None


TOPIC = "topic"


def _run(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    current = {(TOPIC, pid): list(instance.current[pid]) for pid in instance.partition_ids}
    brokers = [(b, instance.rack_of[b]) for b in instance.broker_ids]
    try:
        result = sticky_reassign(current, brokers)
    except ReassignorRefusal as exc:
        return MethodResult({}, Status.INFEASIBLE, message=str(exc))
    return MethodResult({pid: tuple(result[(TOPIC, pid)]) for pid in instance.partition_ids})


METHODS = [
    Method("proposal.sticky_reassign", "replicas", "spread", _run,
           "KAFKA-1792 (open PR apache/kafka#18903 at 337a3b5): --generate as best-improvement moves from the "
           "current placement (replica balance, rack spread, leader balance), one topic",
           kafka_class="org.apache.kafka.tools.reassign.StickyPartitionReassignor (apache/kafka#18903)",
           requires=requires_current),
]
RULES: list = []
