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
from functools import cached_property
from itertools import chain, islice, repeat
from typing import Any, Mapping

import numpy as np

from ..instance import ConsumersInstance
from ..solution import left_out
from . import Evaluation, ViolationLog, spread

MAX_RACK_BITS = 62
"""Up to this many distinct replica racks, a partition's racks are one bit mask (the column-wise path)."""


class GroupIndex:
    """What every evaluation of one group reads, built once per instance (:func:`group_index`).

    Column-wise (built eagerly, linear in the partitions): ``pindex`` partition -> global number
    (topics in instance order, then partition), ``ptopic`` its topic's position in ``topic_names``,
    ``mask`` its replica racks as bits of ``rack_bit`` (``None`` beyond :data:`MAX_RACK_BITS` racks).
    Per member: ``subscribers`` topic -> members subscribed (in member order), ``owned`` member ->
    its claimed partitions, ``claims`` their number. Built on first use only (the per-partition sets
    the column-wise path does without): ``local[r]`` partitions with a replica on rack ``r``,
    ``rackless`` those with no known replica rack, ``topic_of`` partition -> topic, ``subscribed``.
    """

    def __init__(self, instance: ConsumersInstance):
        self._instance = instance
        topics = instance.topics
        self.topic_names = tuple(topics)
        self.topic_pos = {t: i for i, t in enumerate(self.topic_names)}
        sizes = [topics[t].partitions for t in self.topic_names]
        self.offset = dict(zip(self.topic_names, np.cumsum([0] + sizes[:-1]).tolist()))
        self.size = sum(sizes)
        self.pindex: dict[str, int] = {}
        for t, n in zip(self.topic_names, sizes):
            start = self.offset[t]
            self.pindex.update(zip([f"{t}-{q}" for q in range(n)], range(start, start + n)))
        self.ptopic = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        self.rack_bit, self.mask = _rack_masks(instance, self.topic_names, self.size)
        subscribers: dict[str, list[str]] = {}
        for m in instance.members:
            for t in m.topics:
                subscribers.setdefault(t, []).append(m.id)
        self.subscribers = {t: tuple(ms) for t, ms in subscribers.items() if topics[t].partitions > 0}
        self.owned = {m.id: frozenset(m.owned) for m in instance.members}
        self.claims = sum(len(m.owned) for m in instance.members)
        self.last: dict[int, tuple[tuple[str, ...], str | None, tuple[int, int]]] = {}
        """Per member of the last assignment :func:`evaluate_consumers` read: ``id(parts) -> (parts, rack,
        (cross, unknown))``, so that the rule's own count (``cross_rack``) of that very assignment reads it
        instead of counting again. Only tuples are kept: they cannot change, so the same object is the same
        list."""

    @cached_property
    def local(self) -> dict[str, frozenset[str]]:
        local: dict[str, set[str]] = {}
        for p, racks in self._instance.partition_racks.items():
            for r in racks:
                local.setdefault(r, set()).add(p)
        return {r: frozenset(ps) for r, ps in local.items()}

    @cached_property
    def rackless(self) -> frozenset[str]:
        return frozenset(p for p, racks in self._instance.partition_racks.items() if not racks)

    @cached_property
    def topic_of(self) -> dict[str, str]:
        # from pindex's keys (topic by topic), not the instance's partition_racks: at 1,000,000 partitions
        # those sets take 2 s to build, inside the level tree's time where it checks its first answer
        names = iter(self.pindex)
        found: dict[str, str] = {}
        for t in self.topic_names:
            found.update(dict.fromkeys(islice(names, self._instance.topics[t].partitions), t))
        return found

    @cached_property
    def subscribed(self) -> frozenset[str]:
        return frozenset(self._instance.subscribed_partitions)

    @cached_property
    def subscription_keys(self) -> np.ndarray:
        """Sorted ``member position · topics + topic position`` of every subscription."""
        T = len(self.topic_names)
        return _distinct(np.array([i * T + self.topic_pos[t] for i, m in enumerate(self._instance.members)
                                   for t in m.topics if t in self.topic_pos], dtype=np.int64))

    @cached_property
    def subscriber_positions(self) -> dict[str, np.ndarray]:
        """Topic -> the positions (in ``members``) of its subscribers, in member order."""
        position = {m.id: i for i, m in enumerate(self._instance.members)}
        return {t: np.array([position[m] for m in ms], dtype=np.int64) for t, ms in self.subscribers.items()}

    @cached_property
    def claim_keys(self) -> np.ndarray:
        """Sorted ``member position · partitions + partition number`` of every claim on a partition."""
        members = self._instance.members
        sizes = np.fromiter((len(self.owned[m.id]) for m in members), dtype=np.int64, count=len(members))
        numbers = self.numbers(chain.from_iterable(self.owned[m.id] for m in members), int(sizes.sum()))
        keys = np.repeat(np.arange(len(members), dtype=np.int64), sizes) * self.size + numbers
        return _distinct(keys[numbers >= 0])

    def numbers(self, parts: Any, count: int) -> np.ndarray:
        """The global numbers of ``count`` partition names (-1 for a name that is no partition)."""
        return np.fromiter(map(self.pindex.get, parts, repeat(-1)), dtype=np.int64, count=count)


