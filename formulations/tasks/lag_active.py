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
are the rule's levels ``B``, ``S``, ``M``.

What the levels read of the lags is only ``MC(t)`` (stage 1 fixes the
domains; stages 2–4 count tasks per client and per (sub-topology, client)),
so tasks with equal (g, ``MC``, owners in ``MC``) are interchangeable, and
the model is written over what can actually happen, never over ``G × C``:

* only *reachable* cells (g, c) — some class of g allows c, or g has a pool
  — get rows (:class:`Cells`): an unreachable cell has ``n[c,g] = 0`` in
  every assignment, so ``hi[g] >= 0`` holds anyway and ``n[c,g] >= lo[g]``
  only says ``lo[g] = 0``, a column bound;
* ``st``/``mv`` columns exist only for sub-topologies with a pool (``st`` only
  where a pool task is owned);
* a class with one allowed client has no column: its tasks are constants of
  the rows (:class:`Loads`), and its unowned tasks a constant of stage 4;
* a cell's ``hi`` row is left out when even all the tasks that may land
  there cannot exceed the bound ``hi[g] >= max(fixed load, ⌈|T_g| / reach_g⌉)``
  every assignment meets (its ``lo`` row likewise): implied rows change no
  feasible set.

Size: ``Σ_κ |MC_κ|`` over classes with a choice ``+ 2·C·(sub-topologies with a
pool) + 2G + 3`` columns; rows: those classes, the pools, ``2C + 1`` and the
cells not implied — linear in the (task, most caught-up client) pairs, never
``|T|·|C|`` (50,000 tasks × 2,500 clients × 500 sub-topologies: 60,571 columns
and 36,087 rows, where the model over every cell had 2.6 million columns).
Clients themselves are not merged: they differ in lags, owners and capacity,
all of which the levels read.

Stages 3 and 4 are solved as one objective ``S·(|T| + 1) + M`` (each is at
most ``|T|``, so this orders exactly as the pair; one presolve instead of
two) while ``(|T| + 1)²`` stays below :data:`~kipopt.formulations.highs.MERGE_LIMIT`.

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
from dataclasses import astuple, dataclass, replace

import numpy as np

from kipopt.evaluation.tasks import most_caught_up
from kipopt.instance import TasksInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.formulations.tasks.guard import caught_up_actives, guarded, too_large
from kipopt.formulations.tasks.lag_classes import (  # noqa: F401 - lag_columns, lag_problem: this module's API
    LagProblem, greedy_placement, lag_columns, lag_problem, to_assignment)
from kipopt.formulations.highs import (MERGE_LIMIT, ArrayLP, SparseBuilder, is_integral, solve_lexicographic,
                                      solve_lp, split_merged)
from kipopt.formulations.tasks.rules import BALANCE_FACTOR, lag_active_levels, lag_active_objective, lexicographic


@dataclass(frozen=True)
class Columns:
    """Column indices of the model's variable blocks. Pools: ``pools[q]`` is the sub-topology of the q-th
    non-empty pool, ``mv[q, c]`` its tasks coming to client c, ``st[j]`` those staying on their owner in
    cell ``st_key[j]`` (``g*C + c``, only where some pool task of g is owned by c)."""

    y: np.ndarray        # per arc of LagProblem; -1 where its class has one client (no column)
    pools: np.ndarray
    st: np.ndarray
    st_key: np.ndarray
    mv: np.ndarray       # P × C
    U: int
    L: int
    B: int
    hi: np.ndarray
    lo: np.ndarray
    moved_fixed: int = 0  # tasks of one-client classes not owned there: stage 4's constant

    @property
    def integers(self) -> np.ndarray:
        return np.concatenate([[self.U, self.L], self.hi, self.lo]).astype(np.int64)


