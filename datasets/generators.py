"""Seeded generators of realistic instances, one per family.

Every generator draws from its own ``random.Random(seed)`` and iterates only
over lists (never over sets or hash order), so the same family, seed and
parameters give the same instance on any machine and Python version.

Realism rather than uniformity: racks have unequal sizes (random weights),
a partition's replicas sit in ``replication_factor`` racks only (so it is
missing from the others), topics and sub-topologies get skewed partition
counts (Zipf weights), and ownership history is imperfect (stale
generations, conflicting claims, lagging standbys, clients without state).

>>> inst = generate_tasks(7, TasksParams(tasks=6, clients=3))
>>> len(inst.tasks), len(inst.clients)
(6, 3)
>>> generate_tasks(7, TasksParams(tasks=6, clients=3)) == inst
True
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Sequence

from kipopt.errors import InstanceError
from kipopt.instance import from_dict

from .params import (OWNER_DRAWS, PARAMS, SUBSCRIPTIONS, TAG_NAMES, ConsumersParams,  # noqa: F401 - re-exported
                     ReplicasParams, TasksParams, generator_params, make_params, rack_sizes)


# --------------------------------------------------------------------------- shared helpers


def rack_names(n: int) -> list[str]:
    """``['r1', 'r2', ...]``.

    >>> rack_names(3)
    ['r1', 'r2', 'r3']
    """
    return [f"r{i}" for i in range(1, n + 1)]


def rack_weights(rng: random.Random, n: int) -> list[float]:
    """Random, clearly unequal rack weights (the largest rack is at least twice the smallest)."""
    weights = [rng.uniform(0.7, 2.0) for _ in range(n)]
    if n > 1:
        big, small = rng.sample(range(n), 2)
        weights[big], weights[small] = 2.0, 0.7
    return weights


def spread(total: int, weights: Sequence[float], minimum: int = 1) -> list[int]:
    """Split ``total`` into ``len(weights)`` integers >= ``minimum``, proportional to the weights.

    Largest remainder, ties by position, so it is deterministic.

    >>> spread(10, [1, 1, 2])
    [3, 3, 4]
    >>> spread(3, [5, 1, 1])
    [1, 1, 1]
    """
    n = len(weights)
    rest = total - minimum * n
    scale = sum(weights)
    exact = [rest * w / scale for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(n), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: rest - sum(counts)]:
        counts[i] += 1
    return [c + minimum for c in counts]


def zipf(n: int, exponent: float) -> list[float]:
    """Zipf weights ``1/(k+1)^exponent``: skewed sizes for topics and sub-topologies."""
    return [1.0 / (k + 1) ** exponent for k in range(n)]


def weighted_sample(rng: random.Random, items: Sequence[str], weights: Sequence[float], k: int) -> list[str]:
    """``k`` distinct items (all of them if fewer), drawn with probability proportional to weight."""
    pool, w = list(items), list(weights)
    out = []
    for _ in range(min(k, len(pool))):
        i = rng.choices(range(len(pool)), weights=w)[0]
        out.append(pool.pop(i))
        w.pop(i)
    return out


def assign_racks(rng: random.Random, count: int, racks: list[str], weights: list[float]) -> list[str]:
    """A rack for each of ``count`` parties: every rack used once, the rest by weight, shuffled."""
    if count < len(racks):
        return weighted_sample(rng, racks, weights, count)
    out = [r for r, s in zip(racks, spread(count, weights)) for _ in range(s)]
    rng.shuffle(out)
    return out


def partition_racks(rng: random.Random, racks: list[str], weights: list[float], rf: int) -> list[str]:
    """The racks holding one partition's replicas, sorted (bigger racks hold more replicas)."""
    return sorted(weighted_sample(rng, racks, weights, rf))


# --------------------------------------------------------------------------- replicas


def generate_replicas(seed: int, p: ReplicasParams = ReplicasParams()):
    """A KIP-36 instance; with ``added_brokers`` a reassignment after a cluster expansion."""
    rng = random.Random(seed)
    racks = rack_names(p.racks)
    racked = p.brokers - p.rackless_brokers
    if p.rack_sizes:
        rack_of = [r for r, n in zip(racks, rack_sizes(p)) for _ in range(n)] + [None] * p.rackless_brokers
    else:
        rack_of = assign_racks(rng, racked, racks, rack_weights(rng, p.racks)) + [None] * p.rackless_brokers
    rng.shuffle(rack_of)
    brokers = [{"id": i, "rack": rack_of[i]} for i in range(p.brokers)]
    data: dict[str, Any] = {
        "format": 1, "family": "replicas", "partitions": p.partitions,
        "replication_factor": p.replication_factor, "start_index": p.start_index,
        "start_partition_id": p.start_partition_id,
    }
    if p.added_brokers or p.decommissioned_brokers:
        data["current"] = _current_placement(rng, brokers, p)
        leaving = set(rng.sample(range(p.brokers), p.decommissioned_brokers))
        brokers = [b for b in brokers if b["id"] not in leaving]
        new_racks = rack_names(p.racks + p.added_racks)[p.racks:] or racks
        added = assign_racks(rng, p.added_brokers, new_racks, [1.0] * len(new_racks))
        brokers += [{"id": p.brokers + i, "rack": added[i]} for i in range(p.added_brokers)]
    data["brokers"] = brokers
    return from_dict(data)