def _rack_masks(instance: ConsumersInstance, topics: tuple[str, ...], size: int
                ) -> tuple[dict[str, int], np.ndarray | None]:
    """Rack -> bit, and every partition's replica racks as a mask (``None`` with too many racks)."""
    bit: dict[str, int] = {}
    masks: dict[tuple[str, ...], int] = {}  # rack tuples are shared between partitions: one mask each
    for t in topics:
        for rs in instance.topics[t].racks:
            if rs not in masks:
                for r in rs:
                    bit.setdefault(r, 1 << len(bit))
                masks[rs] = sum({bit[r] for r in rs})
    if len(bit) > MAX_RACK_BITS:
        return bit, None
    mask = np.fromiter((masks[rs] for t in topics for rs in instance.topics[t].racks), dtype=np.int64, count=size)
    return bit, mask


_INDEX: OrderedDict[int, tuple[ConsumersInstance, GroupIndex]] = OrderedDict()
_INDEX_SIZE = 256  # as many as the batch oracle keeps instances


def group_index(instance: ConsumersInstance) -> GroupIndex:
    """The :class:`GroupIndex` of ``instance``, cached for the most recently used instances (by identity)."""
    hit = _INDEX.get(id(instance))
    if hit is not None and hit[0] is instance:
        _INDEX.move_to_end(id(instance))
        return hit[1]
    index = GroupIndex(instance)
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
    """(cross-rack, rack-unknown) partitions among ``parts`` given to a member on ``rack`` (a partition listed
    twice counts twice)."""
    if rack is None:
        return 0, len(parts)
    known = index.last.get(id(parts))
    if known is not None and known[0] is parts and known[1] == rack:
        return known[2]
    if index.mask is not None:
        numbers = index.numbers(parts, len(parts))
        if numbers.size == 0 or numbers.min() >= 0:
            masks = index.mask[numbers]
            unknown = int(np.count_nonzero(masks == 0))
            local = int(np.count_nonzero(masks & index.rack_bit.get(rack, 0)))
            return len(parts) - unknown - local, unknown
    distinct = frozenset(parts)
    local_set = index.local.get(rack, frozenset())
    if len(distinct) == len(parts):
        unknown = len(index.rackless.intersection(distinct)) if index.rackless else 0
        return len(parts) - unknown - len(local_set.intersection(distinct)), unknown
    unknown = sum(map(index.rackless.__contains__, parts))
    return len(parts) - unknown - sum(map(local_set.__contains__, parts)), unknown


def evaluate_consumers(instance: ConsumersInstance, assignment: Mapping[str, tuple[str, ...]]) -> Evaluation:
    index = group_index(instance)
    log = ViolationLog()
    log.add_all("missing_member", left_out(instance, assignment), lambda m: f"{m} is not in the assignment")
    lists = [assignment.get(m.id, ()) for m in instance.members]
    metrics = _columns(instance, index, lists, log) if index.mask is not None else None
    if metrics is None:
        log = ViolationLog()
        log.add_all("missing_member", left_out(instance, assignment), lambda m: f"{m} is not in the assignment")
        metrics = _per_member(instance, index, lists, log)
    return Evaluation("consumers", metrics, log.violations())


