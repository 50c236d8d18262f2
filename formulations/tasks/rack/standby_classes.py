"""``exact.rack_standby`` over task classes × client groups: a model that does not grow with the tasks.

The grouped model of :mod:`kipopt.formulations.tasks.rack.standby_grouped` keeps
a ``kept`` and a ``new`` column per (task, client group): 1.09 million columns
and 98,000 covering rows at 100,000 tasks × 9 groups with two standbys. But
within a group every task's standby problem depends on the task only through

* its standby cost per rack (``traffic_cost`` × changelogs without a replica
  in the rack),
* the groups of its active clients and of its current standby clients (as
  multisets), which fix its ``kept`` and ``new`` capacities per group, the
  pairs its actives cover and the distinct pairs it must keep.

Tasks equal in all three form a *class* ``k`` of ``n_k`` tasks with
``c_k`` copies each (1,214 classes in that instance). Two kinds of columns:

* **edge classes** (no covering row: no tags, one copy, or no pair to keep
  beyond the actives'): per group ``g`` a ``kept`` column with capacity
  ``n_k × held_k(g)`` and a ``new`` column with capacity
  ``n_k × min(room_k(g), c_k)``, and a class row ``Σ = n_k c_k`` (a one-copy
  task with tags only gets the groups that add enough pairs, as in the
  grouped model). Dealing is exact: list the class's copies column by column
  and give copy ``i`` to task ``i mod n_k``. Each task gets ``c_k`` copies,
  and from a column with ``x ≤ n_k × cap`` copies at most ``⌈x/n_k⌉ ≤ cap``.
* **pattern classes** (tags, ``c_k ≥ 2`` and a pair to keep): a task's whole
  placement is a *pattern*, a multiset of ``c_k`` groups with ``m_g ≤
  held_k(g) + min(room_k(g), c_k)`` whose groups, with the actives', carry
  at least the task's starting number of distinct pairs; it keeps
  ``min(m_g, held_k(g))`` copies and places the rest new (keeping is never
  dearer). A column per feasible pattern counts the class's tasks using it;
  the class row says ``Σ = n_k``. Dealing gives each task one pattern.

Rows per group: the copies placed there equal its clients' standby counts.
Every task-level solution of the grouped model maps onto a class solution of
no greater cost (sum the tasks' columns; a pattern's kept-first cost is at
most the task's), and every class solution deals back to a task-level one of
equal cost, so the two models have the same optimum, and the group read-back
(:func:`~kipopt.formulations.tasks.rack.standby_grouped.read_back`) follows.

Size: columns at most ``Σ_k (2G + patterns_k)``, rows ``#classes + G``,
whatever the number of tasks. Without pattern classes the matrix is a
transportation matrix (totally unimodular: the LP vertex is integral); with
them the LP (the Dantzig–Wolfe relaxation of the covering rows, so tight)
is solved first and the MIP, started from everyone keeping their standbys,
only when its vertex is fractional. Pattern enumeration stops at
:data:`MAX_PATTERNS`; the grouped task-level model answers instead.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from kipopt.instance import TasksInstance

from kipopt.formulations.highs import (ArrayLP, Deadline, HighsResult, NewColumns, SparseBuilder, is_integral, solve_lp,
                                      solve_priced)
from kipopt.formulations.tasks.rack.model import traffic_matrix
from kipopt.formulations.tasks.rack.standby_grouped import (ReadBack, Roles, StandbyPlacement, read_back, standby_frame,
                                                            split_rounds, task_round)
from kipopt.formulations.tasks.rack.standby_model import carried_pairs

MAX_PATTERNS = 200_000
"""Most pattern columns enumerated over all classes before the task-level grouped model answers instead."""


class TooManyPatterns(Exception):
    """More patterns than :data:`MAX_PATTERNS`: the task-level grouped model answers."""


@dataclass(frozen=True)
class TaskClass:
    """Tasks with one standby problem: ``held``/``new_cap``/``cost`` per group, ``patterns`` when covered.

    ``patterns`` is ``None`` for an edge class, else a ``(count, G)`` matrix
    of copies per group with ``pattern_cost`` per pattern.
    """

    tasks: np.ndarray
    copies: int
    held: np.ndarray
    new_cap: np.ndarray
    cost: np.ndarray
    patterns: np.ndarray | None = None
    pattern_cost: np.ndarray | None = None


@dataclass(frozen=True)
class ClassModel:
    classes: tuple[TaskClass, ...]
    group_names: tuple[str, ...]
    group_of: np.ndarray
    counts: np.ndarray
    group_counts: np.ndarray
    active: Roles
    held: Roles
    non_overlap: int

    @property
    def num_groups(self) -> int:
        return len(self.group_names)


def class_model(instance: TasksInstance, alone: frozenset[int] = frozenset()) -> ClassModel | None:
    """The class model of ``instance`` (module docstring), clients in ``alone`` a group each; ``None`` when its
    patterns would pass :data:`MAX_PATTERNS`."""
    f = standby_frame(instance, alone)
    tasks, clients, racks = f.tasks, f.clients, f.racks
    tagged, profiles, names, group_of, group_rack, active, held = (f.tagged, f.profiles, f.names, f.group_of,
                                                                  f.group_rack, f.active, f.held)
    G = len(names)
    counts = np.bincount(held.client, minlength=len(clients)).astype(np.int64)
    size = np.bincount(group_of, minlength=G)
    traffic = traffic_matrix(instance, tasks, racks, "standby") * instance.config.traffic_cost
    members = _classes_by_key(traffic, group_of[active.client], active.ptr, group_of[held.client], held.ptr)
    carries = carried_pairs(profiles, group_of, G)[1] if tagged else None
    non_overlap = instance.config.non_overlap_cost
    out, patterns = [], 0
    for on_active, on_held, ts in members:
        try:
            k = _task_class(ts.astype(np.int64), traffic[ts[0]][group_rack], on_active, on_held, size, G,
                            carries, non_overlap)
        except TooManyPatterns:
            return None
        patterns += 0 if k.patterns is None else len(k.patterns)
        if patterns > MAX_PATTERNS:
            return None
        out.append(k)
    group_counts = np.bincount(group_of, weights=counts, minlength=G).astype(np.int64)
    return ClassModel(tuple(out), names, group_of, counts, group_counts, active, held, non_overlap)


def _classes_by_key(traffic: np.ndarray, active_group: np.ndarray, active_ptr: np.ndarray,
                    held_group: np.ndarray, held_ptr: np.ndarray) -> list[tuple[tuple[int, ...], tuple[int, ...],
                                                                               np.ndarray]]:
    """Tasks with standbys by (cost row, active groups, held groups): per class its active and held groups
    (sorted) and its tasks, classes in the order of their first task. Sorts only: linear in the roles."""
    width = int(traffic.max(initial=0)) + 1
    G = int(max(active_group.max(initial=-1), held_group.max(initial=-1))) + 2  # the last value pads
    columns = [traffic[:, r] for r in range(traffic.shape[1])]
    columns += _padded(active_group, active_ptr, G) + _padded(held_group, held_ptr, G)
    radix = [width] * traffic.shape[1] + [G] * (len(columns) - traffic.shape[1])
    cls = _row_ids(np.column_stack(columns) if columns else np.zeros((len(held_ptr) - 1, 0), dtype=np.int64),
                   radix)
    tasks = np.nonzero(np.diff(held_ptr) > 0)[0]
    order = tasks[np.argsort(cls[tasks], kind="stable")]
    if len(order) == 0:
        return []
    starts = np.nonzero(np.concatenate(([True], cls[order][1:] != cls[order][:-1])))[0]
    groups = np.split(order, starts[1:])
    groups.sort(key=lambda ts: int(ts[0]))
    return [(tuple(sorted(active_group[active_ptr[t]:active_ptr[t + 1]].tolist())),
             tuple(sorted(held_group[held_ptr[t]:held_ptr[t + 1]].tolist())), ts)
            for ts in groups for t in (int(ts[0]),)]


def _padded(group: np.ndarray, ptr: np.ndarray, G: int) -> list[np.ndarray]:
    """Each task's groups sorted, as columns padded with ``G - 1``."""
    T = len(ptr) - 1
    counts = np.diff(ptr)
    m = int(counts.max(initial=0))
    task = np.repeat(np.arange(T), counts)
    order = np.argsort(task * G + group, kind="stable")
    rank = np.arange(len(group)) - ptr[task]
    out = np.full((T, m), G - 1, dtype=np.int64)
    out[task, rank] = group[order]
    return [out[:, j] for j in range(m)]


