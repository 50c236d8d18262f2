"""Assertions for other projects' tests: ``assert_feasible``, ``assert_optimal``, ``assert_same_as_kafka``.

Plain functions raising :class:`AssertionError`, so they work in pytest,
unittest (a failure, not an error) or a bare script, with no plugin. The
message lists every broken rule with examples, the objective and the gap.
Instances and assignments may be typed objects, decoded JSON (a solution
object ``{"assignment": ...}``, or the bare assignment mapping) or paths.
A solution object's ``target`` (a cooperative assignor's full assignment)
is scored exactly as ``kipopt solve`` scores it, and its ``method`` names the
rule when none is given. Bad *input* (a malformed instance, a rule that
cannot be told) raises :class:`kipopt.InstanceError`, not an assertion: the
test is broken, not the code under test. Warnings of kipopt's solvers
(PuLP, HiGHS) never reach the caller's test.

>>> instance = {"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
...             "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"}]}
>>> assert_feasible(instance, {"0": [0, 1], "1": [1, 0]})
>>> assert_feasible(instance, {"0": [0, 0], "1": [1, 0]})
Traceback (most recent call last):
AssertionError: the assignment breaks 2 rules of the replicas instance:
  - duplicate_broker (1): partition 0: [0, 0] lists a broker twice
  - rack_spread (1): partition 0 spans 1 racks, needs 2
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping

from .errors import InputTypeError, InstanceError
from .api import as_instance  # noqa: F401 (kipopt.testing.as_instance, as documented)
from .instance import Instance
from .methods import Violation
from .solution import Assignment, Solution, TaskRoles, assignment_to_json, parse_assignment

__all__ = ["assert_feasible", "assert_optimal", "assert_same_as_kafka"]

__tracebackhide__ = True  # pytest: show the caller's line, not these helpers

EXAMPLES = 5
"""Examples listed per broken rule and differing owners listed per comparison."""


def assert_feasible(instance: Any, assignment: Any, rule: str | None = None) -> None:
    """Fail unless ``assignment`` breaks no hard rule of ``instance`` and none of ``rule``'s own
    (``range``'s per-topic quota, ``balanced``'s balance, ...); ``rule`` defaults to the rule of a
    solution object's ``method`` when it names a kipopt method, as ``kipopt evaluate`` reads it."""
    __tracebackhide__ = True
    from .api import evaluate_answer, method_rule, resolve_rule, target_hint
    inst = as_instance(instance)
    answer = as_answer(inst, assignment)
    broken = evaluate_answer(inst, answer).violations
    where = f"the {inst.family} instance"
    found = resolve_rule(inst, rule, field="rule") if rule is not None else method_rule(inst, answer.method)
    if found is not None:
        seen = {v.rule for v in broken}
        broken = broken + [v for v in found.violations(inst, answer.scored) if v.rule not in seen]
        where += f" and rule {found.name}"
    if broken:
        n = len(broken)
        hint = target_hint(inst, answer)
        raise AssertionError(f"the assignment breaks {n} rule{'s' if n > 1 else ''} of {where}:\n"
                             + _violations(broken) + (f"\n{hint}" if hint else ""))


def assert_optimal(instance: Any, assignment: Any, rule: str | None = None, tolerance: Any = 0,
                   time_limit: float | None = None) -> None:
    """Fail unless ``assignment`` is feasible and within ``tolerance`` of ``rule``'s optimum.

    ``tolerance``: a relative gap, or per criterion ``"cross_rack=0,revoked=2"`` / ``{"revoked": 2}``
    (:mod:`kipopt.tolerance`). ``rule`` defaults to the rule of a solution object's ``method``.
    ``time_limit``: seconds for the exact model (``None``: until proven). Where it ends unproven the gap is
    to its bound, so a limited check can fail an optimal answer (the message says the exact model's
    status) but never passes one beyond the tolerance.
    """
    __tracebackhide__ = True
    from .api import check, resolve_rule, target_hint
    from .tolerance import parse_tolerance
    inst = as_instance(instance)
    answer = as_answer(inst, assignment)
    found = resolve_rule(inst, rule, answer.method, field="rule")  # errors named as this function's arguments
    if time_limit is not None:
        time_limit = _seconds(time_limit)
    result = check(inst, answer, rule=found.name, tolerance=parse_tolerance(tolerance, "tolerance"),
                   time_limit=time_limit)
    if result.ok:
        return
    broken = result.evaluation.violations + result.rule_violations
    allowed = result.tolerance.to_json()
    lines = [f"the assignment is not optimal for rule {result.rule}: objective {_num(result.objective)}, "
             f"optimum {_num(result.optimum)} (bound {_num(result.bound)}, exact model {result.exact.status.value}), "
             + (f"gap {_gap(result.gap)}, tolerance per criterion {allowed}" if isinstance(allowed, dict)
                else f"gap {_gap(result.gap)} > tolerance {_gap(allowed)}")
             if result.feasible else
             f"the assignment is not feasible for rule {result.rule}: objective {_num(result.objective)}, "
             f"optimum {_num(result.optimum)}, gap {_gap(result.gap)}"]
    if result.criteria:
        lines.append(f"criteria: {result.criteria_text()}")
    if broken:
        lines.append(f"broken rules ({len(broken)}):")
        lines.append(_violations(broken))
    hint = target_hint(inst, answer)
    raise AssertionError("\n".join(lines + ([hint] if hint else [])))


