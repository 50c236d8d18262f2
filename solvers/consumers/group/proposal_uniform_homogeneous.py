"""KAFKA-19909 (open pull request apache/kafka#20000): a rack-aware ``UniformHomogeneousAssignmentBuilder``.

A research method (``proposal.server_uniform_rack``), kept apart from the
``kafka.*`` ports of released code. It follows the builder as the pull request
proposes it (``org.apache.kafka.coordinator.group.assignor.UniformHomogeneousAssignmentBuilder``
with ``AssignorHelpers.isRackMatch``/``useRackAwareAssignment``), read from
the code search index; the index holds the pull request's file but not its
commit hash, so the version is "the PR head as indexed" (rebased on a trunk
newer than ``KAFKA_COMMIT``: it carries trunk's ``quotaHasExtraPartition``
bookkeeping). The pull request changes only the homogeneous builder, so a
group with mixed subscriptions goes, as in ``UniformAssignor``, to the
heterogeneous builder's port (which follows ``KAFKA_COMMIT``, no racks).

Principles, in priority order: balance > rack awareness > stickiness.

1. ``useRackStrategy``: some member has a rack, the members' racks meet the
   subscribed partitions' replica racks, and not every partition has the
   same rack set (``AssignorHelpers.useRackAwareAssignment``);
2. unassigned = each subscribed topic (``HashSet`` order) its partitions no
   member holds; ``min = P div N``, ``extra = P mod N``;
3. per member (``memberIds()`` order): quota ``min`` (+1 *tentatively* while
   ``extra > 0``); a subscribed topic that fits is kept whole only without
   the rack strategy; otherwise each partition (set order) is kept while
   quota is left *and*, under the rack strategy, the member's rack holds a
   replica; the rest join the unassigned list. A member that did not use
   its tentative extra gives it back; one that did uses up one ``extra``;
4. rack pass (rack strategy only): each unassigned partition goes to the
   first unfilled member (list order) on one of its replica racks;
5. the last ``extra`` unfilled members (from the back) take one more, and
   the unfilled members, in order, take their quota from what is left.

Run on one consumer group; O(P·N) in the rack pass, as in the Java. During development the port
answered exactly as the pull request's builder compiled with javac 17 (the coordinator's interfaces
stubbed, the spec fed in kipopt's iteration orders) on 1,500 generated homogeneous groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solvers.consumers.group.spec import GroupSpec, Uuid, group_spec, in_instance_order, single_owner, \
    to_assignment
from kipopt.solvers.consumers.group.uniform_heterogeneous import uniform_heterogeneous
from kipopt.solvers.consumers.group.uniform_homogeneous import PartitionAssignorException, _subscribed_topics

Racks = Callable[[Uuid, int], frozenset[str]]


def is_rack_match(member_rack: str | None, partition_racks: frozenset[str] | set[str]) -> bool:
    """``AssignorHelpers.isRackMatch``: the member has a rack and a replica of the partition lives there."""
    return member_rack is not None and member_rack in partition_racks


def use_rack_aware_assignment(member_racks: set[str], all_partition_racks: set[str],
                              racks_per_partition: Mapping[object, frozenset[str]]) -> bool:
    """``AssignorHelpers.useRackAwareAssignment``: members have racks that meet the partitions' racks, and
    the partitions do not all live on the same rack set (then every member is as close as any other)."""
    if not member_racks or member_racks.isdisjoint(all_partition_racks):
        return False
    return not all(r == all_partition_racks for r in racks_per_partition.values())


@dataclass
class _Unfilled:
    """``MemberWithRemainingQuota``."""

    member: str
    quota: int


@dataclass
class _Builder:
    """The builder's state: the target assignment, unassigned partitions, unfilled members, extras left."""

    spec: GroupSpec
    member_rack: Mapping[str, str | None]
    racks: Racks
    topics: list[Uuid]
    rack_strategy: bool
    target: dict[str, dict[Uuid, list[int]]]
    unassigned: list[tuple[Uuid, int]]
    unfilled: list[_Unfilled]
    minimum: int = 0
    extra: int = 0

    def matches(self, member: str, topic: Uuid, partition: int) -> bool:
        return is_rack_match(self.member_rack.get(member), self.racks(topic, partition))

    def add(self, member: str, topic: Uuid, partition: int) -> None:
        self.target[member].setdefault(topic, []).append(partition)


def _rack_strategy(spec: GroupSpec, topics: list[Uuid], member_rack: Mapping[str, str | None],
                   racks: Racks) -> bool:
    member_racks = {member_rack[m.id] for m in spec.members if member_rack.get(m.id) is not None}
    per_partition = {(t, p): racks(t, p) for t in topics for p in range(max(spec.num_partitions(t), 0))}
    all_racks = set().union(*per_partition.values()) if per_partition else set()
    return use_rack_aware_assignment(member_racks, all_racks, per_partition)