def _row_ids(rows: np.ndarray, radix: list[int]) -> np.ndarray:
    """An id per row, equal ids for equal rows: one integer key per row when the radices fit 62 bits."""
    if math.prod(radix) < 2 ** 62:
        key = np.zeros(len(rows), dtype=np.int64)
        for j, r in enumerate(radix):
            key = key * r + rows[:, j]
        return key
    return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)


def _task_class(ts: np.ndarray, cost: np.ndarray, on_active: tuple[int, ...], on_held: tuple[int, ...],
                size: np.ndarray, G: int, carries: np.ndarray | None, non_overlap: int) -> TaskClass:
    act = np.bincount(np.array(on_active, dtype=np.int64), minlength=G)
    held = np.bincount(np.array(on_held, dtype=np.int64), minlength=G)
    copies = int(held.sum())
    new_cap = np.minimum(np.maximum(size - act - held, 0), copies)
    if carries is None:
        return TaskClass(ts, copies, held, new_cap, cost)
    covered = carries[act > 0].any(axis=0)
    need = int((covered | carries[held > 0].any(axis=0)).sum() - covered.sum())
    if need <= 0:
        return TaskClass(ts, copies, held, new_cap, cost)
    gain = (carries & ~covered).sum(axis=1)
    if copies == 1:  # one copy: a group either adds enough pairs or not (a filter, no row)
        ok = gain >= need
        return TaskClass(ts, copies, held * ok, new_cap * ok, cost)
    pats, pcost = _patterns(held, new_cap, cost, carries, covered, need, copies, non_overlap)
    return TaskClass(ts, copies, held, new_cap, cost, pats, pcost)