def _metrics(instance: ConsumersInstance, counts: dict[str, int], topic_counts, cross: int, unknown: int,
             kept: int, index: GroupIndex) -> dict[str, Any]:
    """The metrics dict, from per-member counts and ``topic_counts(member position, topic) -> count``."""
    position = {m.id: i for i, m in enumerate(instance.members)}
    wanted = {t for m in instance.members for t in m.topics}
    topic_spread = {t: spread(topic_counts(position[m], t) for m in index.subscribers.get(t, ()))
                    for t in instance.topics if t in wanted}
    return {
        "cross_rack": cross, "rack_unknown": unknown, "assigned": sum(counts.values()),
        "partitions_per_member": counts, "imbalance": spread(counts.values()),
        "topic_imbalance": topic_spread, "worst_topic_imbalance": max(topic_spread.values(), default=0),
        "kept": kept, "claims_revoked": index.claims - kept,
    }


def _columns(instance: ConsumersInstance, index: GroupIndex, lists: list, log: ViolationLog) -> dict | None:
    """The metrics by whole-assignment arrays (linear, C-speed); ``None`` where a name is no partition of the
    instance, for :func:`_per_member` to report as it always has."""
    members = instance.members
    M, T, N = len(members), len(index.topic_names), index.size
    lens = np.fromiter(map(len, lists), dtype=np.int64, count=M)
    flat = list(chain.from_iterable(lists))
    gid = index.numbers(flat, len(flat))
    if gid.size and gid.min() < 0:
        return None
    owner = np.repeat(np.arange(M, dtype=np.int64), lens)
    ptopic = index.ptopic[gid]
    pair = owner * T + ptopic
    for at in np.nonzero(~_among(index.subscription_keys, pair))[0].tolist():
        log.add("unsubscribed", f"{flat[at]} given to {members[owner[at]].id}, which does not subscribe to "
                                f"{index.topic_names[ptopic[at]]}")
    masks = index.mask[gid]
    bits = np.array([index.rack_bit.get(m.rack, 0) for m in members], dtype=np.int64)
    racked = np.array([m.rack is not None for m in members], dtype=bool)[owner]
    unknown = int(np.count_nonzero(~racked)) + int(np.count_nonzero(racked & (masks == 0)))
    is_local = racked & ((masks & bits[owner]) != 0)
    local = int(np.count_nonzero(is_local))
    _remember(index, members, lists, lens, owner, racked & (masks == 0), is_local)
    given = np.bincount(gid, minlength=N)
    twice = bool(len(flat)) and int(given.max()) > 1
    held = owner * N + gid
    kept = int(np.count_nonzero(_among(index.claim_keys, _distinct(held) if twice else held)))
    if twice:
        _duplicates(log, flat, gid, given)
    _unassigned(log, instance, index, given)
    count_of = _counter(pair, M * T)
    topic_spread = {}
    wanted = {t for m in members for t in m.topics}
    for t in instance.topics:
        if t in wanted:
            got = count_of(index.subscriber_positions[t] * T + index.topic_pos[t])
            topic_spread[t] = int(got.max() - got.min()) if got.size else 0
    counts = dict(zip((m.id for m in members), lens.tolist()))
    return {
        "cross_rack": len(flat) - unknown - local, "rack_unknown": unknown, "assigned": len(flat),
        "partitions_per_member": counts, "imbalance": spread(counts.values()),
        "topic_imbalance": topic_spread, "worst_topic_imbalance": max(topic_spread.values(), default=0),
        "kept": kept, "claims_revoked": index.claims - kept,
    }


