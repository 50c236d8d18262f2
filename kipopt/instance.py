"""Typed, validated instances of the three families of ``instance-format.md``.

Each family is a frozen dataclass built only through :func:`from_dict` (or
:func:`load_instance`), which enforces every rule of the format and fills in
Kafka's defaults; :func:`to_dict` writes the canonical JSON back, and
``from_dict(to_dict(x)) == x``.

This module reads and writes whole documents (the format version, the size caps); the dataclasses
live in :mod:`kipopt.instance_types`, the per-field readers in :mod:`kipopt.instance_fields`, and
other code imports them all from here.

>>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 2,
...                   "replication_factor": 2,
...                   "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"}]})
>>> inst.racks
('a', 'b')
>>> from_dict(to_dict(inst)) == inst
True
"""

from __future__ import annotations

from typing import Any, Mapping

from . import _read as r
from .errors import InputTypeError, InstanceError
# the readers below find the fast readers, _known_rack_sets and the MAX_* caps here, where tests patch them
from .instance_fields import (PARTITION_NUMBERS, _check_partition, _group_instance_id, _partition_key,
                              _partition_layout, _read_client, _read_config, _read_sizes, _read_task, _valid_client,
                              _valid_task)
from .instance_fields import COST_PARTITIONS, JOINT_STAGES, STRATEGIES, read_priorities  # noqa: F401 (re-exported)
from .instance_types import Broker, ConsumersInstance, Instance, Member, ReplicasInstance, Task, TasksInstance, Topic
from .instance_types import Client, TasksConfig  # noqa: F401 (re-exported)
from .instance_types import java_string_key, parse_partition, parse_task_id  # noqa: F401 (re-exported)

FORMAT_VERSION = 1
FAMILIES = ("replicas", "consumers", "tasks")
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
def replicas_past_cap(partitions: int, rf: int) -> str | None:
    """Why a replicas instance of this size is refused (:data:`MAX_REPLICAS`), or ``None``; the generator's
    parameters are checked by the same functions."""
    if partitions * rf <= MAX_REPLICAS:
        return None
    return (f"{partitions:,} partitions x replication_factor {rf} = {partitions * rf:,} replicas; kipopt places at "
            f"most {MAX_REPLICAS:,} (the answer would not fit in memory)")


def partitions_past_cap(partitions: int) -> str | None:
    """Why a consumers instance of this many partitions is refused (:data:`MAX_CONSUMER_PARTITIONS`), or ``None``."""
    if partitions <= MAX_CONSUMER_PARTITIONS:
        return None
    return (f"{partitions:,} partitions; kipopt assigns at most {MAX_CONSUMER_PARTITIONS:,} (the answer would not "
            f"fit in memory)")


def copies_past_cap(tasks: int, standbys: int, clients: int) -> str | None:
    """Why a tasks instance of this size is refused (:data:`MAX_TASK_COPIES`: a standby per other client at
    most), or ``None``."""
    copies = tasks * (1 + min(standbys, clients - 1))
    if copies <= MAX_TASK_COPIES:
        return None
    return (f"{tasks:,} tasks x (1 + {standbys} standbys) = {copies:,} task copies; kipopt places at most "
            f"{MAX_TASK_COPIES:,} (the answer would not fit in memory)")


MAX_BYTES_MOVED = 2**63 - 1
"""Most bytes a replicas instance's moves can weigh (``replication_factor × Σ sizes``): bytes moved are
counted in 64-bit integers (the evaluator's arrays), and beyond this they would wrap to negative counts
(an answer moving 1.4e19 bytes scored below the optimum's 6). 8 EiB: far beyond any cluster."""


# --------------------------------------------------------------------------- topics


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


# --------------------------------------------------------------------------- replicas


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
    too_many = replicas_past_cap(partitions, rf)
    if too_many:
        raise InstanceError("partitions", too_many)
    start_index = r.integer(d.get("start_index", 0), "start_index", 0, r.JAVA_INT_MAX)
    start_pid = r.integer(d.get("start_partition_id", 0), "start_partition_id", 0, r.JAVA_INT_MAX)
    if start_pid + partitions - 1 > r.JAVA_INT_MAX:
        raise InstanceError("start_partition_id", f"partition ids {start_pid:,} to {start_pid + partitions - 1:,} "
                                                  f"pass {r.JAVA_INT_MAX:,}: Kafka's partition ids are Java ints")
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
    if sizes and rf * sum(sizes.values()) > MAX_BYTES_MOVED:  # every count of bytes moved stays exact
        raise InstanceError("sizes", f"replication_factor × the total of sizes is {rf * sum(sizes.values()):,} "
                                     f"bytes; kipopt counts bytes moved exactly up to {MAX_BYTES_MOVED:,} (2^63 - 1)")
    return ReplicasInstance(tuple(brokers), partitions, rf, start_index, start_pid, current, sizes)


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


def _read_consumers(d: dict) -> ConsumersInstance:
    r.obj(d, "", required=("format", "family", "topics", "members"))
    topics = _read_topics(d["topics"], "topics")
    partitions = sum(t.partitions for t in topics.values())
    too_many = partitions_past_cap(partitions)
    if too_many:
        raise InstanceError("topics", too_many)
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
    too_many = copies_past_cap(len(tasks), instance.config.num_standby_replicas, len(clients))
    if too_many:
        raise InstanceError("tasks", too_many)
    if numbers is not None:
        instance.__dict__[PARTITION_NUMBERS] = numbers  # a cache beside the fields, like cached_property
    return instance


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

_READERS = {"replicas": _read_replicas, "consumers": _read_consumers, "tasks": _read_tasks}
_WRITERS = {ReplicasInstance: _replicas_to_dict, ConsumersInstance: _consumers_to_dict, TasksInstance: _tasks_to_dict}


def from_dict(data: Any) -> Instance:
    """Validate a decoded JSON instance and return its typed model."""
    data = r.mapping(data, "(top level)")
    if "format" not in data:
        raise InstanceError("format", "required field is missing (instances carry \"format\": 1)")
    if type(data["format"]) is not int:  # 1.0 and true are no format number (JSON Schema's const takes 1.0)
        raise InstanceError("format", f"must be the integer 1, got {r._kind(data['format'])}")
    if data["format"] != FORMAT_VERSION:
        raise InstanceError("format", f"unsupported format {data['format']!r}; this kipopt reads format 1")
    if "family" not in data:
        raise InstanceError("family", "required field is missing")
    family = r.choice(data["family"], "family", FAMILIES)
    return _READERS[family](data)


def to_dict(instance: Instance) -> dict:
    """The canonical JSON object of an instance (Kafka's defaults written out)."""
    writer = _WRITERS.get(type(instance))
    if writer is None:
        hint = " (a solution's JSON object is solution.to_dict())" if hasattr(instance, "to_document") else ""
        raise InputTypeError("instance", f"not an instance: {type(instance).__name__}{hint}")
    return writer(instance)


def load_instance(source: str | Mapping) -> Instance:
    """Load and validate an instance from a path, ``-`` (stdin) or a decoded dict."""
    with r.gc_paused():
        if isinstance(source, Mapping):
            return from_dict(source)
        return from_dict(r.read_json_file(source, "INSTANCE"))
