"""The KIP-925 active-task problem in index form, and its rack-grouped network LP.

Kafka's ``MinTrafficGraphConstructor`` encodes exactly this problem: assign
every task to one client, every client keeps its current number of tasks,
minimise ``Σ traffic_cost × (cross-rack cost partitions) + non_overlap_cost
× [moved]``. ``BalanceSubtopologyGraphConstructor`` adds, per client ``j``
and sub-topology ``g``, the cap ``ceil(((orig_j * 1.0) / T) * n_g)``
evaluated in IEEE doubles. :func:`active_problem` turns an instance into
that data; the research variant ``"fair"`` bounds each (client,
sub-topology) count between the floor and the ceiling of the exact
rational share ``orig_j × n_g / T``.

Rack grouping
-------------
Clients of one rack differ only in their counts and in which tasks they
held, so the network is aggregated: task ``t`` either *stays* on its owner
(column ``x_t``) or moves to a *rack* ``r`` (column ``y_{t,r}``, cost
``traffic(t, r) + non_overlap``); rack-group node ``(r, g)`` forwards to
each client ``c`` of rack ``r`` (column ``f_{c,g}``). With bounds, node
``(c, g)`` passes ``z_{c,g} ∈ [lower, upper]`` on to client ``c``. That is
``T·(R+1) + C·G (+ C·G)`` columns instead of ``T·C``.

Every column has one ``+1`` and one ``-1`` once the task rows are negated:
the constraint matrix is the incidence matrix of a directed graph, hence
totally unimodular, and with integer right-hand sides and bounds every
vertex is integral. Simplex (presolve off) returns a vertex;
:func:`solve_rack_grouped` still checks integrality and re-solves as an
ILP if it ever is not.

Both optima agree: an assignment maps to a rack-grouped flow of the same
cost, and a rack-grouped flow decomposes into an assignment of no larger
cost (a task routed back to its own owner through its rack only gets
cheaper), so the minima are equal.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from itertools import chain

import numpy as np

from kipopt.costs import cross_rack_partitions, cross_rack_table
from kipopt.errors import InstanceError
from kipopt.instance import TasksInstance

from kipopt.formulations.highs import ArrayLP, build_csc, solve_tu_lp

BOUNDS = ("none", "kafka", "fair")


@dataclass(frozen=True)
class ActiveProblem:
    """Index form of the active problem. Tasks and clients are in Kafka's order.

    ``traffic[t, r]`` is the traffic cost (already × ``traffic_cost``) of task
    ``t`` on a client of rack ``racks[r]`` (``None`` = rack-less: no traffic).
    ``lower``/``upper`` are per (client, group) bounds, or ``None``.
    """

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    owner: np.ndarray
    orig: np.ndarray
    group: np.ndarray
    groups: tuple[int, ...]
    racks: tuple[str | None, ...]
    client_rack: np.ndarray
    traffic: np.ndarray
    non_overlap: int
    lower: np.ndarray | None
    upper: np.ndarray | None

    @property
    def num_tasks(self) -> int:
        return len(self.tasks)

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    def cost(self, placement: np.ndarray) -> int:
        """Exact objective of ``placement`` (client index per task), recomputed from the data."""
        t = np.arange(self.num_tasks)
        traffic = int(self.traffic[t, self.client_rack[placement]].sum())
        return traffic + self.non_overlap * int(np.count_nonzero(placement != self.owner))


def unique_owners(instance: TasksInstance) -> dict[str, str]:
    """Task -> its one active client; ``InstanceError`` naming the field otherwise."""
    if _one_owner_each(instance):
        return {task: cid for cid in instance.client_ids for task in instance.clients[cid].active}
    owner: dict[str, str] = {}
    for cid in instance.client_ids:
        for j, task in enumerate(instance.clients[cid].active):
            if task in owner:
                raise InstanceError(f"clients.{cid}.active[{j}]",
                                    f"task {task!r} is already active on client {owner[task]!r}; "
                                    "this method needs every task active on exactly one client")
            owner[task] = cid
    for task in instance.task_ids:
        if task not in owner:
            raise InstanceError(f"tasks.{task}", f"task {task!r} is active on no client; this method needs "
                                                 "every task active on exactly one client (clients.*.active)")
    return owner


def unique_owners_reason(instance: TasksInstance) -> str | None:
    """A method's ``requires``: ``None`` when every task is active on exactly one client, else why not,
    naming the field (checked before the method or its time-limit guard builds anything from the owners)."""
    try:
        require_unique_owners(instance)
    except InstanceError as exc:
        return str(exc)
    return None


def require_unique_owners(instance: TasksInstance) -> None:
    """:func:`unique_owners`' check alone: ``InstanceError`` naming the field unless every task is
    active on exactly one client."""
    if not _one_owner_each(instance):
        unique_owners(instance)


def _one_owner_each(instance: TasksInstance) -> bool:
    counts = Counter(chain.from_iterable(c.active for c in instance.clients.values()))  # at C speed
    return counts.keys() == instance.tasks.keys() and max(counts.values()) == 1


def kafka_cap(orig: int, total: int, size: int) -> int:
    """Kafka's per-(client, sub-topology) cap, in IEEE doubles in Kafka's order.

    >>> kafka_cap(7, 25, 25), kafka_cap(7, 25, 24), kafka_cap(3, 10, 5)
    (8, 7, 2)
    """
    return math.ceil(((orig * 1.0) / total) * size)


def fair_bounds(orig: int, total: int, size: int) -> tuple[int, int]:
    """Floor and ceiling of the exact share ``orig × size / total`` (integer arithmetic).

    >>> fair_bounds(7, 25, 25), fair_bounds(3, 10, 5)
    ((7, 7), (1, 2))
    """
    return (orig * size) // total, -((-orig * size) // total)


def active_problem(instance: TasksInstance, bounds: str = "none", role: str = "active",
                   costs: bool = True) -> ActiveProblem:
    """Index form of ``instance``'s active problem with ``bounds`` in :data:`BOUNDS`; ``costs=False`` leaves
    the traffic at zero without reading the partitions' racks (for a start that only needs counts and
    bounds, made while the model runs: :func:`kipopt.formulations.tasks.rack.rules.active_start`)."""
    if bounds not in BOUNDS:
        raise ValueError(f"bounds must be one of {BOUNDS}, got {bounds!r}")
    require_unique_owners(instance)
    tasks, clients = instance.task_ids, instance.client_ids
    actives = [instance.clients[c].active for c in clients]
    task_index = cross_rack_table(instance, role).task_index if costs else {t: i for i, t in enumerate(tasks)}
    owner = np.empty(len(tasks), dtype=np.int64)
    owner[np.fromiter(map(task_index.__getitem__, chain.from_iterable(actives)),
                      dtype=np.int64, count=len(tasks))] = np.repeat(np.arange(len(clients)), list(map(len, actives)))
    orig = np.bincount(owner, minlength=len(clients)).astype(np.int64)
    groups = instance.subtopologies
    group = np.searchsorted(np.asarray(groups, dtype=np.int64), instance.task_subtopologies)
    racks, client_rack = rack_index(instance, clients)
    traffic = traffic_matrix(instance, tasks, racks, role) * instance.config.traffic_cost if costs else \
        np.zeros((len(tasks), len(racks)), dtype=np.int64)
    lower, upper = _bounds(bounds, orig, np.bincount(group, minlength=len(groups)), len(tasks))
    return ActiveProblem(tasks, clients, owner, orig, group, groups, racks, client_rack, traffic,
                         instance.config.non_overlap_cost, lower, upper)


def rack_index(instance: TasksInstance, clients: tuple[str, ...]) -> tuple[tuple[str | None, ...], np.ndarray]:
    """Distinct client racks (sorted; ``None`` last if some client has no rack) and each client's index."""
    named = sorted({instance.clients[c].rack for c in clients if instance.clients[c].rack is not None})
    racks: list[str | None] = list(named)
    if any(instance.clients[c].rack is None for c in clients):
        racks.append(None)
    rindex = {r: i for i, r in enumerate(racks)}
    return tuple(racks), np.array([rindex[instance.clients[c].rack] for c in clients], dtype=np.int64)


