"""Typed, validated instances of the three families of ``instance-format.md``.

Each family is a frozen dataclass built only through :func:`from_dict` (or
:func:`load_instance`), which enforces every rule of the format and fills in
Kafka's defaults; :func:`to_dict` writes the canonical JSON back, and
``from_dict(to_dict(x)) == x``.

>>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 2,
...                   "replication_factor": 2,
...                   "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"}]})
>>> inst.racks
('a', 'b')
>>> from_dict(to_dict(inst)) == inst
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import chain
from functools import cached_property
from typing import Any, Mapping, Union

from . import _read as r
from .errors import InstanceError

FORMAT_VERSION = 1
FAMILIES = ("replicas", "consumers", "tasks")
STRATEGIES = ("none", "min_traffic", "balance_subtopology")
COST_PARTITIONS = ("kafka", "all")
JOINT_STAGES = ("caught_up", "standbys", "tags", "balance", "traffic", "non_overlap")
"""The criteria of the ``joint`` rule, in their default priority order (``config.joint_priorities``)."""
MAX_REPLICAS = 10_000_000
"""Most replicas (``partitions × replication_factor``) a replicas instance may ask for: its answer is
held in memory as one list per partition (about 150 bytes a replica with the JSON printed), so this
keeps a run within a few GB; 3.5 times Cruise Control's largest reported cluster (~2.8M replicas)."""

MAX_TASK_COPIES = 10_000_000
"""Most task copies (``tasks × (1 + num_standby_replicas)``) a tasks instance may ask for: like
:data:`MAX_REPLICAS`, every answer holds each copy in memory; the exact models are grouped (their size
grows with task classes, not with copies), and those that are not refuse larger models themselves."""
MAX_CONSUMER_PARTITIONS = 10_000_000
"""Most partitions (summed over the topics) a consumers instance may have: the answer lists each one."""


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


def _read_topics(value: Any, path: str) -> dict[str, Topic]:
    topics: dict[str, Topic] = {}
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple per distinct rack set: memory
    for name, spec in r.mapping(value, path).items():
        tpath = f"{path}.{name}"
        if name == "":
            raise InstanceError(tpath, "topic name must be non-empty")
        r.topic_name(name, tpath)
        spec = r.obj(spec, tpath, required=("racks",))
        entries = r.array(spec["racks"], f"{tpath}.racks")
        if not entries:
            raise InstanceError(f"{tpath}.racks", "a topic needs at least one partition")
        racks = _known_rack_sets(entries, shared)
        if racks is None:
            racks = []
            for p, e in enumerate(entries):
                fast = r.distinct_strings(e)
                if fast is None:
                    fast = r.unique_strings(e, f"{tpath}.racks[{p}]")
                if fast not in shared:
                    r.identifiers(fast, f"{tpath}.racks[{p}]")
                racks.append(shared.setdefault(fast, fast))
        topics[name] = Topic(tuple(racks))
    return topics


def _known_rack_sets(entries: list, shared: dict[tuple[str, ...], tuple[str, ...]]) -> list | None:
    """``entries`` as the shared tuples of rack sets already validated (the common case: a cluster has
    few distinct rack sets), found at C speed; None when an entry is new or not an array."""
    if set(map(type, entries)) != {list}:
        return None
    try:
        racks = list(map(shared.get, map(tuple, entries)))
    except TypeError:  # an unhashable item
        return None
    return None if None in racks else racks


def _topics_to_dict(topics: Mapping[str, Topic]) -> dict:
    return {name: {"racks": [list(p) for p in t.racks]} for name, t in topics.items()}


def _valid_partition(topics: Mapping[str, Topic], text: Any) -> bool:
    """The fast path of :func:`_check_partition`: true for a valid partition string, no message."""
    if type(text) is not str:
        return False
    head, _, tail = text.rpartition("-")
    known = topics.get(head)
    return (known is not None and tail.isascii() and tail.isdigit() and (tail[0] != "0" or tail == "0")
            and int(tail) < len(known.racks))


def _check_partition(topics: Mapping[str, Topic], text: Any, path: str) -> str:
    if _valid_partition(topics, text):
        return text
    topic, number = parse_partition(text, path)
    known = topics.get(topic)
    if known is None:
        raise InstanceError(path, f"{text!r} names topic {topic!r}, which is not in topics")
    if number >= known.partitions:
        raise InstanceError(path, f"{text!r}: topic {topic!r} has {known.partitions} partitions")
    return text


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


