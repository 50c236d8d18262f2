"""Readable PuLP models of the KIP-925 problems (one variable per task × client), and export.

These are the textbook formulations, meant for small and medium instances,
for reading, and for writing ``.mps``/``.lp`` files (:func:`write_model`):

* active: ``x[t,c] ∈ [0,1]``; ``Σ_c x[t,c] = 1``; ``Σ_t x[t,c] = orig_c``;
  with bounds ``lower[c,g] <= Σ_{t∈g} x[t,c] <= upper[c,g]``. The rows form
  two laminar families (tasks; and clients ⊃ (client, group)), so the
  matrix is totally unimodular: the LP vertex is integral.
* standby: ``y[t,c] ∈ [0,1]`` on allowed pairs; per-task copies and
  per-client counts fixed (bipartite, totally unimodular); with tags, the
  covering indicators ``z[t,p]`` and per-task tag-distinctness rows of
  :mod:`kipopt.formulations.tasks.rack.standby_model` (not totally unimodular).

:func:`solve_active_pulp` and :func:`solve_standby_pulp` solve the LP
first, check integrality and fall back to the ILP; they must agree with the
array models of :mod:`kipopt.formulations.tasks.rack.model` and
:mod:`kipopt.formulations.tasks.rack.standby_model`, which the tests check.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from kipopt.errors import InstanceError
from kipopt.instance import TasksInstance

from kipopt.formulations.highs import INTEGRALITY_TOL, quiet_stdout
from kipopt.formulations.tasks.rack.model import ActiveProblem, ActiveSolution, active_problem, finish
from kipopt.formulations.tasks.rack.standby_model import StandbyProblem, StandbySolution, standby_problem


def active_model(p: ActiveProblem, integer: bool = False):
    """``(pulp.LpProblem, x)`` with ``x[(t, c)]`` the variable of task index t on client index c."""
    import pulp

    prob = pulp.LpProblem("kip925_active", pulp.LpMinimize)
    cat = pulp.LpBinary if integer else pulp.LpContinuous
    T, C = p.num_tasks, p.num_clients
    x = {(t, c): pulp.LpVariable(f"x_{t}_{c}", 0, 1, cat) for t in range(T) for c in range(C)}
    cost = p.traffic[:, p.client_rack]  # T × C
    prob += pulp.lpSum(int(cost[t, c] + p.non_overlap * (c != p.owner[t])) * x[t, c]
                       for t in range(T) for c in range(C))
    for t in range(T):
        prob += pulp.lpSum(x[t, c] for c in range(C)) == 1, f"task_{t}"
    for c in range(C):
        prob += pulp.lpSum(x[t, c] for t in range(T)) == int(p.orig[c]), f"client_{c}"
    if p.upper is not None:
        for c in range(C):
            for g in range(len(p.groups)):
                members = [x[t, c] for t in np.nonzero(p.group == g)[0]]
                prob += pulp.lpSum(members) <= int(p.upper[c, g]), f"cap_{c}_{g}"
                if p.lower[c, g] > 0:
                    prob += pulp.lpSum(members) >= int(p.lower[c, g]), f"floor_{c}_{g}"
    return prob, x


def solve_active_pulp(p: ActiveProblem, time_limit: float | None = None,
                      threads: int | None = None) -> ActiveSolution:
    """Solve the full task × client model through PuLP's HiGHS interface (LP, then ILP if needed)."""
    t0 = time.perf_counter()
    prob, x = active_model(p)
    t1 = time.perf_counter()
    status = _solve(prob, mip=False, time_limit=time_limit, threads=threads)
    ilp = False
    if status == "optimal" and not _integral(x.values()):
        ilp = True
        prob, x = active_model(p, integer=True)
        status = _solve(prob, mip=True, time_limit=time_limit, threads=threads)
    info = {"model": "pulp-full", "columns": len(x), "rows": len(prob.constraints),
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(time.perf_counter() - t1, 6),
            "ilp_fallback": ilp}
    if status not in ("optimal", "feasible"):
        return ActiveSolution(None, status, None, None, info)
    placement = np.full(p.num_tasks, -1, dtype=np.int64)
    for (t, c), var in x.items():
        if (var.value() or 0) > 0.5:
            placement[t] = c
    if (placement < 0).any():  # not a placement: never priced as one
        return ActiveSolution(None, "time_limit" if status == "feasible" else "error", None, None, info)
    return finish(p, placement, status, float(prob.objective.value()), None, info)


