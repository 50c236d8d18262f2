"""The typed model of an instance: one frozen dataclass per family and its parts, and the id helpers.

The dataclasses hold values :mod:`kipopt.instance` has already validated (build them through its
``from_dict`` or ``load_instance``, which re-export them); the id helpers parse and order partition
strings and Kafka Streams task ids the way Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Union

from . import _read as r
from .errors import InstanceError


# --------------------------------------------------------------------------- ids


def java_string_key(text: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code units).

    >>> sorted(["p2", "p10", "p1"], key=java_string_key)
    ['p1', 'p10', 'p2']
    """
    return text.encode("utf-16-be", "surrogatepass")


def parse_partition(text: str, path: str = "partition") -> tuple[str, int]:
    """Split ``"<topic>-<partition>"`` on its last ``-``.

    >>> parse_partition("my-topic-12")
    ('my-topic', 12)
    """
    if not isinstance(text, str):
        raise InstanceError(path, f"must be a partition string like \"orders-3\", got {text!r}")
    topic, sep, number = text.rpartition("-")
    if not sep or not topic or not _canonical_nonnegative(number):
        raise InstanceError(path, f"{text!r} is not a partition like \"orders-3\" (<topic>-<partition>)")
    return topic, int(number)


def parse_task_id(text: str, path: str = "task") -> tuple[int, int]:
    """Split a Kafka Streams task id ``"<subtopology>_<partition>"``.

    >>> parse_task_id("2_10")
    (2, 10)
    """
    head, sep, tail = text.partition("_") if isinstance(text, str) else ("", "", "")
    if not sep or not _canonical_nonnegative(head) or not _canonical_nonnegative(tail):
        if sep and all(0 < len(part) <= 19 and part.isascii() and part.isdigit() and str(int(part)) == part
                       for part in (head, tail)):
            raise InstanceError(path, f"{text!r}: Kafka's TaskId holds each part in a Java int (at most "
                                      f"{r.JAVA_INT_MAX:,})")
        raise InstanceError(path, f"{text!r} is not a task id like \"0_3\" (<subtopology>_<partition>)")
    return int(head), int(tail)


def _task_key(text: str) -> int:
    """``TaskId`` order as one integer, for ids already validated (both parts below 2**31; no checks:
    sorting 100,000 ids stays cheap)."""
    head, _, tail = text.partition("_")
    return int(head) << 32 | int(tail)


def _first_of_runs(values: Any) -> Any:
    """Positions where a sorted numpy array takes a new value."""
    import numpy as np
    return np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1]))) if len(values) else values


def _canonical_nonnegative(text: str) -> bool:
    return len(text) <= 10 and text.isascii() and text.isdigit() and str(int(text)) == text \
        and int(text) <= r.JAVA_INT_MAX


# --------------------------------------------------------------------------- topics


@dataclass(frozen=True)
class Topic:
    """A topic: entry ``p`` of ``racks`` holds the racks with a replica of partition ``p``."""

    racks: tuple[tuple[str, ...], ...]

    @property
    def partitions(self) -> int:
        return len(self.racks)


# --------------------------------------------------------------------------- replicas


@dataclass(frozen=True)
class Broker:
    id: int
    rack: str | None = None


