"""Port of ``org.apache.kafka.coordinator.group.assignor.UniformHeterogeneousAssignmentBuilder`` (KIP-848).

Follows Kafka at commit 1eb7644 (the KAFKA-17710 version); members differ in
their subscriptions:

1. members are numbered in ``memberIds()`` order (HashMap order); every
   held partition of a still-subscribed topic is kept, with no quota;
2. topics are ordered by partitions per subscriber (descending, as a
   double), then subscriber count (ascending), then ``Uuid``;
3. each topic's unheld partitions, ascending, go to its subscribers by
   *water-filling* (:class:`MemberAssignmentBalancer`): subscribers sorted
   by (total assignment size, index), the lowest level served left to
   right, the level rising once all of it has had one;
4. balancing: over the topics with two or more subscribers, in that order,
   up to 16 passes (stopping after a full pass that moves nothing): while
   the topic's subscribers differ by more than one in total size, the
   highest-numbered partition of the most loaded subscriber that still
   holds one of this topic moves to the next least loaded subscriber.

No racks; balance is judged on total assignment size, not per topic.
"""

from __future__ import annotations

from kipopt.solvers.consumers.group.spec import GroupSpec, Uuid

MAX_ITERATION_COUNT = 16


class PartitionAssignorException(Exception):
    """Kafka's ``PartitionAssignorException``."""


class MemberAssignmentBalancer:
    """The two moving ranges over subscribers sorted by size: least loaded (grows right), most loaded (grows left).

    ``sizes`` is the builder's live size array: the ranges read it as
    partitions move, exactly as Kafka's inner class does.
    """

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.sorted: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda i: (sizes[i], i))
        first, last = sizes[self.sorted[0]], sizes[self.sorted[-1]]
        self.least_end, self.least_count, self.next_least = 0, first - 1, 0
        n = len(self.sorted)
        self.most_start, self.most_end, self.most_count, self.next_most = n, n, last + 1, n - 1
        return last - first

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            order, sizes = self.sorted, self.sizes
            while self.least_end < len(order) and sizes[order[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.sorted[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        order, sizes = self.sorted, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range emptied through exclusions: restart the level from the next member down
                self.most_count = sizes[order[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[order[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = order[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Swap the member last returned by :meth:`next_most_loaded` to the range's end and shrink it."""
        order = self.sorted
        i, j = self.next_most + 1, self.most_end - 1
        order[i], order[j] = order[j], order[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    def __init__(self, spec: GroupSpec):
        self.spec = spec
        self.member_ids = [m.id for m in spec.members]
        self.subscribers: dict[Uuid, list[int]] = {}
        for i, m in enumerate(spec.members):
            for t in m.topics:
                if spec.num_partitions(t) == -1:
                    raise PartitionAssignorException(
                        f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")
                self.subscribers.setdefault(t, []).append(i)
        self.sizes = [0] * len(spec.members)
        self.owners = {t: [-1] * spec.num_partitions(t) for t in self.subscribers}

    def topic_key(self, t: Uuid) -> tuple:
        n, s = self.spec.num_partitions(t), len(self.subscribers[t])
        return -(n / s), s, t

    def keep_subscribed(self) -> None:
        for i, m in enumerate(self.spec.members):
            subscribed = set(m.topics)
            for t, parts in m.assignment:
                if t in subscribed:
                    self.sizes[i] += len(parts)
                    owners = self.owners[t]
                    for p in parts:
                        owners[p] = i

    def assign(self, t: Uuid, p: int, member: int) -> None:
        owners = self.owners[t]
        if owners[p] != -1:
            self.sizes[owners[p]] -= 1
        owners[p] = member
        self.sizes[member] += 1

    def assign_remaining(self) -> None:
        unassigned = {t: [p for p, o in enumerate(owners) if o == -1] for t, owners in self.owners.items()}
        balancer = MemberAssignmentBalancer(self.sizes)
        for t in sorted((t for t, ps in unassigned.items() if ps), key=self.topic_key):
            balancer.initialize(self.subscribers[t])
            for p in unassigned[t]:
                self.assign(t, p, balancer.next_least_loaded())

    def balance(self) -> None:
        topics = sorted((t for t, s in self.subscribers.items() if len(s) >= 2), key=self.topic_key)
        if not topics:
            return
        balancer = MemberAssignmentBalancer(self.sizes)
        last = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, t in enumerate(topics):
                if index == last:
                    return
                if self.balance_topic(t, balancer) > 0 or last == -1:
                    last = index

    def balance_topic(self, t: Uuid, balancer: MemberAssignmentBalancer) -> int:
        if balancer.initialize(self.subscribers[t]) <= 1:
            return 0
        owners = self.owners[t]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not balancer.is_balanced():
            most = balancer.next_most_loaded()
            while most != -1 and end.get(most, 0) - start.get(most, 0) <= 0:
                balancer.exclude_most_loaded()
                most = balancer.next_most_loaded()
            if most == -1:
                break
            end[most] -= 1
            partition = partitions[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.assign(t, partition, least)
            moved += 1
        return moved

    def target(self) -> dict[str, dict[Uuid, list[int]]]:
        out: dict[str, dict[Uuid, list[int]]] = {mid: {} for mid in self.member_ids}
        for t, owners in self.owners.items():
            for p, o in enumerate(owners):
                out[self.member_ids[o]].setdefault(t, []).append(p)
        return out


def uniform_heterogeneous(spec: GroupSpec) -> dict[str, dict[Uuid, list[int]]]:
    """``build()``: the target assignment, member -> topic -> partitions (empty when nobody subscribes)."""
    builder = _Builder(spec)
    if not builder.subscribers:
        return {}
    builder.keep_subscribed()
    builder.assign_remaining()
    builder.balance()
    return builder.target()