def _read_replicas(d: dict) -> ReplicasInstance:
    r.obj(d, "", required=("format", "family", "brokers", "partitions", "replication_factor"),
          optional=("start_index", "start_partition_id", "current", "sizes"))
    brokers = []
    seen: set[int] = set()
    for i, b in enumerate(r.array(d["brokers"], "brokers")):
        bpath = f"brokers[{i}]"
        b = r.obj(b, bpath, required=("id",), optional=("rack",))
        bid = r.integer(b["id"], f"{bpath}.id", 0, r.JAVA_INT_MAX)
        if bid in seen:
            raise InstanceError(f"{bpath}.id", f"broker id {bid} is listed twice")
        seen.add(bid)
        brokers.append(Broker(bid, r.rack(b.get("rack"), f"{bpath}.rack")))
    if not brokers:
        raise InstanceError("brokers", "at least one broker is needed")
    partitions = r.integer(d["partitions"], "partitions", 1, r.JAVA_INT_MAX)
    rf = r.integer(d["replication_factor"], "replication_factor", 1, r.JAVA_INT_MAX)
    if partitions * rf > MAX_REPLICAS:
        raise InstanceError("partitions", f"{partitions:,} partitions x replication_factor {rf} = "
                                          f"{partitions * rf:,} replicas; kipopt places at most {MAX_REPLICAS:,} "
                                          "(the answer would not fit in memory)")
    start_index = r.integer(d.get("start_index", 0), "start_index", 0, r.JAVA_INT_MAX)
    start_pid = r.integer(d.get("start_partition_id", 0), "start_partition_id", 0, r.JAVA_INT_MAX)
    current = None
    if "current" in d:
        current = {}
        for key, replicas in r.mapping(d["current"], "current").items():
            cpath = f"current.{key}"
            pid = _partition_key(key, cpath, start_pid, partitions)
            # a broker not in brokers is being decommissioned: allowed, every replica on it moves
            ids = [r.integer(x, f"{cpath}[{j}]", 0, r.JAVA_INT_MAX) for j, x in enumerate(r.array(replicas, cpath))]
            if len(set(ids)) != len(ids):
                raise InstanceError(cpath, "a broker is listed twice")
            if not ids:
                raise InstanceError(cpath, "an existing assignment lists at least one broker")
            current[pid] = tuple(ids)
        current = dict(sorted(current.items()))
    sizes = _read_sizes(d["sizes"], start_pid, partitions) if "sizes" in d else None
    return ReplicasInstance(tuple(brokers), partitions, rf, start_index, start_pid, current, sizes)


def _read_sizes(raw: Any, start_pid: int, partitions: int) -> dict[int, int]:
    """``sizes``: partition id (string key) to its bytes (what ``kafka-log-dirs.sh`` reports, largest replica)."""
    sizes = {}
    for key, value in r.mapping(raw, "sizes").items():
        spath = f"sizes.{key}"
        sizes[_partition_key(key, spath, start_pid, partitions)] = r.integer(value, spath, 0, 2**62)
    return dict(sorted(sizes.items()))


def _partition_key(key: str, path: str, start_pid: int, partitions: int) -> int:
    """A partition id written as an object key (``current``, ``sizes``), within the instance's range."""
    if not _canonical_nonnegative(key):
        raise InstanceError(path, f"partition id {key!r} is not a non-negative integer")
    pid = int(key)
    if not start_pid <= pid < start_pid + partitions:
        raise InstanceError(path, f"partition {pid} is outside {start_pid}..{start_pid + partitions - 1}")
    return pid


def _replicas_to_dict(x: ReplicasInstance) -> dict:
    d: dict[str, Any] = {
        "format": FORMAT_VERSION, "family": "replicas",
        "brokers": [{"id": b.id, "rack": b.rack} for b in x.brokers],
        "partitions": x.partitions, "replication_factor": x.replication_factor,
        "start_index": x.start_index, "start_partition_id": x.start_partition_id,
    }
    if x.current is not None:
        d["current"] = {str(p): list(bs) for p, bs in x.current.items()}
    if x.sizes is not None:
        d["sizes"] = {str(p): v for p, v in x.sizes.items()}
    return d


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


