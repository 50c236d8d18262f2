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
from dataclasses import dataclass, fields
from typing import Any, Sequence

from kipopt.errors import InstanceError
from kipopt.instance import STRATEGIES, from_dict

SUBSCRIPTIONS = ("equal", "mixed")
OWNER_DRAWS = ("shuffle", "direct")
TAG_NAMES = ("zone", "cluster", "host_group", "power_domain")


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class ReplicasParams:
    """KIP-36 replica placement: brokers on unequal racks, optionally a reassignment."""

    racks: int = 3
    brokers: int = 7
    rackless_brokers: int = 0
    partitions: int = 8
    replication_factor: int = 3
    start_index: int = 0
    start_partition_id: int = 0
    added_brokers: int = 0
    added_racks: int = 0
    decommissioned_brokers: int = 0
    rack_sizes: str = ""
    current_rack_slips: float = 0.2


@dataclass(frozen=True)
class ConsumersParams:
    """KIP-881 consumer group: skewed topics, mixed subscriptions, an imperfect ownership history."""

    racks: int = 3
    topics: int = 3
    partitions: int = 16
    skew: float = 1.0
    replication_factor: int = 2
    rackless_partitions: float = 0.0
    members: int = 5
    subscriptions: str = "mixed"
    rackless_members: float = 0.2
    owned: float = 0.8
    conflicts: float = 0.1
    static_members: float = 0.0
    owner_draw: str = "shuffle"


@dataclass(frozen=True)
class TasksParams:
    """Kafka Streams tasks (KIP-441/708/925).

    With ``stateless_share=0`` (and the other defaults: 3 racks, replication
    factor 2, two input partitions and one changelog per task, capacity 1-4,
    random starting owner) this is the issue-3 benchmark shape.
    """

    racks: int = 3
    subtopologies: int = 3
    tasks: int = 12
    skew: float = 0.5
    inputs: int = 2
    changelogs: int = 1
    stateless_share: float = 0.25
    replication_factor: int = 2
    clients: int = 4
    min_capacity: int = 1
    max_capacity: int = 4
    rackless_clients: float = 0.0
    new_clients: int = 0
    tags: int = 2
    tag_values: int = 3
    num_standby_replicas: int = 1
    current_standbys: int = 1
    caught_up: float = 0.7
    acceptable_recovery_lag: int = 10_000
    max_end_offset: int = 1_000_000
    strategy: str = "min_traffic"
    traffic_cost: int = 10
    non_overlap_cost: int = 1


PARAMS = {"replicas": ReplicasParams, "consumers": ConsumersParams, "tasks": TasksParams}

