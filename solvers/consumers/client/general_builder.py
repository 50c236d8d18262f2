"""Port of ``AbstractStickyAssignor.GeneralAssignmentBuilder`` (Kafka ``1eb7644``): subscriptions differ.

Steps (reference §3.4): keep owned partitions the member still subscribes to
and that match its rack; give the rest, topics ordered by (number of
subscribers, name), to the least-loaded eligible member of the ``TreeSet``
ordered by (assignment size, member id), first rack-matching, then plainly;
set aside topics with one subscriber and members that cannot change; then
sweep the movable partitions (``performReassignments``) while the assignment
is not ``isBalanced``, moving a partition back to its previous owner or to
the least-loaded subscriber, with ``PartitionMovements`` undoing A→B/B→A
swaps; revert when the balance score did not strictly improve.

Kafka evaluates ``isBalanced`` from scratch before every partition of every
sweep (O(N·P) each). This port answers the same three queries from
incrementally maintained indices (:class:`BalanceIndex`), which give the
identical answers:

* ``isBalanced`` is false exactly when the largest and smallest members differ
  by two or more *and* some topic ``t`` has a holder of a partition of ``t``
  at least two partitions above a subscriber of ``t`` that is below its
  maximum possible size (the member order of Kafka's scan only decides *which*
  witness it finds, not the boolean);
* both "is there a better-suited consumer" loops of ``performReassignments``
  move the partition when *some* subscriber of the topic holds at least two
  fewer partitions than its owner, and then to the same destination, so the
  rack-matching loop changes nothing and only the topic's minimum counts;
* the destination, the first subscriber in (size, id) order, is the head of
  a per-topic heap keyed exactly as the ``TreeSet`` comparator.

``tests/test_kafka_sticky.py`` checks this against a direct transcription.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Mapping

from kipopt.instance import java_string_key
from kipopt.solvers.java_util import JavaHashSet, topic_partition_hash
from kipopt.solvers.consumers.client.sticky_inputs import TP, RackInfo, StickyAssignorError, StickyInputs, member_ranks


class PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``: the partitions moved per topic and (src, dst) pair.

    The per-pair partition sets are Java ``HashSet``s: which partition
    ``getTheActualPartitionToBeMoved`` picks is the first in their order.
    """

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet]] = {}
        self.moves: dict[TP, tuple[str, str]] = {}

    def _remove_record(self, tp: TP) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TP, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        pairs = self.by_topic.setdefault(tp[0], {})
        if pair not in pairs:
            pairs[pair] = JavaHashSet(lambda k: topic_partition_hash(*k))
        pairs[pair].add(tp)

    def move_partition(self, tp: TP, old: str, new: str) -> None:
        if tp in self.moves:
            src, _ = self._remove_record(tp)
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_be_moved(self, tp: TP, old: str, new: str) -> TP:
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()


