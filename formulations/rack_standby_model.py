"""The KIP-925 standby problem in index form, and its array model for HiGHS.

The problem ``exact.rack_standby`` solves exactly (actives are the
instance's and stay put): place standby copies so that

* every task keeps its number of standby copies and every client its number
  of standbys (Kafka's ``optimizeStandbyTasks`` only swaps, so both are
  invariant under it),
* no standby sits on a client where the task is active, no client holds two
  copies of one task,
* when ``rack_aware_assignment_tags`` is configured (KIP-708), the *tag
  spread* holds: for every task ``t`` and configured key ``k``, the hosts of
  ``t`` (its active clients and standby clients) carry at least
  ``min(|hosts|, |V_k|)`` distinct values of ``k``, where ``V_k`` is the set
  of values of ``k`` over all clients. A client without key ``k`` carries no
  value of it. This is "as many distinct locations as the values allow", the
  goal ``ClientTagAwareStandbyTaskAssignor`` pursues greedily; it is stated
  on the final assignment, so it is exact and checkable from the assignment
  alone, and it may be unsatisfiable (then the model says ``infeasible``),

minimising ``Σ traffic_cost × (changelogs with no replica in the client's
rack) + non_overlap_cost × [client did not hold that standby]``.

The spread is linear without auxiliary variables. With ``a`` the task's
active clients, ``s`` its standbys and ``have`` the values its actives carry:
if ``|a| + s <= |V_k|`` every host needs its own value, so the actives must
already differ (else infeasible), standbys may not go to clients without
the key or with a value in ``have``, and each other value takes at most one
standby; if ``|a| + s > |V_k|`` every value missing from ``have`` needs at
least one standby. Both are bounds on sums over a (task, value) block of
the task's edges.

Without tags the matrix is a bipartite incidence matrix; with one tag key
the (task, value) blocks refine the task rows, so the rows still form two
laminar families: totally unimodular either way, and the LP vertex is
integral (checked; ILP fallback). With several keys the blocks overlap:
the LP is still solved first, and the ILP (presolve on) only when its
vertex is fractional.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kipopt.instance import TasksInstance

from .highs import ArrayLP, build_csc, is_integral, solve_lp
from .rack_model import rack_index, traffic_matrix


@dataclass(frozen=True)
class TagRow:
    """``lower <= Σ y[edges] <= upper``: task ``task``'s standbys on clients with ``key = value``."""

    task: int
    key: str
    value: str
    edges: np.ndarray
    lower: int
    upper: int


@dataclass(frozen=True)
class StandbyProblem:
    """Edges ``(edge_task[e], edge_client[e])`` are the candidate standby placements, with costs.

    ``forbidden[e]`` marks edges the tag spread rules out; ``unmet`` says why
    the problem is infeasible before solving, if it is.
    """

    tasks: tuple[str, ...]
    clients: tuple[str, ...]
    copies: np.ndarray
    counts: np.ndarray
    edge_task: np.ndarray
    edge_client: np.ndarray
    edge_cost: np.ndarray
    tag_rows: tuple[TagRow, ...]
    forbidden: np.ndarray
    unmet: tuple[str, ...]
    keys: int = 0

    def cost(self, chosen: np.ndarray) -> int:
        """Exact objective of the edges ``chosen`` (boolean mask)."""
        return int(self.edge_cost[chosen].sum())


def active_hosts(instance: TasksInstance) -> dict[str, set[str]]:
    """Task -> the clients where the instance lists it as active."""
    hosts: dict[str, set[str]] = {t: set() for t in instance.tasks}
    for cid, client in instance.clients.items():
        for t in client.active:
            hosts[t].add(cid)
    return hosts


def tag_values(instance: TasksInstance, key: str) -> set[str]:
    return {c.tags[key] for c in instance.clients.values() if key in c.tags}


def required_spread(hosts: int, values: int) -> int:
    """Distinct values of one tag key the hosts of a task must carry.

    >>> required_spread(3, 2), required_spread(2, 5), required_spread(1, 0)
    (2, 2, 0)
    """
    return min(hosts, values)


def standby_problem(instance: TasksInstance) -> StandbyProblem:
    """Index form of the standby problem of ``instance`` (see the module docstring)."""
    tasks, clients = instance.task_ids, instance.client_ids
    actives = active_hosts(instance)
    copies = np.zeros(len(tasks), dtype=np.int64)
    counts = np.array([len(instance.clients[c].standby) for c in clients], dtype=np.int64)
    tindex = {t: i for i, t in enumerate(tasks)}
    held: set[tuple[int, int]] = set()
    for j, c in enumerate(clients):
        for t in instance.clients[c].standby:
            copies[tindex[t]] += 1
            held.add((tindex[t], j))
    racks, client_rack = rack_index(instance, clients)
    traffic = traffic_matrix(instance, tasks, racks, "standby") * instance.config.traffic_cost
    et, ec = [], []
    for i, t in enumerate(tasks):
        if copies[i] == 0:
            continue
        for j, c in enumerate(clients):
            if c not in actives[t]:
                et.append(i)
                ec.append(j)
    edge_task, edge_client = np.array(et, dtype=np.int64), np.array(ec, dtype=np.int64)
    moved = np.array([(i, j) not in held for i, j in zip(et, ec)], dtype=bool)
    edge_cost = (traffic[edge_task, client_rack[edge_client]] + instance.config.non_overlap_cost * moved
                 if et else np.zeros(0, dtype=np.int64))
    rows, forbidden, unmet = _tag_rows(instance, tasks, clients, actives, copies, edge_task, edge_client)
    return StandbyProblem(tasks, clients, copies, counts, edge_task, edge_client,
                          np.asarray(edge_cost, dtype=np.int64), rows, forbidden, unmet,
                          len(instance.config.rack_aware_assignment_tags))


