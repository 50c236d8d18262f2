"""Solving the model by client types (:mod:`.joint_grouped`): an assignment's point (the solver's start),
the lexicographic solve, and the realization of its point client by client (the read-back)."""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from kipopt._scipy import csgraph, sparse
from kipopt.instance import TasksInstance
from kipopt.solution import TaskRoles

from kipopt.formulations.highs import MERGE_LIMIT, ArrayLP, LexResult, solve_lexicographic, split_merged
from kipopt.formulations.tasks.joint_grouped import GroupedModel, build, grouping, settled_stages
from kipopt.formulations.tasks.joint_stages import JointScores, priority_order, tag_values


def point(model: GroupedModel, instance: TasksInstance, scores: JointScores,
          assignment: Mapping[str, TaskRoles]) -> np.ndarray:
    """R's point of an assignment (a start for the solver): every placement counted on its special arc or
    its (task, type), the tag indicators and window excesses at their values."""
    gr = model.grouping
    T = len(gr.tasks)
    x = np.zeros(model.builder.num_col)
    tindex = {t: i for i, t in enumerate(gr.tasks)}
    sp_at = {(int(t), int(c)): j for j, (t, c) in enumerate(zip(gr.sp_task, gr.sp_client))}
    gen_at = {(int(t), int(k)): j for j, (t, k) in enumerate(zip(gr.gen_task, gr.gen_type))}
    pairs = tag_values(instance)
    row_of = np.full(T, -1, dtype=np.int64)
    row_of[gr.stateful] = np.arange(int(gr.stateful.sum()))
    for c, cid in enumerate(gr.clients):
        roles = assignment.get(cid, TaskRoles())
        for role, ts in (("a", roles.active), ("s", roles.standby)):
            for tid in ts:
                t = tindex[tid]
                j = sp_at.get((t, c))
                if j is not None:
                    x[(model.a if role == "a" else model.s)[j]] += 1
                else:
                    x[(model.A if role == "a" else model.S)[gen_at[(t, int(gr.client_type[c]))]]] += 1
                    x[model.m[c]] += 1
                if gr.stateful[t] and model.z.shape[1]:
                    for q, (g, v) in enumerate(pairs):
                        if instance.clients[cid].tags.get(g) == v:
                            x[model.z[row_of[t], q]] = 1
        count = len(roles.active) + len(roles.standby)
        lo, hi = scores.window[cid]
        x[model.e[0, c]], x[model.e[1, c]] = max(0, count - hi), max(0, lo - count)
    return x


def realize(model: GroupedModel, x: np.ndarray) -> dict[str, TaskRoles] | None:
    """The assignment of R's integral point ``x`` (:mod:`.joint_grouped`), or ``None`` where no fill of a
    type exists (:func:`_fill_greedy`, else :func:`_fill_flow`)."""
    gr = model.grouping
    C = len(gr.clients)
    x = np.rint(x).astype(np.int64)
    active: list[list[int]] = [[] for _ in range(C)]
    standby: list[list[int]] = [[] for _ in range(C)]
    for j, (t, c) in enumerate(zip(gr.sp_task.tolist(), gr.sp_client.tolist())):
        if x[model.a[j]]:
            active[c].append(t)
        if model.s[j] >= 0 and x[model.s[j]]:
            standby[c].append(t)
    special = {}
    for t, c in zip(gr.sp_task.tolist(), gr.sp_client.tolist()):
        special.setdefault(t, set()).add(c)
    left = x[model.m].copy()
    acts = x[model.A]
    sbys = np.where(model.S >= 0, x[np.maximum(model.S, 0)], 0)
    demand = acts + sbys
    for k in range(gr.num_types):
        mine = np.flatnonzero((gr.gen_type == k) & (demand > 0))
        members = np.flatnonzero(gr.client_type == k)
        barred = [special.get(int(gr.gen_task[j]), ()) for j in mine]
        filled = (_fill_greedy(demand[mine], members, left, barred)
                  or _fill_flow(demand[mine], members, left, barred))
        if filled is None:
            return None
        for j, hosts in zip(mine.tolist(), filled):
            t = int(gr.gen_task[j])
            for q, c in enumerate(hosts):
                (active if q < acts[j] else standby)[c].append(t)
    return {cid: TaskRoles(tuple(gr.tasks[t] for t in sorted(active[c])), tuple(gr.tasks[t] for t in sorted(standby[c])))
            for c, cid in enumerate(gr.clients)}


def _fill_greedy(demand: np.ndarray, members: np.ndarray, left: np.ndarray,
                 barred: list) -> list[list[int]] | None:
    """Rows (tasks) with sums ``demand``, columns (``members``) with sums ``left[c]``, no 1 on a barred
    pair: tasks by decreasing demand, each on the columns of largest remaining sum it may use (a heap).
    ``None`` when a task finds too few columns (the flow of :func:`_fill_flow` then decides)."""
    room = {int(c): int(left[c]) for c in members}
    heap = [(-v, c) for c, v in room.items() if v > 0]
    heapq.heapify(heap)
    out: list[list[int]] = [[] for _ in demand]
    for i in np.argsort(-demand, kind="stable").tolist():
        took, skipped = [], []
        while len(took) < demand[i] and heap:
            neg, c = heapq.heappop(heap)
            (skipped if c in barred[i] else took).append((neg, c))
        if len(took) < demand[i]:
            return None
        for neg, c in took:
            out[i].append(c)
            if neg + 1 < 0:
                heapq.heappush(heap, (neg + 1, c))
        for entry in skipped:
            heapq.heappush(heap, entry)
    return None if heap else out


