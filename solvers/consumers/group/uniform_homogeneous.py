"""Port of ``org.apache.kafka.coordinator.group.assignor.UniformHomogeneousAssignmentBuilder`` (KIP-848).

Follows Kafka at commit 1eb7644 (formerly ``OptimizedUniformAssignmentBuilder``);
every member subscribes to the same topics T (the first member's set):

1. unassigned = for each topic of T in ``HashSet`` order, its partitions that
   no member currently holds (``isPartitionAssigned``);
2. ``min = P div N``; the first ``P mod N`` members *visited* (``memberIds()``,
   HashMap order) get quota ``min + 1``, whatever they hold;
3. per member, its held topics in map order: a topic no longer subscribed is
   dropped; a topic that fits the remaining quota is kept whole; otherwise
   partitions are kept in set order until the quota is used and the rest
   join the unassigned list;
4. members with quota left, in visiting order, take it from the unassigned
   list in order.

No racks. O(P + N).
"""

from __future__ import annotations

from kipopt.solvers.consumers.group.spec import GroupSpec, Uuid
from kipopt.solvers.java_util import hashmap_order, uuid_hash


class PartitionAssignorException(Exception):
    """Kafka's ``PartitionAssignorException``."""


def _subscribed_topics(spec: GroupSpec) -> list[Uuid]:
    """``new HashSet<>(firstMember.subscribedTopicIds())``: copied, so re-bucketed at the copy's capacity
    ``max((int) (n / .75f) + 1, 16)`` (``4n // 3`` is that float quotient, truncated, for any realistic n)."""
    source = spec.members[0].topics
    capacity = max(4 * len(source) // 3 + 1, 16)
    return hashmap_order(source, uuid_hash, capacity)


def uniform_homogeneous(spec: GroupSpec) -> dict[str, dict[Uuid, list[int]]]:
    """``build()``: the target assignment, member -> topic -> partitions (empty when nobody subscribes)."""
    topics = _subscribed_topics(spec)
    if not topics:
        return {}
    subscribed = set(topics)
    unassigned: list[tuple[Uuid, int]] = []
    total = 0
    for t in topics:
        n = spec.num_partitions(t)
        if n == -1:
            raise PartitionAssignorException(f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")
        unassigned.extend((t, p) for p in range(n) if (t, p) not in spec.assigned)
        total += n
    minimum, extra = divmod(total, len(spec.members))
    target: dict[str, dict[Uuid, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for m in spec.members:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: dict[Uuid, list[int]] = {}
        for t, parts in m.assignment:
            if t not in subscribed:
                continue
            if len(parts) <= quota:
                quota -= len(parts)
                kept[t] = list(parts)
                continue
            kept[t] = list(parts[:quota])
            unassigned.extend((t, p) for p in parts[quota:])
            quota = 0
            if not kept[t]:
                del kept[t]
        if quota > 0:
            unfilled.append((m.id, quota))
        target[m.id] = kept
    at = 0
    for mid, quota in unfilled:
        for t, p in unassigned[at:at + quota]:
            target[mid].setdefault(t, []).append(p)
        at = min(at + quota, len(unassigned))
    if at < len(unassigned):
        raise PartitionAssignorException("Partitions were left unassigned")
    return target
