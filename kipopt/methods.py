"""The registry of methods (``kafka.*`` ports, ``exact.*`` programs) and rules.

A *rule* is a decision problem with one exact objective (``rack_active``,
``spread``, ...): its ``objective`` and ``violations`` are recomputed from an
assignment alone, and its ``exact_method`` solves it to optimality. A *method*
produces an assignment; the façade :func:`kipopt.api.solve` times it,
evaluates the result and reports the objective *of the method's rule*, so a
port and its exact model compare directly.

Provider modules each export ``METHODS`` and ``RULES``. Each family's
subpackages ``kipopt.formulations.<family>`` and ``kipopt.solvers.<family>``
list theirs in ``PROVIDERS``; they are imported on first use, the instance's
family first, so that ``kipopt validate`` never pays for HiGHS or Spark and
``kipopt solve`` imports no other family's models.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from .deadline import Deadline
from .errors import InstanceError
from .solution import Assignment, Status

FAMILIES = ("tasks", "replicas", "consumers")
"""The families, in registry order; each has a subpackage in ``kipopt.formulations`` and ``kipopt.solvers``."""


def family_providers(family: str) -> tuple[str, ...]:
    """The provider modules of ``family``: the exact models' first, then the ports', each package's
    ``PROVIDERS`` in its own order. Only the two small package ``__init__`` modules are imported."""
    return tuple(_side_providers(family, "formulations")) + tuple(_side_providers(family, "solvers"))


def _side_providers(family: str, side: str) -> list[str]:
    package = f"kipopt.{side}.{family}"
    return [f"{package}.{name}" for name in importlib.import_module(package).PROVIDERS]


def _providers(first: str | None = None):
    """Every provider module's name, ``first``'s family first; lazily, so that a search that ends early
    imports neither the remaining families' packages nor, in its own family, the ports' package."""
    for family in sorted(FAMILIES, key=lambda f: f != first):
        for side in ("formulations", "solvers"):
            yield from _side_providers(family, side)


@dataclass(frozen=True)
class SolveOptions:
    """What the command line passes to every method.

    ``deadline_at`` (a ``time.perf_counter()`` instant) is when the method must
    be done, set by :func:`kipopt.api.solve` once the instance is read (90 % of
    the limit from then on); without it the method's own start plus
    ``time_limit``.
    """

    time_limit: float | None = None
    threads: int | None = None
    seed: int | None = None
    deadline_at: float | None = None

    def deadline(self) -> Deadline:
        """The method's :class:`~kipopt.deadline.Deadline`: call once, where the method starts."""
        if self.deadline_at is not None:
            return Deadline(self.deadline_at)
        return Deadline.after(self.time_limit)


@dataclass
class MethodResult:
    """What a method returns; the façade adds timing, metrics and the rule's objective.

    ``objective`` is the method's own claim (checked against the recomputed
    value); ``bound`` its proven bound, if any.
    """

    assignment: Assignment
    status: Status = Status.FEASIBLE
    objective: float | None = None
    bound: float | None = None
    message: str | None = None
    seed: int | None = None
    target: Assignment | None = None
    info: dict[str, Any] = field(default_factory=dict)


class Runner(Protocol):
    def __call__(self, instance: Any, options: SolveOptions) -> MethodResult: ...


@dataclass(frozen=True)
class Violation:
    """A hard rule an assignment breaks: its name, how often, and a few examples."""

    rule: str
    count: int
    examples: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"rule": self.rule, "count": self.count, "examples": list(self.examples)}


@dataclass(frozen=True)
class Rule:
    """A decision problem: its objective and hard rules, recomputed from an assignment alone.

    ``criteria``, for a lexicographic rule, gives each criterion's own value in
    priority order (the objective encodes them in one number); the façade
    reports them as ``metrics["criteria"]``.
    """

    name: str
    family: str
    exact_method: str
    objective: Callable[[Any, Assignment], float]
    violations: Callable[[Any, Assignment], list[Violation]]
    description: str
    sense: str = "min"
    criteria: Callable[[Any, Assignment], dict[str, float]] | None = None


KAFKA_COMMIT = "1eb7644349cb07139d6a3c1ad1986979647cac99"
"""The apache/kafka commit every ``kafka.*`` port follows (4.0.0-SNAPSHOT, 2024-10-25)."""


@dataclass(frozen=True)
class Method:
    """A way to produce an assignment; ``kafka_class`` names the Kafka class a ``kafka.*`` port follows.

    ``requires`` declares where the method applies: given a valid instance it
    returns ``None``, or the reason it does not apply, starting with the field
    concerned (``"members[3].owned[0]: ..."``); :func:`kipopt.api.solve` then
    raises :class:`~kipopt.errors.NotApplicableError` and the benchmark
    records ``status: not_applicable``.
    """

    name: str
    family: str
    rule: str
    run: Runner
    description: str
    kafka_class: str | None = None
    requires: Callable[[Any], str | None] | None = None
    partial: bool = False  # its assignment is a cooperative first round; the full one comes as the target

    @property
    def exact(self) -> bool:
        return self.name.startswith("exact.")


_methods: dict[str, Method] | None = None
_rules: dict[str, Rule] | None = None


def _load() -> tuple[dict[str, Method], dict[str, Rule]]:
    global _methods, _rules
    if _methods is None or _rules is None:
        methods: dict[str, Method] = {}
        rules: dict[str, Rule] = {}
        for name in _providers():
            module = importlib.import_module(name)
            for m in getattr(module, "METHODS", ()):
                methods[m.name] = m
            for rule in getattr(module, "RULES", ()):
                rules[rule.name] = rule
        _methods, _rules = methods, rules
    return _methods, _rules


def methods() -> dict[str, Method]:
    return _load()[0]


def rules() -> dict[str, Rule]:
    return _load()[1]


def _named(kind: str, name: str, family: str | None = None) -> Any:
    """The method (``kind`` "METHODS") or rule ("RULES") called ``name``: from the registry once it is
    loaded, else from the first provider that has it, importing the providers only up to that one (so
    ``kipopt solve`` does not import every family's models; names are unique across providers, so the
    first is the one the full registry holds)."""
    if _methods is not None and _rules is not None:
        return (_methods if kind == "METHODS" else _rules).get(name)
    for provider in _providers(family):
        found = next((x for x in getattr(importlib.import_module(provider), kind, ()) if x.name == name), None)
        if found is not None:
            return found
    return None


def get_method(name: str, family: str | None = None) -> Method:
    found = _named("METHODS", name, family)
    if found is None:
        names = sorted(m for m, x in methods().items() if family is None or x.family == family)
        where = "" if family is None else f" for family {family!r}"
        raise InstanceError("--method", f"unknown method {name!r}; available{where}: {', '.join(names) or 'none'}")
    if family is not None and found.family != family:
        names = sorted(m for m, x in methods().items() if x.family == family)
        raise InstanceError("--method", f"{name} is for family {found.family!r}, the instance is {family!r}; "
                                        f"methods for {family}: {', '.join(names) or 'none yet'}")
    return found


DEFAULT_RULES = {"tasks": "rack_active", "replicas": "spread", "consumers": "balanced"}


def get_rule(name: str | None, family: str) -> Rule:
    name = name or DEFAULT_RULES[family]
    found = _named("RULES", name, family)
    if found is None or found.family != family:
        names = sorted(r for r, x in rules().items() if x.family == family)
        raise InstanceError("--rule", f"no rule {name!r} for family {family!r}; available: {', '.join(names) or 'none yet'}")
    return found