class GeneralAssignmentBuilder:
    """``GeneralAssignmentBuilder.build``; the three balance queries are overridable methods."""

    def __init__(self, inputs: StickyInputs, rack_info: RackInfo, owned: Mapping[str, list[TP]],
                 max_generation: int):
        self.inputs = inputs
        self.rack_info = rack_info
        self.max_generation = max_generation
        counts = inputs.partition_counts
        self.counts = counts
        self.members = inputs.members
        self.rank = member_ranks(self.members)
        self.topics_of = {m: tuple(t for t in inputs.topics[m] if t in counts) for m in self.members}
        self.subscribers: dict[str, list[str]] = {t: [] for t in counts}
        for m in self.members:
            for t in self.topics_of[m]:
                self.subscribers[t].append(m)
        self.max_size = {m: sum(counts[t] for t in self.topics_of[m]) for m in self.members}
        self.current: dict[str, list[TP]] = {m: owned.get(m, []) for m in self.members}
        self.owner: dict[TP, str] = {tp: m for m, tps in self.current.items() for tp in tps}
        topics = sorted(counts, key=lambda t: (len(self.subscribers[t]), java_string_key(t)))
        self.sorted_partitions = [(t, p) for t in topics for p in range(counts[t])]
        self.active = set(self.members)  # the members of sortedCurrentSubscriptions
        self.movements = PartitionMovements()
        self.revocation_required = False
        self.index: BalanceIndex | None = None

    # ------------------------------------------------------------------ build

    def build(self) -> dict[str, list[TP]]:
        prev = self._prev_assignment()
        assigned = set(self._assign_owned_partitions())
        unassigned = [tp for tp in self.sorted_partitions if tp not in assigned]
        self._start_index()
        self._balance(prev, unassigned)
        return self.current

    def _prev_assignment(self) -> dict[TP, tuple[str, int]]:
        """``prepopulateCurrentAssignments``: raw owned partitions of members below the max generation."""
        prev: dict[TP, tuple[str, int]] = {}
        for m in self.members:
            generation = self.inputs.generation[m]
            if generation < self.max_generation:  # also covers "no generation" (-1) while max > -1
                for tp in self.inputs.owned[m]:
                    if tp not in prev or generation > prev[tp][1]:
                        prev[tp] = (m, generation)
        return prev

    def _assign_owned_partitions(self) -> list[TP]:
        assigned = []
        for m in self.members:
            subscribed = set(self.inputs.topics[m])
            kept = []
            for tp in self.current[m]:
                if tp[0] not in subscribed or self.rack_info.racks_mismatch(m, tp):
                    self.revocation_required = True
                    del self.owner[tp]
                else:
                    kept.append(tp)
            self.current[m][:] = kept
            assigned.extend(kept)
        return assigned

    def _balance(self, prev: dict[TP, tuple[str, int]], unassigned: list[TP]) -> None:
        initializing = all(not tps for tps in self.current.values())
        to_assign = unassigned
        if self.rack_info.consumer_racks:
            to_assign = [tp for tp in unassigned if not self._maybe_assign_partition(tp, rack_aware=True)]
        for tp in to_assign:
            self._maybe_assign_partition(tp, rack_aware=False)

        movable = {t for t, subs in self.subscribers.items() if len(subs) >= 2}
        self.sorted_partitions = [tp for tp in self.sorted_partitions if tp[0] in movable]
        unassigned = [tp for tp in unassigned if tp[0] in movable]
        fixed = [m for m in self.members if not self._can_participate(m, movable)]
        self.active.difference_update(fixed)
        self._start_balance_queries()

        before = {m: list(self.current[m]) for m in self.members if m in self.active}
        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_partitions, prev)
        if not initializing and performed and \
                balance_score(len(self.current[m]) for m in before) >= balance_score(map(len, before.values())):
            for m, tps in before.items():
                self.current[m] = tps

    def _can_participate(self, m: str, movable: set[str]) -> bool:
        tps = self.current[m]
        return len(tps) < self.max_size[m] or any(tp[0] in movable for tp in tps)

    def _maybe_assign_partition(self, tp: TP, rack_aware: bool) -> bool:
        consumer = self._first_eligible(tp, rack_aware)
        if consumer is None:
            return False
        self.current[consumer].append(tp)
        self.owner[tp] = consumer
        self._changed(consumer, tp[0], +1)
        return True

    def _perform_reassignments(self, partitions: list[TP], prev: dict[TP, tuple[str, int]]) -> bool:
        performed = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.owner[tp]
                size = len(self.current[consumer])
                previous = prev.get(tp)
                if previous is not None and size > self._size_of(previous[0]) + 1:
                    self._reassign(tp, previous[0])
                    performed = modified = True
                    continue
                if self._min_subscriber_size(tp[0]) < size - 1:
                    self._reassign(tp, self._least_loaded_subscriber(tp[0]))
                    performed = modified = True
            if not modified:
                return performed

    def _size_of(self, m: str) -> int:
        if m not in self.active:
            raise StickyAssignorError(f"NullPointerException: previous owner {m} is not in the reassignable "
                                      "assignment (Kafka throws here)")
        return len(self.current[m])

    def _reassign(self, tp: TP, new: str) -> None:
        moved = self.movements.actual_partition_to_be_moved(tp, self.owner[tp], new)
        old = self.owner[moved]
        self.movements.move_partition(moved, old, new)
        self.current[old].remove(moved)
        self.current[new].append(moved)
        self.owner[moved] = new
        self._changed(old, moved[0], -1)
        self._changed(new, moved[0], +1)

    # ------------------------------------------------------------------ queries (fast; see module docstring)

    def _start_index(self) -> None:
        self.index = BalanceIndex(self)

    def _start_balance_queries(self) -> None:
        self.index.start_balance()

    def _changed(self, m: str, topic: str, delta: int) -> None:
        self.index.changed(m, topic, delta)

    def _first_eligible(self, tp: TP, rack_aware: bool) -> str | None:
        """First member in (size, id) order subscribed to the topic and, if ``rack_aware``, not mismatched."""
        return self.index.first_eligible(tp, rack_aware)

    def _least_loaded_subscriber(self, topic: str) -> str:
        return self.index.first_eligible((topic, -1), False)

    def _min_subscriber_size(self, topic: str) -> int:
        return len(self.current[self._least_loaded_subscriber(topic)])

    def _is_balanced(self) -> bool:
        return self.index.is_balanced()


