"""A consumer group's independent parts: ``balanced`` solved part by part, exactly.

The balance rule ties a member only to the subscribers of the topics it holds partitions of
(:mod:`~kipopt.formulations.consumers.rules`), and both criteria (cross-rack partitions, owned partitions
revoked) are sums over partitions. So the members and topics of each connected component of the
member-topic graph (topics with partitions) form a group of their own: an assignment is feasible iff
each restriction is, and lexicographically least iff each restriction is (the components share nothing).

The level machinery holds dense (subscription class x topic) and (node x partition group) arrays; on a
group of many small components (10,000 topics, 2,500 members each alone on four) those grow with the
square of the group where its structure does not (3.9 s, then 50.8 s at four times the size). The
components are therefore packed, in order of their first topic, into parts of at most
:data:`PART_CELLS` (classes x topics) each, and each part is solved alone, the whole time limit (the
method's default when none is given) shared in proportion to partitions, then the time the proven parts
left shared among the unproven ones for a second turn; a component above the limit is a part of its own,
and a group that packs into one part is solved whole, as before.

Ownership is resolved once, over every claim of the group (:func:`~kipopt.formulations.consumers.rules.owners`):
each part's members claim exactly the partitions they own, so every part resolves them alike. A partition
owned by a member outside its topic's part (a claim on a topic it does not subscribe to) is revoked
whatever the assignment: ``R_out``, a constant.

Objective and bound. The group's objective is ``W X + R`` with ``W = O + 1`` (``O`` owned partitions), a
part's ``W_p X_p + R_p`` with ``W_p = O_p + 1``. A part's bound ``b_p`` bounds ``(X_p, R_p)``
lexicographically by ``(q_p, r_p) = divmod(b_p, W_p)``, so (``Σ r_p <= O < W``)::

    W X + R  >=  W Σ q_p + Σ r_p + R_out

with equality when every part is proven optimal (``b_p`` its objective): the group is then optimal.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from typing import Callable

from kipopt.instance import ConsumersInstance
from kipopt.methods import MethodResult, SolveOptions, Status

from kipopt.formulations.consumers.rules import balanced_objective, owners, topic_of

PART_CELLS = 250_000
"""The most (subscription classes x topics) of a part packed from several components. Measured on groups of
members each alone on four topics (2026-12-02): 250 such members solve in 0.12 s, 2,500 in one part 6.9 s."""


@dataclass(frozen=True)
class Part:
    """Members (indices into the group's members) and topics of one or more components."""

    members: tuple[int, ...]
    topics: tuple[str, ...]


def parts(instance: ConsumersInstance, cells: int | None = None) -> list[Part]:
    """The group's components packed into parts (at most ``cells``, by default :data:`PART_CELLS`, classes x
    topics unless alone); one part when the group is one component or packs into one."""
    cells = PART_CELLS if cells is None else cells
    topics = [t for t, topic in instance.topics.items() if topic.partitions > 0]
    index = {t: i for i, t in enumerate(topics)}
    root = list(range(len(topics)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for m in instance.members:
        mine = [index[t] for t in m.topics if t in index]
        for i in mine[1:]:
            a, b = find(mine[0]), find(i)
            if a != b:
                root[max(a, b)] = min(a, b)
    component_topics: dict[int, list[str]] = {}
    for t in topics:
        component_topics.setdefault(find(index[t]), []).append(t)
    component_members: dict[int, list[int]] = {c: [] for c in component_topics}
    for i, m in enumerate(instance.members):
        first = next((index[t] for t in m.topics if t in index), None)
        if first is not None:
            component_members[find(first)].append(i)
    return _packed([(component_members[c], ts) for c, ts in component_topics.items() if component_members[c]],
                   instance, cells)


def _packed(components: list[tuple[list[int], list[str]]], instance: ConsumersInstance, cells: int) -> list[Part]:
    """Consecutive components into parts while (classes x topics) stays within ``cells``."""
    out: list[Part] = []
    members: list[int] = []
    topics: list[str] = []
    classes: set[frozenset[str]] = set()
    for ms, ts in components:
        mine = {frozenset(instance.members[i].topics) for i in ms}
        if members and (len(classes) + len(mine)) * (len(topics) + len(ts)) > cells:
            out.append(Part(tuple(members), tuple(topics)))
            members, topics, classes = [], [], set()
        members.extend(ms)
        topics.extend(ts)
        classes |= mine
    if members:
        out.append(Part(tuple(members), tuple(topics)))
    return out


def sub_instance(instance: ConsumersInstance, part: Part, owned: dict[str, list[str]]) -> ConsumersInstance:
    """The part as a group of its own: its topics, its members subscribed to those alone, each claiming
    exactly the partitions of the part it owns in the whole group (``owned``: member -> what it owns)."""
    mine = set(part.topics)
    members = []
    for i in part.members:
        m = instance.members[i]
        keep = tuple(p for p in owned.get(m.id, ()) if topic_of(p) in mine)
        members.append(replace(m, topics=tuple(t for t in m.topics if t in mine), owned=keep))
    return ConsumersInstance({t: instance.topics[t] for t in part.topics}, tuple(members))


@dataclass
class _Solved:
    """A part's best answer and best bound over its turns, both in its own units."""

    sub: ConsumersInstance
    size: int
    result: MethodResult | None = None
    bound: float = 0.0

    def take(self, result: MethodResult) -> None:
        if self.result is None or (result.objective is not None and self.result.objective is not None
                                   and result.objective < self.result.objective):
            self.result = result
        if result.bound is not None and math.isfinite(result.bound):
            self.bound = max(self.bound, float(result.bound))

    @property
    def proven(self) -> bool:
        return self.result is not None and self.result.objective is not None and self.bound >= self.result.objective


def solve_parts(instance: ConsumersInstance, found: list[Part], options: SolveOptions,
                solve_one: Callable[[ConsumersInstance, SolveOptions], MethodResult],
                default_seconds: float) -> MethodResult:
    """``solve_one(sub_instance, options)`` on each part, the time limit (``default_seconds`` when none is
    given) shared by partitions; then, with the time the proven parts left, the unproven ones once more
    (each keeps its better answer and bound). The answers are joined with the bound of the module
    docstring (raised where all parts are proven and it misses the joined answer's objective: a defect,
    never a silent answer)."""
    owner_of = owners(instance)
    owned: dict[str, list[str]] = {}
    for p, m in owner_of.items():
        owned.setdefault(m, []).append(p)
    deadline = options.deadline_at if options.deadline_at is not None else \
        time.perf_counter() + (default_seconds if options.time_limit is None else options.time_limit)
    solved = [_Solved(sub_instance(instance, part, owned), sum(instance.topics[t].partitions for t in part.topics))
              for part in found]
    _turns(solved, list(range(len(solved))), options, solve_one, deadline)
    again = [k for k, one in enumerate(solved) if not one.proven]
    if again and deadline - time.perf_counter() > RETRY_LEAST_SECONDS:
        _turns(solved, again, options, solve_one, deadline)
    return _joined(instance, found, solved, owner_of)


RETRY_LEAST_SECONDS = 0.5
"""The unproven parts get a second turn only with at least this much time left for them all."""


def _turns(solved: list[_Solved], order: list[int], options: SolveOptions,
           solve_one: Callable[[ConsumersInstance, SolveOptions], MethodResult], deadline: float) -> None:
    """A turn for each part of ``order``, the time to ``deadline`` shared by partitions."""
    for at, k in enumerate(order):
        left = sum(solved[j].size for j in order[at:])
        share = max(0.01, deadline - time.perf_counter()) * solved[k].size / max(1, left)
        solved[k].take(solve_one(solved[k].sub, replace(options, time_limit=share,
                                                         deadline_at=time.perf_counter() + share)))


def _joined(instance: ConsumersInstance, found: list[Part], solved: list[_Solved],
            owner_of: dict[str, str]) -> MethodResult:
    """The parts' answers as one, with the joined bound."""
    member_part = {instance.members[i].id: k for k, part in enumerate(found) for i in part.members}
    topic_part = {t: k for k, part in enumerate(found) for t in part.topics}
    outside = sum(1 for p, m in owner_of.items() if member_part.get(m) != topic_part.get(topic_of(p)))
    assignment: dict[str, tuple[str, ...]] = {m.id: () for m in instance.members}
    low_cross = low_rest = 0
    statuses: dict[str, int] = {}
    messages = []
    for k, one in enumerate(solved):
        assignment.update(one.result.assignment)
        status = Status.OPTIMAL if one.proven else Status.FEASIBLE
        statuses[status.value] = statuses.get(status.value, 0) + 1
        if one.result.message and not one.proven:
            messages.append(f"part {k + 1}: {one.result.message}")
        q, r = divmod(max(0, math.floor(one.bound + 1e-9)), len(owners(one.sub)) + 1)
        low_cross, low_rest = low_cross + q, low_rest + r
    objective = balanced_objective(instance, assignment)
    bound = float((len(owner_of) + 1) * low_cross + low_rest + outside)
    all_proven = statuses.get(Status.OPTIMAL.value, 0) == len(found)
    if bound > objective + 1e-9 or (all_proven and bound != objective):
        raise RuntimeError(f"exact.balanced by parts: bound {bound} against the joined objective {objective}")
    proven = bound == objective   # also where a part's fallback answer meets its bound
    info = {"parts": len(found), "part_statuses": statuses}
    return MethodResult(assignment, Status.OPTIMAL if proven else Status.FEASIBLE, objective, bound,
                        message=None if proven else "; ".join(messages[:3]) or None, info=info)
