"""``exact.joint``: actives, standbys and their placement in one lexicographic integer program.

Kafka Streams fixes each client's task count (round robin, thread balancing)
before it minimizes cross-rack traffic, places standbys afterwards, and then
moves actives to caught-up clients. This model decides everything at once,
with per-client counts free, and minimizes the stages of the ``joint`` rule
(:mod:`kipopt.formulations.tasks.joint_stages`) in their priority order.

Variables: :math:`a_{tc} \\in \\{0,1\\}` (task :math:`t \\in T` active on client
:math:`c`), :math:`s_{tc} \\in \\{0,1\\}` (stateful :math:`t \\in S` standby on
:math:`c`), :math:`z_{tgv} \\in \\{0,1\\}` (some host of :math:`t` has value
:math:`v` of tag key :math:`g`), :math:`e^+_c, e^-_c \\ge 0` (tasks above /
below client :math:`c`'s fair window :math:`[\\ell_c, u_c]`). Constraints:

.. math::

    \\sum_c a_{tc} = 1 \\; (t \\in T), \\qquad a_{tc} + s_{tc} \\le 1, \\qquad
    \\sum_c s_{tc} \\le k \\; (t \\in S),

    z_{tgv} \\le \\sum_{c : g(c) = v} (a_{tc} + s_{tc}), \\qquad
    \\ell_c - e^-_c \\le \\sum_t (a_{tc} + s_{tc}) \\le u_c + e^+_c .

Stage objectives (each plus a constant, so that its value is the rule's):
``caught_up`` :math:`\\sum_{t \\in S, c \\notin B_t} a_{tc}`; ``standbys``
:math:`k|S| - \\sum s_{tc}`; ``tags`` :math:`\\text{ideal} \\cdot |S| - \\sum z_{tgv}`;
``balance`` :math:`\\sum_c e^+_c + e^-_c`; ``traffic`` the KIP-925 traffic of
every :math:`a_{tc}` and :math:`s_{tc}`; ``non_overlap`` the placements not
in the current assignment. Stage :math:`k` minimizes its objective subject to
every earlier stage at its optimum (:func:`kipopt.formulations.highs.solve_lexicographic`).
At an optimum :math:`z_{tgv} = \\min(1, \\sum \\ldots)` and :math:`e^\\pm` are the
exact excesses, so each stage's value equals the rule's score of the
assignment read back. Size: :math:`|T||C| + |S||C|` binaries plus one
:math:`z` per (stateful task, tag value) and two columns per client;
:math:`|S||C|` of the rows are the :math:`a + s \\le 1` pairs.

This per-client program is the cross-check and the fallback: ``exact.joint``
first solves the model by client types (:mod:`.joint_grouped`: a relaxation
over (task, client type) counts whose lexicographic optimum bounds the rule,
realized client by client; optimal whenever the realization succeeds: on
58 of 60 random instances of 3-14 tasks and 2-6 clients, and at 5,000 ×
250) and runs this one only when the realization fails and it fits in memory.

A time limit bounds the whole solve: at the limit the incumbent (at worst a
greedy assignment built first, feasible for every hard rule) is returned
with the stage where the solve stopped, that stage's bound, and ``status:
feasible``.

>>> from kipopt.datasets import generate
>>> x = generate("tasks", 3, tasks=8, clients=3, tags=1)
>>> r = run_joint(x, SolveOptions())
>>> r.status.value, [s["status"] for s in r.info["joint_stages"]] == ["optimal"] * 6
('optimal', True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from kipopt.costs import cross_rack_partitions
from kipopt.evaluation.tasks import tag_keys
from kipopt.instance import TasksInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solution import Status, TaskRoles

from kipopt.formulations.highs import ArrayLP, LexResult, SparseBuilder, solve_lexicographic
from kipopt.formulations.tasks.guard import caught_up_actives, guarded, tagged_standbys, too_large
from kipopt.formulations.tasks.joint_stages import JointScores, joint_objective, priority_order, tag_values

READ_BACK_SECONDS = 0.05
"""Time kept back from ``--time-limit`` for reading the answer back and evaluating it, besides as long
again as building the model took (the façade's evaluation is linear in the instance, as building is)."""


@dataclass(frozen=True)
class JointModel:
    """The program over sorted tasks and clients; ``objectives[stage] · x + constants[stage]`` is the stage value."""

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    stateful: tuple[int, ...]
    lp: ArrayLP
    objectives: Mapping[str, np.ndarray]
    constants: Mapping[str, int]

    @property
    def standby_offset(self) -> int:
        return len(self.tasks) * len(self.clients)

    def read_back(self, x: np.ndarray) -> dict[str, TaskRoles]:
        C = len(self.clients)
        act = x[: self.standby_offset].reshape(len(self.tasks), C) > 0.5
        sby = x[self.standby_offset: self.standby_offset + len(self.stateful) * C].reshape(len(self.stateful), C) > 0.5
        out = {}
        for j, cid in enumerate(self.clients):
            out[cid] = TaskRoles(active=tuple(self.tasks[t] for t in np.flatnonzero(act[:, j])),
                                 standby=tuple(self.tasks[self.stateful[i]] for i in np.flatnonzero(sby[:, j])))
        return out


def joint_model(instance: TasksInstance, pinned_active_counts: Mapping[str, int] | None = None) -> JointModel:
    """Build the program; ``pinned_active_counts`` fixes each client's number of actives (a cross-check)."""
    scores = JointScores.of(instance)
    tasks, clients = instance.task_ids, instance.client_ids
    T, C = len(tasks), len(clients)
    stateful = tuple(i for i, t in enumerate(tasks) if instance.tasks[t].stateful)
    S, A = len(stateful), T * C
    pairs = tag_values(instance)
    V = len(pairs)
    Z = A + S * C
    E = Z + S * V
    n = E + 2 * C
    assert n == A + S * C + S * V + 2 * C
    m = SparseBuilder()
    a = m.add_cols(A, upper=1.0, integer=True).reshape(T, C)
    s = m.add_cols(S * C, upper=1.0, integer=True).reshape(S, C)
    m.add_cols(S * V, upper=1.0, integer=True)
    m.add_cols(2 * C, integer=True)
    a_s = a[list(stateful)]
    m.add_rows(T, np.repeat(np.arange(T), C), a.ravel(), 1.0, 1.0, 1.0)
    both = np.arange(S * C)
    m.add_rows(S * C, np.concatenate((both, both)), np.concatenate((a_s.ravel(), s.ravel())), 1.0, -np.inf, 1.0)
    m.add_rows(S, np.repeat(np.arange(S), C), s.ravel(), 1.0, -np.inf, scores.standbys)
    rows, cols, vals = [np.arange(S * V)], [Z + np.arange(S * V)], [np.ones(S * V)]
    for q, (g, v) in enumerate(pairs):  # z[i, q] <= hosts of task i with value v of key g
        who = np.array([j for j, c in enumerate(clients) if instance.clients[c].tags.get(g) == v])
        hosts = np.concatenate((a_s[:, who], s[:, who]), axis=1)
        rows.append(np.repeat(np.arange(S) * V + q, hosts.shape[1]))
        cols.append(hosts.ravel())
        vals.append(-np.ones(hosts.size))
    m.add_rows(S * V, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), -np.inf, 0.0)
    for j, cid in enumerate(clients):
        hosts = np.concatenate((a[:, j], s[:, j]))
        lo, hi = scores.window[cid]
        m.add_row(np.append(hosts, E + j), np.append(np.ones(len(hosts)), -1.0), -np.inf, hi)
        m.add_row(np.append(hosts, E + C + j), np.ones(len(hosts) + 1), lo, np.inf)
        if pinned_active_counts is not None:
            m.add_row(a[:, j], 1.0, pinned_active_counts[cid], pinned_active_counts[cid])
    objectives, constants = _objectives(instance, scores, tasks, clients, stateful, n, Z, E, S * V)
    return JointModel(tasks, clients, stateful, m.build(), objectives, constants)


