r"""``exact.lag_active``: the KIP-441 rule ``lag_active`` solved exactly (rule: :mod:`.rules`).

Stage 1 is solved in closed form. Clients have no room limit, so every
stateful task t can be active on one of its most caught-up clients
``MC(t)`` and ``min N = 0``; the optimal assignments of stage 1 are exactly
those with ``a(t) ∈ MC(t)`` for every stateful t, which the model imposes by
its domains. Stages 2–4 are one integer program solved lexicographically
(:func:`~kipopt.formulations.highs.solve_lexicographic`: stage k is
minimised with the optimal values of stages < k fixed as rows).

Grouping. Tasks whose active may go anywhere (stateless, or stateful with
every client tied in rank) and which have at most one current owner are
interchangeable within their sub-topology except for that owner: they form
a *pool* per sub-topology g: ``st[g,c] <= own[g,c]`` of them stay on their
owner c and ``mv[g,c]`` others come to c, ``f[g,c] = st[g,c] + mv[g,c]``. The other tasks
form *classes* κ of identical (sub-topology g_κ, allowed clients ``MC_κ``,
owners among them ``O_κ``), with ``y[κ,c]`` of the ``m_κ`` tasks on c ∈ MC_κ.
Which task of a class goes where is immaterial: every level depends on
counts only. Writing

    n[c,g] = Σ_{κ: g_κ = g, c ∈ MC_κ} y[κ,c] + f[g,c],      n[c] = Σ_g n[c,g],

the program is

    Σ_{c ∈ MC_κ} y[κ,c] = m_κ  ∀κ;      Σ_c (st[g,c] + mv[g,c]) = |pool_g|  ∀g;
    0 <= st[g,c] <= own[g,c],   mv[g,c] >= 0;
    k_c·U >= n[c],   k_c·L <= n[c]  ∀c   (U >= max ⌈n_c/k_c⌉, L <= min ⌊n_c/k_c⌋);
    B >= U − L − β,  B >= 0;
    hi[g] >= n[c,g] >= lo[g]  ∀c, g;
    U, L, hi, lo integer (y, st, mv integral at a vertex, see :func:`build_model`);

    stage 2: min B;   stage 3: min Σ_g (hi[g] − lo[g]);
    stage 4: min M = Σ_κ Σ_{c ∉ O_κ} y[κ,c] + Σ_{g,c} mv[g,c].

At an optimum ``U``, ``L``, ``hi``, ``lo`` and ``st`` take the values the
rule recomputes (max/min over clients; reading back, pool tasks stay on their
owner first, so no more move than ``Σ mv``), so the stage values
are the rule's levels ``B``, ``S``, ``M``. Size: ``Σ_κ |MC_κ| + 2·G·C + 2G + 3``
columns and ``#κ + G + 2C + 2G·C + 1`` rows — linear in the number of
(task, most-caught-up client) pairs, never ``|T|·|C|`` (a task tied on every
client joins its sub-topology's pool). Clients themselves are not merged:
they differ in lags, owners and capacity, all of which the levels read.

Time limit: when it strikes in a stage, the incumbent of that stage is
returned with the lexicographic bound ``(0, ..., opt_{k-1}, bound_k, 0, ...)``
and status ``feasible``; before any incumbent, a greedy assignment (owner if
allowed, else the least loaded allowed client) stands in. The returned
assignment has actives only (the rule says nothing of standbys).

>>> from kipopt.datasets import generate
>>> x = generate("tasks", 2, tasks=12, clients=4)
>>> r = run_lag_active(x, SolveOptions())
>>> r.status.value, r.objective == lag_active_objective(x, r.assignment), r.bound == r.objective
('optimal', True, True)
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import astuple, dataclass, replace
from typing import Mapping

import numpy as np

from kipopt.evaluation.tasks import most_caught_up
from kipopt.instance import TasksInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.formulations.tasks.guard import caught_up_actives, guarded, too_large
from kipopt.formulations.highs import ArrayLP, SparseBuilder, is_integral, solve_lexicographic, solve_lp
from kipopt.formulations.tasks.rules import BALANCE_FACTOR, lag_active_levels, lag_active_objective, lexicographic


@dataclass(frozen=True)
class LagProblem:
    """Index form. Class κ: tasks ``class_tasks[κ]`` of sub-topology index ``class_group[κ]``, allowed
    on ``class_clients[κ]`` (client indices), ``class_owned[κ]`` marking owners among them."""

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    capacity: np.ndarray
    groups: tuple[int, ...]
    class_tasks: tuple[tuple[int, ...], ...]
    class_group: np.ndarray
    class_clients: tuple[np.ndarray, ...]
    class_owned: tuple[np.ndarray, ...]
    pool_tasks: tuple[tuple[int, ...], ...]
    pool_owner: np.ndarray

    @property
    def num_clients(self) -> int:
        return len(self.clients)


def lag_problem(instance: TasksInstance) -> LagProblem:
    """Pools and classes of :mod:`this module <kipopt.formulations.tasks.lag_active>`."""
    tasks, clients = instance.task_ids, instance.client_ids
    cindex = {c: j for j, c in enumerate(clients)}
    tindex = {t: i for i, t in enumerate(tasks)}
    groups = instance.subtopologies
    gindex = {g: i for i, g in enumerate(groups)}
    owners: dict[str, set[int]] = defaultdict(set)
    for c in clients:
        for t in instance.clients[c].active:
            owners[t].add(cindex[c])
    best = _best_clients(instance, cindex)
    classes: dict[tuple, list[int]] = {}
    pools: list[list[int]] = [[] for _ in groups]
    pool_owner = np.full(len(tasks), -1, dtype=np.int64)
    everyone = tuple(range(len(clients)))
    for i, t in enumerate(tasks):
        task = instance.tasks[t]
        g = gindex[task.subtopology]
        allowed = best[t] if task.stateful else everyone
        if allowed == everyone and len(owners[t]) <= 1:
            pools[g].append(i)
            pool_owner[i] = next(iter(owners[t]), -1)
            continue
        owned = tuple(c for c in allowed if c in owners[t])
        classes.setdefault((g, allowed, owned), []).append(i)
    keys = list(classes)
    return LagProblem(
        tasks, clients, np.array([instance.clients[c].capacity for c in clients], dtype=np.int64), groups,
        tuple(tuple(classes[k]) for k in keys), np.array([k[0] for k in keys], dtype=np.int64),
        tuple(np.array(k[1], dtype=np.int64) for k in keys),
        tuple(np.isin(np.array(k[1]), np.array(k[2], dtype=np.int64)) for k in keys),
        tuple(tuple(p) for p in pools), pool_owner)


def _best_clients(instance: TasksInstance, cindex: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Per stateful task, the indices (ascending) of its most caught-up clients (lag rank 0 within
    ``acceptable_recovery_lag``, else the lag; the end offset where a client lists no lag).

    Read from the lags the clients list, never from a tasks × clients array (3.7 GiB at 100,000 ×
    5,000): only a task whose unlisted clients tie for the least rank costs one step per client.
    """
    best = most_caught_up(instance)
    reporters: dict[str, set[int]] = defaultdict(set)
    for cid, client in instance.clients.items():
        for t in client.lags:
            reporters[t].add(cindex[cid])
    out = {}
    for t, b in best.items():
        listed = {cindex[c] for c in b.listed}
        if b.unlisted:
            heard = reporters.get(t, set())
            out[t] = tuple(j for j in range(len(cindex)) if j in listed or j not in heard)
        else:
            out[t] = tuple(sorted(listed))
    return out