def _revoke(b: _Builder) -> None:
    """``maybeRevokePartitions``."""
    subscribed = set(b.topics)
    for m in b.spec.members:
        quota, tentative = b.minimum, False
        if b.extra > 0:
            quota, tentative = quota + 1, True
        kept: dict[Uuid, list[int]] = {}
        for t, parts in m.assignment:
            if t not in subscribed:
                continue
            if len(parts) <= quota and not b.rack_strategy:
                quota -= len(parts)
                kept[t] = list(parts)
                continue
            for p in parts:
                if quota > 0 and (not b.rack_strategy or b.matches(m.id, t, p)):
                    quota -= 1
                    kept.setdefault(t, []).append(p)
                else:
                    b.unassigned.append((t, p))
        if quota > 0 and tentative:
            quota, tentative = quota - 1, False
        if quota == 0 and tentative:
            b.extra -= 1
        if quota > 0 or (b.extra > 0 and not tentative):
            b.unfilled.append(_Unfilled(m.id, quota))
        b.target[m.id] = kept


def _assign_rack_matches(b: _Builder) -> None:
    """``assignRackAwarenessRemainingPartitions``: first unfilled member on a replica rack, in list order."""
    left: list[tuple[Uuid, int]] = []
    for t, p in b.unassigned:
        i, placed = 0, False
        while i < len(b.unfilled):
            u = b.unfilled[i]
            if u.quota == 0 and b.extra == 0:
                del b.unfilled[i]
                continue
            if not b.matches(u.member, t, p):
                i += 1
                continue
            b.add(u.member, t, p)
            if u.quota > 0:
                u.quota -= 1
            else:
                del b.unfilled[i]
                b.extra -= 1
            placed = True
            break
        if not placed:
            left.append((t, p))
    b.unassigned = left


def _assign_remaining(b: _Builder) -> None:
    """``assignRemainingPartitions``: extras to the last unfilled members, then quotas in order."""
    for i in range(len(b.unfilled) - 1, -1, -1):
        u = b.unfilled[i]
        if b.extra > 0:
            b.extra -= 1
            u.quota += 1
        if u.quota == 0:
            del b.unfilled[i]
    at = 0
    for u in b.unfilled:
        for t, p in b.unassigned[at:at + u.quota]:
            b.add(u.member, t, p)
        at = min(at + u.quota, len(b.unassigned))
    if at < len(b.unassigned):
        raise PartitionAssignorException("Partitions were left unassigned")


def rack_uniform_homogeneous(spec: GroupSpec, member_rack: Mapping[str, str | None],
                             racks: Racks) -> dict[str, dict[Uuid, list[int]]]:
    """The pull request's ``build()``: member -> topic -> partitions (empty when nobody subscribes).

    ``member_rack`` is each member's ``rackId`` (``None`` when absent); ``racks(topic, partition)`` is
    ``SubscribedTopicDescriber.racksForPartition``.
    """
    topics = _subscribed_topics(spec)
    if not topics:
        return {}
    b = _Builder(spec, member_rack, racks, topics, _rack_strategy(spec, topics, member_rack, racks), {}, [], [])
    total = 0
    for t in topics:
        n = spec.num_partitions(t)
        if n == -1:
            raise PartitionAssignorException(f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")
        b.unassigned.extend((t, p) for p in range(n) if (t, p) not in spec.assigned)
        total += n
    b.minimum, b.extra = divmod(total, len(spec.members))
    _revoke(b)
    if b.rack_strategy:
        _assign_rack_matches(b)
    _assign_remaining(b)
    return b.target


def instance_racks(instance: ConsumersInstance, spec: GroupSpec) -> tuple[dict[str, str | None], Racks]:
    """The members' racks and ``racksForPartition`` of a consumers instance, by topic id."""
    by_id = {t: [frozenset(r) for r in instance.topics[name].racks] for t, name in spec.names.items()}
    return {m.id: m.rack for m in instance.members}, lambda t, p: by_id[t][p]


def proposal_uniform_assign(instance: ConsumersInstance) -> tuple[dict[str, tuple[str, ...]], GroupSpec]:
    """``UniformAssignor.assign`` with the pull request's homogeneous builder (every member listed)."""
    spec = group_spec(instance)
    if not spec.members:
        return {}, spec
    if not spec.homogeneous:
        return to_assignment(spec, uniform_heterogeneous(spec)), spec
    member_rack, racks = instance_racks(instance, spec)
    return to_assignment(spec, rack_uniform_homogeneous(spec, member_rack, racks)), spec


def _run(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    assignment, spec = proposal_uniform_assign(instance)
    return MethodResult(in_instance_order(instance, assignment), info={"homogeneous": spec.homogeneous})


METHODS = [
    Method("proposal.server_uniform_rack", "consumers", "balanced", _run,
           "KAFKA-19909 (open PR apache/kafka#20000): the KIP-848 UniformAssignor with a rack-aware homogeneous "
           "builder (balance > racks > stickiness); mixed subscriptions use the released heterogeneous builder",
           kafka_class="org.apache.kafka.coordinator.group.assignor.UniformHomogeneousAssignmentBuilder "
                       "(apache/kafka#20000)",
           requires=single_owner),
]
RULES: list = []