def standby_model(p: StandbyProblem, integer: bool | None = None):
    """``(pulp.LpProblem, y)`` with ``y[e]`` the variable of candidate edge e, and tag rows if any.

    ``integer`` defaults to "has tag-distinctness rows" (otherwise the matrix
    is totally unimodular and the LP is exact); the export uses that default.
    """
    import pulp

    g = p.tags
    integer = len(g.need_task) > 0 if integer is None else integer
    cat = pulp.LpBinary if integer else pulp.LpContinuous
    prob = pulp.LpProblem("kip925_standby", pulp.LpMinimize)
    y = {e: pulp.LpVariable(f"y_{int(p.edge_task[e])}_{int(p.edge_client[e])}", 0, 1, cat)
         for e in range(p.num_edges)}
    z = {k: pulp.LpVariable(f"z_{int(g.pair_task[k])}_{int(g.pair_id[k])}", 0, 1, cat)
         for k in range(g.num_indicators)}
    prob += pulp.lpSum(int(p.edge_cost[e]) * v for e, v in y.items())
    for t in range(len(p.tasks)):
        if p.copies[t]:
            edges = np.nonzero(p.edge_task == t)[0]
            prob += pulp.lpSum(y[e] for e in edges) == int(p.copies[t]), f"copies_{t}"
    for c in range(len(p.clients)):
        edges = np.nonzero(p.edge_client == c)[0]
        prob += pulp.lpSum(y[e] for e in edges) == int(p.counts[c]), f"standbys_{c}"
    for k, var in z.items():
        covering = g.cover_edge[g.cover_z == k]
        prob += var <= pulp.lpSum(y[int(e)] for e in covering), f"cover_{k}"
    for t, need in zip(g.need_task.tolist(), g.need.tolist()):
        mine = np.nonzero(g.pair_task == t)[0]
        prob += pulp.lpSum(z[int(k)] for k in mine) >= need, f"distinct_{t}"
    return prob, y


def solve_standby_pulp(p: StandbyProblem, time_limit: float | None = None,
                       threads: int | None = None) -> StandbySolution:
    """The readable standby model solved through PuLP's HiGHS interface (LP, then ILP if ``y`` is fractional)."""
    prob, y = standby_model(p, integer=False)
    status = _solve(prob, mip=False, time_limit=time_limit, threads=threads)
    if status == "optimal" and not _integral(y.values()):
        prob, y = standby_model(p, integer=True)
        status = _solve(prob, mip=True, time_limit=time_limit, threads=threads)
    info = {"model": "standby-pulp", "columns": prob.numVariables(), "rows": len(prob.constraints)}
    if status not in ("optimal", "feasible"):
        return StandbySolution(None, status, None, None, info)
    chosen = np.array([(y[e].value() or 0) > 0.5 for e in range(len(y))], dtype=bool)
    cost = p.cost(chosen)
    objective = float(prob.objective.value() or 0)
    if status == "optimal" and cost > objective + 1e-6:
        status = "feasible"
    return StandbySolution(chosen, status, cost, objective if status == "optimal" else None, info)


def _solve(prob, mip: bool, time_limit: float | None, threads: int | None) -> str:
    import pulp

    if threads is not None:  # HiGHS' thread pool (this thread's): sized as this run asks
        from kipopt.formulations.highs import size_thread_pool
        size_thread_pool(int(threads))
    options = {} if mip else {"solver": "simplex"}
    solver = pulp.HiGHS(mip=mip, msg=False, timeLimit=time_limit, threads=threads, **options)
    began = time.perf_counter()
    with quiet_stdout():  # PuLP's HiGHS prints highspy's banner on stdout
        prob.solve(solver)
    name = pulp.LpStatus[prob.status]
    if name == "Optimal":
        if prob.sol_status == pulp.LpSolutionOptimal:
            return "optimal"
        # PuLP calls a run stopped at its limit "Optimal, integer feasible" whenever its objective is finite:
        # a MIP's incumbent is feasible, but an LP's point is wherever the simplex stood (measured: every
        # task unplaced, claimed objective 967 against an optimum of 157, on 167 tasks under 0.1-0.25 s)
        return "feasible" if mip else "time_limit"
    if name == "Not Solved" and time_limit is not None and time.perf_counter() - began >= 0.9 * time_limit:
        return "time_limit"  # stopped at its limit with no point at all
    return {"Infeasible": "infeasible", "Unbounded": "unbounded"}.get(name, "error")


def _integral(variables) -> bool:
    return all(abs((v.value() or 0) - round(v.value() or 0)) <= INTEGRALITY_TOL for v in variables)


MODEL_RULES = ("rack_active", "rack_standby", "balanced_subtopology")


def write_model(instance: TasksInstance, path: str | Path, rule: str = "rack_active") -> Path:
    """Write the readable model of ``rule`` for ``instance`` to ``path`` (``.mps`` or ``.lp``)."""
    path = Path(path)
    if path.suffix not in (".mps", ".lp"):
        raise InstanceError("path", f"write a .mps or .lp file, got {path.name!r}")
    if rule == "rack_standby":
        prob, _ = standby_model(standby_problem(instance))
    elif rule in MODEL_RULES:
        bounds = "fair" if rule == "balanced_subtopology" else (
            "kafka" if instance.config.rack_aware_assignment_strategy == "balance_subtopology" else "none")
        prob, _ = active_model(active_problem(instance, bounds))
    else:
        raise InstanceError("rule", f"no model for {rule!r}; choose one of {', '.join(MODEL_RULES)}")
    if path.suffix == ".mps":
        prob.writeMPS(str(path))
    else:
        prob.writeLP(str(path))
    return path
