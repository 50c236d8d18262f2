"""The fallback of ``exact.balanced``: a valid, pairwise balanced assignment without a solver."""

from __future__ import annotations

import heapq
from collections import defaultdict

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout, layout


def greedy_balanced(instance: ConsumersInstance, lay: Layout | None = None) -> dict[str, tuple[str, ...]]:
    """A valid, pairwise balanced fallback: each partition (topics by fewest subscribers) to its
    least-loaded subscriber, then single moves from a topic's heaviest holder to its lightest
    subscriber while they differ by two or more (each move lowers ``Σ x²``, so this ends; ties go to
    the first member in Java order). Heaps with lazy deletion keep it ``O((P + moves) log M)``."""
    lay = lay or layout(instance)
    subs: dict[str, list[int]] = {t: [] for t in lay.topics}
    for i, ts in enumerate(lay.member_topics):
        for t in ts:
            subs[t].append(i)
    load = [0] * len(lay.members)
    held: list[dict[str, list[int]]] = [defaultdict(list) for _ in lay.members]
    for t in sorted(lay.topics, key=lambda t: len(subs[t])):
        heap = [(load[i], i) for i in subs[t]]
        heapq.heapify(heap)
        for p in range(instance.topics[t].partitions):
            while heap[0][0] != load[heap[0][1]]:  # stale: the member grew on another topic
                _, i = heapq.heappop(heap)
                heapq.heappush(heap, (load[i], i))
            _, i = heapq.heappop(heap)
            held[i][t].append(p)
            load[i] += 1
            heapq.heappush(heap, (load[i], i))
    moved = True
    while moved:
        moved = False
        for t in lay.topics:
            moved |= _rebalance_topic(t, subs[t], load, held)
    return {m: tuple(f"{t}-{p}" for t, ps in held[i].items() for p in ps) for i, m in enumerate(lay.members)}


def _rebalance_topic(t: str, members: list[int], load: list[int], held: list[dict[str, list[int]]]) -> bool:
    """Moves of ``t``'s partitions from its heaviest holder to its lightest subscriber until they differ
    by at most one; ``True`` if any moved. Only members of ``members`` change load meanwhile, and each
    change pushes a fresh heap entry, so an entry whose load no longer matches is dropped."""
    light = [(load[i], i) for i in members]
    heavy = [(-load[i], i) for i in members if held[i][t]]
    heapq.heapify(light)
    heapq.heapify(heavy)
    moved = False
    while True:
        while light[0][0] != load[light[0][1]]:
            heapq.heappop(light)
        while heavy and (-heavy[0][0] != load[heavy[0][1]] or not held[heavy[0][1]][t]):
            heapq.heappop(heavy)
        if not heavy or -heavy[0][0] < light[0][0] + 2:
            return moved
        low, high = light[0][1], heavy[0][1]
        held[low][t].append(held[high][t].pop())
        load[high] -= 1
        load[low] += 1
        for i in (low, high):
            heapq.heappush(light, (load[i], i))
            if held[i][t]:
                heapq.heappush(heavy, (-load[i], i))
        moved = True
