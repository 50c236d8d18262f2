"""What the KIP-881 exact models group: partitions by (topic, replica-rack set), members by rack.

Kafka's consumer assignors, and the rules ``range`` and ``balanced``, cannot
tell apart two partitions of one topic with the same replica racks, nor two
members with the same rack and subscription (and, for revocations, the same
ownership). The models therefore have one flow per (partition group, member
group) pair; :class:`Dealer` turns group-level flows back into partition
lists deterministically (partitions ascending, members in Java
``String.compareTo`` order).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from kipopt.instance import ConsumersInstance, java_string_key

from kipopt.formulations.consumers.rules import is_cross_rack, owners


@dataclass(frozen=True)
class PartitionGroup:
    """Partitions of one topic whose replicas sit on exactly the racks ``racks``."""

    topic: str
    racks: frozenset[str]
    partitions: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True)
class Layout:
    """Subscribed topics with partitions, their partition groups, and member racks, all indexed."""

    topics: tuple[str, ...]
    groups: tuple[PartitionGroup, ...]
    racks: tuple[str | None, ...]
    members: tuple[str, ...]
    member_rack: np.ndarray
    member_topics: tuple[frozenset[str], ...]
    group_of_partition: dict[str, np.ndarray]  # per topic: partition number -> group index

    @cached_property
    def cross(self) -> np.ndarray:
        """``cross[g, r]`` = 1 when a member on rack ``racks[r]`` reads group g's partitions cross-rack."""
        row: dict[frozenset[str], tuple[bool, ...]] = {}  # per replica-rack set: few, however many groups
        for g in self.groups:
            if g.racks not in row:
                row[g.racks] = tuple(is_cross_rack(r, g.racks) for r in self.racks)
        return np.array([row[g.racks] for g in self.groups], dtype=np.int64).reshape(len(self.groups), len(self.racks))

    @cached_property
    def least_cost(self) -> np.ndarray:
        """Per partition group, the least cross-rack cost over its topic's subscribers' racks
        (:func:`cheapest`)."""
        member, topic_of = self.subscription_pairs
        present = np.zeros((len(self.topics), len(self.racks)), dtype=bool)  # some subscriber of t on rack r
        present[topic_of, self.member_rack[member]] = True
        at = self.topic_index
        topic = np.fromiter((at[g.topic] for g in self.groups), dtype=np.int64, count=len(self.groups))
        big = np.iinfo(np.int64).max
        least = np.where(present[topic], self.cross, big).min(axis=1, initial=big)
        least.flags.writeable = False
        return least

    @cached_property
    def topic_index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.topics)}

    @cached_property
    def subscription_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every subscription as ``(member indices, topic indices)``, member-major; read only."""
        at = self.topic_index
        member = np.repeat(np.arange(len(self.members), dtype=np.int64), [len(ts) for ts in self.member_topics])
        topic = np.fromiter((at[t] for ts in self.member_topics for t in ts), dtype=np.int64, count=len(member))
        member.flags.writeable = topic.flags.writeable = False
        return member, topic

    @cached_property
    def subscribers(self) -> dict[str, np.ndarray]:
        """Per topic, its subscribers' member indices (ascending); read only."""
        member, topic = self.subscription_pairs
        order = np.argsort(topic, kind="stable")  # the pairs are member-major: members stay ascending
        by_topic = member[order]
        by_topic.flags.writeable = False
        edge = np.searchsorted(topic[order], np.arange(len(self.topics) + 1))
        return {t: by_topic[edge[i]:edge[i + 1]] for i, t in enumerate(self.topics)}

    @cached_property
    def groups_of_topic(self) -> dict[str, list[int]]:
        found: dict[str, list[int]] = defaultdict(list)
        for i, g in enumerate(self.groups):
            found[g.topic].append(i)
        return found

    @cached_property
    def member_index(self) -> dict[str, int]:
        return {m: i for i, m in enumerate(self.members)}


def layout(instance: ConsumersInstance) -> Layout:
    subscribed = {t for m in instance.members for t in m.topics if instance.topics[t].partitions > 0}
    topics = tuple(sorted(subscribed, key=java_string_key))
    groups, group_of_partition = [], {}
    for t in topics:
        by_racks: dict[frozenset[str], list[int]] = defaultdict(list)
        for p, racks in enumerate(instance.topics[t].racks):
            by_racks[frozenset(racks)].append(p)
        index = np.empty(instance.topics[t].partitions, dtype=np.int64)
        for racks in sorted(by_racks, key=sorted):
            index[by_racks[racks]] = len(groups)
            groups.append(PartitionGroup(t, racks, tuple(by_racks[racks])))
        group_of_partition[t] = index
    members = sorted(instance.members, key=lambda m: java_string_key(m.id))
    racks = tuple(sorted({m.rack for m in members if m.rack is not None})) + (None,)
    index = {r: i for i, r in enumerate(racks)}
    return Layout(topics, tuple(groups), racks, tuple(m.id for m in members),
                  np.array([index[m.rack] for m in members], dtype=np.int64),
                  tuple(frozenset(t for t in m.topics if t in subscribed) for m in members), group_of_partition)


