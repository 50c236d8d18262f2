"""The fallback of ``exact.balanced``: a valid, pairwise balanced assignment without a solver."""

from __future__ import annotations

import heapq
from collections import defaultdict

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, cheapest, layout
from kipopt.formulations.consumers.rules import owners


def greedy_balanced(instance: ConsumersInstance, lay: Layout | None = None) -> dict[str, tuple[str, ...]]:
    """A valid, pairwise balanced fallback, sticky and rack-aware where that costs nothing. Topics go by
    fewest subscribers. A partition stays with its owner when the owner subscribes and reads it at its
    group's least cross-rack cost over the topic's subscribers; any other goes to the least-loaded
    subscriber reading it at that cost. Then single moves from a topic's heaviest holder to its lightest
    subscriber while they differ by two or more (each lowers ``Σ x²``, so this ends), of a partition the
    receiver reads at least cost and the holder does not own where there is one. Ties go to the first
    member in Java order; heaps with lazy deletion keep it ``O((P + moves) log M)``. Against the greedy
    it replaces (blind to owners and racks): at 100,000 partitions x 1,000 members x 50 topics, every
    partition on every rack, 19,164 revocations instead of 77,081 (0.44 s instead of 0.16); at 500,000 x
    5,000, two replica racks of three, 77 cross-rack partitions instead of 132,732 (2.3 s instead of 1.4)."""
    lay = lay or layout(instance)
    subs: dict[str, list[int]] = {t: [] for t in lay.topics}
    for i, ts in enumerate(lay.member_topics):
        for t in ts:
            subs[t].append(i)
    least = cheapest(lay)
    fits = lay.cross <= least[:, None]                      # (groups, racks): read at the group's least cost
    own = _owner_index(instance, lay)
    load = [0] * len(lay.members)
    held = [defaultdict(lambda: ([], [])) for _ in lay.members]   # per member, topic: (its own, the rest)
    for t in sorted(lay.topics, key=lambda t: len(subs[t])):
        _deal_topic(t, subs[t], instance.topics[t].partitions, lay, fits, own.get(t), load, held)
    moved = True
    while moved:
        moved = False
        for t in lay.topics:
            moved |= _rebalance_topic(t, subs[t], lay, fits, own.get(t), load, held)
    return {m: tuple(f"{t}-{p}" for t, lists in held[i].items() for ps in lists for p in ps)
            for i, m in enumerate(lay.members)}


def _owner_index(instance: ConsumersInstance, lay: Layout) -> dict[str, np.ndarray]:
    """Per topic, each partition's owner (member index) where that owner subscribes to it, else -1."""
    out: dict[str, np.ndarray] = {}
    for name, member in owners(instance).items():
        t, _, p = name.rpartition("-")
        i = lay.member_index.get(member)
        if i is not None and t in lay.member_topics[i]:
            if t not in out:
                out[t] = np.full(instance.topics[t].partitions, -1, dtype=np.int64)
            out[t][int(p)] = i
    return out


def _deal_topic(t: str, members: list[int], partitions: int, lay: Layout, fits: np.ndarray,
                own: np.ndarray | None, load: list[int], held) -> None:
    """Topic ``t``'s partitions to their owners where they fit, the others to the least-loaded fitting
    subscriber (one heap per rack; an entry whose load is stale is refreshed when it comes up)."""
    by_rack: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for i in members:
        by_rack[int(lay.member_rack[i])].append((load[i], i))
    for heap in by_rack.values():
        heapq.heapify(heap)
    groups = lay.group_of_partition[t]
    for p in range(partitions):
        g = int(groups[p])
        o = -1 if own is None else int(own[p])
        if o >= 0 and fits[g, lay.member_rack[o]]:
            held[o][t][0].append(p)
            load[o] += 1
            continue
        best = None
        for r, heap in by_rack.items():
            if fits[g, r]:
                while heap[0][0] != load[heap[0][1]]:
                    _, i = heapq.heappop(heap)
                    heapq.heappush(heap, (load[i], i))
                if best is None or heap[0] < by_rack[best][0]:
                    best = r
        heap = by_rack[best]
        _, i = heapq.heappop(heap)
        held[i][t][1].append(p)
        load[i] += 1
        heapq.heappush(heap, (load[i], i))


def _movable(lists: tuple[list[int], list[int]], groups: np.ndarray, fits_low: np.ndarray) -> tuple[int, int]:
    """Which of a holder's partitions of a topic to move: ``(list, position)``, the last the receiver reads at
    least cost among those the holder does not own, then among its own, else the last it does not own."""
    for k in (1, 0):
        ps = lists[k]
        for j in range(len(ps) - 1, -1, -1):
            if fits_low[groups[ps[j]]]:
                return k, j
    return (1, len(lists[1]) - 1) if lists[1] else (0, len(lists[0]) - 1)


def _rebalance_topic(t: str, members: list[int], lay: Layout, fits: np.ndarray, own: np.ndarray | None,
                     load: list[int], held) -> bool:
    """Moves of ``t``'s partitions from its heaviest holder to its lightest subscriber until they differ
    by at most one; ``True`` if any moved. Only members of ``members`` change load meanwhile, and each
    change pushes a fresh heap entry, so an entry whose load no longer matches is dropped."""
    def holds(i: int) -> bool:
        return bool(held[i][t][0] or held[i][t][1]) if t in held[i] else False

    light = [(load[i], i) for i in members]
    heavy = [(-load[i], i) for i in members if holds(i)]
    heapq.heapify(light)
    heapq.heapify(heavy)
    groups = lay.group_of_partition[t]
    moved = False
    while True:
        while light[0][0] != load[light[0][1]]:
            heapq.heappop(light)
        while heavy and (-heavy[0][0] != load[heavy[0][1]] or not holds(heavy[0][1])):
            heapq.heappop(heavy)
        if not heavy or -heavy[0][0] < light[0][0] + 2:
            return moved
        low, high = light[0][1], heavy[0][1]
        k, j = _movable(held[high][t], groups, fits[:, lay.member_rack[low]])
        p = held[high][t][k].pop(j)
        held[low][t][0 if own is not None and own[p] == low else 1].append(p)
        load[high] -= 1
        load[low] += 1
        for i in (low, high):
            heapq.heappush(light, (load[i], i))
            if holds(i):
                heapq.heappush(heavy, (-load[i], i))
        moved = True