def _read_consumers(d: dict) -> ConsumersInstance:
    r.obj(d, "", required=("format", "family", "topics", "members"))
    topics = _read_topics(d["topics"], "topics")
    partitions = sum(t.partitions for t in topics.values())
    if partitions > MAX_CONSUMER_PARTITIONS:
        raise InstanceError("topics", f"{partitions:,} partitions; kipopt assigns at most "
                                      f"{MAX_CONSUMER_PARTITIONS:,} (the answer would not fit in memory)")
    members = []
    seen: set[str] = set()
    instance_ids: set[str] = set()
    for i, m in enumerate(r.array(d["members"], "members")):
        mpath = f"members[{i}]"
        m = r.obj(m, mpath, required=("id", "topics"), optional=("rack", "owned", "generation", "group_instance_id"))
        mid = r.identifier(m["id"], f"{mpath}.id")
        if mid in seen:
            raise InstanceError(f"{mpath}.id", f"member id {mid!r} is listed twice")
        seen.add(mid)
        subscribed = r.unique_strings(m["topics"], f"{mpath}.topics")
        for j, t in enumerate(subscribed):
            if t not in topics:
                raise InstanceError(f"{mpath}.topics[{j}]", f"topic {t!r} is not in topics")
        owned = r.unique_strings(m.get("owned", []), f"{mpath}.owned")
        for j, p in enumerate(owned):
            _check_partition(topics, p, f"{mpath}.owned[{j}]")
        generation = r.integer(m.get("generation", -1), f"{mpath}.generation", -1, r.JAVA_INT_MAX)
        instance_id = _group_instance_id(m.get("group_instance_id"), f"{mpath}.group_instance_id", instance_ids)
        members.append(Member(mid, r.rack(m.get("rack"), f"{mpath}.rack"), subscribed, owned, generation,
                              instance_id))
    if not members:
        raise InstanceError("members", "at least one member is needed")
    return ConsumersInstance(topics, tuple(members))


def _group_instance_id(value: Any, path: str, seen: set[str]) -> str | None:
    """A static member's ``group.instance.id`` (unique within the group); absent or null: a dynamic member."""
    if value is None:
        return None
    instance_id = r.identifier(value, path)
    if instance_id in seen:
        raise InstanceError(path, f"group instance id {instance_id!r} is listed twice")
    seen.add(instance_id)
    return instance_id


def _member_to_dict(m: Member) -> dict:
    d: dict[str, Any] = {"id": m.id, "rack": m.rack, "topics": list(m.topics), "owned": list(m.owned),
                         "generation": m.generation}
    if m.group_instance_id is not None:  # dynamic members stay as they were written before static membership
        d["group_instance_id"] = m.group_instance_id
    return d


def _consumers_to_dict(x: ConsumersInstance) -> dict:
    return {
        "format": FORMAT_VERSION, "family": "consumers", "topics": _topics_to_dict(x.topics),
        "members": [_member_to_dict(m) for m in x.members],
    }


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


def _read_tasks(d: dict) -> TasksInstance:
    r.obj(d, "", required=("format", "family", "topics", "tasks", "clients"), optional=("config",))
    topics = _read_topics(d["topics"], "topics")
    tasks: dict[str, Task] = {}
    layout, numbers = _partition_layout(topics), []
    for tid, spec in r.mapping(d["tasks"], "tasks").items():
        task = _valid_task(tid, spec, layout, numbers)
        if task is None:
            task, numbers = _read_task(tid, spec, topics), None  # numbers: see PARTITION_NUMBERS
        tasks[tid] = task
    if not tasks:
        raise InstanceError("tasks", "at least one task is needed")
    stateful = {t for t, task in tasks.items() if task.stateful}
    clients = {cid: _valid_client(cid, spec, tasks, stateful) or _read_client(cid, spec, tasks)
               for cid, spec in r.mapping(d["clients"], "clients").items()}
    if not clients:
        raise InstanceError("clients", "at least one client is needed")
    instance = TasksInstance(topics, tasks, clients, _read_config(d.get("config", {})))
    copies = len(tasks) * (1 + min(instance.config.num_standby_replicas, len(clients) - 1))
    if copies > MAX_TASK_COPIES:
        raise InstanceError("tasks", f"{len(tasks):,} tasks x (1 + {instance.config.num_standby_replicas} standbys) = "
                                     f"{copies:,} task copies; kipopt places at most {MAX_TASK_COPIES:,} "
                                     "(the answer would not fit in memory)")
    if numbers is not None:
        instance.__dict__[PARTITION_NUMBERS] = numbers  # a cache beside the fields, like cached_property
    return instance