def subscription_classes(lay: Layout) -> tuple[tuple[frozenset[str], ...], np.ndarray]:
    """Distinct subscriptions (first seen in member order) and each member's index among them."""
    index: dict[frozenset[str], int] = {}
    member_class = np.array([index.setdefault(ts, len(index)) for ts in lay.member_topics], dtype=np.int64)
    return tuple(index), member_class


def class_counts(instance: ConsumersInstance, lay: Layout
                 ) -> tuple[tuple[frozenset[str], ...], np.ndarray, np.ndarray, dict[str, int]]:
    """What every level bound starts from: the subscription classes, each member's class, each class's
    member count, and each topic's partition count."""
    classes, member_class = subscription_classes(lay)
    count = np.bincount(member_class, minlength=len(classes))
    return classes, member_class, count, {t: instance.topics[t].partitions for t in lay.topics}


def level_bounds(lay: Layout, sizes: dict[str, int], classes, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L_c, U_c)``: every pairwise balanced (so every dec-min) member value of class c lies in
    ``[L_c, U_c]`` (argument in :mod:`~kipopt.formulations.consumers.balanced`)."""
    subscribers = defaultdict(int)
    reach: dict[str, set[str]] = defaultdict(set)
    for c, topics in enumerate(classes):
        for t in topics:
            subscribers[t] += int(count[c])
            reach[t] |= topics
    L = np.zeros(len(classes), dtype=np.int64)
    U = np.zeros(len(classes), dtype=np.int64)
    reachable = {t: sum(sizes[u] for u in us) for t, us in reach.items()}
    for c, topics in enumerate(classes):
        if not topics:
            continue
        L[c] = max(0, max(-(-sizes[t] // subscribers[t]) - 1 for t in topics))
        U[c] = min(sum(sizes[t] for t in topics), 1 + max(reachable[t] // subscribers[t] for t in topics))
        L[c] = min(L[c], U[c])
    return L, U


class Dealer:
    """Hands out partitions of each group in a fixed order, each at most once."""

    def __init__(self, lists: list[list[int]], topics: list[str]):
        self.lists, self.topics = lists, topics
        self.cursor = [0] * len(lists)

    def take(self, g: int, count: int) -> list[str]:
        start = self.cursor[g]
        if start + count > len(self.lists[g]):
            raise ValueError(f"group {g} has {len(self.lists[g]) - start} partitions left, {count} asked")
        self.cursor[g] = start + count
        return [f"{self.topics[g]}-{p}" for p in self.lists[g][start:start + count]]

    def exhausted(self) -> bool:
        return all(c == len(x) for c, x in zip(self.cursor, self.lists))


def quotas(count: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Split ``count`` over members with bounds ``low <= q <= high``: everyone gets ``low``, then
    the first members in order fill up to ``high`` (a deterministic second level)."""
    q = low.astype(np.int64).copy()
    left = int(count) - int(q.sum())
    if left < 0 or left > int((high - low).sum()):
        raise ValueError(f"{count} cannot be split within the bounds")
    room = (high - low).astype(np.int64)
    fill = np.minimum(room, np.maximum(0, left - np.concatenate(([0], np.cumsum(room)[:-1]))))
    return q + fill


def flow_to_lists(pairs: list[tuple[int, int, int]], members_of: dict[int, list[int]],
                  quota: dict[int, np.ndarray], dealer: Dealer, num_members: int) -> list[list[str]]:
    """Partitions per member from ``(group, member_group, amount)`` flows.

    Each member group's incoming partitions, in flow order, are dealt to its
    members in order, each taking its quota.
    """
    incoming: dict[int, list[str]] = defaultdict(list)
    for g, h, amount in pairs:
        if amount:
            incoming[h].extend(dealer.take(g, amount))
    lists: list[list[str]] = [[] for _ in range(num_members)]
    for h, got in incoming.items():
        at = 0
        for m, q in zip(members_of[h], quota[h]):
            lists[m].extend(got[at:at + int(q)])
            at += int(q)
        if at != len(got):
            raise ValueError(f"member group {h} received {len(got)} partitions, its quotas sum to {at}")
    return lists


def cheapest(lay: Layout) -> np.ndarray:
    """Per partition group, the least cross-rack cost (0 or 1) over its topic's subscribers' racks (the
    layout's, computed once: the fallback, the balance-free bound and the level tree all ask; read only)."""
    return lay.least_cost


_OWNER_OF: dict[str, tuple] = {}


def owner_of(instance: ConsumersInstance, lay: Layout) -> dict[str, np.ndarray]:
    """Per topic of ``lay``, each partition's owner (:func:`~kipopt.formulations.consumers.rules.owners`)
    as a member index where that owner subscribes to the topic (the only owner that can keep it), -1
    elsewhere: one parse of the owned partitions' names, shared by the fallback and the balance-free bound
    (kept for the last instance and layout asked; read only)."""
    return _owners(instance, lay)[1]