def _objectives(instance: TasksInstance, scores: JointScores, tasks: Sequence[str], clients: Sequence[str],
                stateful: Sequence[int], n: int, Z: int, E: int, num_tags: int
                ) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    T, C, S = len(tasks), len(clients), len(stateful)
    A = T * C
    position = {c: j for j, c in enumerate(clients)}
    racks = sorted({instance.clients[c].rack or "" for c in clients})
    rack_of = np.array([racks.index(instance.clients[c].rack or "") for c in clients])
    rackless = [instance.clients[c].rack is None for c in clients]

    def traffic(tids: Sequence[str], role: str) -> np.ndarray:
        """traffic cost × cross-rack partitions, per (task, client): computed per rack, then spread."""
        per_rack = np.array([[cross_rack_partitions(instance, t, r, role) for r in racks] for t in tids], dtype=float)
        out = per_rack[:, rack_of] if len(tids) else np.zeros((0, C))
        out[:, rackless] = 0
        return instance.config.traffic_cost * out

    def new(tids: Sequence[str], role: str) -> np.ndarray:
        out = np.ones((len(tids), C))
        row = {t: i for i, t in enumerate(tids)}
        for cid in clients:
            for t in getattr(instance.clients[cid], role):
                if t in row:
                    out[row[t], position[cid]] = 0
        return out

    stateful_ids = [tasks[t] for t in stateful]
    caught = np.zeros((T, C))
    for t in stateful:
        tid, best = tasks[t], scores.best[tasks[t]]
        caught[t] = 0 if best.unlisted else 1
        for cid, client in instance.clients.items():
            if tid in client.lags:
                caught[t, position[cid]] = not best.holds(cid, True)
    obj = {stage: np.zeros(n) for stage in ("caught_up", "standbys", "tags", "balance", "traffic", "non_overlap")}
    obj["caught_up"][:A] = caught.ravel()
    obj["traffic"][:A] = traffic(tasks, "active").ravel()
    obj["traffic"][A:Z] = traffic(stateful_ids, "standby").ravel()
    obj["non_overlap"][:A] = new(tasks, "active").ravel()
    obj["non_overlap"][A:Z] = new(stateful_ids, "standby").ravel()
    obj["standbys"][A:Z] = -1
    obj["tags"][Z:Z + num_tags] = -1
    obj["balance"][E:] = 1
    constants = {stage: 0 for stage in obj}
    constants["standbys"] = scores.standbys * S
    constants["tags"] = scores.ideal_per_task * S
    return obj, constants