@dataclass(frozen=True)
class Columns:
    """Column indices of the model's variable blocks (``st``/``mv``: pool tasks staying / moving)."""

    y: tuple[np.ndarray, ...]
    st: np.ndarray       # G × C
    mv: np.ndarray       # G × C
    U: int
    L: int
    B: int
    hi: np.ndarray
    lo: np.ndarray

    @property
    def integers(self) -> np.ndarray:
        return np.concatenate([[self.U, self.L], self.hi, self.lo]).astype(np.int64)


def _band_rows(b: SparseBuilder, cols: np.ndarray, client: np.ndarray, cell: np.ndarray, cap: np.ndarray,
               load: tuple[int, int, int], spread: tuple[np.ndarray, np.ndarray], C: int, G: int) -> None:
    """The balance and spread rows shared by the class model and the per-task model.

    Entry i puts a task on client ``client[i]``, in (sub-topology, client)
    cell ``cell[i]`` (``g*C + c``), through column ``cols[i]``. With
    ``load = (U, L, B)``: ``k_c·U - n_c >= 0``, ``n_c - k_c·L >= 0`` and
    ``B >= U - L - BALANCE_FACTOR``; with ``spread = (hi, lo)``:
    ``hi[g] - n[c,g] >= 0`` and ``n[c,g] - lo[g] >= 0``.
    """
    U, L, B = load
    hi, lo = spread
    ones, clients, cells = np.ones(len(cols)), np.arange(C), np.arange(G * C)
    b.add_rows(C, np.concatenate([client, clients]), np.concatenate([cols, np.full(C, U)]),
               np.concatenate([-ones, cap]), 0.0, np.inf)
    b.add_rows(C, np.concatenate([client, clients]), np.concatenate([cols, np.full(C, L)]),
               np.concatenate([ones, -cap]), 0.0, np.inf)
    b.add_row([B, U, L], [1.0, -1.0, 1.0], -float(BALANCE_FACTOR), np.inf)
    b.add_rows(G * C, np.concatenate([cell, cells]), np.concatenate([cols, np.repeat(hi, C)]),
               np.concatenate([-ones, np.ones(G * C)]), 0.0, np.inf)
    b.add_rows(G * C, np.concatenate([cell, cells]), np.concatenate([cols, np.repeat(lo, C)]),
               np.concatenate([ones, -np.ones(G * C)]), 0.0, np.inf)


