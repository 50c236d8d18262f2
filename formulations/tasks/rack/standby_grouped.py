"""``exact.rack_standby`` grouped: clients by (rack, tag profile), per-task rows kept.

The method itself solves the coarser class model of
:mod:`kipopt.formulations.tasks.rack.standby_classes` (tasks of one cost profile
aggregated); this per-(task, group) model is its cross-check and its fallback
when the class model's patterns would be too many, and the group read-back and
the rounds that split stuck groups (:func:`read_back`, :func:`split_rounds`)
serve both.

The standby problem of :mod:`kipopt.formulations.tasks.rack.standby_model` has a
column per (task, client) pair: 6.9 million at 10,000 tasks × 1,000
clients. But a standby's cost depends on the client only through its rack
and on whether the client held that standby before, and tag distinctness
only through the client's tag profile. So clients with one (rack, tag
profile) form a *group* ``g``, and per task ``t`` and group ``g`` two
columns suffice:

* ``kept[t, g]`` ≤ the number of clients of ``g`` holding ``t`` as a
  standby now, at cost ``traffic(t, rack g)``;
* ``new[t, g]`` ≤ the number of clients of ``g`` neither holding ``t`` nor
  active on it, at that cost plus ``non_overlap_cost``.

Rows: per task, its copies; per group, the sum of its clients' standby
counts; with tags configured, the covering rows of
:func:`~kipopt.formulations.tasks.rack.standby_model.tag_cover` over groups. The
per-client count rows vanish: a client's kept copies never exceed its count
(it held every one of them), and the rest of its count is filled by new
copies below.

Every client-level placement maps onto this model at the same cost, so its
optimum is a lower bound. Reading it back is a b-matching per group: each
group's clients take exactly their counts, each task its ``kept`` copies on
clients that held them and its ``new`` copies on distinct other clients, never
one where it is active. :func:`disaggregate` fills the clients with the most
room left first (the Gale–Ryser order, exact when no pair is forbidden),
tasks with most copies and most forbidden clients first, and when a task is
left with only forbidden clients it swaps with a placed copy. A placement
found this way costs exactly the bound, so it is optimal.

Groups can be too coarse: in a rack of two clients, the tasks active on one
can only stand by on the other, which the group's total does not see. Where
the read-back is stuck, :func:`split_rounds` takes the clients left with
room out of their group and solves again (a group stuck twice is split
whole). A single client is always read back, so this ends, at worst in the
client-level model; on large groups it ends in the first round.

Without tags the model is a transportation problem (totally unimodular); with
tags the LP is solved first and the ILP only when the LP's vertex is
fractional, as in the client-level model.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kipopt.instance import TasksInstance

from kipopt.formulations.highs import Deadline
from kipopt.formulations.tasks.rack.model import rack_index, traffic_matrix
from kipopt.formulations.tasks.rack.standby_model import (StandbyProblem, TagCover, carried_pairs, overlap_counts, pairs_of, solve_standby,
                                  standby_problem, tag_cover)
from kipopt.formulations.tasks.rack.standby_start import dominating_start


@dataclass(frozen=True)
class Roles:
    """(task, client) index pairs of one role, sorted by task, with per-task slices."""

    task: np.ndarray
    client: np.ndarray
    ptr: np.ndarray

    @classmethod
    def of(cls, instance: TasksInstance, role: str, tindex: dict[str, int], T: int) -> Roles:
        lists = [getattr(instance.clients[c], role) for c in instance.client_ids]
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        task = np.fromiter(map(tindex.__getitem__, itertools.chain.from_iterable(lists)), dtype=np.int64,
                           count=int(sizes.sum()))
        client = np.repeat(np.arange(len(lists), dtype=np.int64), sizes)
        order = np.argsort(task * max(len(lists), 1) + client, kind="stable")
        ptr = np.concatenate(([0], np.cumsum(np.bincount(task, minlength=T))))
        return cls(task[order], client[order], ptr)

    def clients_of(self, t: int) -> np.ndarray:
        return self.client[self.ptr[t]:self.ptr[t + 1]]


@dataclass(frozen=True)
class GroupedStandby:
    """The grouped model (``problem``: sinks are groups) and what reading it back needs.

    Edges ``0 .. K-1`` are ``kept`` edges, the rest ``new`` edges.
    """

    problem: StandbyProblem
    group_of: np.ndarray
    counts: np.ndarray
    active: Roles
    held: Roles
    num_kept: int
    on_held: np.ndarray
    carries: np.ndarray
    covered: np.ndarray


def tag_profiles(instance: TasksInstance) -> list[tuple[tuple[str, str], ...]]:
    """Each client's (key, value) pairs that can change a task's distinct count, sorted.

    A key every client carries with a value of its own (a host name) adds one
    pair per host of a task whatever the hosts are: its actives plus its
    fixed number of standbys. It cannot tell placements apart, so it is left
    out, and clients differing only in it share a group.
    """
    clients = [instance.clients[c].tags for c in instance.client_ids]
    keys = {k for tags in clients for k in tags}
    constant = {k for k in keys
                if all(k in tags for tags in clients) and len({tags[k] for tags in clients}) == len(clients)}
    return [tuple(sorted((k, v) for k, v in tags.items() if k not in constant)) for tags in clients]


def group_clients(instance: TasksInstance, racks: tuple[str | None, ...], client_rack: np.ndarray,
                  profiles: list[tuple[tuple[str, str], ...]], alone: frozenset[int] = frozenset()
                  ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Group names, each client's group and each group's rack index, by (rack, tag profile).

    ``profiles`` are :func:`tag_profiles` when tags are configured, else empty.
    Clients in ``alone`` (indices) form a group each.
    """
    keys = [(int(r), profile, j if j in alone else -1)
            for j, (r, profile) in enumerate(zip(client_rack.tolist(), profiles))]
    distinct = sorted(set(keys))
    gindex = {k: i for i, k in enumerate(distinct)}
    names = tuple(f"{racks[r]}" + "".join(f"|{k}={v}" for k, v in tags) + (f"|{instance.client_ids[j]}" if j >= 0 else "")
                  for r, tags, j in distinct)
    group_rack = np.array([k[0] for k in distinct], dtype=np.int64)
    return names, np.array([gindex[k] for k in keys], dtype=np.int64), group_rack


