"""The KIP-925 standby problem in index form, and its array model for HiGHS.

The problem ``exact.rack_standby`` solves exactly (actives are the
instance's and stay put): place standby copies so that

* every task keeps its number of standby copies and every client its number
  of standbys (Kafka's ``optimizeStandbyTasks`` only swaps, so both are
  invariant under it),
* no standby sits on a client where the task is active, no client holds two
  copies of one task,
* when ``rack_aware_assignment_tags`` is configured (KIP-708), no stateful
  task loses *tag distinctness*: the number of distinct (tag key, tag value)
  pairs carried by the task's hosts (its active clients and its standby
  clients) is at least what it is in the instance's starting assignment
  (its ``active`` and ``standby`` lists). All tag keys of the clients count,
  not only the configured ones. Without configured tags there is no tag
  constraint,

minimising ``Σ traffic_cost × (changelogs with no replica in the client's
rack) + non_overlap_cost × [client did not hold that standby]``.

Why this tag constraint. It is the movement predicate Kafka's
high-availability assignor hands to ``optimizeStandbyTasks`` when tags are
configured (``ClientTagAwareStandbyTaskAssignor.isAllowedTaskMovement``,
reference digest §3.5), aggregated over the whole assignment. A pair solve
between clients i and j moves a task t only if t is in a movable list, i.e.
the destination does not hold t and ``|D| >= |S|``, where S is the set of
pairs of t's current hosts and D the same set with the destination in
place of the source; it moves t at most once (each task of the pair's
graph ends on one of the two clients), and the move of another task never
changes t's hosts. So every move Kafka makes keeps or raises t's distinct
pair count, and Kafka's final assignment always meets the constraint above:
``kafka.rack_standby`` and ``exact.rack_standby`` solve the same problem,
the exact optimum is never above the port's cost, and the starting
assignment is feasible, so the model is never infeasible. (Demanding full
KIP-708 spread instead would be infeasible on many instances with fixed
counts, and is a promise Kafka never makes.)

The model. One column ``y[e]`` per candidate edge (task, client not active
on it). With tags, for a task t and a pair p not carried by t's actives (a
pair carried by an active is always covered, so it gets no variable), a
covering indicator ``z[t,p] ∈ [0,1]`` with ``z[t,p] <= Σ y[t,c]`` over the
clients c carrying p, and per task ``Σ_p z[t,p] >= initial(t) - |pairs of
t's actives|``. Tasks whose starting standbys add no pair beyond their
actives' get no rows. For integral ``y`` a fractional ``z`` can always be
rounded (each ``z <= 1`` sits under an integer), so only ``y`` must be
integral.

Without tags the matrix is a bipartite incidence matrix, totally
unimodular: the LP vertex is integral. With the covering rows it is not
totally unimodular in general, so the LP is solved first, its ``y`` checked
for integrality, and the ILP (``y`` and ``z`` binary, presolve on) solved
only when that vertex is fractional.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "tasks",
...     "topics": {"in": {"racks": [["a"]]}, "cl": {"racks": [["a"]]}},
...     "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]}},
...     "clients": {"x": {"rack": "a", "tags": {"zone": "a"}, "active": ["0_0"]},
...                 "y": {"rack": "a", "tags": {"zone": "b"}, "standby": ["0_0"]}},
...     "config": {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"]}})
>>> p = standby_problem(x)
>>> p.tags.pairs, p.tags.need.tolist(), solve_standby(p).objective
((('zone', 'a'), ('zone', 'b')), [1], 0)
"""

from __future__ import annotations

import dataclasses
import math
import time
from itertools import chain
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from kipopt.instance import TasksInstance
from kipopt.solution import TaskRoles


from kipopt.formulations.highs import ArrayLP, Deadline, HighsResult, build_csc, call_highs_before, is_integral, solve_lp
from kipopt.formulations.tasks.rack.model import rack_index, traffic_matrix

HARD_DEADLINE_COLUMNS = 1_000_000
"""Above this many columns a time-limited solve runs in a child process the deadline kills."""


