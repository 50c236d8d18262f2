"""Evaluator of consumer-group partition assignments (KIP-881).

Metrics, all recomputed from the assignment:

* ``cross_rack``: partitions given to a member whose rack holds no replica of
  them (both sides must have racks; a rack-less side is counted apart in
  ``rack_unknown``);
* ``imbalance``: max - min partitions per member over the whole group;
  ``topic_imbalance``: per topic, max - min among its subscribers (and the worst);
* ``claims_revoked``: claims (``owned`` of the instance, one per claimant)
  that their member does not keep; ``kept`` the rest. Every claim counts,
  also where two members claim one partition: the ``balanced`` rule's
  ``revoked`` (``metrics.criteria.revoked`` of ``solve`` and ``check``)
  counts only partitions with a unique highest-generation owner.

Hard rules broken (violations): ``unsubscribed`` (a partition given to a
member not subscribed to its topic), ``unassigned_partition`` (a partition of
a subscribed topic that nobody gets), ``duplicate_partition`` (a partition
given twice), ``missing_member`` (a member the assignment leaves out: it
counts as getting nothing).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass
from itertools import chain
from typing import Any, Mapping

from ..instance import ConsumersInstance
from ..solution import left_out
from . import Evaluation, ViolationLog, spread


@dataclass(frozen=True)
class GroupIndex:
    """What every evaluation of one group reads, built once per instance (:func:`group_index`).

    ``local[r]``: partitions with a replica on rack ``r``; ``rackless``: partitions with no known
    replica rack; ``topic_of``: partition -> topic; ``subscribers``: topic -> members subscribed
    (topics with partitions only), in member order.
    """

    local: dict[str, frozenset[str]]
    rackless: frozenset[str]
    topic_of: dict[str, str]
    subscribers: dict[str, tuple[str, ...]]
    subscribed: frozenset[str]
    owned: dict[str, frozenset[str]]
    claims: int


_INDEX: OrderedDict[int, tuple[ConsumersInstance, GroupIndex]] = OrderedDict()
_INDEX_SIZE = 256  # as many as the batch oracle keeps instances


def group_index(instance: ConsumersInstance) -> GroupIndex:
    """The :class:`GroupIndex` of ``instance``, cached for the most recently used instances (by identity)."""
    hit = _INDEX.get(id(instance))
    if hit is not None and hit[0] is instance:
        _INDEX.move_to_end(id(instance))
        return hit[1]
    local: dict[str, set[str]] = {}
    rackless = set()
    for p, racks in instance.partition_racks.items():
        if not racks:
            rackless.add(p)
        for r in racks:
            local.setdefault(r, set()).add(p)
    subscribers: dict[str, list[str]] = {}
    for m in instance.members:
        for t in m.topics:
            subscribers.setdefault(t, []).append(m.id)
    index = GroupIndex(
        {r: frozenset(ps) for r, ps in local.items()}, frozenset(rackless),
        {p: p.rpartition("-")[0] for p in instance.partition_racks},
        {t: tuple(ms) for t, ms in subscribers.items() if instance.topics[t].partitions > 0},
        frozenset(instance.subscribed_partitions), {m.id: frozenset(m.owned) for m in instance.members},
        sum(len(m.owned) for m in instance.members))
    _INDEX[id(instance)] = (instance, index)
    if len(_INDEX) > _INDEX_SIZE:
        _INDEX.popitem(last=False)
    return index


def subscribes(index: GroupIndex, member: Any, parts: tuple[str, ...]) -> bool:
    """Whether ``member`` subscribes to the topic of every partition in ``parts``: linear in ``parts`` (a set
    of each member's partitions would grow with members x partitions: 24 GB at 200,000 x 5,000)."""
    topic_of = index.topic_of.get
    if len(member.topics) == 1:
        only = member.topics[0]
        return all(topic_of(p) == only for p in parts)
    topics = set(member.topics)
    return all(topic_of(p) in topics for p in parts)


def cross_and_unknown(index: GroupIndex, rack: str | None, parts: tuple[str, ...]) -> tuple[int, int]:
    """(cross-rack, rack-unknown) partitions among ``parts`` given to a member on ``rack``."""
    if rack is None:
        return 0, len(parts)
    distinct = frozenset(parts)
    local = index.local.get(rack, frozenset())
    if len(distinct) == len(parts):
        unknown = len(index.rackless.intersection(distinct)) if index.rackless else 0
        return len(parts) - unknown - len(local.intersection(distinct)), unknown
    unknown = sum(map(index.rackless.__contains__, parts))  # a partition listed twice counts twice
    return len(parts) - unknown - sum(map(local.__contains__, parts)), unknown


def evaluate_consumers(instance: ConsumersInstance, assignment: Mapping[str, tuple[str, ...]]) -> Evaluation:
    index = group_index(instance)
    log = ViolationLog()
    log.add_all("missing_member", left_out(instance, assignment), lambda m: f"{m} is not in the assignment")
    cross = unknown = kept = 0
    counts: dict[str, int] = {}
    member_topics: dict[str, Mapping[str, int]] = {}
    for member in instance.members:
        parts = assignment.get(member.id, ())
        counts[member.id] = len(parts)
        if not parts:
            member_topics[member.id] = {}
            continue
        if len(member.topics) == 1 and subscribes(index, member, parts):
            member_topics[member.id] = {member.topics[0]: len(parts)}  # the common case, without a count per partition
        else:
            member_topics[member.id] = Counter(map(index.topic_of.__getitem__, parts))
            _unsubscribed(log, index, member, parts)
        c, u = cross_and_unknown(index, member.rack, parts)
        cross, unknown = cross + c, unknown + u
        owned = index.owned[member.id]
        if owned:
            kept += len(owned.intersection(parts))
    given = Counter(chain.from_iterable(assignment.get(m.id, ()) for m in instance.members))
    assigned = sum(counts.values())
    if len(given) < assigned:
        for p, n in given.items():
            if n > 1:
                log.add("duplicate_partition", f"{p} is given {n} times")
    if not index.subscribed <= given.keys():
        for p in instance.subscribed_partitions:
            if p not in given:
                log.add("unassigned_partition", f"{p} is given to nobody")
    topic_spread = {t: spread(member_topics[m].get(t, 0) for m in index.subscribers.get(t, ()))
                    for t in instance.topics if any(t in m.topics for m in instance.members)}
    metrics = {
        "cross_rack": cross, "rack_unknown": unknown, "assigned": assigned,
        "partitions_per_member": counts, "imbalance": spread(counts.values()),
        "topic_imbalance": topic_spread, "worst_topic_imbalance": max(topic_spread.values(), default=0),
        "kept": kept, "claims_revoked": index.claims - kept,
    }
    return Evaluation("consumers", metrics, log.violations())


def _unsubscribed(log: ViolationLog, index: GroupIndex, member: Any, parts: tuple[str, ...]) -> None:
    if subscribes(index, member, parts):
        return
    topics = set(member.topics)
    for p in parts:
        if index.topic_of.get(p) not in topics:
            log.add("unsubscribed", f"{p} given to {member.id}, which does not subscribe to {index.topic_of[p]}")