@dataclass(frozen=True)
class StandbyFrame:
    """What both standby models start from: tasks and clients indexed, racks, tag profiles, client groups
    and the current actives and standbys."""

    tasks: tuple
    clients: tuple
    racks: tuple
    client_rack: np.ndarray
    tagged: bool
    profiles: list
    names: list
    group_of: np.ndarray
    group_rack: np.ndarray
    active: Roles
    held: Roles


def standby_frame(instance: TasksInstance, alone: frozenset[int] = frozenset()) -> StandbyFrame:
    tasks, clients = instance.task_ids, instance.client_ids
    tindex = {t: i for i, t in enumerate(tasks)}
    racks, client_rack = rack_index(instance, clients)
    tagged = bool(instance.config.rack_aware_assignment_tags)
    profiles = tag_profiles(instance) if tagged else [()] * len(clients)
    names, group_of, group_rack = group_clients(instance, racks, client_rack, profiles, alone)
    T = len(tasks)
    return StandbyFrame(tasks, clients, racks, client_rack, tagged, profiles, names, group_of, group_rack,
                        Roles.of(instance, "active", tindex, T), Roles.of(instance, "standby", tindex, T))


def grouped_standby(instance: TasksInstance, alone: frozenset[int] = frozenset()) -> GroupedStandby:
    """The grouped standby model of ``instance``, clients in ``alone`` ungrouped (see the module docstring)."""
    f = standby_frame(instance, alone)
    tasks, clients, racks = f.tasks, f.clients, f.racks
    tagged, profiles, names, group_of, group_rack, active, held = (f.tagged, f.profiles, f.names, f.group_of,
                                                                  f.group_rack, f.active, f.held)
    T, G = len(tasks), len(names)
    copies = np.diff(held.ptr)
    counts = np.bincount(held.client, minlength=len(clients))
    size = np.bincount(group_of, minlength=G)
    on_active = np.zeros((T, G), dtype=np.int64)
    np.add.at(on_active, (active.task, group_of[active.client]), 1)
    on_held = np.zeros((T, G), dtype=np.int64)
    np.add.at(on_held, (held.task, group_of[held.client]), 1)
    room = np.where(copies[:, None] > 0, size[None, :] - on_active - on_held, 0)
    kept_t, kept_g = np.nonzero(on_held)
    new_t, new_g = np.nonzero(room > 0)
    traffic = traffic_matrix(instance, tasks, racks, "standby") * instance.config.traffic_cost
    edge_task = np.concatenate([kept_t, new_t])
    edge_group = np.concatenate([kept_g, new_g])
    edge_cost = traffic[edge_task, group_rack[edge_group]] + instance.config.non_overlap_cost * np.concatenate(
        [np.zeros(len(kept_t), dtype=np.int64), np.ones(len(new_t), dtype=np.int64)])
    edge_cap = np.concatenate([on_held[kept_t, kept_g], np.minimum(room[new_t, new_g], copies[new_t])])
    num_kept = len(kept_t)
    tags = TagCover.empty()
    carries, covered = np.zeros((G, 0), dtype=bool), np.zeros((T, 0), dtype=bool)
    if tagged:
        pairs, carries = carried_pairs(profiles, group_of, G)
        covered = pairs_of(on_active, carries)
        single = _single_copy_tags(carries, covered, on_held, copies)
        keep = single[edge_task, edge_group]
        edge_task, edge_group, edge_cost, edge_cap = edge_task[keep], edge_group[keep], edge_cost[keep], edge_cap[keep]
        num_kept = int(keep[:num_kept].sum())
        order = np.argsort(edge_task, kind="stable")  # tag_cover wants edges grouped by task
        cover = tag_cover(pairs, carries, on_active, on_held, edge_task[order], edge_group[order], rows=copies > 1)
        tags = TagCover(cover.pairs, cover.pair_task, cover.pair_id, cover.cover_z, order[cover.cover_edge],
                        cover.need_task, cover.need)
    group_counts = np.bincount(group_of, weights=counts, minlength=G).astype(np.int64)
    problem = StandbyProblem(tasks, names, copies.astype(np.int64), group_counts, edge_task.astype(np.int64),
                             edge_group.astype(np.int64), np.asarray(edge_cost, dtype=np.int64), tags,
                             edge_cap.astype(np.int64))
    return GroupedStandby(problem, group_of, counts.astype(np.int64), active, held, num_kept, on_held, carries,
                          covered)