def assert_same_as_kafka(instance: Any, assignment: Any, method: str, seed: int | None = None) -> None:
    """Fail unless ``assignment`` is exactly what the port ``method`` (Java Kafka) answers.

    Replica lists compare in order (the first broker is the leader); a
    consumer's partitions and a client's tasks per role compare as sets
    (an entry listed twice is a difference: Kafka lists none twice).
    A method that draws (``kafka.striped``) runs with ``seed``, else the
    solution object's own ``seed``, else its default.
    Like is compared with like: the given assignment with the port's
    ``assignment`` (a cooperative assignor's partial one) and, when the
    given solution object has a ``target``, that target with the port's
    (a port without one answers its full assignment, which is its target).
    """
    __tracebackhide__ = True
    from .api import evaluate_answer, solve
    from .methods import get_rule
    from .vectors import port
    inst = as_instance(instance)
    try:
        m = port(method, inst.family)
    except InstanceError as exc:
        raise InstanceError("method", exc.message) from None
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not -2**63 <= seed < 2**63):
        raise InputTypeError("seed", f"must be java.util.Random's seed, an integer from -2^63 to 2^63-1, got {seed!r:.40}")
    given = as_answer(inst, assignment)
    kafka = solve(inst, m.name, seed=seed if seed is not None else given.seed)
    if kafka.status.value in ("infeasible", "error"):
        raise AssertionError(f"{m.name} ({m.kafka_class}) refuses this instance: {kafka.message}")
    diffs = _differences(inst.family, kafka.assignment, given.assignment)
    if given.target is not None:
        kafka_target = kafka.target if kafka.target is not None else kafka.assignment
        diffs += [f"target: {d}" for d in _differences(inst.family, kafka_target, given.target)]
    if not diffs:
        return
    rule = get_rule(m.rule, inst.family)
    objective = rule.objective(inst, given.scored)
    evaluation = evaluate_answer(inst, given)
    broken = evaluation.violations + [v for v in rule.violations(inst, given.scored)
                                      if v.rule not in {b.rule for b in evaluation.violations}]
    lines = [f"the assignment differs from {m.name} ({m.kafka_class}) in {len(diffs)} place"
             f"{'s' if len(diffs) > 1 else ''}:"]
    lines += [f"  - {d}" for d in diffs[:EXAMPLES]]
    if len(diffs) > EXAMPLES:
        lines.append(f"  ... and {len(diffs) - EXAMPLES} more")
    if given.target is None and kafka.target is not None and not _differences(inst.family, kafka.target,
                                                                             given.assignment):
        lines.append(f"it equals {m.name}'s target (its full assignment): pass it as the solution's \"target\", "
                     f"beside the partial \"assignment\"")
    gap = objective - kafka.objective if kafka.objective is not None else None
    lines.append(f"rule {rule.name}: objective {_num(objective)}, Kafka's {_num(kafka.objective)}"
                 + (f" (difference {_num(gap)})" if gap is not None else ""))
    if broken:
        lines.append(f"broken rules ({len(broken)}):")
        lines.append(_violations(broken))
    raise AssertionError("\n".join(lines))


# --------------------------------------------------------------------------- inputs


def as_assignment(instance: Instance, value: Any) -> Assignment:
    """A parsed assignment from a :class:`Solution`, a solution object, a bare assignment (typed or JSON) or a path."""
    return as_answer(instance, value).assignment