@dataclass(frozen=True)
class Cells:
    """The (sub-topology, client) cells some task can reach, numbered: ``key[j] = g*C + c`` ascending.

    A cell no task of g may reach has ``n[c,g] = 0`` in every assignment, so its
    row ``hi[g] >= n[c,g]`` holds for any ``hi >= 0`` and is left out; its row
    ``n[c,g] >= lo[g]`` says ``lo[g] <= 0``, so a sub-topology that misses some
    client has ``lo[g]`` fixed at 0 (``full[g]`` false) and no ``lo`` rows at all.
    What is left grows with the (task class, allowed client) pairs, never with
    ``G × C``.
    """

    key: np.ndarray
    full: np.ndarray     # per sub-topology: every client reachable

    @classmethod
    def of(cls, keys: np.ndarray, C: int, G: int) -> "Cells":
        key = np.unique(keys)
        return cls(key, np.bincount(key // C, minlength=G) == C)

    def index(self, keys: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.key, keys)


def _band_rows(b: SparseBuilder, cols: np.ndarray, keys: np.ndarray, cells: Cells, cap: np.ndarray,
               load: tuple[int, int, int], spread: tuple[np.ndarray, np.ndarray], C: int) -> None:
    """The balance and spread rows shared by the class model and the per-task model.

    Entry i puts a task in (sub-topology, client) cell ``keys[i]`` (``g*C + c``)
    through column ``cols[i]``. With ``load = (U, L, B)``: ``k_c·U - n_c >= 0``,
    ``n_c - k_c·L >= 0`` and ``B >= U - L - BALANCE_FACTOR``; with ``spread =
    (hi, lo)``: ``hi[g] - n[c,g] >= 0`` and ``n[c,g] - lo[g] >= 0`` over the
    reachable ``cells`` only (the caller fixes ``lo[g] = 0`` where g misses a client).
    """
    U, L, B = load
    hi, lo = spread
    ones, clients = np.ones(len(cols)), np.arange(C)
    client = keys % C
    b.add_rows(C, np.concatenate([client, clients]), np.concatenate([cols, np.full(C, U)]),
               np.concatenate([-ones, cap]), 0.0, np.inf)
    b.add_rows(C, np.concatenate([client, clients]), np.concatenate([cols, np.full(C, L)]),
               np.concatenate([ones, -cap]), 0.0, np.inf)
    b.add_row([B, U, L], [1.0, -1.0, 1.0], -float(BALANCE_FACTOR), np.inf)
    K = len(cells.key)
    row, mine = cells.index(keys), np.arange(K)
    b.add_rows(K, np.concatenate([row, mine]), np.concatenate([cols, hi[cells.key // C]]),
               np.concatenate([-ones, np.ones(K)]), 0.0, np.inf)
    full_cell = cells.full[cells.key // C]
    renumber = np.cumsum(full_cell) - 1
    take = full_cell[row]
    F = int(full_cell.sum())
    b.add_rows(F, np.concatenate([renumber[row[take]], np.arange(F)]),
               np.concatenate([cols[take], lo[cells.key[full_cell] // C]]),
               np.concatenate([ones[take], -np.ones(F)]), 0.0, np.inf)


@dataclass(frozen=True)
class Loads:
    """What the grouped model knows of each reachable cell before solving: ``fixed[j]`` tasks that can go
    nowhere else (classes of one allowed client), at most ``most[j]`` tasks in all; and per sub-topology
    the bounds every assignment meets, ``hi[g] >= hi_floor[g]`` and ``lo[g] <= lo_ceil[g]``:

    * ``hi_floor[g] = max(max_j fixed[j], ⌈|T_g| / reach_g⌉)`` (the cells of g share its |T_g| tasks);
    * ``lo_ceil[g] = min(min_j most[j], ⌊|T_g| / C⌋)`` where g reaches every client, else 0.

    So a cell's ``hi`` row is implied by the bounds when ``most[j] <= hi_floor[g]``, and its ``lo`` row
    when ``fixed[j] >= lo_ceil[g]``: both are left out, which changes no feasible set.
    """

    cells: Cells
    fixed: np.ndarray
    most: np.ndarray
    hi_floor: np.ndarray
    lo_ceil: np.ndarray

    @classmethod
    def of(cls, keys: np.ndarray, upper: np.ndarray, fixed_keys: np.ndarray, fixed_counts: np.ndarray,
           sizes: np.ndarray, C: int) -> "Loads":
        G = len(sizes)
        cells = Cells.of(np.concatenate([keys, fixed_keys]), C, G)
        K = len(cells.key)
        fixed = np.bincount(cells.index(fixed_keys), weights=fixed_counts, minlength=K)
        most = fixed + np.bincount(cells.index(keys), weights=upper, minlength=K)
        group = cells.key // C
        reach = np.bincount(group, minlength=G)
        hi_floor = np.zeros(G)
        np.maximum.at(hi_floor, group, fixed)
        hi_floor = np.maximum(hi_floor, -(-sizes // np.maximum(reach, 1)))
        lo_ceil = np.full(G, np.inf)
        np.minimum.at(lo_ceil, group, most)
        lo_ceil = np.where(cells.full, np.minimum(lo_ceil, sizes // C), 0.0)
        return cls(cells, fixed, most, hi_floor, lo_ceil)


def _grouped_band_rows(b: SparseBuilder, cols: np.ndarray, keys: np.ndarray, loads: Loads, cap: np.ndarray,
                       level: tuple[int, int, int], spread: tuple[np.ndarray, np.ndarray], C: int) -> None:
    """:func:`_band_rows` with the fixed tasks as constants and the implied spread rows left out
    (:class:`Loads`): ``k_c·U - n_c >= F_c``, ``n_c - k_c·L >= -F_c`` over the variable entries ``cols``
    in cells ``keys``; ``hi[g] - n[c,g] >= F[c,g]`` and ``n[c,g] - lo[g] >= -F[c,g]`` where not implied."""
    U, L, B = level
    hi, lo = spread
    cells = loads.cells
    ones, clients = np.ones(len(cols)), np.arange(C)
    client = keys % C
    fixed_c = np.bincount(cells.key % C, weights=loads.fixed, minlength=C)
    b.add_rows(C, np.concatenate([client, clients]), np.concatenate([cols, np.full(C, U)]),
               np.concatenate([-ones, cap]), fixed_c, np.inf)
    b.add_rows(C, np.concatenate([client, clients]), np.concatenate([cols, np.full(C, L)]),
               np.concatenate([ones, -cap]), -fixed_c, np.inf)
    b.add_row([B, U, L], [1.0, -1.0, 1.0], -float(BALANCE_FACTOR), np.inf)
    group = cells.key // C
    row = cells.index(keys)
    for keep, sign, column, rhs in (
            (loads.most > loads.hi_floor[group], -1.0, hi, loads.fixed),
            (cells.full[group] & (loads.fixed < loads.lo_ceil[group]), 1.0, lo, -loads.fixed)):
        renumber = np.cumsum(keep) - 1
        take = keep[row]
        R = int(keep.sum())
        b.add_rows(R, np.concatenate([renumber[row[take]], np.arange(R)]),
                   np.concatenate([cols[take], column[group[keep]]]),
                   np.concatenate([sign * ones[take], -sign * np.ones(R)]), rhs[keep], np.inf)


def build_model(p: LagProblem) -> tuple[SparseBuilder, Columns, list[np.ndarray]]:
    """The program of the module docstring, and its three stage objectives.

    ``f[g,c]`` is split as ``st[g,c] + mv[g,c]`` (``st <= own``; an ``st`` column
    only where ``own > 0``, ``mv`` only for sub-topologies with a pool); a class
    of one allowed client has no column (its tasks are constants, :class:`Loads`,
    and so are the spread rows the bounds imply). Only ``U``, ``L``, ``hi``,
    ``lo`` are integer columns: once they are fixed, the rows left are two
    laminar families (classes and pools; clients ⊃ (client, sub-topology)), a
    totally unimodular matrix with integer bounds, so an integral placement
    exists for every integer choice of them and a simplex vertex finds it
    (:func:`polish`).
    """
    b = SparseBuilder()
    C, G = p.num_clients, len(p.groups)
    total = len(p.tasks)
    arc_class = p.arc_class
    free = np.diff(p.class_ptr)[arc_class] > 1
    y = np.full(len(arc_class), -1, dtype=np.int64)
    y[free] = b.add_cols(int(free.sum()), 0.0, p.class_size[arc_class[free]].astype(np.float64))
    pooled = p.task_class < 0
    pools = np.flatnonzero(np.bincount(p.task_group[pooled], minlength=G))
    pool_size = np.bincount(p.task_group[pooled], minlength=G)[pools].astype(np.float64)
    owned = pooled & (p.pool_owner >= 0)
    st_key, own = np.unique(p.task_group[owned] * C + p.pool_owner[owned], return_counts=True)
    st = b.add_cols(len(st_key), 0.0, own.astype(np.float64))
    mv = b.add_cols(len(pools) * C, 0.0, np.repeat(pool_size, C)).reshape(len(pools), C)
    arc_key = p.class_group[arc_class] * C + p.arc_client
    keys = np.concatenate([np.repeat(pools * C, C) + np.tile(np.arange(C), len(pools)), st_key, arc_key[free]])
    cols = np.concatenate([mv.reshape(-1), st, y[free]]).astype(np.int64)
    upper = np.concatenate([np.repeat(pool_size, C), own, p.class_size[arc_class[free]]]).astype(np.float64)
    loads = Loads.of(keys.astype(np.int64), upper, arc_key[~free], p.class_size[arc_class[~free]].astype(np.float64),
                     np.bincount(p.task_group, minlength=G).astype(np.float64), C)
    U, L = (int(v) for v in b.add_cols(2, 0.0, float(total), integer=True))
    B = int(b.add_cols(1, 0.0)[0])
    hi = b.add_cols(G, loads.hi_floor, float(total), integer=True)
    lo = b.add_cols(G, 0.0, loads.lo_ceil, integer=True)
    size = p.class_size.astype(np.float64)
    multi = np.flatnonzero(np.diff(p.class_ptr) > 1)
    b.add_rows(len(multi), np.searchsorted(multi, arc_class[free]), y[free], 1.0, size[multi], size[multi])
    q_of = np.searchsorted(pools, st_key // C)
    b.add_rows(len(pools), np.concatenate([q_of, np.repeat(np.arange(len(pools)), C)]),
               np.concatenate([st, mv.reshape(-1)]), 1.0, pool_size, pool_size)
    _grouped_band_rows(b, cols, keys.astype(np.int64), loads, p.capacity.astype(np.float64), (U, L, B), (hi, lo), C)
    n = b.num_col
    balance, spread, moves = np.zeros(n), np.zeros(n), np.zeros(n)
    balance[B] = 1.0
    spread[hi], spread[lo] = 1.0, -1.0
    moves[y[free]] = (~p.arc_owned[free]).astype(np.float64)
    moves[mv.reshape(-1)] = 1.0
    moved_fixed = int(p.class_size[arc_class[~free & ~p.arc_owned]].sum())
    return b, Columns(y, pools, st, st_key, mv, U, L, B, hi, lo, moved_fixed), [balance, spread, moves]


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


def placement_vector(p: LagProblem, cols: Columns, num_col: int, place: np.ndarray) -> np.ndarray:
    """The model's column values of a task placement (a start for the MIP)."""
    x = np.zeros(num_col)
    C, G = p.num_clients, len(p.groups)
    inclass = np.flatnonzero(p.task_class >= 0)
    k = p.task_class[inclass]
    arc = cols.y[p.class_ptr[k] + _position(p, k, place[inclass])]
    np.add.at(x, arc[arc >= 0], 1.0)
    pooled = np.flatnonzero(p.task_class < 0)
    stays = p.pool_owner[pooled] == place[pooled]
    key = p.task_group[pooled] * C + place[pooled]
    np.add.at(x, cols.st[np.searchsorted(cols.st_key, key[stays])], 1.0)
    q = np.searchsorted(cols.pools, p.task_group[pooled[~stays]])
    np.add.at(x, cols.mv[q, place[pooled[~stays]]], 1.0)
    key, count = np.unique(p.task_group * C + place, return_counts=True)
    load = np.bincount(key % C, weights=count, minlength=C)
    x[cols.U] = np.max(-(-load // p.capacity))
    x[cols.L] = np.min(load // p.capacity)
    x[cols.B] = max(0.0, x[cols.U] - x[cols.L] - BALANCE_FACTOR)
    hi = np.zeros(G)
    np.maximum.at(hi, key // C, count)
    lo = np.full(G, np.inf)
    np.minimum.at(lo, key // C, count)
    x[cols.hi] = hi
    x[cols.lo] = np.where(np.bincount(key // C, minlength=G) == C, lo, 0.0)
    return x


def _position(p: LagProblem, k: np.ndarray, client: np.ndarray) -> np.ndarray:
    """Where ``client[i]`` is among the allowed clients of class ``k[i]`` (each class's list is ascending,
    so one search over (class, client) keys, which ascend along the arcs)."""
    arc_key = p.arc_class * p.num_clients + p.arc_client
    return np.searchsorted(arc_key, k * p.num_clients + client) - p.class_ptr[k]


def read_placement(p: LagProblem, cols: Columns, x: np.ndarray) -> np.ndarray:
    """Tasks to clients from the counts ``y`` and ``st + mv``; pool tasks stay on their owner first."""
    place = np.full(len(p.tasks), -1, dtype=np.int64)
    counts = np.where(cols.y >= 0, np.rint(x[cols.y]), p.class_size[p.arc_class]).astype(np.int64)
    slots = np.repeat(p.arc_client, counts)          # class by class, as the arcs are
    inclass = np.flatnonzero(p.task_class >= 0)
    order = inclass[np.argsort(p.task_class[inclass], kind="stable")]
    place[order] = slots[:len(order)]
    C = p.num_clients
    pooled = np.flatnonzero(p.task_class < 0)
    pooled = pooled[np.argsort(p.task_group[pooled], kind="stable")]
    members = np.split(pooled, np.searchsorted(p.task_group[pooled], cols.pools[1:]))
    staying = np.split(np.arange(len(cols.st_key)), np.searchsorted(cols.st_key // C, cols.pools[1:]))
    for q, tasks, mine in zip(range(len(cols.pools)), members, staying):
        room = np.rint(x[cols.mv[q]]).astype(np.int64)
        room[cols.st_key[mine] % C] += np.rint(x[cols.st[mine]]).astype(np.int64)
        rest = []
        for i in tasks.tolist():
            o = p.pool_owner[i]
            if o >= 0 and room[o] > 0:
                place[i], room[o] = o, room[o] - 1
            else:
                rest.append(i)
        place[rest] = np.repeat(np.arange(C), room)[:len(rest)]
    return place


def run_lag_active(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """``exact.lag_active``: stage 1 by the domains, stages 2–4 lexicographically (see module docstring)."""
    t0 = time.perf_counter()
    p = lag_problem(instance)
    b, cols, stages = build_model(p)
    lp = b.build()
    start = placement_vector(p, cols, lp.num_col, greedy_placement(p))
    t1 = time.perf_counter()
    left = None if options.time_limit is None else max(0.0, options.time_limit - (t1 - t0))
    weight = len(p.tasks) + 1  # spread and moves are each at most |T|: one solve for both when it fits
    if weight * weight < MERGE_LIMIT:
        merged = stages[:1] + [stages[1] * weight + stages[2]]
        res = split_merged(solve_lexicographic(lp, merged, left, options.threads, start=start), weight)
    else:
        res = solve_lexicographic(lp, stages, left, options.threads, start=start)
    shift = (0.0, 0.0, float(cols.moved_fixed))  # stage 4 counts the fixed tasks' moves too
    values = tuple(v + d for v, d in zip(res.values, shift))
    bounds = tuple(v + d for v, d in zip(res.bounds, shift))
    info = {"model": "lag-active-classes", "columns": lp.num_col, "rows": lp.num_row,
            "classes": p.num_classes, "build_seconds": round(t1 - t0, 6),
            "solver_seconds": round(time.perf_counter() - t1, 6), "stage_values": list(values),
            "stage_bounds": [float(v) if np.isfinite(v) else None for v in bounds]}
    x = start if res.x is None else _integral(lp, cols, res, stages, start, options.threads)
    assignment = to_assignment(p.tasks, p.clients, read_placement(p, cols, x))
    objective = lag_active_objective(instance, assignment)
    if res.status not in ("optimal", "feasible", "time_limit"):
        return MethodResult(assignment, Status.ERROR, message=f"lag_active: HiGHS ended with status {res.status}",
                            info=info)
    if res.status == "optimal":
        optimum = lexicographic(instance, (0, *values))
        if objective == optimum:
            return MethodResult(assignment, Status.OPTIMAL, objective, objective, info=info)
        return MethodResult(assignment, Status.FEASIBLE, objective, min(optimum, objective), info=info,
                            message=f"read-back lost optimality ({objective} vs {optimum})")
    return MethodResult(assignment, Status.FEASIBLE, objective, min(_bound(instance, bounds), objective), info=info,
                        message=res.message or "time limit")


def _integral(lp: ArrayLP, cols: Columns, res, stages: list[np.ndarray], start: np.ndarray,
              threads: int | None) -> np.ndarray:
    """The solver's point made integral by :func:`polish` on the last stage it reached (else the start)."""
    if is_integral(res.x):
        return np.rint(res.x)
    k = len(stages) - 1 if res.stopped is None else res.stopped
    polished = polish(lp, cols, res.x, stages[k], threads)
    return start if polished is None else polished


def _bound(instance: TasksInstance, bounds: tuple[float, ...]) -> float:
    """Lexicographic bound: optimal stages as found, the interrupted stage's bound, zeros after."""
    levels = [0.0] + [float(v) for v in bounds]
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
    cell = np.concatenate([gindex[instance.tasks[t].subtopology] * C + cs for t, cs in zip(tasks, where)])
    every = Cells(np.arange(G * C), np.ones(G, dtype=bool))  # textbook: a row per cell, reachable or not
    _band_rows(b, col, cell, every, cap, (U, L, B), (hi, lo), C)
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
    """Refuse an instance whose model would not fit in memory (:func:`kipopt.formulations.tasks.guard.too_large`;
    columns as :func:`lag_columns` bounds them)."""
    columns, pools = lag_columns(instance)
    T, C, G = len(instance.tasks), len(instance.clients), len(instance.subtopologies)
    return too_large("clients", f"{T:,} tasks ({pools:,} of {G:,} sub-topologies with tasks any client may "
                     f"take) x {C:,} clients", columns)


METHODS = [
    Method("exact.lag_active", "tasks", "lag_active", guarded(run_lag_active, caught_up_actives, lag_active_objective),
           "KIP-441 actives exactly: most caught-up clients, then thread balance, sub-topology spread, "
           "movements (lexicographic MIP over task classes)",
           requires=lag_size),
]


def levels_of(instance: TasksInstance, assignment) -> tuple[int, ...]:
    """The rule's levels as a tuple (for reports and tests)."""
    return astuple(lag_active_levels(instance, assignment))