def _single_copy_tags(carries: np.ndarray, covered: np.ndarray, on_held: np.ndarray,
                      copies: np.ndarray) -> np.ndarray:
    """``ok[t, g]``: a one-copy task may stand by in group g without losing distinctness.

    With one copy, the task's hosts are its actives and that one client, so
    the constraint is exactly "the group adds at least as many pairs beyond
    the actives' as the starting standby's group did": a filter on columns,
    no covering rows. Tasks with more copies are always ``True`` here (their
    covering rows stay).
    """
    need = (covered | pairs_of(on_held, carries)).sum(axis=1) - covered.sum(axis=1)
    gain = carries.sum(axis=1)[None, :] - overlap_counts(covered, carries)  # T × G: pairs added beyond the actives'
    return (copies[:, None] != 1) | (gain >= need[:, None])


@dataclass(frozen=True)
class ReadBack:
    """Per client the task indices of its standbys; or, when stuck, the clients where room was left."""

    standby: list[list[int]] | None
    stuck: tuple[int, ...] = ()


def disaggregate(m: GroupedStandby, x: np.ndarray) -> ReadBack:
    """The standbys per client realising ``x`` (copies per edge), or the clients of the groups it is stuck in.

    Every placement returned meets the counts, puts each copy on a distinct
    client, never on an active one, and keeps ``kept`` copies on clients
    that held them (see the module docstring).
    """
    p = m.problem
    used = np.nonzero(x)[0]
    kept = [(int(p.edge_task[e]), int(p.edge_client[e]), int(x[e]), bool(x[e] >= p.edge_cap[e]))
            for e in used[used < m.num_kept].tolist()]
    new = [(int(p.edge_task[e]), int(p.edge_client[e]), int(x[e])) for e in used[used >= m.num_kept].tolist()]
    return read_back(m.group_of, m.counts, m.active, m.held, len(p.clients), kept, new)