def greedy_start(instance: TasksInstance, model: JointModel, scores: JointScores) -> np.ndarray:
    """A feasible point: actives on a least-loaded most-caught-up client, then standbys on the client that
    adds the most new tag values, least loaded per thread, first in client order."""
    clients, C = model.clients, len(model.clients)
    cap = np.array([instance.clients[c].capacity for c in clients], dtype=float)
    load = np.zeros(C)
    order = np.arange(C)
    pairs = tag_values(instance)
    keys = tag_keys(instance)
    code = np.full((len(keys), C), -1)  # code[g, j]: the index in pairs of client j's value of key g
    for q, (g, v) in enumerate(pairs):
        code[keys.index(g), [j for j, c in enumerate(clients) if instance.clients[c].tags.get(g) == v]] = q
    x = np.zeros(model.lp.num_col)
    hosts: dict[int, list[int]] = {}
    caught_up = model.objectives["caught_up"][:model.standby_offset].reshape(len(model.tasks), C) == 0
    for t in range(len(model.tasks)):
        pool = order[caught_up[t]]
        j = pool[np.lexsort((pool, (load[pool] + 1) / cap[pool]))[0]]
        load[j] += 1
        x[t * C + j] = 1
        hosts[t] = [j]
    for i, t in enumerate(model.stateful):
        for _ in range(scores.standbys):
            seen = np.isin(code, code[:, hosts[t]]) | (code < 0)
            free = np.setdiff1d(order, hosts[t])
            gain = (~seen[:, free]).sum(axis=0)
            j = free[np.lexsort((free, (load[free] + 1) / cap[free], -gain))[0]]
            load[j] += 1
            x[model.standby_offset + i * C + j] = 1
            hosts[t].append(j)
    return _complete(instance, model, scores, x)


def _complete(instance: TasksInstance, model: JointModel, scores: JointScores, x: np.ndarray) -> np.ndarray:
    """Set the tag and balance columns of ``x`` from its placement columns (their values at an optimum)."""
    lp = model.lp
    C = len(model.clients)
    Z = model.standby_offset + len(model.stateful) * C
    E = lp.num_col - 2 * C
    placement = model.read_back(x)
    seen: dict[str, set[tuple[str, str]]] = {}
    for cid, roles in placement.items():
        for tid in roles.active + roles.standby:
            seen.setdefault(tid, set()).update(instance.clients[cid].tags.items())
    keys = tag_keys(instance)
    col = Z
    for i, t in enumerate(model.stateful):
        tid = model.tasks[t]
        for g in keys:
            for v in sorted({instance.clients[c].tags[g] for c in model.clients if g in instance.clients[c].tags}):
                x[col] = (g, v) in seen.get(tid, ())
                col += 1
    for j, cid in enumerate(model.clients):
        count = len(placement[cid].active) + len(placement[cid].standby)
        lo, hi = scores.window[cid]
        x[E + j], x[E + C + j] = max(0, count - hi), max(0, lo - count)
    return x


