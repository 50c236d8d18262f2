"""The classes of ``exact.lag_active`` (:mod:`.lag_active`): what the ``lag_active`` rule reads of an
instance, in index form, read once and linearly.

The rule reads a task's lags only through its most caught-up clients ``MC(t)``
(and its owners, its sub-topology), so tasks with equal (sub-topology, ``MC``,
owners in ``MC``) form one class; tasks any client may take with at most one
owner form their sub-topology's pool. Nothing here is ever a tasks × clients
array: the lags are read as the clients list them.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from kipopt.evaluation.tasks import lag_ranks
from kipopt.instance import TasksInstance
from kipopt.solution import TaskRoles


@dataclass(frozen=True)
class LagProblem:
    """Index form, flat. Task i is in class ``task_class[i]`` (``-1``: in its sub-topology's pool, owned by
    client ``pool_owner[i]`` or no one, ``-1``). Class κ has ``class_size[κ]`` tasks of sub-topology index
    ``class_group[κ]``, allowed on clients ``arc_client[class_ptr[κ]:class_ptr[κ+1]]`` (ascending), which
    own them where ``arc_owned`` is true."""

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    capacity: np.ndarray
    groups: tuple[int, ...]
    task_group: np.ndarray
    task_class: np.ndarray
    pool_owner: np.ndarray
    class_group: np.ndarray
    class_size: np.ndarray
    class_ptr: np.ndarray
    arc_client: np.ndarray
    arc_owned: np.ndarray

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    @property
    def num_classes(self) -> int:
        return len(self.class_group)

    @property
    def arc_class(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_classes), np.diff(self.class_ptr))


def lag_problem(instance: TasksInstance) -> LagProblem:
    """Pools and classes of :mod:`this module <kipopt.formulations.tasks.lag_active>`: one pass over the
    tasks, with the lags read as the clients list them (never a tasks × clients array)."""
    tasks, clients = instance.task_ids, instance.client_ids
    cindex = {c: j for j, c in enumerate(clients)}
    groups = instance.subtopologies
    task_group = np.searchsorted(np.array(groups), np.asarray(instance.task_subtopologies)).astype(np.int64)
    owners: dict[str, list[int]] = defaultdict(list)
    for c in clients:
        for t in set(instance.clients[c].active):
            owners[t].append(cindex[c])
    best = _best_clients(instance, cindex)
    classes: dict[tuple, int] = {}
    task_class = np.full(len(tasks), -1, dtype=np.int64)
    pool_owner = np.full(len(tasks), -1, dtype=np.int64)
    arcs: list[tuple[int, ...]] = []
    marks: list[list[bool]] = []
    group_of: list[int] = []
    for i, t in enumerate(tasks):
        mine = owners.get(t, ())
        allowed = best[i]
        if len(allowed) == len(clients):
            if len(mine) <= 1:
                pool_owner[i] = mine[0] if mine else -1
                continue
        g = int(task_group[i])
        mark = tuple(c in mine for c in allowed) if mine else ()
        key = (g, allowed, mark)
        k = classes.get(key)
        if k is None:
            k = classes[key] = len(arcs)
            arcs.append(allowed)
            marks.append(list(mark) if mine else [False] * len(allowed))
            group_of.append(g)
        task_class[i] = k
    sizes = np.array([len(a) for a in arcs], dtype=np.int64)
    return LagProblem(
        tasks, clients, np.array([instance.clients[c].capacity for c in clients], dtype=np.int64), groups,
        task_group, task_class, pool_owner, np.array(group_of, dtype=np.int64),
        np.bincount(task_class[task_class >= 0], minlength=len(arcs)).astype(np.int64),
        np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        np.fromiter((c for a in arcs for c in a), dtype=np.int64, count=int(sizes.sum())),
        np.fromiter((m for ms in marks for m in ms), dtype=bool, count=int(sizes.sum())))


def _best_clients(instance: TasksInstance, cindex: Mapping[str, int]) -> list[tuple[int, ...]]:
    """Per task (``task_ids`` order), the indices (ascending) of its most caught-up clients (lag rank 0
    within ``acceptable_recovery_lag``, else the lag; the end offset where a client lists no lag); every
    client for a stateless task.

    Read from the evaluator's arrays of the lags the clients list (:func:`~kipopt.evaluation.tasks.lag_ranks`),
    never from a tasks × clients array (3.7 GiB at 100,000 × 5,000): only a task whose silent clients tie
    for the least rank costs one step per client.
    """
    r = lag_ranks(instance)
    T, C = len(r.stateful), len(cindex)
    mine = np.fromiter((cindex[c] for c in r.client_index), dtype=np.int64, count=C)  # instance order -> ours
    task, client = r.entry_key % T, mine[r.entry_key // T]
    order = np.lexsort((client, task))
    task, client, best = task[order], client[order], r.entry_best[order]
    ptr = np.searchsorted(task, np.arange(T + 1))
    everyone = tuple(range(C))
    good = client[best]
    good_ptr = np.searchsorted(task[best], np.arange(T + 1))
    out: list[tuple[int, ...]] = []
    for i, (stateful, silent) in enumerate(zip(r.stateful.tolist(), r.silent_best.tolist())):
        if not stateful:
            out.append(everyone)
        elif silent:  # every client but those listing a worse lag
            worse = set(client[ptr[i]:ptr[i + 1]][~best[ptr[i]:ptr[i + 1]]].tolist())
            out.append(everyone if not worse else tuple(j for j in everyone if j not in worse))
        else:
            out.append(tuple(good[good_ptr[i]:good_ptr[i + 1]].tolist()))
    return [out[r.task_index[t]] for t in instance.task_ids]


def greedy_placement(p: LagProblem) -> np.ndarray:
    """A feasible start: owners where allowed, else the allowed client with the fewest actives per thread
    (a heap over the clients for pool tasks without an owner, never a scan of them all per task)."""
    place = np.full(len(p.tasks), -1, dtype=np.int64)
    load = np.zeros(p.num_clients, dtype=np.int64)
    ptr, arc_client, arc_owned, cap = p.class_ptr, p.arc_client, p.arc_owned, p.capacity
    owner_arc = np.full(p.num_classes, -1, dtype=np.int64)
    first = np.flatnonzero(arc_owned)
    owner_arc[p.arc_class[first][::-1]] = first[::-1]  # the first owned arc of each class
    free = []
    for i, k in enumerate(p.task_class.tolist()):
        if k >= 0:
            if owner_arc[k] >= 0:
                c = int(arc_client[owner_arc[k]])
            else:
                allowed = arc_client[ptr[k]:ptr[k + 1]]
                c = int(allowed[np.argmin(load[allowed] / cap[allowed])]) if len(allowed) > 1 else int(allowed[0])
        elif p.pool_owner[i] >= 0:
            c = int(p.pool_owner[i])
        else:
            free.append(i)
            continue
        place[i] = c
        load[c] += 1
    caps = cap.tolist()
    heap = [(load[c] / caps[c], c) for c in range(p.num_clients)]
    heapq.heapify(heap)
    for i in free:
        _, c = heapq.heappop(heap)
        place[i], load[c] = c, load[c] + 1
        heapq.heappush(heap, (load[c] / caps[c], c))
    return place


def to_assignment(tasks: tuple[str, ...], clients: tuple[str, ...], place: np.ndarray) -> dict[str, TaskRoles]:
    """Actives only: task ``i`` on client index ``place[i]``."""
    lists: list[list[str]] = [[] for _ in clients]
    for i, c in enumerate(place.tolist()):
        lists[c].append(tasks[i])
    return {cid: TaskRoles(tuple(ts)) for cid, ts in zip(clients, lists)}


def lag_columns(instance: TasksInstance) -> tuple[int, int]:
    """An upper bound on the grouped model's columns, and the sub-topologies with a pool, from the
    evaluator's lag arrays (linear, no model built): one per (task, most caught-up client it lists),
    ``|C|`` for a task whose silent clients tie with worse listed ones, ``2|C|`` per sub-topology holding
    a task every client may take (its pool), and ``2G + 3`` for the levels."""
    r = lag_ranks(instance)
    T, C, G = len(r.stateful), len(instance.clients), len(instance.subtopologies)
    task = r.entry_key % T
    worse = np.bincount(task[~r.entry_best], minlength=T) > 0
    anywhere = ~r.stateful | (r.silent_best & ~worse)
    listed = np.bincount(task[r.entry_best & ~r.silent_best[task]], minlength=T)
    order = np.fromiter((r.task_index[t] for t in instance.task_ids), dtype=np.int64, count=T)
    pools = len(np.unique(np.asarray(instance.task_subtopologies)[anywhere[order]]))
    return int(listed.sum()) + C * int((r.silent_best & worse).sum()) + 2 * C * pools + 2 * G + 3, pools