def as_answer(instance: Instance, value: Any) -> Any:
    """An :class:`kipopt.api.Answer` (assignment, ``target``, ``method``) from what :func:`as_assignment` takes."""
    from .api import Answer, as_answer as api_answer, load_answer, parse_answer
    if isinstance(value, (Solution, Answer)):
        return api_answer(instance, value)
    if isinstance(value, (str, os.PathLike)):
        return load_answer(instance, os.fspath(value))
    if not isinstance(value, Mapping):
        raise InputTypeError("assignment", f"not an assignment, a solution or a path: {type(value).__name__}")
    if "assignment" in value and _is_solution(instance, value):
        data = dict(value)
        for key in ("assignment", "target"):
            if isinstance(data.get(key), Mapping):
                data[key] = _to_json(data[key])
        return parse_answer(instance, data)
    try:
        return Answer(parse_assignment(instance, _to_json(value)))
    except InstanceError as exc:  # the field named from the assignment's root ("assignment.0[1]"), once
        field = exc.field if exc.field.startswith("assignment") else f"assignment {exc.field}".rstrip()
        raise InstanceError(field, exc.message) from None


def _seconds(value: Any) -> float:
    """A time limit: a finite number > 0, else :class:`InstanceError` naming ``time_limit`` (also a
    :class:`TypeError` where it is no number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputTypeError("time_limit", f"must be a finite number of seconds > 0, got {type(value).__name__}")
    if isinstance(value, int) and value > 10**18 or not 0 < value < math.inf:
        raise InstanceError("time_limit", f"must be a finite number of seconds > 0, got {value!r:.40}")
    return float(value)


def _is_owner(instance: Instance, key: str) -> bool:
    """Whether ``key`` names a client or member."""
    return key in getattr(instance, "clients", {}) or key in getattr(instance, "member_by_id", {})


def _is_solution(instance: Instance, value: Mapping) -> bool:
    """Whether ``value``, which has a key ``"assignment"``, is a solution object rather than a bare assignment
    of a member or client named ``assignment``. Where that name is an owner's: a bare assignment has no key
    but owners' and gives the owner ``assignment`` partitions (a list) or roles (an object of ``active``,
    ``standby``, ``warmup``); anything else is a solution object."""
    if not _is_owner(instance, "assignment"):
        return True
    if any(not _is_owner(instance, str(k)) for k in value):
        return True
    if len(value) > 1:
        return False
    inner = value["assignment"]
    if isinstance(inner, TaskRoles) or not isinstance(inner, Mapping):
        return False
    return instance.family != "tasks" or not inner or not set(map(str, inner)) <= {"active", "standby", "warmup"}


def _to_json(value: Mapping) -> dict:
    """A typed or JSON assignment as JSON (keys as strings, tuples as lists, TaskRoles as objects)."""
    out = {}
    for key, item in value.items():
        if isinstance(item, TaskRoles):
            item = {"active": list(item.active), "standby": list(item.standby), "warmup": list(item.warmup)}
        elif isinstance(item, (tuple, list)):
            item = list(item)
        out[str(key)] = item
    return out


# --------------------------------------------------------------------------- messages


def _differences(family: str, kafka: Assignment, given: Assignment) -> list[str]:
    """Human-readable differences, owner by owner, in the port's order."""
    a, b = assignment_to_json(family, kafka), assignment_to_json(family, given)
    out = []
    for key in list(a) + [k for k in b if k not in a]:
        x, y = a.get(key), b.get(key)
        if family == "replicas":
            if x != y:
                out.append(f"partition {key}: Kafka {x}, got {y}")
        elif family == "consumers":
            out += _set_diff(f"member {key}", x or [], y or [])
        else:
            for role in ("active", "standby", "warmup"):
                out += _set_diff(f"client {key} {role}", (x or {}).get(role, []), (y or {}).get(role, []))
    return out


def _set_diff(where: str, kafka: list, given: list) -> list[str]:
    """The entries Kafka lists and ``given`` lacks, and those ``given`` lists beyond Kafka (an entry twice
    included: as sets they compared equal)."""
    from collections import Counter
    missing = list((Counter(kafka) - Counter(given)).elements())
    extra = list((Counter(given) - Counter(kafka)).elements())
    if not missing and not extra:
        return []
    parts = ([f"missing {', '.join(missing)}"] if missing else []) + ([f"extra {', '.join(extra)}"] if extra else [])
    return [f"{where}: {'; '.join(parts)} (Kafka: {', '.join(kafka) or 'nothing'})"]


def _violations(violations: list[Violation]) -> str:
    lines = []
    for v in violations:
        examples = "; ".join(v.examples[:EXAMPLES])
        more = f"; ... {v.count - len(v.examples[:EXAMPLES])} more" if v.count > len(v.examples[:EXAMPLES]) else ""
        lines.append(f"  - {v.rule} ({v.count}): {examples}{more}" if examples else f"  - {v.rule} ({v.count})")
    return "\n".join(lines)


def _num(x: float | None) -> str:
    if x is None:
        return "none"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _gap(x: float | None) -> str:
    return "none" if x is None else f"{x:.6g}"