def traffic_matrix(instance: TasksInstance, tasks: tuple[str, ...], racks: tuple[str | None, ...],
                   role: str) -> np.ndarray:
    """``m[t, r]`` = cost partitions of task ``t`` (in ``role``) with racks, none of them ``racks[r]``.

    Read from :func:`kipopt.costs.cross_rack_table` (linear in the instance);
    ``None`` (rack-less clients) is a column of zeros.
    """
    table = cross_rack_table(instance, role)
    rows = np.arange(len(tasks)) if tasks == instance.task_ids else \
        np.array([table.task_index[t] for t in tasks], dtype=np.int64)
    out = np.zeros((len(tasks), len(racks)), dtype=np.int64)
    for j, r in enumerate(racks):
        if r is None:
            continue
        column = table.rack_index.get(r)
        if column is None:
            out[:, j] = [cross_rack_partitions(instance, t, r, role) for t in tasks]
        else:
            out[:, j] = table.counts[rows, column]
    return out


def _bounds(kind: str, orig: np.ndarray, sizes: np.ndarray, total: int
            ) -> tuple[np.ndarray | None, np.ndarray | None]:
    if kind == "none":
        return None, None
    if kind == "kafka":
        upper = kafka_cap_matrix(orig, total, sizes)
        return np.zeros_like(upper), upper
    o, n = orig.astype(np.int64)[:, None], sizes.astype(np.int64)[None, :]
    return (o * n) // total, -((-o * n) // total)