def _patterns(held: np.ndarray, new_cap: np.ndarray, cost: np.ndarray, carries: np.ndarray, covered: np.ndarray,
              need: int, copies: int, non_overlap: int) -> tuple[np.ndarray, np.ndarray]:
    """Every multiset of ``copies`` groups within the caps that keeps the pairs; its kept-first cost."""
    cap = held + new_cap
    groups = tuple(np.nonzero(cap > 0)[0].tolist())
    if math.comb(len(groups) + copies - 1, copies) > MAX_PATTERNS:
        raise TooManyPatterns
    pats = _multisets(groups, copies, len(cap))
    pats = pats[np.all(pats <= cap, axis=1)]
    gain = ((pats > 0).astype(np.float32) @ (carries & ~covered).astype(np.float32)) > 0.5  # pairs added
    pats = pats[gain.sum(axis=1) >= need]
    pcost = pats @ cost + non_overlap * np.maximum(pats - held, 0).sum(axis=1)
    return pats, pcost


@functools.lru_cache(maxsize=256)
def _multisets(groups: tuple[int, ...], copies: int, G: int) -> np.ndarray:
    """Copies per group of every multiset of ``copies`` of ``groups`` (one row each); shared, read-only."""
    combos = np.array(list(itertools.combinations_with_replacement(groups, copies)), dtype=np.int64)
    out = np.zeros((len(combos), G), dtype=np.int64)
    np.add.at(out, (np.repeat(np.arange(len(combos)), copies), combos.reshape(-1)), 1)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class ClassColumns:
    """Where each class's columns are: ``edge[k]`` = (kept cols, new cols, their groups) or ``pattern[k]``."""

    kept: list[tuple[np.ndarray, np.ndarray]]
    new: list[tuple[np.ndarray, np.ndarray]]
    pattern: list[np.ndarray | None]