def read_back(group_of: np.ndarray, counts: np.ndarray, active: Roles, held: Roles, num_groups: int,
              kept: list[tuple[int, int, int, bool]], new: list[tuple[int, int, int]]) -> ReadBack:
    """Standbys per client from per-task group counts, or the clients of the groups it is stuck in.

    ``kept`` holds ``(task, group, copies, keeps all)``: copies kept on clients
    of the group that held the task (all of them when the last is true, else
    the roomiest); ``new`` holds ``(task, group, copies)`` to place on distinct
    clients of the group that neither run nor held the task.
    """
    C = len(group_of)
    members: list[list[int]] = [[] for _ in range(num_groups)]
    for j, g in enumerate(group_of.tolist()):
        members[g].append(j)
    room = counts.copy()
    placed: list[list[int]] = [[] for _ in range(C)]
    hosts: dict[int, set[int]] = {}  # clients the task is on as a standby so far
    # a task keeping all its old hosts in a group keeps exactly those (one vectorised pass); the rest the roomiest
    full = np.array([t * num_groups + g for t, g, _, whole in kept if whole], dtype=np.int64)
    pick = np.isin(held.task * num_groups + group_of[held.client], full)
    room -= np.bincount(held.client[pick], minlength=C)
    for t, c in zip(held.task[pick].tolist(), held.client[pick].tolist()):
        placed[c].append(t)
        hosts.setdefault(t, set()).add(c)
    for t, g, k, _ in sorted(item for item in kept if not item[3]):
        old = [c for c in held.clients_of(t).tolist() if group_of[c] == g]
        for c in sorted(old, key=lambda c: (-room[c], c))[:k]:
            _place(t, c, room, placed, hosts)
    by_group: list[list[tuple[int, int]]] = [[] for _ in range(num_groups)]
    for t, g, k in new:
        by_group[g].append((t, k))
    stuck: list[int] = []
    for g, wanted in enumerate(by_group):
        if wanted:
            stuck += _fill_group(active, members[g], wanted, room, placed, hosts)
    return ReadBack(None, tuple(stuck)) if stuck else ReadBack(placed)


def _place(t: int, c: int, room: np.ndarray, placed: list[list[int]], hosts: dict[int, set[int]]) -> None:
    room[c] -= 1
    placed[c].append(t)
    hosts.setdefault(t, set()).add(c)


def _forbidden(active: Roles, t: int) -> set[int]:
    """Clients where a copy of ``t`` may not go: its active hosts.

    An old host that did not keep ``t`` may take a ``new`` copy: the model
    prices that copy higher than keeping it, so an optimum does it only when
    ``non_overlap_cost`` is 0 and the two cost the same.
    """
    return set(active.clients_of(t).tolist())


def _fill_group(active: Roles, clients: list[int], wanted: list[tuple[int, int]], room: np.ndarray,
                placed: list[list[int]], hosts: dict[int, set[int]]) -> list[int]:
    """Place each task's ``new`` copies of one group on distinct allowed clients.

    Returns the group's clients with room left where it got stuck (none when
    every copy is placed).
    """
    forbid = {t: _forbidden(active, t) for t, _ in wanted}
    members = set(clients)
    wanted.sort(key=lambda tk: (-tk[1], -len((forbid[tk[0]] | hosts.get(tk[0], set())) & members), tk[0]))
    heap = [(-int(room[c]), c) for c in clients if room[c] > 0]
    heapq.heapify(heap)
    moved: list[tuple[int, int]] = []  # (task, client) of this group's new copies, for repairs
    for t, k in wanted:
        skipped, got = [], []
        while len(got) < k and heap:
            item = heapq.heappop(heap)
            (skipped if item[1] in forbid[t] or item[1] in hosts.get(t, ()) else got).append(item)
        for _, c in got:
            _place(t, c, room, placed, hosts)
            moved.append((t, c))
        for _, c in got:
            if room[c] > 0:
                heapq.heappush(heap, (-int(room[c]), c))
        for item in skipped:
            heapq.heappush(heap, item)
        for _ in range(k - len(got)):
            if not _swap_in(t, forbid, heap, moved, room, placed, hosts):
                return [c for c in clients if room[c] > 0]
    return []