def _tag_rows(instance: TasksInstance, tasks, clients, actives, copies, edge_task, edge_client):
    """The spread as (task, value) bounds and forbidden edges (see the module docstring)."""
    rows: list[TagRow] = []
    unmet: list[str] = []
    forbidden = np.zeros(len(edge_task), dtype=bool)
    for key in instance.config.rack_aware_assignment_tags:
        values = tag_values(instance, key)
        value_of = np.array([instance.clients[c].tags.get(key) for c in clients], dtype=object)
        for i, t in enumerate(tasks):
            act = [instance.clients[c].tags.get(key) for c in sorted(actives[t])]
            have = {v for v in act if v is not None}
            hosts = len(act) + int(copies[i])
            # edges are generated task by task, so task i's edges are one contiguous range
            mine = np.arange(np.searchsorted(edge_task, i, "left"), np.searchsorted(edge_task, i, "right"))
            carried = value_of[edge_client[mine]] if len(mine) else np.zeros(0, dtype=object)
            if hosts <= len(values):
                if len(have) < len(act):
                    unmet.append(f"task {t}: its active clients do not carry distinct {key!r} values")
                    continue
                forbidden[mine[np.array([v is None or v in have for v in carried], dtype=bool)]] = True
                rows += [TagRow(i, key, v, mine[carried == v], 0, 1) for v in sorted(values - have)]
            else:
                for v in sorted(values - have):
                    edges = mine[carried == v]
                    if not len(edges):
                        unmet.append(f"task {t}: no client with {key}={v!r} can take a standby of it")
                    rows.append(TagRow(i, key, v, edges, 1, len(edges)))
    return tuple(rows), forbidden, tuple(unmet)


@dataclass(frozen=True)
class StandbySolution:
    chosen: np.ndarray | None
    status: str
    objective: int | None
    bound: float | None
    info: dict


def build_standby_lp(p: StandbyProblem) -> ArrayLP:
    """One column per edge (forbidden edges fixed at 0); rows: tasks, clients, then tag rows."""
    E, T, C = len(p.edge_task), len(p.tasks), len(p.clients)
    ones = np.ones(E)
    cols: list[np.ndarray] = [np.arange(E), np.arange(E)]
    rows: list[np.ndarray] = [p.edge_task, T + p.edge_client]
    lo: list[np.ndarray] = [p.copies.astype(float), p.counts.astype(float)]
    hi: list[np.ndarray] = [p.copies.astype(float), p.counts.astype(float)]
    for k, tag in enumerate(p.tag_rows):
        cols.append(tag.edges)
        rows.append(np.full(len(tag.edges), T + C + k, dtype=np.int64))
    lo.append(np.array([r.lower for r in p.tag_rows], dtype=float))
    hi.append(np.array([r.upper for r in p.tag_rows], dtype=float))
    col = np.concatenate(cols)
    start, index, value = build_csc(E, col, np.concatenate(rows), np.ones(len(col)))
    upper = np.where(p.forbidden, 0.0, ones)
    return ArrayLP(p.edge_cost.astype(float), np.zeros(E), upper, np.concatenate(lo), np.concatenate(hi),
                   start, index, value)


def solve_standby(p: StandbyProblem, time_limit: float | None = None,
                  threads: int | None = None) -> StandbySolution:
    """The LP, and the ILP only if the LP vertex is fractional (never with at most one tag key)."""
    if p.unmet:
        return StandbySolution(None, "infeasible", None, None,
                               {"model": "standby-arrays", "reason": "; ".join(p.unmet[:3])})
    t0 = time.perf_counter()
    lp = build_standby_lp(p)
    t1 = time.perf_counter()
    # the LP first (presolve off): integral for at most one tag key (totally unimodular), and an
    # integral LP optimum is optimal for the ILP too; the ILP (presolve on) only if it is fractional
    res = solve_lp(lp, time_limit=time_limit, threads=threads)
    integer = False
    if res.x is not None and not is_integral(res.x):
        integer = True
        res = solve_lp(lp, integer=True, time_limit=time_limit, threads=threads, presolve=True)
    info = {"model": "standby-arrays", "columns": lp.num_col, "rows": lp.num_row, "ilp": integer,
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(time.perf_counter() - t1, 6)}
    if res.x is None:
        return StandbySolution(None, res.status, None, res.bound, info)
    chosen = np.rint(res.x[:len(p.edge_task)]).astype(bool)
    cost = p.cost(chosen)
    status, bound = res.status, res.bound
    if status == "optimal":
        bound = res.objective if bound is None else bound
        if bound is not None and cost > bound + 1e-6:
            status = "feasible"
    return StandbySolution(chosen, status, cost, bound, info)