def balance_score(sizes) -> int:
    """``getBalanceScore``: the sum over member pairs of the absolute size difference.

    >>> balance_score([3, 1, 2])
    4
    """
    ordered = sorted(sizes)
    n = len(ordered)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(ordered))


class BalanceIndex:
    """Lazy heaps over member sizes that answer the builder's queries in O(log N) amortized.

    Entries are pushed whenever a member's size (or its holding of a topic)
    changes; an entry is stale when it no longer matches the member's current
    size, and stale entries are dropped when they reach a heap's top.

    * ``subs[(topic, rack)]``: (size, id rank) of subscribers, split by the
      member's rack while rack-aware so the rack pass can skip mismatched ones;
    * ``nonfull[topic]``: subscribers below their maximum possible size;
    * ``holders[topic]``: members holding a partition of the topic, largest first;
    * ``violating``: topics whose largest holder is two or more above their
      smallest non-full subscriber; ``isBalanced`` = global spread <= 1 or none.
    """

    def __init__(self, b: GeneralAssignmentBuilder):
        self.b = b
        self.size = {m: len(b.current[m]) for m in b.members}
        self.rack_of = {m: b.rack_info.consumer_racks.get(m) for m in b.members}
        self.keys: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        self.subs: dict[tuple[str, str | None], list] = {}
        for m in b.members:
            for t in b.topics_of[m]:
                key = (t, self.rack_of[m])
                if key not in self.subs:
                    self.subs[key] = []
                    self.keys[t].append(key)
                self.subs[key].append((self.size[m], b.rank[m], m))
        for heap in self.subs.values():
            heapq.heapify(heap)
        self.held: dict[str, dict[str, int]] = {m: defaultdict(int) for m in b.members}
        for m in b.members:
            for tp in b.current[m]:
                self.held[m][tp[0]] += 1
        self.balancing = False

    def start_balance(self) -> None:
        b = self.b
        self.balancing = True
        self.nonfull: dict[str, list] = defaultdict(list)
        self.holders: dict[str, list] = defaultdict(list)
        self.low: list = []
        self.high: list = []
        self.violating: set[str] = set()
        for m in b.active:
            self._push_balance(m)
        for t in b.counts:
            self._recheck(t)

    def changed(self, m: str, topic: str, delta: int) -> None:
        self.size[m] += delta
        held = self.held[m]
        held[topic] += delta
        if not held[topic]:
            del held[topic]
        size, rank = self.size[m], self.b.rank[m]
        for t in self.b.topics_of[m]:
            heapq.heappush(self.subs[(t, self.rack_of[m])], (size, rank, m))
        if self.balancing:
            self._push_balance(m)
            touched = set(self.b.topics_of[m])
            touched.update(held)
            touched.add(topic)
            for t in touched:
                self._recheck(t)

    def _push_balance(self, m: str) -> None:
        size, rank = self.size[m], self.b.rank[m]
        if size != self.b.max_size[m]:
            for t in self.b.topics_of[m]:
                heapq.heappush(self.nonfull[t], (size, rank, m))
        for t in self.held[m]:
            heapq.heappush(self.holders[t], (-size, rank, m))
        heapq.heappush(self.low, (size, rank, m))
        heapq.heappush(self.high, (-size, rank, m))

    def _top(self, heap: list, valid) -> tuple | None:
        while heap and not valid(heap[0]):
            heapq.heappop(heap)
        return heap[0] if heap else None

    def _fresh(self, e: tuple) -> bool:
        return e[2] in self.b.active and self.size[e[2]] == abs(e[0])

    def _recheck(self, t: str) -> None:
        low = self._top(self.nonfull[t], lambda e: self._fresh(e) and e[0] != self.b.max_size[e[2]])
        high = self._top(self.holders[t], lambda e: self._fresh(e) and self.held[e[2]].get(t, 0) > 0)
        if low is not None and high is not None and -high[0] > low[0] + 1:
            self.violating.add(t)
        else:
            self.violating.discard(t)

    def first_eligible(self, tp: TP, rack_aware: bool) -> str | None:
        t = tp[0]
        racks = self.b.rack_info.partition_racks.get(tp, ()) if rack_aware else None
        best = None
        for key in self.keys.get(t, ()):
            if racks is not None and key[1] is not None and key[1] not in racks:
                continue
            top = self._top(self.subs[key], self._fresh)
            if top is not None and (best is None or top < best):
                best = top
        return None if best is None else best[2]

    def is_balanced(self) -> bool:
        low = self._top(self.low, self._fresh)
        high = self._top(self.high, self._fresh)
        if low is None or -high[0] <= low[0] + 1:
            return True
        return not self.violating