@dataclass(frozen=True)
class ReplicasInstance:
    """KIP-36: place ``partitions`` partitions of ``replication_factor`` replicas on brokers."""

    brokers: tuple[Broker, ...]
    partitions: int
    replication_factor: int
    start_index: int = 0
    start_partition_id: int = 0
    current: Mapping[int, tuple[int, ...]] | None = None
    sizes: Mapping[int, int] | None = None
    family: str = field(default="replicas", init=False)

    def __repr__(self) -> str:
        racks = len({b.rack for b in self.brokers})
        extra = "".join(f", {name}=<{len(v)} partitions>" for name, v in (("current", self.current),
                                                                          ("sizes", self.sizes)) if v is not None)
        return (f"ReplicasInstance(partitions={self.partitions}, replication_factor={self.replication_factor}, "
                f"brokers=<{len(self.brokers)} on {racks} racks>{extra})")

    @cached_property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(b.id for b in self.brokers))

    @cached_property
    def rack_of(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    @cached_property
    def racks(self) -> tuple[str, ...]:
        """Distinct broker racks, sorted (rack-less brokers contribute none)."""
        return tuple(sorted({b.rack for b in self.brokers if b.rack is not None}))

    @property
    def partition_ids(self) -> range:
        return range(self.start_partition_id, self.start_partition_id + self.partitions)

    @cached_property
    def departing(self) -> tuple[int, ...]:
        """Brokers named in ``current`` but not in ``brokers``: being decommissioned, every replica on them moves."""
        known = set(self.broker_ids)
        return tuple(sorted({b for bs in (self.current or {}).values() for b in bs} - known))

    def size_of(self, pid: int) -> int:
        """Bytes of a partition (1 when the instance has no ``sizes``; 0 for a partition it omits)."""
        if self.sizes is None:
            return 1
        return self.sizes.get(pid, 0)


# --------------------------------------------------------------------------- consumers


@dataclass(frozen=True)
class Member:
    id: str
    rack: str | None
    topics: tuple[str, ...]
    owned: tuple[str, ...] = ()
    generation: int = -1
    group_instance_id: str | None = None  # static membership (group.instance.id); None = a dynamic member


@dataclass(frozen=True)
class ConsumersInstance:
    """KIP-881: assign the partitions of the subscribed topics to group members."""

    topics: Mapping[str, Topic]
    members: tuple[Member, ...]
    family: str = field(default="consumers", init=False)

    def __repr__(self) -> str:
        partitions = sum(len(t.racks) for t in self.topics.values())
        return (f"ConsumersInstance(members=<{len(self.members)}>, topics=<{len(self.topics)}>, "
                f"partitions=<{partitions}>)")

    @cached_property
    def member_by_id(self) -> dict[str, Member]:
        return {m.id: m for m in self.members}

    @cached_property
    def partition_racks(self) -> dict[str, frozenset[str]]:
        """Every partition string of every topic, with its replica racks."""
        return {f"{t}-{p}": frozenset(rs) for t, topic in self.topics.items() for p, rs in enumerate(topic.racks)}

    @cached_property
    def subscribed_partitions(self) -> tuple[str, ...]:
        """Partitions of topics someone subscribes to, by topic name then partition."""
        names = sorted({t for m in self.members for t in m.topics}, key=java_string_key)
        return tuple(f"{t}-{p}" for t in names for p in range(self.topics[t].partitions))


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    id: str
    inputs: tuple[str, ...]
    changelogs: tuple[str, ...] = ()
    stateful: bool = False
    end_offset: int = 0

    @property
    def subtopology(self) -> int:
        return parse_task_id(self.id)[0]

    @property
    def sort_key(self) -> tuple[int, int]:
        return parse_task_id(self.id)


@dataclass(frozen=True)
class Client:
    id: str
    rack: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    capacity: int = 1
    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    lags: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class TasksConfig:
    """Kafka Streams settings; ``None`` costs mean "unset" (Kafka's HA assignor then uses 10 and 1)."""

    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10_000
    max_warmup_replicas: int = 2
    rack_aware_assignment_strategy: str = "none"
    rack_aware_assignment_traffic_cost: int | None = None
    rack_aware_assignment_non_overlap_cost: int | None = None
    rack_aware_assignment_tags: tuple[str, ...] = ()
    rack_aware_assignment_cost_partitions: str = "kafka"
    joint_priorities: tuple[str, ...] = ()

    @property
    def traffic_cost(self) -> int:
        """The traffic cost the high-availability assignor uses (10 when unset)."""
        c = self.rack_aware_assignment_traffic_cost
        return 10 if c is None else c

    @property
    def non_overlap_cost(self) -> int:
        """The non-overlap cost the high-availability assignor uses (1 when unset)."""
        c = self.rack_aware_assignment_non_overlap_cost
        return 1 if c is None else c


@dataclass(frozen=True)
class TasksInstance:
    """Kafka Streams task assignment (KIP-441, KIP-708, KIP-925)."""

    topics: Mapping[str, Topic]
    tasks: Mapping[str, Task]
    clients: Mapping[str, Client]
    config: TasksConfig = TasksConfig()
    family: str = field(default="tasks", init=False)

    def __repr__(self) -> str:
        return (f"TasksInstance(tasks=<{len(self.tasks)}>, clients=<{len(self.clients)}>, "
                f"topics=<{len(self.topics)}>, config={self.config!r})")

    @cached_property
    def _task_order(self) -> tuple[tuple[str, ...], Any]:
        import numpy as np
        ids = list(self.tasks)
        keys = np.fromiter(map(_task_key, ids), dtype=np.int64, count=len(ids))
        order = np.argsort(keys, kind="stable")
        return tuple(map(ids.__getitem__, order.tolist())), keys[order] >> 32

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Task ids in Kafka's ``TaskId`` order: (subtopology, partition)."""
        return self._task_order[0]

    @property
    def task_subtopologies(self) -> Any:
        """The sub-topology of each task of :attr:`task_ids` (a numpy array)."""
        return self._task_order[1]

    @cached_property
    def client_ids(self) -> tuple[str, ...]:
        """Client ids in Kafka's process order (Java ``String.compareTo`` of the ids)."""
        return tuple(sorted(self.clients, key=java_string_key))

    @cached_property
    def subtopologies(self) -> tuple[int, ...]:
        groups = self.task_subtopologies
        return tuple(groups[_first_of_runs(groups)].tolist())

    @cached_property
    def partition_racks(self) -> dict[str, frozenset[str]]:
        return {f"{t}-{p}": frozenset(rs) for t, topic in self.topics.items() for p, rs in enumerate(topic.racks)}

    def lag(self, client: str, task: str) -> int:
        """Restore lag of ``client`` on stateful ``task``; its end offset if it holds no state."""
        t = self.tasks[task]
        return self.clients[client].lags.get(task, t.end_offset)

    def cost_partitions(self, task: str, role: str) -> tuple[str, ...]:
        """The partitions whose rack decides the traffic cost of ``task`` in ``role``."""
        t = self.tasks[task]
        if role == "standby":
            return t.changelogs
        if self.config.rack_aware_assignment_cost_partitions == "all":
            return t.inputs + tuple(p for p in t.changelogs if p not in t.inputs)
        return t.inputs


# --------------------------------------------------------------------------- any family

Instance = Union[ReplicasInstance, ConsumersInstance, TasksInstance]