PARTITION_NUMBERS = "_partition_numbers"
"""Key of a cache the reader leaves in a :class:`TasksInstance`'s ``__dict__`` when every task took the
fast reader: each task's inputs then changelogs, tasks in the order of ``tasks``, as numbers of the
topics' partitions counted topic after topic in the order of ``topics`` (what the reader parsed
anyway; :mod:`kipopt.costs` builds its tables from it without parsing the strings again)."""


def _partition_layout(topics: Mapping[str, Topic]) -> dict[str, tuple[int, int]]:
    """Topic -> (its partitions, the number of its partition 0 in :data:`PARTITION_NUMBERS`)."""
    layout, offset = {}, 0
    for name, topic in topics.items():
        layout[name] = (len(topic.racks), offset)
        offset += len(topic.racks)
    return layout


_PLAIN_TASK_ID = re.compile(r"(?:0|[1-9][0-9]{0,8})_(?:0|[1-9][0-9]{0,8})")  # ten digits may pass INT_MAX
_TASK_FIELDS = frozenset(("inputs", "changelogs", "stateful", "end_offset"))
_CLIENT_FIELDS = frozenset(("rack", "tags", "capacity", "active", "standby", "lags"))


def _valid_task(tid: str, spec: Any, layout: Mapping[str, tuple[int, int]], numbers: list[int] | None) -> Task | None:
    """:func:`_read_task` for a task that is plainly valid, with no per-field messages, appending its
    partitions' numbers to ``numbers`` (:data:`PARTITION_NUMBERS`); None when any check fails (then
    :func:`_read_task` finds and words the failure)."""
    if type(spec) is not dict or not spec.keys() <= _TASK_FIELDS or type(tid) is not str \
            or _PLAIN_TASK_ID.fullmatch(tid) is None:
        return None
    inputs, changelogs = spec.get("inputs"), spec.get("changelogs", [])
    if type(inputs) is not list or not inputs or type(changelogs) is not list:
        return None
    if numbers is None:
        numbers = []
    for p in chain(inputs, changelogs):  # _valid_partition, inlined: this loop runs once per partition read
        if type(p) is not str:
            return None
        head, _, tail = p.rpartition("-")
        known = layout.get(head)
        if known is None or not tail.isdigit() or not tail.isascii() or (tail[0] == "0" and len(tail) > 1):
            return None
        number = int(tail)
        if number >= known[0]:
            return None
        numbers.append(known[1] + number)
    if len(set(inputs)) != len(inputs) or len(set(changelogs)) != len(changelogs):
        return None
    stateful, end_offset = spec.get("stateful", bool(changelogs)), spec.get("end_offset", 0)
    if type(stateful) is not bool or (stateful and not changelogs) or type(end_offset) is not int \
            or not 0 <= end_offset <= r.JAVA_LONG_MAX:
        return None
    return Task(tid, tuple(inputs), tuple(changelogs), stateful, end_offset)


def _read_task(tid: str, spec: Any, topics: Mapping[str, Topic]) -> Task:
    path = f"tasks.{tid}"
    parse_task_id(tid, path)
    spec = r.obj(spec, path, required=("inputs",), optional=("changelogs", "stateful", "end_offset"))
    inputs = r.unique_strings(spec["inputs"], f"{path}.inputs")
    if not inputs:
        raise InstanceError(f"{path}.inputs", "a task reads at least one input partition")
    changelogs = r.unique_strings(spec.get("changelogs", []), f"{path}.changelogs")
    for key, parts in (("inputs", inputs), ("changelogs", changelogs)):
        for j, p in enumerate(parts):
            if not _valid_partition(topics, p):
                _check_partition(topics, p, f"{path}.{key}[{j}]")
    stateful = r.boolean(spec.get("stateful", bool(changelogs)), f"{path}.stateful")
    if stateful and not changelogs:
        raise InstanceError(f"{path}.changelogs", "a stateful task needs at least one changelog partition")
    end_offset = r.integer(spec.get("end_offset", 0), f"{path}.end_offset", 0)
    return Task(tid, inputs, changelogs, stateful, end_offset)


