"""What the oracle is asked about, read from what callers have: an instance (typed, a decoded JSON object
or a path) and an answer (a :class:`~kipopt.solution.Solution`, a solution object, a bare assignment or a
path), as the command line and the Python API read them alike."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from . import _read as r
from .errors import InputTypeError, InstanceError
from .instance import Instance, TasksInstance, from_dict, load_instance, read_priorities
from .solution import Assignment, Solution, parse_assignment, parse_solution


@dataclass(frozen=True)
class Answer:
    """What the oracle is asked about: an assignment, and a solution object's ``target`` and ``method``.

    ``target`` (a cooperative assignor's full assignment, as ``solve`` writes
    it) is what the rule is scored on when present, exactly as :func:`solve`
    scores its own answers; ``method`` names the rule ``check`` uses when the
    caller names none.
    """

    assignment: Assignment
    target: Assignment | None = None
    method: str | None = None
    priorities: tuple[str, ...] | None = None  # the joint order it was solved in (metrics.joint_order)
    seed: int | None = None  # java.util.Random's seed of a method that draws (kafka.striped)

    @property
    def scored(self) -> Assignment:
        return self.assignment if self.target is None else self.target


def load_assignment(instance: Instance, source: str | Mapping) -> Assignment:
    """Read a solution object (path, ``-`` or dict) and return its parsed assignment."""
    return load_answer(instance, source).assignment


def load_answer(instance: Instance, source: str | Mapping) -> Answer:
    """Read a solution object (path, ``-`` or dict): its assignment, ``target`` and ``method``."""
    try:
        data = source if isinstance(source, Mapping) else r.read_json_file(source, "SOLUTION")
        return parse_answer(instance, data)
    except InstanceError as exc:
        if exc.field == "SOLUTION":  # the file itself (unreadable, not JSON): named once
            raise
        raise InstanceError(f"SOLUTION {exc.field}".rstrip(), exc.message) from None


def parse_answer(instance: Instance, data: Any) -> Answer:
    """The :class:`Answer` of a decoded solution object; a bare assignment is refused with how to wrap it."""
    if isinstance(data, Mapping) and "assignment" not in data and _looks_bare(instance, data):
        kind = {"consumers": "member -> partitions", "tasks": "client -> roles",
                "replicas": "partition -> brokers"}[instance.family]
        raise InstanceError("", f"this is a bare assignment ({kind}), not a solution object; wrap it as "
                                f'{{"assignment": {{...}}}} (and give a cooperative assignor\'s full '
                                f'assignment as "target")')
    assignment = parse_solution(instance, data)
    target = data.get("target")
    if target is not None and instance.family != "consumers":
        raise InstanceError("target", f"only a consumers solution has a target (a cooperative assignor's full "
                                      f"assignment beside its partial one); a {instance.family} solution has none")
    if target is not None:
        target = parse_assignment(instance, target, "target")
    method = data.get("method")
    if method is not None and not isinstance(method, str):
        raise InstanceError("method", f"must be a string, got {r._kind(method)}")
    _not_another_family(instance, method)
    seed = data.get("seed")  # informational: kept when it can be java.util.Random's seed
    seed = seed if type(seed) is int and -2**63 <= seed < 2**63 else None
    return Answer(assignment, target, method, _joint_order(instance, data.get("metrics")), seed)


KIPOPT_PREFIXES = ("kafka.", "exact.", "proposal.")
"""The names of kipopt's methods; a solution's ``method`` outside them is another library's, informational."""


def _not_another_family(instance: Instance, method: str | None) -> None:
    """A solution naming a kipopt method of another family is refused, as a solution of another family is
    (``check`` refused it and ``evaluate`` scored it without the method's rule), and so is a name in kipopt's
    namespaces that is no kipopt method (a typo dropped the method's rule silently); another library's name
    is the caller's own and stays informational."""
    if method == "":
        raise InstanceError("method", "must be a non-empty string (or left out)")
    if method is None or not method.startswith(KIPOPT_PREFIXES):
        return
    from .methods import _named, methods
    found = _named("METHODS", method, instance.family)
    if found is None:
        import difflib
        mine = sorted(m for m, x in methods().items() if x.family == instance.family)
        close = difflib.get_close_matches(method, mine, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise InstanceError("method", f"{method!r} is not a kipopt method ({hint}kipopt's {instance.family} "
                                      f"methods: {', '.join(mine)}; another library's answers name their own)")
    if found.family != instance.family:
        raise InstanceError("method", f"{method} is a kipopt method of family {found.family!r}, the instance is "
                                      f"{instance.family!r}")


def _joint_order(instance: Instance, metrics: Any) -> tuple[str, ...] | None:
    """The joint rule's order a tasks solution was solved in (``metrics.joint_order``, as ``solve
    --priorities`` records it), for ``check`` to score it in that order; ``None`` when it records none.
    ``metrics`` that is not an object is refused (a list hid a recorded order)."""
    if metrics is not None and not isinstance(metrics, Mapping):
        raise InstanceError("metrics", f"must be an object, got {r._kind(metrics)}")
    if not isinstance(instance, TasksInstance) or not isinstance(metrics, Mapping) or "joint_order" not in metrics:
        return None
    return read_priorities(metrics["joint_order"], "metrics.joint_order")


def _looks_bare(instance: Instance, data: Mapping) -> bool:
    """Whether a would-be solution object is keyed by the instance's members, clients or partitions."""
    owners = getattr(instance, "member_by_id", None) or getattr(instance, "clients", None)
    if owners is None:
        owners = {str(p) for p in getattr(instance, "partition_ids", ())}
    return any(key in owners for key in data)


def as_instance(value: Instance | Mapping | str | os.PathLike) -> Instance:
    """An instance from a typed instance, a decoded JSON object or a path; else
    :class:`~kipopt.errors.InputTypeError` (an :class:`InstanceError` and a :class:`TypeError`)."""
    if isinstance(value, Mapping):
        return from_dict(value)
    if isinstance(value, (str, os.PathLike)):
        return load_instance(os.fspath(value))
    if getattr(value, "family", None) in ("replicas", "consumers", "tasks") and hasattr(value, "__dataclass_fields__"):
        return value
    raise InputTypeError("instance", f"not an instance, a JSON object or a path: {type(value).__name__}")


def as_answer(instance: Instance, value: Answer | Solution | Assignment | Mapping | str) -> Answer:
    """An :class:`Answer` from a solution (a :class:`Solution` as :func:`solve` returns it, a solution dict or
    a path) or a parsed assignment alone."""
    if isinstance(value, Answer):
        return value
    if isinstance(value, Solution):
        return Answer(value.assignment, value.target, value.method, seed=value.seed)
    if isinstance(value, str) or (isinstance(value, Mapping) and "assignment" in value):
        return load_answer(instance, value)
    return Answer(value)