def kafka_cap_matrix(orig: np.ndarray, total: int, sizes: np.ndarray) -> np.ndarray:
    """:func:`kafka_cap` for every (count, size) pair at once: the same IEEE double operations in the same
    order (numpy's float64 division, product and ceil round as Java's ``double`` arithmetic does).

    >>> kafka_cap_matrix(np.array([7, 3]), 25, np.array([25, 24])).tolist()
    [[8, 7], [3, 3]]
    """
    share = orig.astype(np.float64)[:, None] / float(total)
    return np.ceil(share * sizes.astype(np.float64)[None, :]).astype(np.int64)


# --------------------------------------------------------------------------- rack-grouped LP


@dataclass(frozen=True)
class GroupedLayout:
    """Column offsets of the rack-grouped LP (see the module docstring)."""

    T: int
    C: int
    R: int
    G: int
    bounded: bool

    @property
    def y0(self) -> int:
        return self.T

    @property
    def f0(self) -> int:
        return self.T + self.T * self.R

    @property
    def z0(self) -> int:
        return self.f0 + self.C * self.G

    @property
    def num_col(self) -> int:
        return self.z0 + (self.C * self.G if self.bounded else 0)


@dataclass(frozen=True)
class ActiveSolution:
    """Placement (client index per task) with the solver's verdict."""

    placement: np.ndarray | None
    status: str
    objective: int | None
    bound: float | None
    info: dict


