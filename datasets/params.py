"""The generators' parameters: one frozen dataclass per family, their help texts, and their validation.

``make_params(family, {name: value})`` checks names, types and ranges and
returns the family's dataclass; every mistake is an ``InstanceError`` naming
the command-line flag (``--decommissioned-brokers: ...``), so ``kipopt
generate`` and a benchmark grid report it in one line.

>>> make_params("replicas", {"brokers": 6, "racks": 3, "decommissioned_brokers": 1}).decommissioned_brokers
1
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from kipopt._read import JAVA_INT_MAX
from kipopt.errors import InstanceError
from kipopt.instance import STRATEGIES

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
    "replication_factor": "replicas per partition (replicas); consumers, tasks: the replicas whose racks each "
                          "partition records (at most --racks distinct racks)",
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
    _ints_within(p)
    _CHECKS[family](p)
    _within_caps(family, p)
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


MAX_SKEW = 10.0
"""The largest Zipf exponent: at 10 the first of 50 topics already holds all but a 10^-10 share (the
weights ``1/(k+1)^skew`` overflowed at 1,000, exit 3)."""


def _need(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise InstanceError(_flag(name), message)


RACKS_ANYWAY = 100
"""Racks a generated group may have whatever its size (some then hold nothing: a small group's default)."""


PARTIES_MAX = 1_000_000
"""The most members, clients, brokers, inputs or changelogs per task, and replicas per partition, a generator
makes: far past any instance the models take, and short of what runs out of memory before the instance's
own caps are checked (2^31 members or brokers did, naming no option)."""
_INT_LIMITS = {"members": PARTIES_MAX, "clients": PARTIES_MAX, "brokers": PARTIES_MAX, "added_brokers": PARTIES_MAX,
               "inputs": PARTIES_MAX, "changelogs": PARTIES_MAX, "replication_factor": PARTIES_MAX,
               "max_end_offset": 2**62}


def _ints_within(p: Any) -> None:
    """Every integer parameter within its bound: Kafka's ints (capacities, standby counts, costs, start ids)
    at 2^31 - 1, the sizes at :data:`PARTIES_MAX`, so that the option is named (a too large value was refused
    under the generated instance's field, with a value drawn from it, and only for some seeds)."""
    for f in fields(p):
        value = getattr(p, f.name)
        if type(value) is int:
            most = _INT_LIMITS.get(f.name, JAVA_INT_MAX)
            _need(value <= most, f.name, f"must be at most {most:,}, got {value:,}")


def _racks_used(racks: int, parties: int, what: str) -> None:
    """Racks past :data:`RACKS_ANYWAY` and past anything to put on them are refused (the generator holds every
    name: 2^31 racks ran out of memory)."""
    most = max(RACKS_ANYWAY, parties)
    _need(racks <= most, "racks", f"must be at most {most:,} (the {what} to put on them, or "
                                  f"{RACKS_ANYWAY}), got {racks:,}")


def _at_least(p: Any, minimum: int, *names: str) -> None:
    for name in names:
        value = getattr(p, name)
        _need(value >= minimum and value != math.inf, name, f"must be a finite number >= {minimum}, got {value}"
              if isinstance(value, float) else f"must be >= {minimum}, got {value}")


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
    _need(p.start_partition_id + p.partitions - 1 <= JAVA_INT_MAX, "start_partition_id",
          f"must leave room for {p.partitions:,} partition ids below 2^31, got {p.start_partition_id:,}")
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
    _between(p, "skew", 0.0, MAX_SKEW, f"0 and {MAX_SKEW:g}")
    _racks_used(p.racks, max(p.members, p.partitions * p.replication_factor), "members or replicas")
    _need(p.partitions >= p.topics, "partitions", f"must be at least topics ({p.topics}), got {p.partitions}")
    _one_of(p, "subscriptions", SUBSCRIPTIONS)
    _one_of(p, "owner_draw", OWNER_DRAWS)
    _share(p, "rackless_partitions", "rackless_members", "owned", "conflicts", "static_members")


def _check_tasks(p: TasksParams) -> None:
    _at_least(p, 1, "racks", "subtopologies", "inputs", "changelogs", "replication_factor", "clients",
              "min_capacity", "tag_values")
    _between(p, "skew", 0.0, MAX_SKEW, f"0 and {MAX_SKEW:g}")
    _racks_used(p.racks, max(p.clients, p.tasks * p.replication_factor), "clients or replicas")
    _at_least(p, 0, "acceptable_recovery_lag", "num_standby_replicas", "traffic_cost", "non_overlap_cost")
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


def _within_caps(family: str, p: Any) -> None:
    """The validator's size caps, checked on the parameters (a grid is vetted before any instance is made)."""
    from kipopt.instance import copies_past_cap, partitions_past_cap, replicas_past_cap
    if family == "replicas":
        name, too_many = "partitions", replicas_past_cap(p.partitions, p.replication_factor)
    elif family == "consumers":
        name, too_many = "partitions", partitions_past_cap(p.partitions)
    else:
        name, too_many = "tasks", copies_past_cap(p.tasks, p.num_standby_replicas, p.clients)
    _need(too_many is None, name, too_many or "")


_CHECKS = {"replicas": _check_replicas, "consumers": _check_consumers, "tasks": _check_tasks}