def _current_placement(rng: random.Random, brokers: list[dict], p: ReplicasParams) -> dict[str, list[int]]:
    """An existing, imperfect placement over the original brokers: racks spread where the dice allow.

    Brokers are visited in a random order drawn lazily (a partial Fisher-Yates shuffle that stops once
    the partition has its replicas), so a partition costs about its replication factor, not the cluster.
    """
    current = {}
    ids = list(range(len(brokers)))
    for pid in range(p.start_partition_id, p.start_partition_id + p.partitions):
        chosen: list[int] = []
        used: list = []
        for i in range(len(ids)):
            if len(chosen) == p.replication_factor:
                break
            j = i + rng.randrange(len(ids) - i)
            ids[i], ids[j] = ids[j], ids[i]
            b = brokers[ids[i]]
            if b["rack"] in used and rng.random() < 1.0 - p.current_rack_slips:
                continue
            chosen.append(b["id"])
            used.append(b["rack"])
        for b in brokers:  # top up when the rack rule skipped too many
            if len(chosen) == p.replication_factor:
                break
            if b["id"] not in chosen:
                chosen.append(b["id"])
        current[str(pid)] = chosen
    return current


# --------------------------------------------------------------------------- consumers


def generate_consumers(seed: int, p: ConsumersParams = ConsumersParams()):
    """A KIP-881 group: skewed topics, members on unequal racks, a history with stale and conflicting claims."""
    rng = random.Random(seed)
    racks = rack_names(p.racks)
    weights = rack_weights(rng, p.racks)
    names = [f"topic-{chr(ord('a') + i % 26)}{'' if i < 26 else i // 26}" for i in range(p.topics)]
    counts = spread(p.partitions, zipf(p.topics, p.skew))
    topics = {}
    for name, count in zip(names, counts):
        entries = []
        for _ in range(count):
            rackless = rng.random() < p.rackless_partitions
            entries.append([] if rackless else partition_racks(rng, racks, weights, p.replication_factor))
        topics[name] = {"racks": entries}
    member_racks = assign_racks(rng, p.members, racks, weights)
    members = []
    for i in range(p.members):
        rack = None if rng.random() < p.rackless_members else member_racks[i]
        members.append({"id": f"consumer-{i + 1}", "rack": rack, "topics": _subscription(rng, names, p)})
    _history(rng, topics, members, p)
    if p.static_members > 0:  # drawn last, so that the default (no static members) keeps every seed's instance
        _static_members(rng, members, p.static_members)
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": members})


def _static_members(rng: random.Random, members: list[dict], share: float) -> None:
    """Give a random share of the members a ``group_instance_id``; the ids are a shuffled numbering, so
    Kafka's order of static members (by instance id) differs from their member-id order."""
    static = [m for m in members if rng.random() < share]
    numbers = rng.sample(range(1, len(static) + 1), len(static))
    for m, k in zip(static, numbers):
        m["group_instance_id"] = f"instance-{k}"


def _subscription(rng: random.Random, names: list[str], p: ConsumersParams) -> list[str]:
    if p.subscriptions == "equal" or len(names) == 1:
        return list(names)
    k = rng.randint(1, len(names))
    picked = set(rng.sample(names, k))
    return [n for n in names if n in picked]


def _history(rng: random.Random, topics: dict, members: list[dict], p: ConsumersParams) -> None:
    """Fill ``owned`` and ``generation``: most members at the current generation, a few stale,
    a share of partitions owned by a subscriber, and a few claimed twice (by a second, different subscriber)."""
    generation = rng.randint(2, 20)
    for m in members:
        m["generation"] = generation if rng.random() < 0.8 else generation - rng.randint(1, 2)
        m["owned"] = []
    for name, topic in topics.items():
        subscribers = [m for m in members if name in m["topics"]]
        for part in range(len(topic["racks"])):
            if not subscribers or rng.random() >= p.owned:
                continue
            owner, second = _owners(rng, subscribers, p.owner_draw)
            owner["owned"].append(f"{name}-{part}")
            if second is not None and rng.random() < p.conflicts:
                second["owned"].append(f"{name}-{part}")


def _owners(rng: random.Random, subscribers: list[dict], draw: str) -> tuple[dict, dict | None]:
    """A partition's owner and the subscriber a double claim would go to (``None`` if it has no other).

    ``shuffle`` shuffles every subscriber to take the first two: time ``partitions x subscribers``, kept as
    the default because recorded test vectors (Kafka's own assignors' outputs) pin its instances.
    ``direct`` draws the two straight away: the same distribution, time linear in the partitions.
    """
    n = len(subscribers)
    if draw == "shuffle":
        owner, *others = rng.sample(subscribers, n)
        return owner, (others[0] if others else None)
    k = rng.randrange(n)
    return subscribers[k], (subscribers[(k + 1 + rng.randrange(n - 1)) % n] if n > 1 else None)