def _fill_flow(demand: np.ndarray, members: np.ndarray, left: np.ndarray,
               barred: list) -> list[list[int]] | None:
    """The same fill as a maximum flow (source → task: its demand, task → client: 1 unless barred,
    client → sink: its sum), exact where the greedy is not; ``None`` when no fill exists. Its arcs are
    (tasks of the type) × (clients of the type): used only where the greedy failed."""
    csr_matrix, maximum_flow = sparse().csr_matrix, csgraph().maximum_flow

    n, m = len(demand), len(members)
    source, sink = 0, n + m + 1
    rows, cols, caps = [np.zeros(n, dtype=np.int64)], [np.arange(1, n + 1)], [demand.astype(np.int64)]
    for i in range(n):
        ok = np.array([c not in barred[i] for c in members.tolist()], dtype=bool)
        rows.append(np.full(int(ok.sum()), i + 1))
        cols.append(n + 1 + np.flatnonzero(ok))
        caps.append(np.ones(int(ok.sum()), dtype=np.int64))
    rows.append(n + 1 + np.arange(m))
    cols.append(np.full(m, sink))
    caps.append(left[members].astype(np.int64))
    graph = csr_matrix((np.concatenate(caps).astype(np.int32), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(sink + 1, sink + 1))
    result = maximum_flow(graph, source, sink)
    if result.flow_value != int(demand.sum()) or result.flow_value != int(left[members].sum()):
        return None
    flow = result.flow.tocoo()
    out: list[list[int]] = [[] for _ in demand]
    for r, c, f in zip(flow.row.tolist(), flow.col.tolist(), flow.data.tolist()):
        if f > 0 and 1 <= r <= n and n + 1 <= c <= n + m:
            out[r - 1].append(int(members[c - n - 1]))
    return out


@dataclass(frozen=True)
class GroupedSolution:
    order: tuple[str, ...]
    result: LexResult
    constants: Mapping[str, int]
    assignment: dict[str, TaskRoles] | None
    columns: int
    settled: tuple[str, ...] = ()

    @property
    def realized(self) -> bool:
        return self.assignment is not None

    def bounds(self) -> dict[str, float | None]:
        """R's lexicographic bound per stage in ``order``: proven optima, the stopped stage's bound, None after."""
        out: dict[str, float | None] = {}
        for k, stage in enumerate(self.order):
            if k < len(self.result.bounds) and np.isfinite(self.result.bounds[k]):
                out[stage] = int(np.ceil(self.result.bounds[k] - 1e-6)) + self.constants[stage]
            else:
                out[stage] = None
        return out


def solve_grouped(instance: TasksInstance, priorities: Sequence[str] | None = None, time_limit: float | None = None,
                  threads: int | None = None, start: Mapping[str, TaskRoles] | None = None) -> GroupedSolution:
    """Solve R lexicographically in the rule's order and realize its point."""
    order = priority_order(instance, priorities)
    scores = JointScores.of(instance)
    began = time.monotonic()
    settled = frozenset() if start is None else settled_stages(instance, scores, order, start)
    model = build(instance, scores, grouping(instance, scores), settled)
    x0 = None if start is None else point(model, instance, scores, start)
    lp, keep = _open_columns(model.builder.build())
    left = None if time_limit is None else max(0.0, time_limit - (time.monotonic() - began))
    stages = [model.objectives[s][keep] for s in order]
    shifts = [float(model.constants[s]) for s in order]
    weight = _merge_weight(scores, order)
    if weight is not None:  # the last two stages as one: (first + K1)·W + (second + K2), each in [0, W)
        stages[-2:] = [stages[-2] * weight + stages[-1]]
        shifts[-2:] = [shifts[-2] * weight + shifts[-1]]
    result = solve_lexicographic(lp, stages, left, threads, None if x0 is None else x0[keep],
                                 lower_bounds=[-v for v in shifts])
    if weight is not None:
        result = split_merged(result, weight, model.constants[order[-2]], model.constants[order[-1]])
    full = None
    if result.x is not None:
        full = np.zeros(model.builder.num_col)
        full[keep] = result.x
    assignment = None if full is None else realize(model, full)
    return GroupedSolution(order, result, model.constants, assignment, lp.num_col, tuple(sorted(settled)))


def _merge_weight(scores: JointScores, order: Sequence[str]) -> int | None:
    """``W`` = the last stage's bound + 1 when the last two stages fit one integer objective below
    :data:`MERGE_LIMIT` (then minimizing ``first·W + second`` is minimizing them lexicographically, one
    solve instead of two), else ``None``."""
    weight = scores.bounds[order[-1]] + 1
    return weight if (scores.bounds[order[-2]] + 1) * weight < MERGE_LIMIT else None


def _open_columns(lp: ArrayLP) -> tuple[ArrayLP, np.ndarray]:
    """``lp`` without its columns fixed at 0 (those a settled stage closed), and the kept columns' indices:
    HiGHS' presolve would remove them too, at a cost that grows with them."""
    keep = np.flatnonzero((lp.upper > 0) | (lp.lower < 0))
    matrix = sparse().csc_matrix((lp.value, lp.index, lp.start), shape=(lp.num_row, lp.num_col))[:, keep]
    integrality = None if lp.integrality is None else lp.integrality[keep]
    return replace(lp, cost=lp.cost[keep], lower=lp.lower[keep], upper=lp.upper[keep], start=matrix.indptr.astype(np.int64),
                   index=matrix.indices.astype(np.int64), value=matrix.data, integrality=integrality), keep