def _valid_client(cid: str, spec: Any, tasks: Mapping[str, Task], stateful: set[str]) -> Client | None:
    """:func:`_read_client` for a client that is plainly valid (tags read the slow way), with set
    operations at C speed in place of per-item checks; None when any check fails."""
    if type(spec) is not dict or not spec.keys() <= _CLIENT_FIELDS or type(cid) is not str or not cid \
            or not r.plain_identifier(cid):
        return None
    active, standby = r.distinct_strings(spec.get("active", [])), r.distinct_strings(spec.get("standby", []))
    lags = spec.get("lags", {})
    if active is None or standby is None or type(lags) is not dict or not tasks.keys() >= set(active) \
            or not stateful.issuperset(standby) or not stateful.issuperset(lags) or not set(active).isdisjoint(standby):
        return None
    values = lags.values()
    if lags and (set(map(type, values)) != {int} or min(values) < 0 or max(values) > r.JAVA_LONG_MAX):
        return None
    rack, capacity = spec.get("rack"), spec.get("capacity", 1)
    if not (rack is None or (type(rack) is str and rack and r.plain_identifier(rack))) or type(capacity) is not int \
            or not 1 <= capacity <= r.JAVA_INT_MAX or ("tags" in spec and not _plain_tags(spec["tags"])):
        return None
    return Client(cid, rack, dict(spec.get("tags", {})), capacity, active, standby, dict(lags))


def _plain_tags(tags: Any) -> bool:
    return type(tags) is dict and all(type(k) is str and k and type(v) is str and v and r.plain_identifier(k)
                                      and r.plain_identifier(v) for k, v in tags.items())


def _read_client(cid: str, spec: Any, tasks: Mapping[str, Task]) -> Client:
    path = f"clients.{cid}"
    if cid == "":
        raise InstanceError(path, "client id must be non-empty")
    r.identifier(cid, path)
    spec = r.obj(spec, path, optional=("rack", "tags", "capacity", "active", "standby", "lags"))
    tags = {}
    for key, value in r.mapping(spec.get("tags", {}), f"{path}.tags").items():
        tags[r.identifier(key, f"{path}.tags")] = r.identifier(value, f"{path}.tags.{key}")
    roles = {}
    for role in ("active", "standby"):
        roles[role] = r.unique_strings(spec.get(role, []), f"{path}.{role}")
        if not tasks.keys() >= set(roles[role]):
            j = next(j for j, t in enumerate(roles[role]) if t not in tasks)
            raise InstanceError(f"{path}.{role}[{j}]", f"task {roles[role][j]!r} is not in tasks")
    active = set(roles["active"])
    for j, t in enumerate(roles["standby"]):
        if t in active:
            raise InstanceError(f"{path}.standby[{j}]", f"task {t!r} is also active on this client")
        if not tasks[t].stateful:
            raise InstanceError(f"{path}.standby[{j}]", f"task {t!r} is stateless and cannot have a standby")
    lags = {}
    for t, lag in r.mapping(spec.get("lags", {}), f"{path}.lags").items():
        known = tasks.get(t)
        if known is None:
            raise InstanceError(f"{path}.lags.{t}", f"task {t!r} is not in tasks")
        if not known.stateful:
            raise InstanceError(f"{path}.lags.{t}", f"task {t!r} is stateless and has no lag")
        lags[t] = lag if type(lag) is int and 0 <= lag <= r.JAVA_LONG_MAX else r.integer(lag, f"{path}.lags.{t}", 0)
    return Client(cid, r.rack(spec.get("rack"), f"{path}.rack"), tags,
                  r.integer(spec.get("capacity", 1), f"{path}.capacity", 1, r.JAVA_INT_MAX),
                  roles["active"], roles["standby"], lags)