# --------------------------------------------------------------------------- tasks


def generate_tasks(seed: int, p: TasksParams = TasksParams()):
    """A Kafka Streams instance: sub-topologies of co-partitioned inputs and changelogs,
    clients with capacities and tags, a random current owner per task, sparse lags."""
    rng = random.Random(seed)
    racks = rack_names(p.racks)
    weights = rack_weights(rng, p.racks)
    sizes = spread(p.tasks, zipf(p.subtopologies, p.skew))
    stateless = set(rng.sample(range(p.subtopologies), round(p.stateless_share * p.subtopologies)))
    topics: dict[str, dict] = {}
    tasks: dict[str, dict] = {}
    for sub, size in enumerate(sizes):
        inputs = [f"input-{sub}-{k}" for k in range(p.inputs)]
        changelogs = [] if sub in stateless else [f"app-store-{sub}-{k}-changelog" for k in range(p.changelogs)]
        for name in inputs + changelogs:
            topics[name] = {"racks": [partition_racks(rng, racks, weights, p.replication_factor) for _ in range(size)]}
        for part in range(size):
            end_offset = rng.randint(p.acceptable_recovery_lag + 2, p.max_end_offset) if changelogs else 0
            tasks[f"{sub}_{part}"] = {"inputs": [f"{t}-{part}" for t in inputs],
                                      "changelogs": [f"{t}-{part}" for t in changelogs],
                                      "stateful": bool(changelogs), "end_offset": end_offset}
    clients = _clients(rng, racks, weights, p)
    _ownership(rng, tasks, clients, p)
    config = {
        "num_standby_replicas": p.num_standby_replicas, "acceptable_recovery_lag": p.acceptable_recovery_lag,
        "rack_aware_assignment_strategy": p.strategy, "rack_aware_assignment_traffic_cost": p.traffic_cost,
        "rack_aware_assignment_non_overlap_cost": p.non_overlap_cost,
        "rack_aware_assignment_tags": list(TAG_NAMES[: p.tags]),
    }
    return from_dict({"format": 1, "family": "tasks", "topics": topics, "tasks": tasks,
                      "clients": {c["id"]: {k: v for k, v in c.items() if k != "id"} for c in clients},
                      "config": config})


def _clients(rng: random.Random, racks: list[str], weights: list[float], p: TasksParams) -> list[dict]:
    client_racks = assign_racks(rng, p.clients, racks, weights)
    width = len(str(p.clients))
    clients = []
    for i in range(p.clients):
        rack = None if rng.random() < p.rackless_clients else client_racks[i]
        tags = {}
        for name in TAG_NAMES[: p.tags]:
            tags[name] = client_racks[i] if name == "zone" else f"{name}-{rng.randrange(p.tag_values) + 1}"
        clients.append({"id": f"client-{i + 1:0{width}d}", "rack": rack, "tags": tags,
                        "capacity": rng.randint(p.min_capacity, p.max_capacity),
                        "active": [], "standby": [], "lags": {}})
    return clients


def _ownership(rng: random.Random, tasks: dict[str, dict], clients: list[dict], p: TasksParams) -> None:
    """Each task active on one random old client (weighted by capacity); previous standbys on
    other old clients; a lag only where a client holds state (caught up or lagging)."""
    old = clients[: len(clients) - p.new_clients]
    cumulative = list(itertools.accumulate(c["capacity"] for c in old))
    standbys = p.num_standby_replicas * p.current_standbys
    for tid, task in tasks.items():
        owner = rng.choices(range(len(old)), cum_weights=cumulative)[0]
        old[owner]["active"].append(tid)
        if not task["stateful"]:
            continue
        holders = [owner]
        if standbys and len(old) > 1:
            others = rng.sample(range(len(old) - 1), min(standbys, len(old) - 1))
            for j in others:
                k = j if j < owner else j + 1
                old[k]["standby"].append(tid)
                holders.append(k)
        for k in holders:
            old[k]["lags"][tid] = _lag(rng, task["end_offset"], p, active=(k == owner))


def _lag(rng: random.Random, end_offset: int, p: TasksParams, active: bool) -> int:
    if rng.random() < p.caught_up or (active and rng.random() < 0.5):
        return 0 if active and rng.random() < 0.7 else rng.randint(0, p.acceptable_recovery_lag)
    return rng.randint(p.acceptable_recovery_lag + 1, end_offset - 1)


# --------------------------------------------------------------------------- façade

_GENERATORS = {"replicas": generate_replicas, "consumers": generate_consumers, "tasks": generate_tasks}


def generate(family: str, seed: int, **params: Any):
    """One generated, validated instance of ``family``.

    >>> generate("replicas", 1, brokers=4, racks=2, replication_factor=2).replication_factor
    2
    >>> generate("replicas", 1, members=3)
    Traceback (most recent call last):
    kipopt.errors.InstanceError: --members: does not apply to family replicas
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InstanceError("--seed", f"must be an integer, got {seed!r}")
    p = make_params(family, params)
    return _GENERATORS[family](seed, p)