def owners_in_order(instance: ConsumersInstance, lay: Layout) -> np.ndarray:
    """:func:`owner_of`'s arrays as one, topic after topic in ``lay.topics`` order (its arrays are views of it)."""
    return _owners(instance, lay)[0]


def _owners(instance: ConsumersInstance, lay: Layout) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(every topic's owners in one array, per topic its view)`` for :func:`owner_of`, cached."""
    cached = _OWNER_OF.get("last")
    if cached is not None and cached[0] is instance and cached[1] is lay:
        return cached[2]
    sizes = [instance.topics[t].partitions for t in lay.topics]
    start = dict(zip(lay.topics, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()))
    owner = np.full(sum(sizes), -1, dtype=np.int64)   # every topic's partitions, one after another
    index = lay.member_index
    for name, member in owners(instance).items():
        t, _, number = name.rpartition("-")
        first = start.get(t)
        if first is not None:
            owner[first + int(number)] = index[member]
    # an owner that does not subscribe to the topic cannot keep it: one sorted lookup of (member, topic) keys
    T = max(1, len(lay.topics))
    member, topic = lay.subscription_pairs
    subscribed = np.sort(member * T + topic)
    topic_of = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    owned = np.flatnonzero(owner >= 0)
    keys = owner[owned] * T + topic_of[owned]
    found = np.searchsorted(subscribed, keys)
    found[found == len(subscribed)] = 0
    owner[owned[subscribed[found] != keys] if len(subscribed) else owned] = -1
    owner.flags.writeable = False
    out = (owner, {t: owner[start[t]:start[t] + n] for t, n in zip(lay.topics, sizes)})
    _OWNER_OF["last"] = (instance, lay, out)
    return out


def least_cross(lay: Layout, best: np.ndarray | None = None) -> int:
    """Cross-rack partitions with balance dropped: a lower bound on every assignment's (``best``:
    :func:`cheapest` of ``lay``, when already in hand)."""
    best = cheapest(lay) if best is None else best
    return int(sum(int(b) * g.size for b, g in zip(best, lay.groups)))


def integral_flows(x: np.ndarray) -> np.ndarray:
    return np.rint(x).astype(np.int64)


def topic_levels(lay: Layout, sizes: dict[str, int], classes, count: np.ndarray
                 ) -> tuple[dict[str, int], dict[str, int], np.ndarray, np.ndarray]:
    """``(λ_lo, λ_hi, L, U)``: bounds on each topic's least subscriber load ``λ_t`` and on each class's
    member counts, valid for every pairwise balanced assignment; :func:`level_bounds` tightened by
    propagation to a fixed point:

    * ``λ_t >= L`` of nothing below ``ceil(P_t/|N_t|) - 1`` (a holder of t holds at least the average
      of t, and at most ``λ_t + 1``), ``λ_t <= min U_c`` over t's classes;
    * ``λ_t <= (P - Σ_{c ∌ t} n_c L_c) / |N_t|``: t's subscribers hold at least ``λ_t`` each and at most
      what the other classes leave;
    * ``L_c >= max_{t ∈ S_c} λ_t`` (c subscribes to t), ``U_c <= max_{t ∈ S_c} λ_t + 1`` (a member
      holds some topic of its class, and a holder of t at most ``λ_t + 1``).
    """
    L, U = level_bounds(lay, sizes, classes, count)
    L, U = L.copy(), U.copy()
    index = {t: i for i, t in enumerate(lay.topics)}
    member = np.zeros((len(classes), len(lay.topics)), dtype=bool)   # (classes, topics): c subscribes to t
    for c, ts in enumerate(classes):
        member[c, [index[t] for t in ts]] = True
    some = member.any(axis=1)                                       # the classes with topics
    subscribers = count @ member
    total = sum(sizes.values())
    size = np.array([sizes[t] for t in lay.topics], dtype=np.int64)
    big = np.iinfo(np.int64).max
    lo = np.maximum(0, -(-size // subscribers) - 1)
    hi = np.where(member, U[:, None], big).min(axis=0)
    for _ in range(100):
        before = (L.copy(), U.copy(), lo.copy(), hi.copy())
        weight = count * L * some
        others = weight.sum() - weight @ member                     # what the classes without t hold at least
        hi = np.minimum(np.minimum(hi, np.where(member, U[:, None], big).min(axis=0)), (total - others) // subscribers)
        L = np.where(some, np.maximum(L, np.where(member, lo[None, :], -big).max(axis=1)), L)
        U = np.where(some, np.minimum(U, np.where(member, hi[None, :], -big).max(axis=1) + 1), U)
        lo = np.maximum(lo, np.where(member, L[:, None], big).min(axis=0))
        if all(np.array_equal(a, b) for a, b in zip(before, (L, U, lo, hi))):
            break
    return ({t: int(lo[i]) for i, t in enumerate(lay.topics)}, {t: int(hi[i]) for i, t in enumerate(lay.topics)},
            L, U)
