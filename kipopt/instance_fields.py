"""Field-level validation of instance documents: the readers of one part each (partition strings,
``sizes``, a static member's id, a task, a client, the tasks ``config``), raising
:class:`~kipopt.errors.InstanceError` at the field's path.

:mod:`kipopt.instance` composes them into the readers of whole documents. ``_valid_task`` and
``_valid_client`` are fast readers: they take only what is plainly valid and leave the rest (and the
error message) to ``_read_task`` and ``_read_client``.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Any, Mapping

from . import _read as r
from .errors import InstanceError
from .instance_types import Client, Task, TasksConfig, Topic, _canonical_nonnegative, parse_partition, parse_task_id

STRATEGIES = ("none", "min_traffic", "balance_subtopology")
COST_PARTITIONS = ("kafka", "all")
JOINT_STAGES = ("caught_up", "standbys", "tags", "balance", "traffic", "non_overlap")
"""The criteria of the ``joint`` rule, in their default priority order (``config.joint_priorities``)."""


# --------------------------------------------------------------------------- topics


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


# --------------------------------------------------------------------------- consumers


def _group_instance_id(value: Any, path: str, seen: set[str]) -> str | None:
    """A static member's ``group.instance.id`` (unique within the group); absent or null: a dynamic member."""
    if value is None:
        return None
    instance_id = r.identifier(value, path)
    if instance_id in seen:
        raise InstanceError(path, f"group instance id {instance_id!r} is listed twice")
    seen.add(instance_id)
    return instance_id


# --------------------------------------------------------------------------- tasks


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
MAX_ASSIGNMENT_TAGS = 5
"""``rack.aware.assignment.tags`` holds at most this many keys (``StreamsConfig``'s ``atMostOfSize(5)``)."""

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
    if len(tags) > MAX_ASSIGNMENT_TAGS:
        raise InstanceError(p + "rack_aware_assignment_tags", f"{len(tags)} tags; Kafka Streams takes at most "
                                                              f"{MAX_ASSIGNMENT_TAGS} (ConfigException above)")
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