def build_class_lp(m: ClassModel):
    """The class LP (module docstring), its column map and the all-kept start."""
    b = SparseBuilder()
    G = m.num_groups
    kept, new, pattern = [], [], []
    group_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    start: list[np.ndarray] = []
    for k in m.classes:
        n = len(k.tasks)
        if k.patterns is None:
            gk, gn = np.nonzero(k.held)[0], np.nonzero(k.new_cap)[0]
            ck = b.add_cols(len(gk), 0.0, n * k.held[gk], True, k.cost[gk])
            cn = b.add_cols(len(gn), 0.0, n * k.new_cap[gn], True, k.cost[gn] + m.non_overlap)
            b.add_row(np.concatenate([ck, cn]), 1.0, n * k.copies, n * k.copies)
            group_rows.append((np.concatenate([gk, gn]), np.concatenate([ck, cn]), np.ones(len(gk) + len(gn))))
            kept.append((ck, gk))
            new.append((cn, gn))
            pattern.append(None)
            start.append(np.concatenate([n * k.held[gk], np.zeros(len(gn))]))
        else:
            cp = b.add_cols(len(k.patterns), 0.0, n, True, k.pattern_cost)
            b.add_row(cp, 1.0, n, n)
            pg, pc = np.nonzero(k.patterns.T)  # group, pattern
            group_rows.append((pg, cp[pc], k.patterns[pc, pg].astype(np.float64)))
            kept.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
            new.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
            pattern.append(cp)
            own = np.all(k.patterns == k.held, axis=1)  # everyone keeps: a feasible pattern by definition
            start.append(np.where(own, float(n), 0.0) * (np.cumsum(own) == 1))
    if group_rows:
        rows, cols, vals = (np.concatenate(a) for a in zip(*group_rows))
    else:
        rows = cols = np.zeros(0, dtype=np.int64)
        vals = np.zeros(0)
    b.add_rows(G, rows, cols, vals, m.group_counts, m.group_counts)
    lp = b.build()
    x0 = np.concatenate(start) if start else np.zeros(0)
    return lp, ClassColumns(kept, new, pattern), x0


@dataclass(frozen=True)
class ClassSolution:
    x: np.ndarray | None
    status: str
    objective: int | None
    bound: float | None
    info: dict


def solve_classes(m: ClassModel, threads: int | None = None, deadline: Deadline | None = None) -> tuple[
        ClassSolution, ClassColumns]:
    """The LP by pricing patterns in (:func:`price_patterns`); the MIP, from the all-kept start, only when its
    vertex is fractional."""
    deadline = Deadline.after(None) if deadline is None else deadline
    lp, cols, x0 = build_class_lp(m)
    info = {"model": "standby-classes", "classes": len(m.classes), "groups": m.num_groups, "columns": lp.num_col,
            "rows": lp.num_row, "pattern_classes": sum(k.patterns is not None for k in m.classes), "tag_rows": 0,
            "ilp": False}
    res, rounds = price_patterns(lp, cols, x0, threads, deadline)
    info["pricing_rounds"] = rounds
    if res.x is None:
        return ClassSolution(None, res.status, None, res.bound, info), cols
    if res.status == "optimal" and is_integral(res.x):
        x = np.rint(res.x).astype(np.int64)
        return ClassSolution(x, "optimal", int(lp.cost @ x), res.bound, info), cols
    floor = math.ceil(res.bound - 1e-6) if res.bound is not None else 0
    x0 = np.rint(x0).astype(np.int64)
    if res.status != "optimal" or int(lp.cost @ x0) <= floor:  # stopped while pricing: the start, its bound
        return ClassSolution(x0, "optimal" if lp.cost @ x0 <= floor else "feasible", int(lp.cost @ x0), floor,
                             info), cols
    info["ilp"] = True
    x = round_fractional(lp, res.x, threads, deadline)
    if x is not None and lp.cost @ x <= floor:
        return ClassSolution(x, "optimal", int(lp.cost @ x), floor, info), cols
    info["full_ilp"] = True
    mip = solve_lp(lp, integer=True, threads=threads, presolve=True, deadline=deadline, start=x0)
    bound = max(floor, mip.bound) if mip.bound is not None else floor
    x = min((y for y in (x0, x, None if mip.x is None else np.rint(mip.x).astype(np.int64)) if y is not None),
            key=lambda y: lp.cost @ y)
    cost = int(lp.cost @ x)
    return ClassSolution(x, "optimal" if cost <= bound else "feasible", cost, bound, info), cols