@dataclass(frozen=True)
class TagCover:
    """The tag-distinctness constraint in index form (all empty without configured tags).

    Covering indicator k belongs to task ``pair_task[k]`` and pair
    ``pairs[pair_id[k]]``; edge ``cover_edge[i]`` covers indicator
    ``cover_z[i]``; task ``need_task[r]`` needs the sum of its indicators to
    be at least ``need[r]``.
    """

    pairs: tuple[tuple[str, str], ...]
    pair_task: np.ndarray
    pair_id: np.ndarray
    cover_z: np.ndarray
    cover_edge: np.ndarray
    need_task: np.ndarray
    need: np.ndarray

    @classmethod
    def empty(cls) -> TagCover:
        none = np.zeros(0, dtype=np.int64)
        return cls((), none, none, none, none, none, none)

    @property
    def num_indicators(self) -> int:
        return len(self.pair_task)


@dataclass(frozen=True)
class StandbyProblem:
    """Edges ``(edge_task[e], edge_client[e])`` are the candidate standby placements, with costs.

    Here ``clients`` are the clients and every edge carries at most one copy;
    :mod:`kipopt.formulations.tasks.rack.standby_grouped` reuses the form with
    client groups in their place and ``edge_cap`` copies per edge.
    """

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    copies: np.ndarray
    counts: np.ndarray
    edge_task: np.ndarray
    edge_client: np.ndarray
    edge_cost: np.ndarray
    tags: TagCover
    edge_cap: np.ndarray | None = None

    @property
    def num_edges(self) -> int:
        return len(self.edge_task)

    def cost(self, chosen: np.ndarray) -> int:
        """Exact objective of ``chosen``: copies per edge (a boolean mask when every cap is one)."""
        return int(self.edge_cost @ np.asarray(chosen, dtype=np.int64))


