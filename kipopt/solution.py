"""Assignments and the solution object of ``cli.md``.

An *assignment* is the family-specific part (``{"assignment": ...}`` of
``instance-format.md``), held as plain typed Python containers:

* replicas: ``dict[int, tuple[int, ...]]`` partition id -> brokers, leader first;
* consumers: ``dict[str, tuple[str, ...]]`` member -> partitions;
* tasks: ``dict[str, TaskRoles]`` client -> its active, standby and warm-up tasks.

Parsing rejects what is not an assignment of *this* instance (unknown ids,
wrong shapes) with an :class:`~kipopt.errors.InstanceError`; what is an
assignment but breaks a rule (a duplicate, an unassigned task) is left for
the evaluator to report. So is a piece the assignment leaves out, the same
way in every family (:func:`left_out`): a partition of a replicas
assignment, a member of a consumers one, a client of a tasks one is a
``missing_partition`` / ``missing_member`` / ``missing_client`` violation,
and what it would have held is unassigned.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from . import _read as r
from .errors import InstanceError
from .instance import ConsumersInstance, Instance, ReplicasInstance, TasksInstance, parse_partition


@dataclass(frozen=True)
class TaskRoles:
    """The tasks one Kafka Streams client runs, by role."""

    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    warmup: tuple[str, ...] = ()


Assignment = Union[dict[int, tuple[int, ...]], dict[str, tuple[str, ...]], dict[str, TaskRoles]]


class Completed(dict):
    """A consumers or tasks assignment read from JSON with every member (client) present: those the JSON
    left out are filled in empty, after the others, and named in ``missing`` for the evaluator."""

    def __init__(self, items: Any = (), missing: tuple[str, ...] = ()):
        super().__init__(items)
        self.missing = tuple(missing)


MISSING_RULES = {"replicas": "missing_partition", "consumers": "missing_member", "tasks": "missing_client"}
"""The violation that names a piece an assignment leaves out, per family."""


def left_out(instance: Instance, assignment: Assignment) -> list:
    """The pieces that key an assignment (partition ids, member ids, client ids) absent from it, in the
    instance's order; linear in the instance.

    >>> from kipopt.instance import from_dict
    >>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 3, "replication_factor": 1,
    ...                   "brokers": [{"id": 0}]})
    >>> left_out(inst, {0: (0,), 2: (0,)})
    [1]
    """
    declared = getattr(assignment, "missing", None)
    if declared is not None:
        return list(declared)
    if isinstance(instance, ReplicasInstance):
        ids = instance.partition_ids
        if len(assignment) == len(ids) and _int_keys_within(assignment, ids):  # distinct keys: all there
            return []
        return [p for p in ids if p not in assignment]
    keys = (m.id for m in instance.members) if isinstance(instance, ConsumersInstance) else instance.clients
    return [k for k in keys if k not in assignment]


def _int_keys_within(assignment: Assignment, ids: range) -> bool:
    """Every key a plain int in ``ids`` (C-level passes: a million partitions in milliseconds)."""
    if not assignment or set(map(type, assignment)) != {int}:
        return False
    return min(assignment) >= ids.start and max(assignment) < ids.stop


def completed(instance: Instance, assignment: Assignment, missing: list) -> Assignment:
    """``assignment`` with each ``missing`` member or client given nothing (replicas: unchanged)."""
    if not missing or isinstance(instance, ReplicasInstance):
        return assignment
    empty = TaskRoles() if isinstance(instance, TasksInstance) else ()
    return Completed({**assignment, **dict.fromkeys(missing, empty)}, tuple(missing))


class Status(str, enum.Enum):
    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    ERROR = "error"


@dataclass
class Solution:
    """What ``kipopt solve`` prints: an assignment with its quality and provenance.

    ``objective`` is the value of the rule's exact objective (the same for a
    ``kafka.*`` port and its ``exact.*`` model, so they compare directly);
    ``bound`` the best proven bound on it; ``gap`` the relative gap between them.
    """

    family: str
    method: str
    assignment: Assignment
    status: Status
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    seed: int | None = None
    target: Assignment | None = None
    seconds_reading: float | None = None
    """Seconds spent reading and validating the instance before the method started (``None`` when the
    caller did not say when it started reading): a time limit counts them, so a run answers within
    ``time_limit`` plus about twice this (reading, then evaluating the answer)."""

    def __post_init__(self) -> None:
        self.status = Status(self.status)
        if self.seconds < 0:
            raise ValueError(f"negative solve time {self.seconds} not understood")

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)

    def __repr__(self) -> str:
        """One line whatever the size (the assignment is ``.assignment``; the dataclass's own repr printed it
        whole: 100 KB in a notebook cell for 6,000 partitions)."""
        parts = [f"method={self.method!r}", f"status={self.status.value!r}", f"objective={self.objective!r}",
                 f"bound={self.bound!r}", f"seconds={self.seconds:.3f}", f"assignment=<{len(self.assignment)} entries>"]
        if self.target is not None:
            parts.append(f"target=<{len(self.target)} entries>")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        if self.message:
            parts.append(f"message={self.message!r}")
        return f"Solution({', '.join(parts)})"

    def to_dict(self) -> dict:
        from ._write import collector_paused
        with collector_paused():
            return self._to_dict(assignment_to_json)

    def to_document(self) -> dict:
        """:meth:`to_dict` for :func:`kipopt._write.dumps_indented`, which writes the same text from it: a
        replicas assignment stays a :class:`~kipopt._write.Table` over the assignment's own tuples (a
        million-partition answer is not copied into a million lists first)."""
        return self._to_dict(assignment_document)

    def _to_dict(self, assignment_json: Any) -> dict:
        d: dict[str, Any] = {
            "family": self.family, "method": self.method,
            "assignment": assignment_json(self.family, self.assignment),
            "status": self.status.value, "objective": json_number(self.objective), "bound": json_number(self.bound),
            "gap": self.gap, "seconds": round(self.seconds, 6), "metrics": self.metrics,
        }
        if self.target is not None:
            d["target"] = assignment_json(self.family, self.target)
        if self.seconds_reading is not None:
            d["seconds_reading"] = round(self.seconds_reading, 6)
        if self.seed is not None:
            d["seed"] = self.seed
        if self.message is not None:
            d["message"] = self.message
        return d


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """``|objective - bound| / max(1, |objective|)``; 0 when they meet.

    >>> relative_gap(40, 40), relative_gap(50, 40), relative_gap(None, 3)
    (0.0, 0.2, None)
    """
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(1.0, abs(objective))


def json_number(x: float | None) -> float | int | None:
    """Integral floats as ints in JSON (objectives are integers for every rule so far)."""
    if x is None:
        return None
    if isinstance(x, float) and x.is_integer() and math.isfinite(x):
        return int(x)
    return x


# --------------------------------------------------------------------------- reading

SOLUTION_FIELDS = ("family", "method", "assignment", "status", "objective", "bound", "gap", "seconds",
                   "seconds_reading", "metrics", "message", "seed", "target", "violations")


def parse_solution(instance: Instance, data: Any) -> Assignment:
    """The assignment of a solution object (or of a bare ``{"assignment": ...}``)."""
    d = r.obj(data, "", required=("assignment",), optional=SOLUTION_FIELDS)
    if "family" in d and d["family"] != instance.family:
        raise InstanceError("family", f"solution is for family {d['family']!r}, instance is {instance.family!r}")
    return parse_assignment(instance, d["assignment"])


def parse_assignment(instance: Instance, value: Any, path: str = "assignment") -> Assignment:
    if isinstance(instance, ReplicasInstance):
        return _replicas(instance, value, path)
    if isinstance(instance, ConsumersInstance):
        return _consumers(instance, value, path)
    return _tasks(instance, value, path)


def _replicas(x: ReplicasInstance, value: Any, path: str) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    known = set(x.broker_ids)
    for key, brokers in r.mapping(value, path).items():
        kpath = f"{path}.{key}"
        canonical = len(key) <= 10 and key.isascii() and key.isdigit() and (key[0] != "0" or key == "0")
        if not canonical or int(key) not in x.partition_ids:  # "00" would be read as, and overwrite, "0"
            zero = " (written without leading zeros)" if key[:1] == "0" and key.isdigit() else ""
            raise InstanceError(kpath, f"{key!r} is not a partition id of this instance "
                                       f"({x.partition_ids.start}..{x.partition_ids.stop - 1}){zero}")
        ids = tuple(r.integer(b, f"{kpath}[{j}]", 0) for j, b in enumerate(r.array(brokers, kpath)))
        for j, b in enumerate(ids):
            if b not in known:
                raise InstanceError(f"{kpath}[{j}]", f"broker {b} is not in the instance")
        out[int(key)] = ids
    return out


def _consumers(x: ConsumersInstance, value: Any, path: str) -> dict[str, tuple[str, ...]]:
    value = r.mapping(value, path)
    out: dict[str, tuple[str, ...]] = {}
    for mid, parts in value.items():
        mpath = f"{path}.{mid}"
        if mid not in x.member_by_id:
            raise InstanceError(mpath, f"member {mid!r} is not in the instance")
        items = r.array(parts, mpath)
        for j, p in enumerate(items):
            if type(p) is not str or p not in x.partition_racks:
                parse_partition(p, f"{mpath}[{j}]")
                raise InstanceError(f"{mpath}[{j}]", f"partition {p!r} is not in the instance's topics")
        out[mid] = tuple(items)
    return completed(x, out, left_out(x, out)) if len(out) < len(x.members) else out


def _tasks(x: TasksInstance, value: Any, path: str) -> dict[str, TaskRoles]:
    value = r.mapping(value, path)
    out: dict[str, TaskRoles] = {}
    for cid, roles in value.items():
        cpath = f"{path}.{cid}"
        if cid not in x.clients:
            raise InstanceError(cpath, f"client {cid!r} is not in the instance")
        roles = r.obj(roles, cpath, optional=("active", "standby", "warmup"))
        lists = {}
        for role in ("active", "standby", "warmup"):
            items = r.array(roles.get(role, []), f"{cpath}.{role}")
            for j, t in enumerate(items):
                if type(t) is not str or t not in x.tasks:
                    raise InstanceError(f"{cpath}.{role}[{j}]", f"task {t!r} is not in the instance")
            lists[role] = tuple(items)
        out[cid] = TaskRoles(**lists)
    return completed(x, out, left_out(x, out)) if len(out) < len(x.clients) else out


def assignment_to_json(family: str, assignment: Assignment) -> dict:
    if family == "replicas":  # partitions ascending; C-level maps (a million partitions)
        ids = sorted(assignment)
        return dict(zip(map(str, ids), map(list, map(assignment.__getitem__, ids))))
    if family == "consumers":
        return {m: list(ps) for m, ps in assignment.items()}
    return {c: {"active": list(t.active), "standby": list(t.standby), "warmup": list(t.warmup)}
            for c, t in assignment.items()}


def assignment_document(family: str, assignment: Assignment) -> Any:
    """:func:`assignment_to_json` as :func:`kipopt._write.dumps_indented` takes it: the same text, built
    without the intermediate dict for replicas."""
    if family == "replicas":
        from ._write import Table
        ids = sorted(assignment)
        return Table(ids, list(map(assignment.__getitem__, ids)))
    return assignment_to_json(family, assignment)


def current_assignment(instance: Instance) -> Assignment:
    """The assignment the instance starts from (its owners), in solution form."""
    if isinstance(instance, TasksInstance):
        return {c: TaskRoles(cl.active, cl.standby) for c, cl in instance.clients.items()}
    if isinstance(instance, ConsumersInstance):
        return {m.id: tuple(p for p in m.owned) for m in instance.members}
    return dict(instance.current or {})