def build_rack_grouped(p: ActiveProblem) -> tuple[ArrayLP, GroupedLayout]:
    """The rack-grouped network LP of ``p`` as CSC arrays."""
    bounded = p.upper is not None
    T, C, R = p.num_tasks, p.num_clients, len(p.racks)
    G = len(p.groups) if bounded else 1
    lay = GroupedLayout(T, C, R, G, bounded)
    g = p.group if bounded else np.zeros(T, dtype=np.int64)
    task_row = np.arange(T)
    rack_row0, node_row0 = T, T + R * G
    client_row0 = node_row0 + C * G
    cols, rows, vals = [], [], []

    def add(c: np.ndarray, r: np.ndarray, v: float) -> None:
        cols.append(c)
        rows.append(r)
        vals.append(np.full(len(c), v))

    x = np.arange(T)
    add(x, task_row, 1.0)
    add(x, node_row0 + p.owner * G + g, 1.0)
    y = lay.y0 + np.arange(T * R)
    ty, ry = np.divmod(np.arange(T * R), R)
    add(y, ty, 1.0)
    add(y, rack_row0 + ry * G + g[ty], 1.0)
    f = lay.f0 + np.arange(C * G)
    cf, gf = np.divmod(np.arange(C * G), G)
    add(f, rack_row0 + p.client_rack[cf] * G + gf, -1.0)
    add(f, node_row0 + cf * G + gf, 1.0)
    cost = np.concatenate([p.traffic[x, p.client_rack[p.owner]], p.traffic.reshape(-1) + p.non_overlap,
                           np.zeros(C * G)]).astype(np.float64)
    lower, upper = np.zeros(lay.f0 + C * G), np.ones(lay.f0 + C * G)
    upper[lay.f0:] = np.repeat(p.orig, G)
    row_lo = np.concatenate([np.ones(T), np.zeros(R * G)])
    if bounded:
        z = lay.z0 + np.arange(C * G)
        add(z, node_row0 + np.arange(C * G), -1.0)
        add(z, client_row0 + cf, 1.0)
        cost = np.concatenate([cost, np.zeros(C * G)])
        lower = np.concatenate([lower, p.lower.reshape(-1)])
        upper = np.concatenate([upper, p.upper.reshape(-1)])
        row_lo = np.concatenate([row_lo, np.zeros(C * G), p.orig])
    else:
        row_lo = np.concatenate([row_lo, p.orig])
    row_lo = row_lo.astype(np.float64)
    start, index, value = build_csc(lay.num_col, np.concatenate(cols), np.concatenate(rows), np.concatenate(vals))
    lp = ArrayLP(cost, lower.astype(np.float64), upper.astype(np.float64), row_lo, row_lo.copy(),
                 start, index, value)
    return lp, lay


def read_rack_grouped(p: ActiveProblem, lay: GroupedLayout, x: np.ndarray) -> np.ndarray:
    """Decompose an integral rack-grouped flow into a placement (client index per task).

    Inside one (rack, group) node the moved tasks fill the clients' slots in
    Kafka's task and client order.
    """
    v = np.rint(x).astype(np.int64)
    placement = p.owner.copy()
    moved = v[lay.y0:lay.f0].reshape(lay.T, lay.R)
    t_moved, r_moved = np.nonzero(moved)
    g = p.group if lay.bounded else np.zeros(lay.T, dtype=np.int64)
    slots = v[lay.f0:lay.f0 + lay.C * lay.G].reshape(lay.C, lay.G)
    queues: dict[tuple[int, int], list[int]] = {}
    for c in range(lay.C):
        for gg in np.nonzero(slots[c])[0]:
            queues.setdefault((int(p.client_rack[c]), int(gg)), []).extend([c] * int(slots[c, gg]))
    for key in queues:
        queues[key].reverse()
    for t, r in zip(t_moved.tolist(), r_moved.tolist()):
        placement[t] = queues[(r, int(g[t]))].pop()
    return placement


def solve_rack_grouped(p: ActiveProblem, time_limit: float | None = None,
                       threads: int | None = None) -> ActiveSolution:
    """Solve ``p`` through the rack-grouped LP (ILP fallback if a vertex were fractional)."""
    t0 = time.perf_counter()
    lp, lay = build_rack_grouped(p)
    t1 = time.perf_counter()
    res, integer = solve_tu_lp(lp, time_limit=time_limit, threads=threads)
    t2 = time.perf_counter()
    info = {"model": "rack-grouped", "columns": lp.num_col, "rows": lp.num_row,
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(t2 - t1, 6),
            "ilp_fallback": integer, "presolve": res.presolve}
    if res.x is None:
        return ActiveSolution(None, res.status, None, res.bound, info)
    placement = read_rack_grouped(p, lay, res.x)
    return finish(p, placement, res.status, res.objective, res.bound, info)


def finish(p: ActiveProblem, placement: np.ndarray, status: str, objective: float | None,
           bound: float | None, info: dict) -> ActiveSolution:
    """Recompute the placement's cost; ``optimal`` only if it meets the solver's proven bound."""
    cost = p.cost(placement)
    if status == "optimal":
        bound = objective if bound is None else bound
        if bound is not None and cost > bound + 1e-6:
            status = "feasible"
    return ActiveSolution(placement, status, cost, bound, info)
