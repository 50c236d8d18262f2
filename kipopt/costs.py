"""KIP-925 placement costs, exactly as ``instance-format.md`` ("Costs") defines them.

The cost of placing task ``t`` on client ``c`` in a role is
``traffic_cost x (cost partitions of t with no replica in rack(c))`` plus
``non_overlap_cost`` if ``c`` did not hold ``t`` in that role at the start.
Cost partitions are the inputs for an active (inputs and changelogs with
``rack_aware_assignment_cost_partitions: "all"``) and the changelogs for a
standby. Cross-rack traffic counts only when both sides have racks.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Mapping

import numpy as np

from .instance import PARTITION_NUMBERS, TasksInstance
from .solution import TaskRoles

ROLES = ("active", "standby")


@dataclass(frozen=True)
class CrossRackTable:
    """``counts[t, r]``: cost partitions of task ``t`` (``TaskId`` order) in one role that have
    racks but none equal to ``racks[r]`` (the clients' named racks, sorted)."""

    racks: tuple[str, ...]
    rack_index: dict[str, int]
    task_index: dict[str, int]
    counts: np.ndarray


def cross_rack_table(instance: TasksInstance, role: str) -> CrossRackTable:
    """The :class:`CrossRackTable` of ``instance`` in ``role``, built once per instance in linear time.

    Partitions are grouped by their rack set (few distinct ones), so the work
    per cost partition is one string split and one lookup.
    """
    key = f"_cross_rack_{role}"
    cached = instance.__dict__.get(key)
    if cached is None:
        cached = _build_table(instance, role)
        instance.__dict__[key] = cached  # a frozen dataclass: cache beside its fields, like cached_property
    return cached


def _build_table(instance: TasksInstance, role: str) -> CrossRackTable:
    racks = tuple(sorted({c.rack for c in instance.clients.values() if c.rack is not None}))
    rack_index = {r: i for i, r in enumerate(racks)}
    patterns, pattern_numbers = _rack_patterns(instance)
    cross = np.zeros((len(patterns), len(racks)), dtype=np.int64)
    for rs, k in patterns.items():
        if rs:
            cross[k] = 1
            cross[k, [rack_index[r] for r in rs if r in rack_index]] = 0
    task_ids = instance.task_ids
    other = instance.__dict__.get(f"_cross_rack_{'standby' if role == 'active' else 'active'}")
    task_index = other.task_index if other is not None else {t: i for i, t in enumerate(task_ids)}
    rows, parts = _read_partitions(instance, role, task_index)
    if rows is None:
        pattern_of = _pattern_of(instance)
        per_task = [instance.cost_partitions(t, role) for t in task_ids]
        sizes = np.fromiter(map(len, per_task), dtype=np.int64, count=len(task_ids))
        parts = np.fromiter(map(pattern_of.__getitem__, chain.from_iterable(per_task)), dtype=np.int64,
                            count=int(sizes.sum()))
        rows = np.repeat(np.arange(len(task_ids)), sizes)
    else:
        parts = pattern_numbers[parts]
    counts = np.zeros((len(task_ids), len(racks)), dtype=np.int64)
    per_part = cross[parts]
    for r in range(len(racks)):  # few racks: one weighted count per rack
        counts[:, r] = np.bincount(rows, weights=per_part[:, r], minlength=len(task_ids))
    return CrossRackTable(racks, rack_index, task_index, counts)


def _rack_patterns(instance: TasksInstance) -> tuple[dict[tuple[str, ...], int], np.ndarray]:
    """The instance's distinct rack sets, numbered, and the number of each partition's rack set, partitions
    counted topic after topic (as in :data:`~kipopt.instance.PARTITION_NUMBERS`); once per instance."""
    cached = instance.__dict__.get("_rack_patterns")
    if cached is None:
        every = [topic.racks for topic in instance.topics.values()]
        patterns = {rs: k for k, rs in enumerate(dict.fromkeys(chain.from_iterable(every)))}  # first-seen order
        numbers = np.fromiter(map(patterns.__getitem__, chain.from_iterable(every)), dtype=np.int64)
        cached = instance.__dict__["_rack_patterns"] = (patterns, numbers)
    return cached


def _pattern_of(instance: TasksInstance) -> dict[str, int]:
    """Partition string -> the number of its rack set (for instances the reader left no partition numbers)."""
    cached = instance.__dict__.get("_pattern_of")
    if cached is None:
        numbers = iter(_rack_patterns(instance)[1].tolist())
        cached = {f"{name}-{p}": next(numbers) for name, topic in instance.topics.items()
                  for p in range(len(topic.racks))}
        instance.__dict__["_pattern_of"] = cached
    return cached


def _read_partitions(instance: TasksInstance, role: str, task_index: dict[str, int]
                     ) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """(task row, partition number) of every cost partition of ``role``, from the numbers the reader
    parsed (:data:`~kipopt.instance.PARTITION_NUMBERS`); ``(None, None)`` when it left none, or for
    cost partitions ``"all"`` (inputs and changelogs, a partition in both counted once)."""
    numbers = instance.__dict__.get(PARTITION_NUMBERS)
    if numbers is None or (role == "active" and instance.config.rack_aware_assignment_cost_partitions == "all"):
        return None, None
    tasks = instance.tasks.values()
    sizes = np.empty(2 * len(tasks), dtype=np.int64)  # inputs, changelogs, inputs, changelogs, ...
    sizes[0::2] = np.fromiter((len(t.inputs) for t in tasks), dtype=np.int64, count=len(tasks))
    sizes[1::2] = np.fromiter((len(t.changelogs) for t in tasks), dtype=np.int64, count=len(tasks))
    row = np.fromiter(map(task_index.__getitem__, instance.tasks), dtype=np.int64, count=len(tasks))
    rows = np.repeat(np.repeat(row, 2), sizes)
    wanted = np.repeat(np.tile(np.array([role == "active", role == "standby"]), len(tasks)), sizes)
    return rows[wanted], np.asarray(numbers, dtype=np.int64)[wanted]


def cross_rack_partitions(instance: TasksInstance, task: str, rack: str | None, role: str) -> int:
    """Cost partitions of ``task`` in ``role`` that have racks but none equal to ``rack``.

    >>> from kipopt.instance import from_dict
    >>> x = from_dict({"format": 1, "family": "tasks",
    ...     "topics": {"in": {"racks": [["r1", "r2"]]}, "cl": {"racks": [["r3"]]}},
    ...     "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]}},
    ...     "clients": {"a": {"rack": "r1"}}})
    >>> [cross_rack_partitions(x, "0_0", "r1", role) for role in ROLES]
    [0, 1]
    >>> cross_rack_partitions(x, "0_0", None, "standby")
    0
    """
    if rack is None:
        return 0
    table = cross_rack_table(instance, role)
    column = table.rack_index.get(rack)
    if column is None:  # a rack no client has: every partition with racks crosses
        racks = instance.partition_racks
        return sum(1 for p in instance.cost_partitions(task, role) if racks[p])
    return int(table.counts[table.task_index[task], column])


@dataclass(frozen=True)
class Cost:
    """Traffic and non-overlap parts of a KIP-925 cost."""

    traffic: int
    non_overlap: int

    @property
    def total(self) -> int:
        return self.traffic + self.non_overlap


def role_cost(instance: TasksInstance, assignment: Mapping[str, TaskRoles], role: str,
              traffic_cost: int | None = None, non_overlap_cost: int | None = None,
              placed: tuple[np.ndarray, np.ndarray] | None = None) -> Cost:
    """Cost of every ``role`` placement of ``assignment`` against the instance's starting lists.

    Costs default to the instance's configured ones (Kafka's 10 and 1 when unset).
    Warm-ups are not standbys here (KIP-441 counts them apart). ``placed``, when the caller has it:
    the task (``TaskId`` order) and client (order of ``instance.clients``) of each placement, listed
    as ``assignment`` lists them.
    """
    traffic_cost = instance.config.traffic_cost if traffic_cost is None else traffic_cost
    non_overlap_cost = instance.config.non_overlap_cost if non_overlap_cost is None else non_overlap_cost
    table = cross_rack_table(instance, role)
    clients = [instance.clients[cid] for cid in assignment]
    lists = [getattr(roles, role) for roles in assignment.values()]
    moved = sum(len(tasks) - sum(map(set(getattr(client, role)).__contains__, tasks))
                for client, tasks in zip(clients, lists) if tasks)
    if placed is None:
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        rows = np.fromiter(map(table.task_index.__getitem__, chain.from_iterable(lists)), dtype=np.int64,
                           count=int(sizes.sum()))
        cols = np.repeat(np.array([-1 if c.rack is None else table.rack_index[c.rack] for c in clients],
                                  dtype=np.int64), sizes)
    else:
        rows, where = placed
        column = np.array([-1 if c.rack is None else table.rack_index[c.rack] for c in instance.clients.values()],
                          dtype=np.int64)
        cols = column[where]
    racked = cols >= 0  # cross-rack traffic counts only when both sides have racks
    traffic = int(table.counts[rows[racked], cols[racked]].sum())
    return Cost(traffic * traffic_cost, moved * non_overlap_cost)
