"""The ``joint`` rule: every Kafka Streams task rule scored as one lexicographic vector.

Kafka Streams optimizes in stages (round robin and balancing, then rack-aware
traffic within fixed counts, then standbys, then movements to caught-up
clients, then stateless tasks). The ``joint`` rule scores an assignment on all
of those criteria at once, in a priority order, so that Kafka's staged result
and the joint optimum (:mod:`kipopt.formulations.tasks.joint`) compare stage by stage.

Notation: tasks :math:`T`, stateful tasks :math:`S \\subseteq T`, clients
:math:`C` with capacities (threads) :math:`w_c`, :math:`W = \\sum_c w_c`,
:math:`k = \\min(\\text{num\\_standby\\_replicas}, |C| - 1)`. For an assignment
let :math:`a_{tc}, s_{tc} \\in \\{0, 1\\}` say that client :math:`c` runs task
:math:`t` as active, as standby (warm-ups are transient and not scored), and
:math:`n_c = \\sum_t a_{tc} + s_{tc}`. Stages, each a non-negative integer to
minimize:

``caught_up`` (KIP-441)
    :math:`\\sum_{t \\in S} \\sum_{c \\notin B_t} a_{tc}`, where :math:`B_t` are
    the most caught-up clients of :math:`t`: a client's rank is 0 when its lag
    is at most ``acceptable_recovery_lag`` and its lag otherwise (a client
    without state lags by the task's end offset), and :math:`B_t` holds the
    clients of least rank. The evaluator's ``actives_not_caught_up``.
``standbys``
    :math:`\\sum_{t \\in S} (k - \\sum_c s_{tc})`: standbys missing.
``tags`` (KIP-708)
    :math:`\\sum_{t \\in S} \\sum_{g} (\\min(k + 1, |V_g|) - |\\{v_g(c) : a_{tc} + s_{tc} = 1\\}|)`
    over the tag keys :math:`g` (``rack_aware_assignment_tags``, else every key
    in use) with values :math:`V_g`: distinct tag values missing against the
    ideal of a task with :math:`k + 1` hosts.
``balance``
    :math:`\\sum_c \\max(0, n_c - \\lceil w_c N / W \\rceil) + \\max(0, \\lfloor w_c N / W \\rfloor - n_c)`
    with :math:`N = |T| + k|S|`: tasks outside each client's capacity-weighted
    fair share (0 exactly when every client is within the balance factor 1 of
    KIP-441, per thread).
``traffic`` (KIP-925)
    the configured traffic cost times the cross-rack partitions of every
    active (its inputs, or inputs and changelogs with cost partitions
    ``all``) and every standby (its changelogs).
``non_overlap``
    :math:`\\sum_{t,c} a_{tc} [t \\notin \\text{active}_c] + s_{tc} [t \\notin \\text{standby}_c]`:
    placements not in the instance's current assignment.

Hard rules (violations besides the evaluator's): no stateful task has more
than :math:`k` standbys (``standby_excess``). The default order is the one
above; ``config.joint_priorities`` (or ``kipopt solve --priorities``) puts the
named stages first. The rule's scalar objective encodes the vector
lexicographically: :math:`\\sum_i v_i \\prod_{j > i} (U_j + 1)` with
:math:`U_j` an upper bound of stage :math:`j` on any assignment that meets the
hard rules, so scalar order is lexicographic order (Python integers, exact).

Two clients on racks a and b; the task's input lives on b, and only ``y`` is
caught up: caught-up wins over traffic in the default order.

>>> from kipopt.instance import from_dict
>>> from kipopt.solution import TaskRoles
>>> x = from_dict({"format": 1, "family": "tasks",
...     "topics": {"in": {"racks": [["b"]]}, "cl": {"racks": [["a"]]}},
...     "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"], "end_offset": 500}},
...     "clients": {"x": {"rack": "b", "active": ["0_0"], "lags": {"0_0": 400}},
...                 "y": {"rack": "a", "lags": {"0_0": 0}}},
...     "config": {"acceptable_recovery_lag": 100}})
>>> scores = JointScores.of(x)
>>> scores.stages(x, {"x": TaskRoles(("0_0",)), "y": TaskRoles()})
{'caught_up': 1, 'standbys': 0, 'tags': 0, 'balance': 0, 'traffic': 0, 'non_overlap': 0}
>>> scores.stages(x, {"x": TaskRoles(), "y": TaskRoles(("0_0",))})
{'caught_up': 0, 'standbys': 0, 'tags': 0, 'balance': 0, 'traffic': 10, 'non_overlap': 1}
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from kipopt.costs import cross_rack_partitions
from kipopt.evaluation.tasks import Best, most_caught_up, tag_keys
from kipopt.errors import InstanceError
from kipopt.instance import JOINT_STAGES, TasksInstance, read_priorities
from kipopt.methods import Rule, Violation
from kipopt.solution import TaskRoles

EXAMPLES = 5


def priority_order(instance: TasksInstance, override: Sequence[str] | None = None) -> tuple[str, ...]:
    """The full stage order: the named stages first (``override``, else the instance's), then the rest.

    >>> from kipopt.instance import TasksInstance
    >>> priority_order(TasksInstance({}, {}, {}), ["traffic"])
    ('traffic', 'caught_up', 'standbys', 'tags', 'balance', 'non_overlap')
    """
    named = tuple(override) if override is not None else instance.config.joint_priorities
    return named + tuple(s for s in JOINT_STAGES if s not in named)


def parse_priorities(text: str) -> tuple[str, ...]:
    """``--priorities a,b,c`` as validated stage names.

    >>> parse_priorities("traffic, caught_up")
    ('traffic', 'caught_up')
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise InstanceError("--priorities", "expected a comma-separated list of stages: " + ", ".join(JOINT_STAGES))
    return read_priorities(names, "--priorities")


@dataclass(frozen=True)
class JointScores:
    """Everything the stages need from an instance, computed once (linear in its size)."""

    standbys: int
    best: Mapping[str, Best]
    keys: tuple[str, ...]
    ideal_per_task: int
    window: Mapping[str, tuple[int, int]]
    bounds: Mapping[str, int]

    @classmethod
    def of(cls, instance: TasksInstance) -> "JointScores":
        """The scores of ``instance`` (the last instance's are kept: the façade scores one assignment
        several times, for its objective, its criteria and its violations)."""
        global _last
        seen = _last  # read once: another thread may replace it between a test and a use
        if seen is not None and seen[0]() is instance:
            return seen[1]
        scores = cls._build(instance)
        _last = (weakref.ref(instance), scores)
        return scores

    @classmethod
    def _build(cls, instance: TasksInstance) -> "JointScores":
        clients = instance.clients
        k = min(instance.config.num_standby_replicas, len(clients) - 1)
        stateful = sum(1 for t in instance.tasks.values() if t.stateful)
        keys = tag_keys(instance)
        ideal = sum(min(k + 1, len({c.tags[g] for c in clients.values() if g in c.tags})) for g in keys)
        total = len(instance.tasks) + k * stateful
        threads = sum(c.capacity for c in clients.values())
        window = {cid: ((c.capacity * total) // threads, -((-c.capacity * total) // threads))
                  for cid, c in clients.items()}
        most = len(instance.tasks) + stateful
        cost_parts = sum(len(instance.cost_partitions(t, "active")) + k * len(instance.cost_partitions(t, "standby"))
                         for t in instance.tasks)
        bounds = {
            "caught_up": stateful, "standbys": k * stateful, "tags": ideal * stateful,
            "balance": sum(max(most - hi, lo) for lo, hi in window.values()),
            "traffic": instance.config.traffic_cost * cost_parts, "non_overlap": total,
        }
        return cls(k, most_caught_up(instance), keys, ideal, window, bounds)

    def stages(self, instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> dict[str, int]:
        """The value of every stage (default order) for ``assignment``."""
        tasks, clients = instance.tasks, instance.clients
        caught = traffic = moved = balance = 0
        copies: dict[str, int] = {}
        seen: dict[str, dict[str, set[str]]] = {}
        for cid, roles in assignment.items():
            client = clients[cid]
            for role, placed, before in (("active", roles.active, client.active),
                                         ("standby", roles.standby, client.standby)):
                before = set(before)
                for t in placed:
                    traffic += cross_rack_partitions(instance, t, client.rack, role)
                    moved += t not in before
                    if not tasks[t].stateful:
                        continue
                    if role == "active":
                        caught += not self.best[t].holds(cid, t in client.lags)
                    else:
                        copies[t] = copies.get(t, 0) + 1
                    values = seen.setdefault(t, {})
                    for g in self.keys:
                        if g in client.tags:
                            values.setdefault(g, set()).add(client.tags[g])
            n = len(roles.active) + len(roles.standby)
            lo, hi = self.window[cid]
            balance += max(0, n - hi) + max(0, lo - n)
        stateful = [t for t in instance.task_ids if tasks[t].stateful]
        distinct = sum(len(v) for values in seen.values() for v in values.values())
        return {
            "caught_up": caught,
            "standbys": sum(max(0, self.standbys - copies.get(t, 0)) for t in stateful),
            "tags": self.ideal_per_task * len(stateful) - distinct,
            "balance": balance,
            "traffic": traffic * instance.config.traffic_cost,
            "non_overlap": moved,
        }

    def scalar(self, values: Mapping[str, float], order: Sequence[str]) -> int:
        """The lexicographic encoding of stage ``values`` in ``order`` (each clamped to its bound)."""
        out = 0
        for stage in order:
            bound = self.bounds[stage]
            out = out * (bound + 1) + min(max(int(round(values[stage])), 0), bound)
        return out

    def excess(self, instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[str]:
        copies: dict[str, int] = {}
        for roles in assignment.values():
            for t in roles.standby:
                copies[t] = copies.get(t, 0) + 1
        return [f"{t} has {n} standbys, more than min(num_standby_replicas, clients - 1) = {self.standbys}"
                for t, n in sorted(copies.items()) if n > self.standbys]


def tag_values(instance: TasksInstance) -> list[tuple[str, str]]:
    """Every (tag key, value) pair that counts, key by key, values sorted."""
    clients = instance.clients.values()
    return [(g, v) for g in tag_keys(instance) for v in sorted({c.tags[g] for c in clients if g in c.tags})]


_last: tuple[Callable[[], TasksInstance | None], JointScores] | None = None


def first_shortfall(values: Mapping[str, int], optimum: Mapping[str, int], order: Sequence[str]
                    ) -> tuple[str | None, int]:
    """The first stage (in ``order``) where ``values`` differ from ``optimum``, and by how much.

    >>> first_shortfall({"a": 0, "b": 3}, {"a": 0, "b": 1}, ["a", "b"])
    ('b', 2)
    >>> first_shortfall({"a": 1}, {"a": 1}, ["a"])
    (None, 0)
    """
    for stage in order:
        if values[stage] != optimum[stage]:
            return stage, values[stage] - optimum[stage]
    return None, 0


def staging_table(instance: TasksInstance, assignments: Mapping[str, Mapping[str, TaskRoles]],
                  reference: str = "exact.joint", priorities: Sequence[str] | None = None) -> list[dict]:
    """One row per assignment: its value at every stage, and where it first falls short of ``reference``.

    ``assignments`` maps a name (a method) to an assignment; ``reference`` names
    the one to compare with (the joint optimum).
    """
    scores = JointScores.of(instance)
    order = priority_order(instance, priorities)
    vectors = {name: scores.stages(instance, a) for name, a in assignments.items()}
    best = vectors[reference]
    rows = []
    for name, values in vectors.items():
        stage, by = first_shortfall(values, best, order)
        rows.append({"method": name, **{s: values[s] for s in order}, "first_shortfall": stage, "shortfall": by})
    return rows


def joint_objective(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> int:
    scores = JointScores.of(instance)
    return scores.scalar(scores.stages(instance, assignment), priority_order(instance))


def joint_criteria(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> dict[str, int]:
    """Every stage's value, in the instance's priority order."""
    values = JointScores.of(instance).stages(instance, assignment)
    return {stage: values[stage] for stage in priority_order(instance)}


def joint_violations(instance: TasksInstance, assignment: Mapping[str, TaskRoles]) -> list[Violation]:
    found = JointScores.of(instance).excess(instance, assignment)
    return [Violation("standby_excess", len(found), tuple(found[:EXAMPLES]))] if found else []


RULES = [
    Rule("joint", "tasks", "exact.joint", joint_objective, joint_violations,
         "every task rule at once, lexicographically: caught-up actives, standby count, tag distinctness, "
         "balance, cross-rack traffic, non-overlap (order: config.joint_priorities)", criteria=joint_criteria),
]