def round_fractional(lp: ArrayLP, x: np.ndarray, threads: int | None, deadline: Deadline) -> np.ndarray | None:
    """An integral point keeping the LP's integral classes, the rest by a MIP over all their columns; ``None``
    when that MIP has no solution.

    A vertex of the class LP has at most as many fractional classes as there
    are group rows, so this MIP is tiny; when its point costs the LP's
    rounded-up optimum it is optimal.
    """
    owner = lp.index[lp.start[:-1]]  # each column's class row
    frac = np.abs(x - np.rint(x)) > 1e-6
    loose = np.zeros(lp.num_row, dtype=bool)
    loose[owner[frac]] = True
    free = loose[owner]
    fixed = np.where(free, 0.0, np.rint(x))
    col_of = np.repeat(np.arange(lp.num_col), np.diff(lp.start))
    used = np.bincount(lp.index, weights=lp.value * fixed[col_of], minlength=lp.num_row)
    cols = np.nonzero(free)[0]
    start, index, value = _csc(lp, cols)
    sub = ArrayLP(lp.cost[cols], lp.lower[cols], lp.upper[cols], lp.row_lower - used, lp.row_upper - used,
                  start, index, value, np.ones(len(cols), dtype=bool))
    res = solve_lp(sub, threads=threads, presolve=True, deadline=deadline)
    if res.x is None:
        return None
    out = np.rint(fixed).astype(np.int64)
    out[cols] = np.rint(res.x).astype(np.int64)
    return out


def price_patterns(lp: ArrayLP, cols: ClassColumns, x0: np.ndarray, threads: int | None,
                   deadline: Deadline) -> tuple[HighsResult, int]:
    """The class LP by column generation over its pattern columns; ``x`` over all of ``lp``'s columns.

    HiGHS' simplex took 4 to 90 s on all 35,792 columns of the 100,000-task
    case (1,223 rows); priced, 0.4 s. The restricted LP starts with every edge
    column and each class's all-kept pattern (feasible: the starting
    assignment); each round adds, per class, its pattern of least reduced
    cost when negative. With a convexity row ``Σ w = n_k`` per class, no
    pattern can gain more than ``n_k`` times its class's least reduced cost,
    so the Lagrangian bound of :func:`~kipopt.formulations.highs.solve_priced`
    holds when it is cut short, and a round adding nothing proves the LP optimal.
    """
    pattern = np.zeros(lp.num_col, dtype=bool)
    for cp in cols.pattern:
        if cp is not None:
            pattern[cp] = True
    inside = ~pattern | (x0 > 0)
    order = [np.nonzero(inside)[0]]
    owner = lp.index[lp.start[:-1]]  # each column's first row is its class row
    col_of = np.repeat(np.arange(lp.num_col), np.diff(lp.start))

    def price(row_dual: np.ndarray) -> NewColumns | None:
        rc = lp.cost - np.bincount(col_of, weights=lp.value * row_dual[lp.index], minlength=lp.num_col)
        rc[inside] = 0.0
        by_class = np.lexsort((rc, owner))
        first = np.ones(len(by_class), dtype=bool)
        first[1:] = owner[by_class[1:]] != owner[by_class[:-1]]
        best = by_class[first]
        best = best[rc[best] < -1e-7]
        if len(best) == 0:
            return None
        inside[best] = True
        order.append(best)
        return _columns(lp, best)

    restricted = dataclasses.replace(lp, cost=lp.cost[order[0]], lower=lp.lower[order[0]],
                                     upper=lp.upper[order[0]], integrality=None,
                                     **dict(zip(("start", "index", "value"), _csc(lp, order[0]))))
    res, rounds = solve_priced(restricted, price, threads=threads, deadline=deadline)
    if res.x is None:
        return res, rounds
    x = np.zeros(lp.num_col)
    x[np.concatenate(order)[:len(res.x)]] = res.x
    return dataclasses.replace(res, x=x), rounds