_HELP = {
    "racks": "number of racks (unequal sizes)",
    "brokers": "replicas: number of brokers (before added_brokers)",
    "rackless_brokers": "replicas: brokers without a rack (Kafka's AdminUtils then refuses rack-aware placement)",
    "partitions": "replicas: partitions to place; consumers: total partitions over all topics",
    "replication_factor": "replicas per partition (replicas), racks holding each partition (consumers, tasks)",
    "start_index": "replicas: AdminUtils fixedStartIndex",
    "start_partition_id": "replicas: first partition id",
    "added_brokers": "replicas: brokers added after the current assignment was made (writes 'current')",
    "added_racks": "replicas: new racks that the added brokers go to (0: existing racks); with "
                   "added_brokers, the operator's 'add a rack'",
    "decommissioned_brokers": "replicas: brokers of the current assignment being decommissioned (absent from "
                              "brokers, their replicas must move; writes 'current')",
    "current_rack_slips": "replicas: chance that the current placement puts a second replica in a rack it "
                          "already uses (0: a rack-valid placement, as a rack-aware cluster has)",
    "rack_sizes": "replicas: brokers per rack, comma-separated (e.g. 20,30,40,50,70,90) instead of a random "
                  "split; must match racks and brokers (minus rackless_brokers)",
    "topics": "consumers: number of topics",
    "skew": "Zipf exponent of partitions per topic / tasks per sub-topology (0: equal)",
    "rackless_partitions": "consumers: share of partitions with no known rack",
    "members": "consumers: group members",
    "subscriptions": "consumers: 'equal' (all subscribe to all topics) or 'mixed'",
    "rackless_members": "consumers: share of members without a rack",
    "owned": "consumers: share of partitions owned in the previous generation",
    "conflicts": "consumers: share of owned partitions also claimed by a second member",
    "static_members": "consumers: share of members with a group_instance_id (static membership), interleaved "
                      "with the dynamic ones; instance ids are numbered in an order unrelated to member ids",
    "owner_draw": "consumers: how a partition's previous owner is drawn: 'shuffle' (the default; time "
                  "partitions x members, pinned by recorded test vectors) or 'direct' (the same distribution, "
                  "linear time: for groups of thousands of members)",
    "subtopologies": "tasks: number of sub-topologies",
    "tasks": "tasks: total number of tasks",
    "inputs": "tasks: input partitions per task",
    "changelogs": "tasks: changelog partitions per stateful task",
    "stateless_share": "tasks: share of sub-topologies that are stateless",
    "clients": "tasks: Kafka Streams clients",
    "min_capacity": "tasks: smallest client capacity (stream threads)",
    "max_capacity": "tasks: largest client capacity (stream threads)",
    "rackless_clients": "tasks: share of clients without a rack",
    "new_clients": "tasks: clients that just joined (no tasks, no state)",
    "tags": "tasks: client tag dimensions (zone, cluster, ...); also rack_aware_assignment_tags",
    "tag_values": "tasks: distinct values of each non-zone tag",
    "num_standby_replicas": "tasks: num.standby.replicas",
    "current_standbys": "tasks: 1 to start from previous standbys, 0 for none",
    "caught_up": "tasks: share of state holders within acceptable_recovery_lag",
    "acceptable_recovery_lag": "tasks: acceptable.recovery.lag",
    "max_end_offset": "tasks: largest changelog end offset",
    "strategy": "tasks: rack.aware.assignment.strategy (none, min_traffic, balance_subtopology)",
    "traffic_cost": "tasks: rack.aware.assignment.traffic_cost",
    "non_overlap_cost": "tasks: rack.aware.assignment.non_overlap_cost",
}


def generator_params() -> dict[str, tuple[type, str]]:
    """``{name: (type, help)}``, the union of every family's parameters.

    >>> generator_params()["racks"][0]
    <class 'int'>
    """
    out: dict[str, tuple[type, str]] = {}
    for family, cls in PARAMS.items():
        for f in fields(cls):
            kind = type(f.default)
            if f.name in out and out[f.name][0] is not kind:
                raise TypeError(f"parameter {f.name} has two types")  # a programming error, not input
            out[f.name] = (kind, _HELP[f.name])
    return out


def make_params(family: str, params: dict[str, Any]):
    """Build and check a family's parameter dataclass; a bad name or value is an ``InstanceError``."""
    if family not in PARAMS:
        raise InstanceError("FAMILY", f"unknown family {family!r}; one of {', '.join(PARAMS)}")
    cls = PARAMS[family]
    kinds = {f.name: type(f.default) for f in fields(cls)}
    checked = {}
    for name, value in params.items():
        if name not in kinds:
            raise InstanceError(_flag(name), f"does not apply to family {family}")
        checked[name] = _typed(name, value, kinds[name])
    p = cls(**checked)
    _CHECKS[family](p)
    return p


