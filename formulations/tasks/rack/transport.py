"""The KIP-925 ``min_traffic`` active problem as a transportation problem over task groups.

Without per-sub-topology caps, two tasks with the same traffic vector (cost
partitions crossing racks, per client rack) whose owners sit in the same rack
are interchangeable, and the clients of one rack differ only in how many tasks
they keep. So the problem of :mod:`kipopt.formulations.tasks.rack.model` shrinks to

    min  Σ_{k,r} (traffic[k, r] + non_overlap × [r ≠ ρ_k]) · f[k, r]
    s.t. Σ_r f[k, r] = n_k          (group k: vector, owner rack ρ_k; n_k tasks)
         Σ_k f[k, r] = O_r          (rack r's clients keep O_r = Σ_{c∈r} orig_c tasks)
         f >= 0,

a transportation problem with (distinct vectors × owner racks) × racks
columns: a few hundred at any cluster size, since the vector takes few
values. Rack-less clients form one more "rack" with no traffic.

Why the optima agree. Any assignment maps to a flow (count, per group,
the tasks that end in each rack) of no larger cost: the flow charges the
non-overlap cost only for tasks leaving their owner's rack, the assignment
at least for those. Conversely every flow is read back at exactly its cost:
the ``f[k, ρ_k]`` tasks that stay in their owner's rack stay *on their
owner* (an owner keeps at most its own tasks, never more than its count),
and the tasks entering rack r from elsewhere fill the slots its clients have
left; those pay the non-overlap cost in both. So the minima are equal, and
the transportation matrix is totally unimodular: the simplex vertex is
integral (checked; an ILP re-solve otherwise).

Read-back is deterministic: in each group, tasks in Kafka's ``TaskId`` order;
the first ``f[k, ρ_k]`` stay, the rest go to the other racks in rack order;
each rack's incoming tasks (``TaskId`` order) fill its clients' free slots in
Kafka's client order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kipopt.deadline import Deadline

from kipopt.formulations.highs import ArrayLP, solve_tu_lp
from kipopt.formulations.tasks.rack.model import ActiveProblem, ActiveSolution, finish


@dataclass(frozen=True)
class TransportProblem:
    """Groups ``k`` (tasks ``members[k]`` in ``TaskId`` order, owner rack ``owner_rack[k]``) and racks."""

    group_of: np.ndarray     # task -> group
    owner_rack: np.ndarray   # group -> rack index of its tasks' owners
    supply: np.ndarray       # group -> number of tasks
    demand: np.ndarray       # rack -> tasks its clients keep
    cost: np.ndarray         # group × rack

    @property
    def num_groups(self) -> int:
        return len(self.supply)

    @property
    def num_racks(self) -> int:
        return len(self.demand)


def transport_problem(p: ActiveProblem) -> TransportProblem:
    """Group ``p``'s tasks by (traffic vector, owner rack); ``p`` must have no per-group bounds."""
    if p.upper is not None:
        raise ValueError("the transportation model has no per-(client, sub-topology) bounds")
    R = len(p.racks)
    owner_rack = p.client_rack[p.owner]
    keys = np.column_stack([p.traffic, owner_rack])
    unique, group_of = unique_rows(keys)
    supply = np.bincount(group_of, minlength=len(unique)).astype(np.int64)
    demand = np.bincount(p.client_rack, weights=p.orig, minlength=R).astype(np.int64)
    rho = unique[:, R]
    cost = unique[:, :R] + p.non_overlap * (np.arange(R)[None, :] != rho[:, None])
    return TransportProblem(group_of, rho, supply, demand, cost.astype(np.int64))


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_inverse=True)`` for a non-negative integer matrix: the rows read as
    one number each (first column most significant, so the order is the same lexicographic one), which
    is a plain sort instead of a sort of byte records (seconds at 100,000 rows)."""
    if keys.size == 0 or keys.min() < 0:
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1)
    radix = keys.max(axis=0).astype(object) + 1
    if np.prod(radix) >= 2**62:
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1)
    code = np.zeros(len(keys), dtype=np.int64)
    for c in range(keys.shape[1]):
        code = code * int(radix[c]) + keys[:, c]
    distinct, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return keys[first], inverse.reshape(-1)


def build_transport_lp(t: TransportProblem) -> ArrayLP:
    """Column ``k·R + r`` is ``f[k, r]``: one entry in group row k, one in rack row ``K + r``."""
    K, R = t.num_groups, t.num_racks
    n = K * R
    index = np.empty(2 * n, dtype=np.int32)
    index[0::2] = np.repeat(np.arange(K), R)
    index[1::2] = K + np.tile(np.arange(R), K)
    rhs = np.concatenate([t.supply, t.demand]).astype(float)
    return ArrayLP(t.cost.reshape(-1).astype(float), np.zeros(n), np.full(n, np.inf), rhs, rhs,
                   np.arange(0, 2 * n + 1, 2, dtype=np.int64), index, np.ones(2 * n))


def read_transport(p: ActiveProblem, t: TransportProblem, flow: np.ndarray) -> np.ndarray:
    """Client index per task from an integral flow (see the module docstring for the order)."""
    R = t.num_racks
    placement = p.owner.copy()
    order = np.argsort(t.group_of, kind="stable")  # tasks grouped, TaskId order inside a group
    first = np.concatenate(([0], np.cumsum(t.supply)))
    target = np.empty(p.num_tasks, dtype=np.int64)
    for k in range(t.num_groups):
        rows = flow[k].copy()
        stay = rows[t.owner_rack[k]]
        rows[t.owner_rack[k]] = 0
        dest = np.concatenate([np.full(stay, t.owner_rack[k]), np.repeat(np.arange(R), rows)])
        target[order[first[k]:first[k + 1]]] = dest
    moving = np.flatnonzero(target != t.owner_rack[t.group_of])  # increasing: TaskId order
    kept = np.bincount(p.owner[target == t.owner_rack[t.group_of]], minlength=p.num_clients)
    free = p.orig - kept
    for r in range(R):
        into = moving[target[moving] == r]
        clients = np.flatnonzero(p.client_rack == r)  # Kafka's client order
        placement[into] = np.repeat(clients, free[clients])
    return placement


def lower_bound(t: TransportProblem) -> int:
    """Every task at its cheapest rack, counts ignored: a bound that needs no solve."""
    return int((t.supply * t.cost.min(axis=1)).sum())


def solve_transport(p: ActiveProblem, deadline: Deadline = Deadline.never(),
                    threads: int | None = None) -> ActiveSolution:
    """Solve ``p`` (no bounds) through the transportation LP; ILP re-solve if a vertex were fractional."""
    t0 = time.perf_counter()
    t = transport_problem(p)
    lp = build_transport_lp(t)
    t1 = time.perf_counter()
    res, integer = solve_tu_lp(lp, threads=threads, deadline=deadline)
    info = {"model": "transport", "groups": t.num_groups, "columns": lp.num_col, "rows": lp.num_row,
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(time.perf_counter() - t1, 6),
            "ilp_fallback": integer, "presolve": res.presolve}
    if res.x is None:
        return ActiveSolution(None, res.status, None, max(res.bound or 0, lower_bound(t)), info)
    flow = np.rint(res.x).astype(np.int64).reshape(t.num_groups, t.num_racks)
    placement = read_transport(p, t, flow)
    bound = res.bound if res.bound is not None else lower_bound(t)
    return finish(p, placement, res.status, res.objective, bound, info)