def _remember(index: GroupIndex, members, lists: list, lens: np.ndarray, owner: np.ndarray,
              unknown: np.ndarray, local: np.ndarray) -> None:
    """Each racked member's (cross, unknown) of this assignment in ``index.last``."""
    M = len(members)
    unknowns = np.bincount(owner, weights=unknown, minlength=M).astype(np.int64).tolist()
    locals_ = np.bincount(owner, weights=local, minlength=M).astype(np.int64).tolist()
    index.last = {id(parts): (parts, m.rack, (n - u - k, u))
                  for m, parts, n, u, k in zip(members, lists, lens.tolist(), unknowns, locals_)
                  if type(parts) is tuple and m.rack is not None}


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``keys`` sorted, each once (``np.unique`` by a sort: its hashing takes seconds at millions of keys)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys


def _among(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``keys`` are in ``sorted_keys`` (sorted, unique), by binary search."""
    if not sorted_keys.size:
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def _counter(keys: np.ndarray, universe: int):
    """``count_of(queries)``: how often each query occurs in ``keys`` (integers below ``universe``)."""
    if universe <= max(1 << 22, 4 * len(keys)):
        table = np.bincount(keys, minlength=universe)
        return lambda queries: table[queries]
    values, numbers = np.unique(keys, return_counts=True)

    def count_of(queries: np.ndarray) -> np.ndarray:
        if not len(values):
            return np.zeros(len(queries), dtype=np.int64)
        at = np.minimum(np.searchsorted(values, queries), len(values) - 1)
        return np.where(values[at] == queries, numbers[at], 0)
    return count_of


def _duplicates(log: ViolationLog, flat: list, gid: np.ndarray, given: np.ndarray) -> None:
    """Partitions given more than once, in the order of their first appearance."""
    numbers, first = np.unique(gid, return_index=True)
    twice = given[numbers] > 1
    for at, n in sorted(zip(first[twice].tolist(), given[numbers[twice]].tolist())):
        log.add("duplicate_partition", f"{flat[at]} is given {n} times")


def _unassigned(log: ViolationLog, instance: ConsumersInstance, index: GroupIndex, given: np.ndarray) -> None:
    """Partitions of subscribed topics given to nobody, in ``subscribed_partitions`` order."""
    wanted = {t for m in instance.members for t in m.topics if t in index.offset}
    if all(given[index.offset[t]:index.offset[t] + instance.topics[t].partitions].all() for t in wanted):
        return
    pindex = index.pindex
    for p in instance.subscribed_partitions:
        if not given[pindex[p]]:
            log.add("unassigned_partition", f"{p} is given to nobody")


def _per_member(instance: ConsumersInstance, index: GroupIndex, lists: list, log: ViolationLog) -> dict:
    """The metrics member by member (any assignment, also with names that are no partition)."""
    cross = unknown = kept = 0
    counts: dict[str, int] = {}
    member_topics: list[Mapping[str, int]] = []
    for member, parts in zip(instance.members, lists):
        counts[member.id] = len(parts)
        if not parts:
            member_topics.append({})
            continue
        if len(member.topics) == 1 and subscribes(index, member, parts):
            member_topics.append({member.topics[0]: len(parts)})  # the common case, without a count per partition
        else:
            member_topics.append(Counter(map(index.topic_of.__getitem__, parts)))
            _unsubscribed(log, index, member, parts)
        c, u = cross_and_unknown(index, member.rack, parts)
        cross, unknown = cross + c, unknown + u
        owned = index.owned[member.id]
        if owned:
            kept += len(owned.intersection(parts))
    given = Counter(chain.from_iterable(lists))
    if len(given) < sum(counts.values()):
        for p, n in given.items():
            if n > 1:
                log.add("duplicate_partition", f"{p} is given {n} times")
    if not index.subscribed <= given.keys():
        for p in instance.subscribed_partitions:
            if p not in given:
                log.add("unassigned_partition", f"{p} is given to nobody")
    return _metrics(instance, counts, lambda i, t: member_topics[i].get(t, 0), cross, unknown, kept, index)


def _unsubscribed(log: ViolationLog, index: GroupIndex, member: Any, parts: tuple[str, ...]) -> None:
    if subscribes(index, member, parts):
        return
    topics = set(member.topics)
    for p in parts:
        if index.topic_of.get(p) not in topics:
            log.add("unsubscribed", f"{p} given to {member.id}, which does not subscribe to {index.topic_of[p]}")