def _swap_in(t: int, forbid: dict[int, set[int]], heap: list[tuple[int, int]], moved: list[tuple[int, int]],
             room: np.ndarray, placed: list[list[int]], hosts: dict[int, set[int]]) -> bool:
    """Give ``t`` the client ``d`` of a placed copy ``(u, d)`` and move ``u`` to a client with room."""
    for _, c in sorted(heap):
        for i, (u, d) in enumerate(moved):
            if d in forbid[t] or d in hosts.get(t, ()) or c in forbid[u] or c in hosts.get(u, ()):
                continue
            placed[d].remove(u)
            hosts[u].discard(d)
            room[d] += 1
            _place(u, c, room, placed, hosts)
            _place(t, d, room, placed, hosts)
            moved[i] = (u, c)
            moved.append((t, d))
            heap[:] = [(-int(room[e]), e) for _, e in heap if room[e] > 0]
            heapq.heapify(heap)
            return True
    return False


@dataclass(frozen=True)
class StandbyPlacement:
    """Per client the task indices of its standbys, or ``None`` when no solution was found."""

    standby: list[list[int]] | None
    status: str
    objective: int | None
    bound: float | None
    info: dict


Round = Callable[[frozenset[int]], tuple[StandbyPlacement, "ReadBack | None", np.ndarray]]
"""One round of :func:`split_rounds`: given the clients to take out of their groups, the solve (its
``standby`` left ``None``), its read-back (``None`` without a solution) and each client's group."""


def split_rounds(deadline: Deadline, solve_round: Round) -> StandbyPlacement:
    """Solve and read back, taking clients out of their groups where the read-back gets stuck.

    A client where the read-back is left with room it cannot fill becomes a
    group of its own, and the model is solved again; a group stuck a second
    time is split into single clients. A single client is never stuck (its
    columns are its clients' own), so the rounds end, at worst with the
    client-level model. Every round's optimum is a lower bound.
    """
    alone: frozenset[int] = frozenset()
    failed: set[int] = set()  # clients of groups stuck before
    for rounds in itertools.count(1):
        sol, read, group_of = solve_round(alone)
        sol = dataclasses.replace(sol, info=dict(sol.info, rounds=rounds))
        if read is None:
            return sol
        if read.standby is not None:
            return dataclasses.replace(sol, standby=read.standby)
        if deadline.expired:
            return StandbyPlacement(None, "time_limit", None, sol.bound, sol.info)
        stuck_groups = {int(group_of[c]) for c in read.stuck}
        again = [j for j, g in enumerate(group_of.tolist()) if g in stuck_groups and j in failed]
        failed |= {j for j, g in enumerate(group_of.tolist()) if g in stuck_groups}
        alone = alone | set(read.stuck) | set(again)
    raise AssertionError("unreachable")


def task_round(instance: TasksInstance, alone: frozenset[int], threads: int | None,
               deadline: Deadline) -> tuple[StandbyPlacement, ReadBack | None, np.ndarray]:
    """A round of the task-level grouped model (a ``kept`` and a ``new`` column per task and group)."""
    m = grouped_standby(instance, alone)
    sol = solve_standby(m.problem, threads=threads, deadline=deadline,
                        start=lambda: dominating_start(m.problem, m.on_held, m.carries, m.covered, threads, deadline))
    info = dict(sol.info, model="standby-grouped", groups=len(m.problem.clients))
    placement = StandbyPlacement(None, sol.status, sol.objective, sol.bound, info)
    return placement, (None if sol.chosen is None else disaggregate(m, sol.chosen)), m.group_of


def place_standbys_by_task(instance: TasksInstance, threads: int | None = None,
                           deadline: Deadline | None = None) -> StandbyPlacement:
    """The task-level grouped model, split where stuck: the cross-check of the class model
    (:func:`kipopt.formulations.tasks.rack.standby_classes.place_standbys`) and its fallback."""
    deadline = Deadline.after(None) if deadline is None else deadline
    return split_rounds(deadline, lambda alone: task_round(instance, alone, threads, deadline))


def client_level_standbys(instance: TasksInstance, threads: int | None = None,
                          deadline: Deadline | None = None) -> StandbyPlacement:
    """The same answer from the client-level model (a column per task and client)."""
    p = standby_problem(instance)
    sol = solve_standby(p, threads=threads, deadline=deadline)
    info = sol.info
    if sol.chosen is None:
        return StandbyPlacement(None, sol.status, None, sol.bound, info)
    standby: list[list[int]] = [[] for _ in p.clients]
    for e in np.nonzero(sol.chosen)[0].tolist():
        standby[int(p.edge_client[e])].append(int(p.edge_task[e]))
    return StandbyPlacement(standby, sol.status, sol.objective, sol.bound, info)
