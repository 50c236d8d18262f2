"""Set cover reduces to the KIP-441 rule ``lag_active``: its sub-topology spread stage is strongly NP-hard.

The rule (:mod:`kipopt.formulations.tasks.rules`), lexicographically: ``N``
stateful actives off a most caught-up client, ``B`` thread imbalance beyond
the balance factor 1, ``S = Σ_g (max_c n_{c,g} − min_c n_{c,g})`` over all
clients, ``M`` movements.

Source problem (strongly NP-hard, Karp 1972): sets ``S_1 .. S_k`` over
elements ``0 .. n-1``, every element in some set; ``τ`` the fewest sets that
cover every element.

Construction (:func:`lag_instance`), every client with one thread, every
task stateful and caught up exactly where stated (elsewhere it has no state):

* client ``d`` and clients ``u<e>`` (elements) and ``s<i>_<e>`` (sinks, one
  per set i and element e of it); ``L = 1 + max degree``;
* sub-topology 0 (padding): tasks caught up on one client only, so that
  ``d`` and every sink hold ``L`` of them and element e holds ``L − 1 − deg(e)``;
* sub-topology i (set ``S_i``): per element e of ``S_i`` a *base* task caught
  up on ``u<e>`` only, and a *free* task caught up on ``u<e>`` and ``s<i>_<e>``.

Stage 1 (0) puts every task on a caught-up client, so only free tasks
choose. ``d`` holds ``L`` and nothing of sub-topologies i ≥ 1, so each of
those has minimum 0 and maximum 1 (every ``u<e>`` of ``S_i`` holds its base
task, a sink at most one task of i) or 2 when a free task of i goes to its
element: set i is then *used*. Stage 2 is 0 (all totals in ``{L, L+1}``;
reachable: one free task to each element, from any set containing it), and
then every element, starting at ``L − 1``, receives one or two free tasks, so
the used sets cover the elements (totals ``{L − 1, L}`` would put every free
task on its element: every set used). Hence the optimal stage 3 is
``S_0 + k + τ`` with ``S_0`` the padding's constant spread
(:func:`expected_spread`), and the used sets of an optimum are a smallest
cover (:func:`cover_of`). Numbers are unary (tasks are listed), so the
hardness is strong.

Proof: ``paper/notes/complexity.tex``, note (d); tests in ``tests/theory/test_lag_reduction.py``.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Mapping, Sequence

from kipopt.instance import TasksInstance, from_dict

Sets = Sequence[Sequence[int]]


def _check(elements: int, sets: Sets) -> None:
    if elements < 1 or any(not s for s in sets) or any(not 0 <= e < elements for s in sets for e in s):
        raise ValueError("need elements >= 1 and non-empty sets of elements 0 .. elements-1")
    if {e for s in sets for e in s} != set(range(elements)):
        raise ValueError("every element must be in some set")


def _degrees(elements: int, sets: Sets) -> list[int]:
    deg = [0] * elements
    for s in sets:
        for e in set(s):
            deg[e] += 1
    return deg


def _padding(elements: int, sets: Sets) -> dict[str, int]:
    """Client -> padding tasks (sub-topology 0) caught up there only."""
    deg = _degrees(elements, sets)
    level = 1 + max(deg)
    pad = {"d": level}
    pad.update({f"u{e}": level - 1 - deg[e] for e in range(elements)})
    pad.update({f"s{i}_{e}": level for i, s in enumerate(sets) for e in sorted(set(s))})
    return pad


def lag_instance(elements: int, sets: Sets) -> TasksInstance:
    """The ``lag_active`` instance of the module docstring."""
    _check(elements, sets)
    caught: dict[str, list[str]] = defaultdict(list)   # client -> tasks caught up there
    tasks: list[str] = []

    def task(sub: int, index: int, on: Sequence[str]) -> None:
        tid = f"{sub}_{index}"
        tasks.append(tid)
        for c in on:
            caught[c].append(tid)

    n = 0
    for client, count in _padding(elements, sets).items():
        for _ in range(count):
            task(0, n, [client])
            n += 1
    for i, s in enumerate(sets, start=1):
        for j, e in enumerate(sorted(set(s))):
            task(i, 2 * j, [f"u{e}"])
            task(i, 2 * j + 1, [f"u{e}", f"s{i - 1}_{e}"])
    clients = {c: {"lags": {t: 0 for t in caught.get(c, [])}} for c in _padding(elements, sets)}
    return from_dict({
        "format": 1, "family": "tasks",
        "topics": {"in": {"racks": [[]] * len(tasks)}, "cl": {"racks": [[]] * len(tasks)}},
        "tasks": {t: {"inputs": [f"in-{k}"], "changelogs": [f"cl-{k}"], "stateful": True, "end_offset": 1000}
                  for k, t in enumerate(tasks)},
        "clients": clients,
        "config": {"acceptable_recovery_lag": 0, "num_standby_replicas": 0}})


def lag_solution(elements: int, sets: Sets, cover: Sequence[int]) -> dict:
    """The solution object of a cover (indices into ``sets``): each element's free task from the first
    covering set goes to the element, every other free task to its sink, every other task where it is
    caught up."""
    _check(elements, sets)
    if {e for i in cover for e in sets[i]} != set(range(elements)):
        raise ValueError("not a cover")
    active: dict[str, list[str]] = defaultdict(list)
    n = 0
    for client, count in _padding(elements, sets).items():
        active[client] += [f"0_{n + k}" for k in range(count)]
        n += count
    served: set[int] = set()
    for i, s in enumerate(sets):
        for j, e in enumerate(sorted(set(s))):
            active[f"u{e}"].append(f"{i + 1}_{2 * j}")
            take = i in cover and e not in served
            served |= {e} if take else set()
            active[f"u{e}" if take else f"s{i}_{e}"].append(f"{i + 1}_{2 * j + 1}")
    return {"assignment": {c: {"active": active.get(c, []), "standby": []} for c in _padding(elements, sets)}}


def cover_of(assignment: Mapping, sets: Sets) -> list[int]:
    """The certificate: the sets one of whose free tasks is active on its element's client."""
    used = set()
    for client, roles in assignment.items():
        if client.startswith("u"):
            e = int(client[1:])
            for t in roles.active:
                sub, index = map(int, t.split("_"))
                if sub >= 1 and index % 2 == 1 and sorted(set(sets[sub - 1]))[index // 2] == e:
                    used.add(sub - 1)
    return sorted(used)


def smallest_cover(elements: int, sets: Sets) -> int:
    """τ by enumeration (small instances only)."""
    for size in range(1, len(sets) + 1):
        if any({e for i in c for e in sets[i]} == set(range(elements))
               for c in combinations(range(len(sets)), size)):
            return size
    raise ValueError("every element must be in some set")


def expected_spread(elements: int, sets: Sets) -> int:
    """The proof's optimal stage 3: the padding's spread, plus 1 per set, plus τ."""
    pad = _padding(elements, sets).values()
    return max(pad) - min(pad) + len(sets) + smallest_cover(elements, sets)