def _typed(name: str, value: Any, kind: type) -> Any:
    """``value`` as ``kind``; an int is accepted for a float, a bool never for a number."""
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InstanceError(_flag(name), f"must be {kind.__name__}, got {value!r}")
    return value


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _need(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise InstanceError(_flag(name), message)


def _at_least(p: Any, minimum: int, *names: str) -> None:
    for name in names:
        value = getattr(p, name)
        _need(value >= minimum, name, f"must be >= {minimum}, got {value}")


def _between(p: Any, name: str, low: float, high: float, what: str) -> None:
    value = getattr(p, name)
    _need(low <= value <= high, name, f"must be between {what}, got {value}")


def _share(p: Any, *names: str) -> None:
    for name in names:
        _between(p, name, 0.0, 1.0, "0 and 1 (a share)")


def _one_of(p: Any, name: str, allowed: tuple[str, ...]) -> None:
    value = getattr(p, name)
    _need(value in allowed, name, f"must be one of {', '.join(allowed)}, got {value!r}")


def _check_replicas(p: ReplicasParams) -> None:
    _at_least(p, 1, "racks", "brokers", "partitions")
    _at_least(p, 0, "start_index", "start_partition_id", "added_brokers")
    _between(p, "rackless_brokers", 0, p.brokers, f"0 and brokers ({p.brokers})")
    racked = p.brokers - p.rackless_brokers
    _need(racked == 0 or racked >= p.racks, "racks",
          f"{p.racks} racks need at least {p.racks} brokers with a rack, got {racked}")
    _between(p, "replication_factor", 1, p.brokers, f"1 and brokers ({p.brokers})")
    _between(p, "added_racks", 0, p.added_brokers, f"0 and added_brokers ({p.added_brokers})")
    _between(p, "decommissioned_brokers", 0, p.brokers - 1, f"0 and brokers - 1 ({p.brokers - 1})")
    staying = p.brokers - p.decommissioned_brokers + p.added_brokers
    _need(staying >= p.replication_factor, "decommissioned_brokers",
          f"leaves {staying} brokers, fewer than replication_factor ({p.replication_factor})")
    _between(p, "current_rack_slips", 0.0, 1.0, "0 and 1")
    if p.rack_sizes:
        sizes = rack_sizes(p)
        _need(all(n >= 1 for n in sizes), "rack_sizes", f"every rack needs a broker, got {p.rack_sizes!r}")
        _need(len(sizes) == p.racks, "rack_sizes", f"lists {len(sizes)} racks, --racks is {p.racks}")
        _need(sum(sizes) == racked, "rack_sizes",
              f"adds up to {sum(sizes)} brokers, --brokers minus --rackless-brokers is {racked}")


def rack_sizes(p: ReplicasParams) -> list[int]:
    """``p.rack_sizes`` as integers.

    >>> rack_sizes(ReplicasParams(racks=3, brokers=9, rack_sizes="2,3,4"))
    [2, 3, 4]
    """
    try:
        return [int(x) for x in p.rack_sizes.split(",")]
    except ValueError:
        raise InstanceError("--rack-sizes", f"must be comma-separated integers, got {p.rack_sizes!r}") from None


def _check_consumers(p: ConsumersParams) -> None:
    _at_least(p, 1, "racks", "topics", "replication_factor", "members")
    _at_least(p, 0, "skew")
    _need(p.partitions >= p.topics, "partitions", f"must be at least topics ({p.topics}), got {p.partitions}")
    _one_of(p, "subscriptions", SUBSCRIPTIONS)
    _one_of(p, "owner_draw", OWNER_DRAWS)
    _share(p, "rackless_partitions", "rackless_members", "owned", "conflicts", "static_members")


def _check_tasks(p: TasksParams) -> None:
    _at_least(p, 1, "racks", "subtopologies", "inputs", "changelogs", "replication_factor", "clients",
              "min_capacity", "tag_values")
    _at_least(p, 0, "skew", "acceptable_recovery_lag", "num_standby_replicas", "traffic_cost", "non_overlap_cost")
    _need(p.tasks >= p.subtopologies, "tasks", f"must be at least subtopologies ({p.subtopologies}), got {p.tasks}")
    _need(p.max_capacity >= p.min_capacity, "max_capacity",
          f"must be >= min_capacity ({p.min_capacity}), got {p.max_capacity}")
    _between(p, "new_clients", 0, p.clients - 1, "0 and clients - 1")
    _between(p, "tags", 0, len(TAG_NAMES), f"0 and {len(TAG_NAMES)}")
    _between(p, "current_standbys", 0, 1, "0 (no previous standbys) and 1")
    _need(p.max_end_offset > p.acceptable_recovery_lag + 1, "max_end_offset",
          f"must exceed acceptable_recovery_lag + 1 ({p.acceptable_recovery_lag + 1}), got {p.max_end_offset}")
    _one_of(p, "strategy", STRATEGIES)
    _share(p, "stateless_share", "rackless_clients", "caught_up")


_CHECKS = {"replicas": _check_replicas, "consumers": _check_consumers, "tasks": _check_tasks}


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