def build_model(p: LagProblem) -> tuple[SparseBuilder, Columns, list[np.ndarray]]:
    """The program of the module docstring, and its three stage objectives.

    ``f[g,c]`` is split as ``st[g,c] + mv[g,c]`` (``st <= own``), and only
    ``U``, ``L``, ``hi``, ``lo`` are integer columns: once they are fixed, the
    rows left are two laminar families (classes and pools; clients ⊃
    (client, sub-topology)), a totally unimodular matrix with integer bounds,
    so an integral placement exists for every integer choice of them and a
    simplex vertex finds it (:func:`polish`).
    """
    b = SparseBuilder()
    C, G = p.num_clients, len(p.groups)
    total = len(p.tasks)
    y = tuple(b.add_cols(len(cl), 0.0, len(ts)) for cl, ts in zip(p.class_clients, p.class_tasks))
    pool_size = np.array([len(ts) for ts in p.pool_tasks], dtype=np.float64)
    own = np.zeros((G, C))
    for g, ts in enumerate(p.pool_tasks):
        for i in ts:
            if p.pool_owner[i] >= 0:
                own[g, p.pool_owner[i]] += 1
    st = b.add_cols(G * C, 0.0, own.reshape(-1)).reshape(G, C)
    mv = b.add_cols(G * C, 0.0, np.repeat(pool_size, C)).reshape(G, C)
    U, L = (int(v) for v in b.add_cols(2, 0.0, float(total), integer=True))
    B = int(b.add_cols(1, 0.0)[0])
    hi = b.add_cols(G, 0.0, float(total), integer=True)
    lo = b.add_cols(G, 0.0, float(total), integer=True)
    for cols, ts in zip(y, p.class_tasks):
        b.add_row(cols, 1.0, len(ts), len(ts))
    for g in range(G):
        b.add_row(np.concatenate([st[g], mv[g]]), 1.0, pool_size[g], pool_size[g])
    # entries of n[c,g] as (row g*C + c, column)
    ng_rows = [np.arange(G * C), np.arange(G * C)]
    ng_cols = [st.reshape(-1), mv.reshape(-1)]
    for k, cols in enumerate(y):
        ng_rows.append(p.class_group[k] * C + p.class_clients[k])
        ng_cols.append(cols)
    rows, cols = np.concatenate(ng_rows), np.concatenate(ng_cols)
    cap = p.capacity.astype(np.float64)
    _band_rows(b, cols, rows % C, rows, cap, (U, L, B), (hi, lo), C, G)
    n = b.num_col
    balance, spread, moves = np.zeros(n), np.zeros(n), np.zeros(n)
    balance[B] = 1.0
    spread[hi], spread[lo] = 1.0, -1.0
    for cols_k, owned in zip(y, p.class_owned):
        moves[cols_k] = (~owned).astype(np.float64)
    moves[mv.reshape(-1)] = 1.0
    return b, Columns(y, st, mv, U, L, B, hi, lo), [balance, spread, moves]