def _csc(lp: ArrayLP, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lp``'s columns ``cols`` as CSC arrays of their own."""
    lengths = np.diff(lp.start)[cols]
    start = np.concatenate(([0], np.cumsum(lengths)))
    entries = np.repeat(lp.start[cols] - start[:-1], lengths) + np.arange(start[-1])
    return start, lp.index[entries], lp.value[entries]


def _columns(lp: ArrayLP, cols: np.ndarray) -> NewColumns:
    start, index, value = _csc(lp, cols)
    return NewColumns(lp.cost[cols], lp.lower[cols], lp.upper[cols], start, index, value)


def deal(m: ClassModel, cols: ClassColumns, x: np.ndarray) -> tuple[list[tuple[int, int, int, bool]],
                                                                    list[tuple[int, int, int]]]:
    """Per task its kept and new copies per group (module docstring: copy i of a column block to task i mod n)."""
    kept: list[tuple[int, int, int, bool]] = []
    new: list[tuple[int, int, int]] = []
    for k, (ck, gk), (cn, gn), cp in zip(m.classes, cols.kept, cols.new, cols.pattern):
        ts = k.tasks.tolist()
        n = len(ts)
        if cp is None:
            per: dict[tuple[int, int, int], int] = defaultdict(int)  # (task position, kept 0 / new 1, group)
            pos = 0
            for kind, cs, gs in ((0, ck, gk), (1, cn, gn)):
                for c, g in zip(cs.tolist(), gs.tolist()):
                    q, r = divmod(int(x[c]), n)
                    for i in (range(n) if q else ()):
                        per[(i, kind, g)] += q
                    for j in range(r):
                        per[((pos + j) % n, kind, g)] += 1
                    pos += q * n + r
            for (i, kind, g), copies in sorted(per.items()):
                if kind == 0:
                    kept.append((ts[i], g, copies, copies >= int(k.held[g])))
                else:
                    new.append((ts[i], g, copies))
        else:
            w = np.rint(x[cp]).astype(np.int64)
            first = np.concatenate(([0], np.cumsum(w)[:-1]))
            keep = np.minimum(k.patterns, k.held)
            for part, out, full in ((keep, kept, True), (k.patterns - keep, new, False)):
                j, g = np.nonzero(part * (w > 0)[:, None])  # (pattern, group) entries of the used patterns
                rep = w[j]
                task = k.tasks[np.repeat(first[j] - np.cumsum(rep) + rep, rep) + np.arange(rep.sum())]
                gg, cc = np.repeat(g, rep), np.repeat(part[j, g], rep)
                if full:
                    out += zip(task.tolist(), gg.tolist(), cc.tolist(), (cc >= k.held[gg]).tolist())
                else:
                    out += zip(task.tolist(), gg.tolist(), cc.tolist())
    return kept, new


def read_classes(m: ClassModel, cols: ClassColumns, x: np.ndarray) -> ReadBack:
    """Standbys per client from a class solution (or the clients where the group read-back is stuck)."""
    kept, new = deal(m, cols, x)
    return read_back(m.group_of, m.counts, m.active, m.held, m.num_groups, kept, new)


def class_round(instance: TasksInstance, alone: frozenset[int], threads: int | None,
                deadline: Deadline) -> tuple[StandbyPlacement, ReadBack | None, np.ndarray]:
    """A round of :func:`~kipopt.formulations.tasks.rack.standby_grouped.split_rounds` on the class model (the
    task-level grouped model when the patterns would pass :data:`MAX_PATTERNS`)."""
    m = class_model(instance, alone)
    if m is None:
        return task_round(instance, alone, threads, deadline)
    sol, cols = solve_classes(m, threads, deadline)
    placement = StandbyPlacement(None, sol.status, sol.objective, sol.bound, sol.info)
    return placement, (None if sol.x is None else read_classes(m, cols, sol.x)), m.group_of


def place_standbys(instance: TasksInstance, threads: int | None = None,
                   deadline: Deadline | None = None) -> StandbyPlacement:
    """``exact.rack_standby``'s placement: the class model, read back per group, split where stuck."""
    deadline = Deadline.after(None) if deadline is None else deadline
    return split_rounds(deadline, lambda alone: class_round(instance, alone, threads, deadline))
