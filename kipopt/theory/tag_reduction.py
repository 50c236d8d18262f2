"""3-dimensional matching reduces to the KIP-708 tag rules: ``tag_standby``, ``joint`` and tagged ``rack_standby``.

Source problem (strongly NP-complete, Karp 1972): elements ``0 .. q-1`` in
each of three coordinates and triples ``E``; is there a perfect matching,
``q`` triples pairwise disjoint in every coordinate? Every element is assumed
to occur in some triple (otherwise the answer is no and nothing is built).

:func:`tag_instance` (``tag_standby``; ``joint`` under its default order):
one stateful task, active on client ``a`` (the only caught-up one, tags of
its own on keys ``k1, k2, k3``), ``num_standby_replicas = q``, and one client
per triple ``(x, y, z)`` tagged ``k1 = x, k2 = y, k3 = z``. Each key has
``q + 1`` values and the task ``q + 1`` hosts, so the tag shortfall is 0 iff
the standby clients' triples are a perfect matching (:func:`matching_of`).

:func:`rack_standby_instance` (``rack_standby`` with tags, Kafka's costs 10
and 1): the task's ``q`` standbys start on dummy clients with tags of their
own in rack ``rb``, where its changelog has no replica; each triple client
(rack ``ra``) starts with the standby of a filler task whose changelog is in
both racks. Per-client counts are fixed, so the task can use ``s`` triple
clients only by displacing ``s`` fillers onto the dummies it frees; its
distinctness (all ``3(q+1)`` pairs, as at the start) needs those triples
disjoint. The optimum is ``10 q − 8 ν`` with ``ν`` the largest matching
(:func:`rack_standby_optimum`): ``2 q`` iff a perfect matching exists.

Proofs: ``paper/notes/complexity.tex``, notes (b) and (c); tests in
``tests/theory/test_tag_reduction.py``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Mapping, Sequence

from kipopt.instance import TasksInstance, from_dict

Triple = tuple[int, int, int]
KEYS = ("k1", "k2", "k3")
TASK = "0_0"
TRAFFIC, NON_OVERLAP = 10, 1   # Kafka's defaults, which the instances leave unset


def _check(q: int, triples: Sequence[Triple]) -> None:
    if q < 1 or not triples or any(not 0 <= v < q for t in triples for v in t):
        raise ValueError("need q >= 1 and triples of elements 0 .. q-1")
    if any({t[k] for t in triples} != set(range(q)) for k in range(3)):
        raise ValueError("every element must occur in some triple")


def _own_tags(prefix: str) -> dict[str, str]:
    return {k: f"{prefix}.{k}" for k in KEYS}


def _triple_tags(t: Triple) -> dict[str, str]:
    return {k: f"{k}={v}" for k, v in zip(KEYS, t)}


def tag_instance(q: int, triples: Sequence[Triple]) -> TasksInstance:
    """One task, its active on ``a`` (the only caught-up client), ``q`` standbys to place among the triples."""
    _check(q, triples)
    clients = {"a": {"tags": _own_tags("a"), "active": [TASK], "lags": {TASK: 0}}}
    clients.update({f"e{i}": {"tags": _triple_tags(t)} for i, t in enumerate(triples)})
    return from_dict({
        "format": 1, "family": "tasks",
        "topics": {"in": {"racks": [[]]}, "cl": {"racks": [[]]}},
        "tasks": {TASK: {"inputs": ["in-0"], "changelogs": ["cl-0"], "stateful": True, "end_offset": 1000}},
        "clients": clients,
        "config": {"num_standby_replicas": q, "acceptable_recovery_lag": 0, "rack_aware_assignment_tags": list(KEYS)}})


def rack_standby_instance(q: int, triples: Sequence[Triple]) -> TasksInstance:
    """The task's standbys start on ``q`` dummies off its changelog's rack; fillers occupy the triple clients."""
    _check(q, triples)
    n = len(triples)
    fillers = [f"1_{i}" for i in range(n)]
    clients = {"a": {"rack": "ra", "tags": _own_tags("a"), "active": [TASK]},
               "f": {"rack": "ra", "tags": _own_tags("f"), "active": fillers}}
    clients.update({f"e{i}": {"rack": "ra", "tags": _triple_tags(t), "standby": [fillers[i]]}
                    for i, t in enumerate(triples)})
    clients.update({f"d{j}": {"rack": "rb", "tags": _own_tags(f"d{j}"), "standby": [TASK]} for j in range(q)})
    tasks = {TASK: {"inputs": ["in-0"], "changelogs": ["cl-0"], "stateful": True, "end_offset": 1000}}
    tasks.update({f: {"inputs": [f"in-{i + 1}"], "changelogs": [f"fl-{i}"], "stateful": True, "end_offset": 1000}
                  for i, f in enumerate(fillers)})
    return from_dict({
        "format": 1, "family": "tasks",
        "topics": {"in": {"racks": [["ra", "rb"]] * (n + 1)}, "cl": {"racks": [["ra"]]},
                   "fl": {"racks": [["ra", "rb"]] * n}},
        "tasks": tasks, "clients": clients,
        "config": {"num_standby_replicas": q, "rack_aware_assignment_strategy": "min_traffic",
                   "rack_aware_assignment_tags": list(KEYS)}})


def tag_solution(triples: Sequence[Triple], matching: Sequence[Triple]) -> dict:
    """The solution object of (⇐) for :func:`tag_instance`: the task's standbys on the matching's clients."""
    clients = {"a": {"active": [TASK], "standby": []}}
    clients.update({f"e{i}": {"active": [], "standby": [TASK] if t in matching else []}
                    for i, t in enumerate(triples)})
    return {"assignment": clients}


def rack_standby_solution(q: int, triples: Sequence[Triple], matching: Sequence[Triple]) -> dict:
    """The solution object of (⇐) for :func:`rack_standby_instance`: the task moves onto the matching's
    clients, each filler it displaces onto a dummy the task left."""
    used = [i for i, t in enumerate(triples) if t in matching]
    clients = {"a": {"active": [TASK], "standby": []},
               "f": {"active": [f"1_{i}" for i in range(len(triples))], "standby": []}}
    clients.update({f"e{i}": {"active": [], "standby": [TASK if i in used else f"1_{i}"]}
                    for i in range(len(triples))})
    displaced = [f"1_{i}" for i in used]
    clients.update({f"d{j}": {"active": [], "standby": [displaced[j] if j < len(displaced) else TASK]}
                    for j in range(q)})
    return {"assignment": clients}


def matching_of(assignment: Mapping, triples: Sequence[Triple]) -> list[Triple]:
    """The certificate: the triples of the triple clients holding a standby of the task."""
    return [triples[int(c[1:])] for c, roles in assignment.items()
            if c.startswith("e") and TASK in roles.standby]


def is_matching(chosen: Sequence[Triple]) -> bool:
    return all(len({t[k] for t in chosen}) == len(chosen) for k in range(3))


def largest_matching(q: int, triples: Sequence[Triple]) -> int:
    """ν: the most pairwise disjoint triples, by enumeration (small instances only)."""
    for size in range(min(q, len(triples)), 0, -1):
        if any(is_matching(c) for c in combinations(triples, size)):
            return size
    return 0


def rack_standby_optimum(q: int, triples: Sequence[Triple]) -> int:
    """What the proof says ``rack_standby``'s optimum is: ``s`` triples used cost ``2 s + 10 (q − s)``."""
    return TRAFFIC * q - (TRAFFIC - 2 * NON_OVERLAP) * largest_matching(q, triples)