def polish(lp: ArrayLP, cols: Columns, x: np.ndarray, cost: np.ndarray,
           threads: int | None = None) -> np.ndarray | None:
    """An integral vertex no worse on ``cost`` than ``x``, with ``x``'s integer columns fixed (simplex)."""
    fixed = cols.integers
    lower, upper = lp.lower.copy(), lp.upper.copy()
    lower[fixed] = upper[fixed] = np.rint(x[fixed])
    lower[cols.B] = upper[cols.B] = max(0.0, np.rint(x[cols.U] - x[cols.L]) - BALANCE_FACTOR)
    res = solve_lp(replace(lp, cost=cost, lower=lower, upper=upper, integrality=None), threads=threads)
    if res.x is None or not is_integral(res.x) or cost @ res.x > cost @ x + 1e-6:
        return None
    return np.rint(res.x)


def greedy_placement(p: LagProblem) -> np.ndarray:
    """A feasible start: owners where allowed, else the allowed client with the fewest actives per thread."""
    place = np.full(len(p.tasks), -1, dtype=np.int64)
    load = np.zeros(p.num_clients, dtype=np.int64)
    for ts, allowed, owned in zip(p.class_tasks, p.class_clients, p.class_owned):
        for i in ts:
            c = allowed[owned][0] if owned.any() else allowed[np.argmin(load[allowed] / p.capacity[allowed])]
            place[i], load[c] = c, load[c] + 1
    for ts in p.pool_tasks:
        for i in ts:
            c = p.pool_owner[i] if p.pool_owner[i] >= 0 else int(np.argmin(load / p.capacity))
            place[i], load[c] = c, load[c] + 1
    return place