def distinct_tag_pairs(instance: TasksInstance, roles: Mapping[str, TaskRoles]) -> dict[str, int]:
    """Stateful task -> distinct (tag key, value) pairs over its active and standby clients in ``roles``.

    All tag keys of the clients count, as in Kafka's movement predicate.

    >>> from kipopt.instance import from_dict
    >>> x = from_dict({"format": 1, "family": "tasks", "topics": {"in": {"racks": [["a"]]}},
    ...     "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["in-0"]}},
    ...     "clients": {"x": {"tags": {"zone": "a", "host": "h1"}, "active": ["0_0"]},
    ...                 "y": {"tags": {"zone": "a", "host": "h2"}, "standby": ["0_0"]}}})
    >>> distinct_tag_pairs(x, {"x": TaskRoles(("0_0",)), "y": TaskRoles((), ("0_0",))})
    {'0_0': 3}
    """
    tasks = instance.task_ids
    pindex: dict[tuple[str, str], int] = {}
    profile_of: dict[tuple[tuple[str, str], ...], int] = {}
    profile_pairs: list[list[int]] = []
    client_profile = {}
    for cid, client in instance.clients.items():
        tags = tuple(client.tags.items())
        if tags not in profile_of:
            profile_of[tags] = len(profile_pairs)
            profile_pairs.append([pindex.setdefault(kv, len(pindex)) for kv in tags])
        client_profile[cid] = profile_of[tags]
    task, profile = _hosts(instance, roles, client_profile)
    known = task >= 0
    # distinct (task, profile) hosts, then distinct (task, pair): linear in the placements
    NP = max(len(profile_pairs), 1)
    hosts = _distinct(task[known] * NP + profile[known])
    sizes = np.array([len(ps) for ps in profile_pairs], dtype=np.int64)
    flat = np.array([k for ps in profile_pairs for k in ps], dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    host_task, host_profile = hosts // NP, hosts % NP
    per = sizes[host_profile] if len(hosts) else np.zeros(0, dtype=np.int64)
    entry = np.repeat(ptr[host_profile] - np.cumsum(per) + per, per) + np.arange(int(per.sum()))
    pairs = _distinct(np.repeat(host_task, per) * max(len(pindex), 1) + flat[entry])
    count = np.bincount(pairs // max(len(pindex), 1), minlength=len(tasks))
    every = instance.tasks
    return {t: c for t, c in zip(tasks, count.tolist()) if every[t].stateful}


def _hosts(instance: TasksInstance, roles: Mapping[str, TaskRoles], client_profile: dict[str, int]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Task index (-1: unknown) and host profile of every active and standby listing of ``roles``."""
    from kipopt.evaluation.tasks import placements

    order = np.array([client_profile[c] for c in instance.clients], dtype=np.int64)
    try:
        placed = [placements(instance, roles, role) for role in ("active", "standby")]
        return (np.concatenate([t for t, _ in placed]), order[np.concatenate([c for _, c in placed])])
    except KeyError:  # an id the instance does not have: listing by listing, unknown tasks left out
        tindex = {t: i for i, t in enumerate(instance.task_ids)}
        task = [tindex.get(t, -1) for r in roles.values() for t in chain(r.active, r.standby)]
        profile = [client_profile[c] for c, r in roles.items() for _ in chain(r.active, r.standby)]
        return np.array(task, dtype=np.int64), np.array(profile, dtype=np.int64)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of ``keys``, sorted (a sort and a diff: ``np.unique``'s hashing took 0.7 s on 900,000)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def _role_matrix(instance: TasksInstance, tasks: tuple[str, ...], clients: tuple[str, ...],
                 role: str) -> np.ndarray:
    """``m[t, c]``: client c lists task t in ``role`` (``active`` or ``standby``)."""
    tindex = {t: i for i, t in enumerate(tasks)}
    m = np.zeros((len(tasks), len(clients)), dtype=bool)
    for j, c in enumerate(clients):
        m[[tindex[t] for t in getattr(instance.clients[c], role)], j] = True
    return m


def standby_problem(instance: TasksInstance) -> StandbyProblem:
    """Index form of the standby problem of ``instance`` (see the module docstring)."""
    tasks, clients = instance.task_ids, instance.client_ids
    active = _role_matrix(instance, tasks, clients, "active")
    held = _role_matrix(instance, tasks, clients, "standby")
    copies = held.sum(axis=1).astype(np.int64)
    counts = held.sum(axis=0).astype(np.int64)
    # np.nonzero walks row-major: edges are grouped task by task, clients in order
    edge_task, edge_client = np.nonzero((copies > 0)[:, None] & ~active)
    racks, client_rack = rack_index(instance, clients)
    traffic = traffic_matrix(instance, tasks, racks, "standby") * instance.config.traffic_cost
    moved = ~held[edge_task, edge_client]
    edge_cost = traffic[edge_task, client_rack[edge_client]] + instance.config.non_overlap_cost * moved
    tags = (_tag_cover(instance, clients, active, held, edge_task, edge_client)
            if instance.config.rack_aware_assignment_tags else TagCover.empty())
    return StandbyProblem(tasks, clients, copies, counts, edge_task.astype(np.int64),
                          edge_client.astype(np.int64), np.asarray(edge_cost, dtype=np.int64), tags)


def carried_pairs(profiles: Sequence[Sequence[tuple[str, str]]], sink_of: np.ndarray,
                  num_sinks: int) -> tuple[tuple[tuple[str, str], ...], np.ndarray]:
    """Every (key, value) pair of ``profiles`` (sorted), and ``m[s, p]``: sink s carries pair p.

    ``profiles[j]`` are client j's pairs and ``sink_of[j]`` its sink (the
    client itself, or its group).
    """
    pairs = tuple(sorted({kv for profile in profiles for kv in profile}))
    pindex = {kv: i for i, kv in enumerate(pairs)}
    m = np.zeros((num_sinks, len(pairs)), dtype=bool)
    for profile, s in zip(profiles, sink_of.tolist()):
        m[s, [pindex[kv] for kv in profile]] = True
    return pairs, m


def _tag_cover(instance: TasksInstance, clients: tuple[str, ...], active: np.ndarray, held: np.ndarray,
               edge_task: np.ndarray, edge_client: np.ndarray) -> TagCover:
    """The covering indicators and per-task rows of the tag-distinctness constraint over clients."""
    profiles = [tuple(instance.clients[c].tags.items()) for c in clients]
    pairs, carries = carried_pairs(profiles, np.arange(len(clients)), len(clients))
    return tag_cover(pairs, carries, active, held, edge_task, edge_client)


def pairs_of(roles: np.ndarray, carries: np.ndarray) -> np.ndarray:
    """``m[t, p]``: some sink where task t has a copy in ``roles`` (task × sink counts) carries pair p.

    Linear in the copies: an OR of the sinks' rows, not a matrix product.
    """
    task, sink = np.nonzero(roles)
    out = np.zeros((roles.shape[0], carries.shape[1]), dtype=bool)
    np.logical_or.at(out, task, carries[sink])
    return out


def overlap_counts(rows: np.ndarray, carries: np.ndarray) -> np.ndarray:
    """``m[i, s]`` = pairs that both boolean row ``i`` and sink ``s`` carry.

    The product runs once per distinct row (tasks share their actives'
    profiles), in floating point (BLAS; exact for counts this small).
    """
    distinct, back = np.unique(rows, axis=0, return_inverse=True)
    counts = distinct.astype(np.float32) @ carries.T.astype(np.float32)
    return np.rint(counts).astype(np.int32)[back.reshape(-1)]


def tag_cover(pairs: tuple[tuple[str, str], ...], carries: np.ndarray, active: np.ndarray, held: np.ndarray,
              edge_task: np.ndarray, edge_sink: np.ndarray, rows: np.ndarray | None = None) -> TagCover:
    """The covering indicators and per-task rows of the tag-distinctness constraint.

    Sinks are clients or groups of clients with one tag profile:
    ``carries[s, p]`` says sink s carries pair p, ``active`` and ``held``
    (task × sink) count the task's active and standby copies on each sink.
    The edges are grouped by task. ``rows`` (a task mask, default all) limits
    the rows to the tasks whose distinctness is not enforced otherwise.
    """
    P = max(len(pairs), 1)  # no pair at all: no entries, and no division by zero below
    covered = pairs_of(active, carries)  # T × P: pairs fixed by the actives
    initial = covered | pairs_of(held, carries)
    need = initial.sum(axis=1) - covered.sum(axis=1)
    if rows is not None:
        need = np.where(rows, need, 0)
    # every (edge, pair of its sink) entry of a task with a positive need, pairs of its actives left out
    edges = np.nonzero(need[edge_task] > 0)[0]
    sink_of = edge_sink[edges]
    ptr = np.concatenate(([0], np.cumsum(carries.sum(axis=1))))
    _, sink_pair = np.nonzero(carries)  # row-major: sink j's pairs are sink_pair[ptr[j]:ptr[j+1]]
    per_edge = ptr[sink_of + 1] - ptr[sink_of]
    entry_edge = np.repeat(edges, per_edge)
    first = np.repeat(ptr[sink_of] - (np.cumsum(per_edge) - per_edge), per_edge)
    entry_pair = sink_pair[first + np.arange(len(entry_edge))]
    keep = ~covered[edge_task[entry_edge], entry_pair]
    entry_edge, entry_pair = entry_edge[keep], entry_pair[keep]
    key, cover_z = np.unique(edge_task[entry_edge] * P + entry_pair, return_inverse=True)
    need_task = np.nonzero(need > 0)[0]
    return TagCover(pairs, key // P, key % P, cover_z.reshape(-1).astype(np.int64), entry_edge.astype(np.int64),
                    need_task.astype(np.int64), need[need_task].astype(np.int64))


@dataclass(frozen=True)
class StandbySolution:
    chosen: np.ndarray | None  # copies per edge (boolean when every edge carries at most one)
    status: str
    objective: int | None
    bound: float | None
    info: dict


def build_standby_lp(p: StandbyProblem) -> ArrayLP:
    """Columns: edges ``y``, then indicators ``z``. Rows: tasks, clients, covers, distinctness."""
    g = p.tags
    E, Z, T, C, R = p.num_edges, g.num_indicators, len(p.tasks), len(p.clients), len(g.need_task)
    need_row = np.full(T, -1, dtype=np.int64)
    need_row[g.need_task] = np.arange(R)
    z = E + np.arange(Z)
    cover = T + C + np.arange(Z)
    col = np.concatenate([np.arange(E), np.arange(E), g.cover_edge, z, z])
    row = np.concatenate([p.edge_task, T + p.edge_client, T + C + g.cover_z, cover,
                          T + C + Z + need_row[g.pair_task]])
    value = np.concatenate([np.ones(2 * E), -np.ones(len(g.cover_edge)), np.ones(2 * Z)])
    start, index, values = build_csc(E + Z, col, row, value)
    lo = np.concatenate([p.copies, p.counts, np.full(Z, -np.inf), g.need]).astype(float)
    cap = np.ones(E) if p.edge_cap is None else p.edge_cap.astype(float)
    hi = np.concatenate([p.copies, p.counts, np.zeros(Z), np.full(R, np.inf)]).astype(float)
    cost = np.concatenate([p.edge_cost.astype(float), np.zeros(Z)])
    return ArrayLP(cost, np.zeros(E + Z), np.concatenate([cap, np.ones(Z)]), lo, hi, start, index, values)


def solve_standby(p: StandbyProblem, time_limit: float | None = None,
                  threads: int | None = None, deadline: Deadline | None = None,
                  start: Callable[[], np.ndarray | None] | None = None) -> StandbySolution:
    """The LP, and the ILP only if the LP's ``y`` is fractional (never without tags).

    ``deadline`` (default: ``time_limit`` from now) is shared by both solves.
    ``start``, called only when the ILP is needed, gives a feasible ``y``: it
    is the answer if it meets the LP's bound, else the ILP starts from it and
    it stands when the ILP finds nothing better in time.
    """
    deadline = Deadline.after(time_limit) if deadline is None else deadline
    if deadline.expired:  # building the arrays alone takes seconds at scale: do not start
        return StandbySolution(None, "time_limit", None, None, {"model": "standby-arrays", "built": False})
    t0 = time.perf_counter()
    lp = build_standby_lp(p)
    t1 = time.perf_counter()

    def solve() -> tuple[str, float | None, bool, np.ndarray | None]:
        # the LP first (presolve off): an integral y at its optimum is optimal for the ILP too
        res = solve_lp(lp, threads=threads, deadline=deadline)
        if res.x is None or is_integral(res.x[:p.num_edges]):
            return res.status, res.bound, False, _edges(p, res.x)
        floor = math.ceil(res.objective - 1e-6)  # integer costs: the ILP's optimum is at least this
        y0 = start() if start is not None else None
        if y0 is not None and p.cost(y0) <= floor:
            return "optimal", floor, True, y0
        # HiGHS' MIP overran its time limit by minutes on 150,000 columns (set-up phases that do not
        # watch the clock), so under a deadline it runs in a child the deadline kills; y0 is not handed
        # to it as a start (with one, the overrun was 9 minutes)
        mip = call_highs_before(deadline, lambda: _compact(solve_lp(lp, integer=True, threads=threads, presolve=True,
                                                              deadline=deadline)))
        if mip is None:
            mip = HighsResult("time_limit", None, None, None, True, "killed at the deadline", "on")
        bound = max(floor, mip.bound) if mip.bound is not None else floor
        y = _edges(p, mip.x)
        if y0 is not None and (y is None or p.cost(y0) < p.cost(y)):
            return ("optimal" if p.cost(y0) <= bound else "feasible"), bound, True, y0
        return mip.status, bound, True, y

    # at scale, loading and setting up the model in HiGHS can outlast the time limit (HiGHS watches the
    # clock only once it iterates): there the solve runs in a child that the deadline kills
    hard = deadline.at is not None and lp.num_col > HARD_DEADLINE_COLUMNS
    found = call_highs_before(deadline, solve) if hard else solve()
    info = {"model": "standby-arrays", "columns": lp.num_col, "rows": lp.num_row,
            "tag_rows": len(p.tags.need_task), "build_seconds": round(t1 - t0, 6),
            "solver_seconds": round(time.perf_counter() - t1, 6), "killed_at_deadline": found is None}
    if found is None:
        return StandbySolution(None, "time_limit", None, None, info)
    status, bound, integer, chosen = found
    info["ilp"] = integer
    if chosen is None:
        return StandbySolution(None, status, None, bound, info)
    cost = p.cost(chosen)
    if status == "optimal" and bound is not None and cost > bound + 1e-6:
        status = "feasible"
    if status == "time_limit":
        status = "feasible"
    return StandbySolution(chosen, status, cost, bound, info)


def _compact(res: HighsResult) -> HighsResult:
    """What crosses the pipe from a child: the result without duals."""
    return dataclasses.replace(res, col_dual=None, row_dual=None)


def _edges(p: StandbyProblem, x: np.ndarray | None) -> np.ndarray | None:
    """Copies per edge read from a solver's column values (booleans when every edge carries one)."""
    if x is None:
        return None
    y = np.rint(x[:p.num_edges]).astype(np.int64)
    return y.astype(bool) if p.edge_cap is None else y