@dataclass(frozen=True)
class JointSolution:
    assignment: dict[str, TaskRoles]
    order: tuple[str, ...]
    result: LexResult
    values: tuple[int, ...]
    constants: Mapping[str, int]

    @property
    def complete(self) -> bool:
        return self.result.stopped is None

    def stage_rows(self) -> list[dict]:
        """Per stage in priority order: its value (at the returned assignment), bound and status."""
        rows = []
        stopped = self.result.stopped
        for k, (stage, value) in enumerate(zip(self.order, self.values)):
            shift = self.constants[stage]
            if stopped is None or k < stopped:
                status, bound = "optimal", int(self.result.bounds[k]) + shift
            elif k == stopped:
                known = self.result.bounds[k] if k < len(self.result.bounds) else -np.inf
                status, bound = "feasible", (int(np.ceil(known - 1e-6)) + shift if np.isfinite(known) else None)
            else:
                status, bound = "not_reached", None
            rows.append({"stage": stage, "status": status, "value": value + shift, "bound": bound})
        return rows


def solve_joint(instance: TasksInstance, priorities: Sequence[str] | None = None, time_limit: float | None = None,
                threads: int | None = None, pinned_active_counts: Mapping[str, int] | None = None) -> JointSolution:
    """Build and solve the joint program; the time limit covers model building too."""
    began = time.monotonic()
    order = priority_order(instance, priorities)
    scores = JointScores.of(instance)
    model = joint_model(instance, pinned_active_counts)
    start = None if pinned_active_counts is not None else greedy_start(instance, model, scores)
    built = time.monotonic() - began
    left = None if time_limit is None else max(0.0, time_limit - 2 * built - READ_BACK_SECONDS)
    stages = [model.objectives[s] for s in order]
    result = solve_lexicographic(model.lp, stages, left, threads, start,
                                 lower_bounds=[-model.constants[s] for s in order])
    if result.x is None:
        raise RuntimeError(f"the joint program gave no assignment ({result.message or result.status})")
    x = np.rint(result.x)
    values = tuple(int(cost @ x) for cost in stages)
    return JointSolution(model.read_back(x), order, result, values, model.constants)


def run_joint(instance: TasksInstance, options: SolveOptions) -> MethodResult:
    """The model by client types first (:mod:`.joint_grouped`: exact when its point is realized client by
    client, its bound valid for the rule either way); the per-client model only when that realization
    fails, with the time left."""
    from kipopt.formulations.tasks.joint_grouped import grouped_size
    from kipopt.formulations.tasks.joint_realize import solve_grouped

    began = time.monotonic()
    scores = JointScores.of(instance)
    grouped = None
    if grouped_size(instance) is None:
        grouped = solve_grouped(instance, None, options.time_limit, options.threads, start=joint_start(instance))
        if grouped.assignment is not None:
            return _grouped_result(instance, scores, grouped)
    left = None if options.time_limit is None else max(0.0, options.time_limit - (time.monotonic() - began))
    if per_client_size(instance) is not None:  # the start, with the grouped model's bound
        start = joint_start(instance)
        objective = joint_objective(instance, start)
        bound = 0 if grouped is None else _scalar_bound(scores, _bound_rows(grouped), grouped.order)
        return MethodResult(start, Status.FEASIBLE, objective=objective, bound=min(bound, objective),
                            message="the grouped answer could not be realized client by client and the "
                                    "per-client model would not fit in memory: returning the start",
                            info={"model": "start"})
    solution = solve_joint(instance, None, left, options.threads)
    rows = solution.stage_rows()
    values = {r["stage"]: r["value"] for r in rows}
    objective = scores.scalar(values, solution.order)
    bound = _scalar_bound(scores, rows, solution.order)
    status = Status.OPTIMAL if solution.complete else Status.FEASIBLE
    stopped = next((r["stage"] for r in rows if r["status"] != "optimal"), None)
    message = None if stopped is None else _stopped_message(solution.result, stopped)
    return MethodResult(solution.assignment, status, objective=objective, bound=bound, message=message,
                        info={"joint_stages": rows, "joint_order": list(solution.order), "model": "per-client"})


def with_stages(runner):
    """``runner`` whose every answer carries ``joint_stages`` and ``joint_order``: where the start answered
    (a time limit, a model that would not fit), each stage's value of the start, none reached by the model."""
    def run(instance: TasksInstance, options: SolveOptions) -> MethodResult:
        result = runner(instance, options)
        if result.assignment is not None and "joint_stages" not in result.info:
            order = priority_order(instance)
            values = JointScores.of(instance).stages(instance, result.assignment)
            result.info.update(joint_stages=[{"stage": s, "status": "not_reached", "value": values[s], "bound": None}
                                             for s in order], joint_order=list(order))
        return result
    run.__doc__, run.__name__ = runner.__doc__, getattr(runner, "__name__", "run")
    return run