def placement_vector(p: LagProblem, cols: Columns, num_col: int, place: np.ndarray) -> np.ndarray:
    """The model's column values of a task placement (a start for the MIP)."""
    x = np.zeros(num_col)
    C, G = p.num_clients, len(p.groups)
    n = np.zeros((G, C))
    for k, (cols_k, ts, allowed) in enumerate(zip(cols.y, p.class_tasks, p.class_clients)):
        pos = {c: j for j, c in enumerate(allowed.tolist())}
        for i in ts:
            x[cols_k[pos[int(place[i])]]] += 1
            n[p.class_group[k], place[i]] += 1
    for g, ts in enumerate(p.pool_tasks):
        for i in ts:
            x[(cols.st if p.pool_owner[i] == place[i] else cols.mv)[g, place[i]]] += 1
            n[g, place[i]] += 1
    load = n.sum(axis=0)
    x[cols.U] = np.max(-(-load // p.capacity))
    x[cols.L] = np.min(load // p.capacity)
    x[cols.B] = max(0.0, x[cols.U] - x[cols.L] - BALANCE_FACTOR)
    x[cols.hi], x[cols.lo] = n.max(axis=1), n.min(axis=1)
    return x


def read_placement(p: LagProblem, cols: Columns, x: np.ndarray) -> np.ndarray:
    """Tasks to clients from the counts ``y`` and ``f``; pool tasks stay on their owner first."""
    place = np.full(len(p.tasks), -1, dtype=np.int64)
    for cols_k, ts, allowed, owned in zip(cols.y, p.class_tasks, p.class_clients, p.class_owned):
        counts = np.rint(x[cols_k]).astype(np.int64)
        slots = np.repeat(allowed, counts)
        place[list(ts)] = slots[:len(ts)]
    for g, ts in enumerate(p.pool_tasks):
        room = np.rint(x[cols.st[g]] + x[cols.mv[g]]).astype(np.int64)
        rest = []
        for i in ts:
            o = p.pool_owner[i]
            if o >= 0 and room[o] > 0:
                place[i], room[o] = o, room[o] - 1
            else:
                rest.append(i)
        place[rest] = np.repeat(np.arange(p.num_clients), room)[:len(rest)]
    return place


def to_assignment(tasks: tuple[str, ...], clients: tuple[str, ...], place: np.ndarray) -> dict[str, TaskRoles]:
    """Actives only: task ``i`` on client index ``place[i]``."""
    lists: list[list[str]] = [[] for _ in clients]
    for i, c in enumerate(place.tolist()):
        lists[c].append(tasks[i])
    return {cid: TaskRoles(tuple(ts)) for cid, ts in zip(clients, lists)}


def run_lag_active(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``exact.lag_active``: stage 1 by the domains, stages 2–4 lexicographically (see module docstring)."""
    t0 = time.perf_counter()
    p = lag_problem(instance)
    b, cols, stages = build_model(p)
    lp = b.build()
    start = placement_vector(p, cols, lp.num_col, greedy_placement(p))
    t1 = time.perf_counter()
    left = None if options.time_limit is None else max(0.0, options.time_limit - (t1 - t0))
    res = solve_lexicographic(lp, stages, left, options.threads, start=start)
    info = {"model": "lag-active-classes", "columns": lp.num_col, "rows": lp.num_row,
            "classes": len(p.class_tasks), "build_seconds": round(t1 - t0, 6),
            "solver_seconds": round(time.perf_counter() - t1, 6), "stage_values": list(res.values),
            "stage_bounds": [float(v) if np.isfinite(v) else None for v in res.bounds]}
    x = start if res.x is None else _integral(lp, cols, res, stages, start, options.threads)
    assignment = to_assignment(p.tasks, p.clients, read_placement(p, cols, x))
    objective = lag_active_objective(instance, assignment)
    if res.status not in ("optimal", "feasible", "time_limit"):
        return MethodResult(assignment, Status.ERROR, message=f"lag_active: HiGHS ended with status {res.status}",
                            info=info)
    if res.status == "optimal":
        optimum = lexicographic(instance, (0, *res.values))
        if objective == optimum:
            return MethodResult(assignment, Status.OPTIMAL, objective, objective, info=info)
        return MethodResult(assignment, Status.FEASIBLE, objective, min(optimum, objective), info=info,
                            message=f"read-back lost optimality ({objective} vs {optimum})")
    return MethodResult(assignment, Status.FEASIBLE, objective, min(_bound(instance, res), objective), info=info,
                        message=res.message or "time limit")


def _integral(lp: ArrayLP, cols: Columns, res, stages: list[np.ndarray], start: np.ndarray,
              threads: int | None) -> np.ndarray:
    """The solver's point made integral by :func:`polish` on the last stage it reached (else the start)."""
    if is_integral(res.x):
        return np.rint(res.x)
    k = len(stages) - 1 if res.stopped is None else res.stopped
    polished = polish(lp, cols, res.x, stages[k], threads)
    return start if polished is None else polished


def _bound(instance: TasksInstance, res) -> float:
    """Lexicographic bound: optimal stages as found, the interrupted stage's bound, zeros after."""
    levels = [0.0] + [float(v) for v in res.bounds]
    bound = levels[-1]
    levels[-1] = max(0.0, float(np.ceil(bound - 1e-6))) if np.isfinite(bound) else 0.0
    levels += [0.0] * (4 - len(levels))
    return lexicographic(instance, levels[:4])


def solve_ungrouped(instance: TasksInstance, time_limit: float | None = None,
                    threads: int | None = None) -> tuple[dict[str, TaskRoles] | None, tuple[float, ...]]:
    """The textbook per-task model, for cross-checks: ``x[t,c] ∈ {0,1}`` on ``c ∈ MC(t)`` (all clients for a
    stateless task), the same load, spread and movement rows, all integer; returns the assignment and
    the stage values ``(B, S, M)``."""
    tasks, clients = instance.task_ids, instance.client_ids
    C, G = len(clients), len(instance.subtopologies)
    gindex = {g: i for i, g in enumerate(instance.subtopologies)}
    b = SparseBuilder()
    cols, where = [], []
    best = most_caught_up(instance)
    for t in tasks:
        task = instance.tasks[t]
        allowed = ({c for c in clients if best[t].holds(c, t in instance.clients[c].lags)} if task.stateful
                   else set(clients))
        cs = np.array([j for j, c in enumerate(clients) if c in allowed], dtype=np.int64)
        xs = b.add_cols(len(cs), 0.0, 1.0, integer=True)
        b.add_row(xs, 1.0, 1.0, 1.0)
        cols.append(xs)
        where.append(cs)
    U, L = (int(v) for v in b.add_cols(2, 0.0, float(len(tasks)), integer=True))
    B = int(b.add_cols(1, 0.0)[0])
    hi, lo = b.add_cols(G, 0.0, float(len(tasks))), b.add_cols(G, 0.0, float(len(tasks)))
    cap = np.array([instance.clients[c].capacity for c in clients], dtype=np.float64)
    col = np.concatenate(cols)
    client = np.concatenate(where)
    cell = np.concatenate([gindex[instance.tasks[t].subtopology] * C + cs for t, cs in zip(tasks, where)])
    _band_rows(b, col, client, cell, cap, (U, L, B), (hi, lo), C, G)
    lp = b.build()
    balance, spread, moves = np.zeros(lp.num_col), np.zeros(lp.num_col), np.zeros(lp.num_col)
    balance[B] = 1.0
    spread[hi], spread[lo] = 1.0, -1.0
    for t, xs, cs in zip(tasks, cols, where):
        moves[xs] = [t not in instance.clients[clients[j]].active for j in cs]
    res = solve_lexicographic(lp, [balance, spread, moves], time_limit, threads)
    if res.x is None:
        return None, res.values
    place = [int(cs[np.argmax(res.x[xs])]) for xs, cs in zip(cols, where)]
    return to_assignment(tasks, clients, np.array(place)), res.values


def lag_size(instance: TasksInstance) -> str | None:
    """Refuse an instance whose model would not fit in memory (:func:`kipopt.formulations.tasks.guard.too_large`):
    two columns per (sub-topology, client) and at most one per task and allowed client (estimated by one)."""
    G, C, T = len(instance.subtopologies), len(instance.clients), len(instance.tasks)
    return too_large("clients", f"{G:,} sub-topologies x {C:,} clients and {T:,} tasks", 2 * G * C + T)


METHODS = [
    Method("exact.lag_active", "tasks", "lag_active", guarded(run_lag_active, caught_up_actives, lag_active_objective),
           "KIP-441 actives exactly: most caught-up clients, then thread balance, sub-topology spread, "
           "movements (lexicographic MIP over task classes)",
           requires=lag_size),
]


def levels_of(instance: TasksInstance, assignment) -> tuple[int, ...]:
    """The rule's levels as a tuple (for reports and tests)."""
    return astuple(lag_active_levels(instance, assignment))