def _read_config(value: Any) -> TasksConfig:
    names = [f for f in TasksConfig.__dataclass_fields__]
    c = r.obj(value, "config", optional=names)
    p = "config."
    costs = {}
    for key in ("rack_aware_assignment_traffic_cost", "rack_aware_assignment_non_overlap_cost"):
        costs[key] = None if c.get(key) is None else r.integer(c[key], p + key, 0, r.JAVA_INT_MAX)
    tags = r.unique_strings(c.get("rack_aware_assignment_tags", []), p + "rack_aware_assignment_tags")
    r.identifiers(tags, p + "rack_aware_assignment_tags")
    priorities = read_priorities(c.get("joint_priorities", []), p + "joint_priorities")
    return TasksConfig(
        num_standby_replicas=r.integer(c.get("num_standby_replicas", 0), p + "num_standby_replicas", 0, r.JAVA_INT_MAX),
        acceptable_recovery_lag=r.integer(c.get("acceptable_recovery_lag", 10_000), p + "acceptable_recovery_lag", 0),
        max_warmup_replicas=r.integer(c.get("max_warmup_replicas", 2), p + "max_warmup_replicas", 1, r.JAVA_INT_MAX),
        rack_aware_assignment_strategy=r.choice(c.get("rack_aware_assignment_strategy", "none"),
                                                p + "rack_aware_assignment_strategy", STRATEGIES),
        rack_aware_assignment_tags=tags,
        rack_aware_assignment_cost_partitions=r.choice(c.get("rack_aware_assignment_cost_partitions", "kafka"),
                                                       p + "rack_aware_assignment_cost_partitions", COST_PARTITIONS),
        joint_priorities=priorities,
        **costs,
    )


def read_priorities(value: Any, path: str) -> tuple[str, ...]:
    """The ``joint`` rule's priority order: distinct names of :data:`JOINT_STAGES` (a prefix of the order;
    stages not named follow in their default order).

    >>> read_priorities(["traffic", "caught_up"], "config.joint_priorities")
    ('traffic', 'caught_up')
    >>> read_priorities(["speed"], "p")
    Traceback (most recent call last):
    ...
    kipopt.errors.InstanceError: p[0]: unknown stage 'speed'; stages: caught_up, standbys, tags, balance, traffic, non_overlap
    """
    names = r.unique_strings(value, path)
    for j, name in enumerate(names):
        if name not in JOINT_STAGES:
            raise InstanceError(f"{path}[{j}]", f"unknown stage {name!r}; stages: {', '.join(JOINT_STAGES)}")
    return names


def _tasks_to_dict(x: TasksInstance) -> dict:
    tasks = {}
    for tid, t in x.tasks.items():
        tasks[tid] = {"inputs": list(t.inputs), "changelogs": list(t.changelogs), "stateful": t.stateful,
                      "end_offset": t.end_offset}
    clients = {cid: {"rack": c.rack, "tags": dict(c.tags), "capacity": c.capacity, "active": list(c.active),
                     "standby": list(c.standby), "lags": dict(c.lags)} for cid, c in x.clients.items()}
    config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in x.config.__dict__.items()
              if v is not None and not (k == "joint_priorities" and not v)}
    return {"format": FORMAT_VERSION, "family": "tasks", "topics": _topics_to_dict(x.topics),
            "tasks": tasks, "clients": clients, "config": config}


# --------------------------------------------------------------------------- façade

Instance = Union[ReplicasInstance, ConsumersInstance, TasksInstance]

_READERS = {"replicas": _read_replicas, "consumers": _read_consumers, "tasks": _read_tasks}
_WRITERS = {ReplicasInstance: _replicas_to_dict, ConsumersInstance: _consumers_to_dict, TasksInstance: _tasks_to_dict}


def from_dict(data: Any) -> Instance:
    """Validate a decoded JSON instance and return its typed model."""
    data = r.mapping(data, "(top level)")
    if "format" not in data:
        raise InstanceError("format", "required field is missing (instances carry \"format\": 1)")
    if data["format"] != FORMAT_VERSION or isinstance(data["format"], bool):
        raise InstanceError("format", f"unsupported format {data['format']!r}; this kipopt reads format 1")
    if "family" not in data:
        raise InstanceError("family", "required field is missing")
    family = r.choice(data["family"], "family", FAMILIES)
    return _READERS[family](data)


def to_dict(instance: Instance) -> dict:
    """The canonical JSON object of an instance (Kafka's defaults written out)."""
    return _WRITERS[type(instance)](instance)


def load_instance(source: str | Mapping) -> Instance:
    """Load and validate an instance from a path, ``-`` (stdin) or a decoded dict."""
    with r.gc_paused():
        if isinstance(source, Mapping):
            return from_dict(source)
        return from_dict(r.read_json_file(source, "INSTANCE"))