def _bound_rows(grouped) -> list[dict]:
    """The grouped model's proven stages and bound as :func:`_scalar_bound` reads them."""
    rows = []
    for k, (stage, bound) in enumerate(grouped.bounds().items()):
        proven = grouped.result.stopped is None or k < grouped.result.stopped
        rows.append({"stage": stage, "status": "optimal" if proven else "feasible", "value": bound, "bound": bound})
    return rows


def _grouped_result(instance: TasksInstance, scores: JointScores, grouped) -> MethodResult:
    """The realized assignment scored by the rule, with the grouped model's lexicographic bound: optimal
    exactly when every stage's value meets its bound."""
    values = scores.stages(instance, grouped.assignment)
    bounds = grouped.bounds()
    rows, proven = [], True
    for stage in grouped.order:
        met = proven and bounds[stage] is not None and values[stage] == bounds[stage]
        rows.append({"stage": stage, "status": "optimal" if met else ("feasible" if proven else "not_reached"),
                     "value": values[stage], "bound": bounds[stage] if proven else None})
        proven = met
    objective = scores.scalar(values, grouped.order)
    bound = _scalar_bound(scores, rows, grouped.order)
    info = {"joint_stages": rows, "joint_order": list(grouped.order), "model": "types",
            "columns": grouped.columns, "settled": list(grouped.settled)}
    if proven:
        return MethodResult(grouped.assignment, Status.OPTIMAL, objective=objective, bound=objective, info=info)
    stopped = next(r["stage"] for r in rows if r["status"] != "optimal")
    return MethodResult(grouped.assignment, Status.FEASIBLE, objective=objective, bound=min(bound, objective),
                        message=_stopped_message(grouped.result, stopped), info=info)


def _stopped_message(result, stage: str) -> str:
    """Why ``stage`` is the first not proven, from the lexicographic solve's own account: the time limit, the
    solver's status (under a memory cap HiGHS stops without a time limit: it was called "time limit reached"),
    or an answer whose realization misses a stage the model proved."""
    said = result.message or ""
    if said.startswith("time limit"):
        return f"time limit reached in stage {stage!r}"
    if result.stopped is None:
        return f"stage {stage!r} not proven: the assignment realized client by client misses the model's value"
    return f"the model stopped in stage {stage!r}: {said or result.status}"


def _scalar_bound(scores: JointScores, rows: list[dict], order: Sequence[str]) -> int:
    """The lexicographic bound: proven stages at their value, the stopped stage at its bound, the rest at 0."""
    values = {}
    stopped = False
    for r in rows:
        if stopped:
            values[r["stage"]] = 0
        elif r["status"] == "optimal":
            values[r["stage"]] = r["value"]
        else:
            values[r["stage"]] = r["bound"] if r["bound"] is not None else 0
            stopped = True
    return scores.scalar(values, order)


def joint_size(instance: TasksInstance) -> str | None:
    """Refuse an instance whose model would not fit in memory (:func:`kipopt.formulations.tasks.guard.too_large`):
    the model by client types (:func:`~kipopt.formulations.tasks.joint_grouped.grouped_size`), which is what
    runs; the per-client model, :math:`(|T| + |S|)|C| + |S||V| + 2|C|` columns, only serves when the grouped
    answer cannot be realized, and is skipped when it would not fit."""
    from kipopt.formulations.tasks.joint_grouped import grouped_size

    return grouped_size(instance)


def per_client_size(instance: TasksInstance) -> str | None:
    """The per-client model's memory check (:func:`joint_size` before the grouped model)."""
    T, C = len(instance.tasks), len(instance.clients)
    S = sum(1 for t in instance.tasks.values() if t.stateful)
    V = len(tag_values(instance))
    return too_large("tasks", f"{T:,} tasks ({S:,} stateful) x {C:,} clients", (T + S) * C + S * V + 2 * C)


def joint_start(instance: TasksInstance) -> dict[str, TaskRoles]:
    """Each task active on its owner (or round robin), and as many standbys as the rule wants spread round
    robin: what a guarded run answers when its model cannot finish (:mod:`kipopt.formulations.tasks.guard`)."""
    count = min(JointScores.of(instance).standbys, len(instance.clients) - 1)
    return tagged_standbys(instance, caught_up_actives(instance), count)


METHODS = [
    Method("exact.joint", "tasks", "joint", with_stages(guarded(run_joint, joint_start, joint_objective)),
           "actives and standbys of every task in one lexicographic ILP, per-client counts free (caught-up, "
           "standby count, tag distinctness, balance, traffic, non-overlap; order config.joint_priorities)",
           requires=joint_size),
]
__all__ = ["METHODS", "joint_model", "solve_joint", "run_joint"]
