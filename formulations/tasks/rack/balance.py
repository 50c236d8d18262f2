"""The KIP-925 active problem *with* per-(client, sub-topology) bounds, grouped as far as the bounds allow.

The caps of ``balance_subtopology`` (and the floors and ceilings of
``balanced_subtopology``) are per client and sub-topology, so clients cannot
be merged; tasks and arcs can:

* tasks of one sub-topology ``g`` with one traffic vector ``v`` and one owner
  ``c`` are interchangeable: one supply node ``k = (g, v, c)`` with ``n_k``
  units, a *stay* arc to ``(c, g)`` (cost ``v[rack(c)]``) and a *leave* arc
  (cost ``non_overlap``) into the pool ``(g, v, rack(c))``;
* a pool sends its units to rack nodes ``(r, g)`` (cost ``v[r]``): one arc per
  rack, not one per task and rack;
* a node ``(c, g)`` exists only where ``c`` owns tasks of ``g`` (it merges stays
  and arrivals before the bound ``[lower, upper]`` on the arc to ``c``); for
  every other pair, arrivals go straight from ``(r, g)`` to ``c`` on one arc
  bounded ``[lower, upper]`` (two arcs in series with one node between them
  are one arc).

Every column is a network arc (one +1, one -1 once supply rows are
negated), so the matrix is totally unimodular and the simplex vertex is
integral (checked; ILP otherwise). Any assignment is a flow of the same cost
(a task that stays on its owner uses its stay arc; any other its leave arc
and its destination's rack), and read-back never costs more than the flow:
a task routed away and back to its owner only saves the non-overlap cost. So
the optimum equals that of :func:`kipopt.formulations.tasks.rack.model.solve_rack_grouped`,
which stays as the cross-check (tests compare them on generated instances).
The size is ``#(g, v, owner) · 2 + #(g, v, owner rack) · R + C·G`` columns:
the ``C·G`` bound arcs are what the bounds make irreducible here.
:mod:`kipopt.formulations.tasks.rack.balance_priced` solves the same network with
the supplies folded into the owners and the ``C·G`` arcs priced in; this
module stays as its cross-check and its fallback (``solve_active(...,
model="network")``).
"""

from __future__ import annotations

import time

import numpy as np

from kipopt.deadline import Deadline

from kipopt.formulations.highs import ArrayLP, build_csc, solve_tu_lp
from kipopt.formulations.tasks.rack.model import ActiveProblem, ActiveSolution, finish


def _index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``keys`` (sorted) and each row's index among them."""
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def solve_balance_grouped(p: ActiveProblem, deadline: Deadline = Deadline.never(),
                          threads: int | None = None) -> ActiveSolution:
    """Solve ``p`` (with bounds) through the grouped network LP of the module docstring."""
    if p.upper is None:
        raise ValueError("the grouped bounded model needs per-(client, sub-topology) bounds")
    t0 = time.perf_counter()
    C, R, G = p.num_clients, len(p.racks), len(p.groups)
    # supply nodes k = (g, v, owner) and pools q = (g, v, owner rack)
    kkeys, task_k = _index(np.column_stack([p.group, p.traffic, p.owner]))
    K = len(kkeys)
    k_group, k_traffic, k_owner = kkeys[:, 0], kkeys[:, 1:1 + R], kkeys[:, 1 + R]
    qkeys, k_q = _index(np.column_stack([k_group, k_traffic, p.client_rack[k_owner]]))
    Q = len(qkeys)
    q_group, q_traffic = qkeys[:, 0], qkeys[:, 1:1 + R]
    supply = np.bincount(task_k, minlength=K)
    # (c, g) nodes where c owns tasks of g
    owned = np.zeros((C, G), dtype=bool)
    owned[p.owner, p.group] = True
    node_c, node_g = np.nonzero(owned)
    N = len(node_c)
    node_of = np.full((C, G), -1, dtype=np.int64)
    node_of[node_c, node_g] = np.arange(N)
    direct_c, direct_g = np.nonzero(~owned)
    D = len(direct_c)
    # rows: supply K | pools Q | rack nodes R·G | (c, g) nodes N | clients C
    row_q, row_rg, row_n, row_c = K, K + Q, K + Q + R * G, K + Q + R * G + N
    # columns: stay K | leave K | pool->rack Q·R | rack->node N | node->client N | direct D
    col_leave, col_pool, col_arrive, col_bound, col_direct = K, 2 * K, 2 * K + Q * R, 2 * K + Q * R + N, \
        2 * K + Q * R + 2 * N
    n_col = col_direct + D
    ks, qr, ns, ds = np.arange(K), np.arange(Q * R), np.arange(N), np.arange(D)
    q_of, r_of = np.divmod(qr, R)
    cols = np.concatenate([ks, ks, col_leave + ks, col_leave + ks, col_pool + qr, col_pool + qr,
                           col_arrive + ns, col_arrive + ns, col_bound + ns, col_bound + ns,
                           col_direct + ds, col_direct + ds])
    rows = np.concatenate([ks, row_n + node_of[k_owner, k_group], ks, row_q + k_q,
                           row_q + q_of, row_rg + r_of * G + q_group[q_of],
                           row_rg + p.client_rack[node_c] * G + node_g, row_n + ns,
                           row_n + ns, row_c + node_c,
                           row_rg + p.client_rack[direct_c] * G + direct_g, row_c + direct_c])
    # flow conservation: +1 leaving a node, -1 entering; supply rows = n_k, client rows = -orig
    vals = np.concatenate([np.ones(K), -np.ones(K), np.ones(K), -np.ones(K), np.ones(Q * R), -np.ones(Q * R),
                           np.ones(N), -np.ones(N), np.ones(N), -np.ones(N), np.ones(D), -np.ones(D)])
    cost = np.concatenate([k_traffic[ks, p.client_rack[k_owner]], np.full(K, p.non_overlap),
                           q_traffic.reshape(-1), np.zeros(N), np.zeros(N), np.zeros(D)]).astype(float)
    lower = np.concatenate([np.zeros(2 * K + Q * R + N), p.lower[node_c, node_g], p.lower[direct_c, direct_g]])
    upper = np.concatenate([supply, supply, np.full(Q * R, np.inf), np.full(N, np.inf),
                            p.upper[node_c, node_g], p.upper[direct_c, direct_g]])
    rhs = np.concatenate([supply, np.zeros(Q + R * G + N), -p.orig]).astype(float)
    start, index, value = build_csc(n_col, cols, rows, vals)
    lp = ArrayLP(cost, lower.astype(float), upper.astype(float), rhs, rhs.copy(), start, index, value)
    t1 = time.perf_counter()
    res, integer = solve_tu_lp(lp, threads=threads, deadline=deadline)
    info = {"model": "balance-grouped", "columns": lp.num_col, "rows": lp.num_row, "supply_groups": K,
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(time.perf_counter() - t1, 6),
            "ilp_fallback": integer, "presolve": res.presolve}
    if res.x is None:
        return ActiveSolution(None, res.status, None, res.bound, info)
    v = np.rint(res.x).astype(np.int64)
    placement = _read(p, task_k, k_q, K, Q, R, G, v[:K], v[col_pool:col_arrive].reshape(Q, R),
                      v[col_arrive:col_bound], node_c, node_g, v[col_direct:], direct_c, direct_g)
    return finish(p, placement, res.status, res.objective, res.bound, info)


def _read(p: ActiveProblem, task_k, k_q, K, Q, R, G, stay, pool_to_rack, arrive, node_c, node_g,
          direct, direct_c, direct_g) -> np.ndarray:
    """Placement from an integral flow: per supply node the first ``stay`` tasks (``TaskId`` order) stay,
    the rest join their pool; pools send tasks to racks in rack order; each (rack, sub-topology) hands its
    arrivals to clients in Kafka's client order."""
    placement = p.owner.copy()
    order = np.argsort(task_k, kind="stable")
    first = np.concatenate(([0], np.cumsum(np.bincount(task_k, minlength=K))))
    pools: list[list[int]] = [[] for _ in range(Q)]
    for k in range(K):
        members = order[first[k]:first[k + 1]]
        pools[k_q[k]].extend(members[stay[k]:].tolist())
    arrivals: dict[tuple[int, int], list[int]] = {}
    for q in range(Q):
        tasks = sorted(pools[q])
        at = 0
        for r in range(R):
            n = int(pool_to_rack[q, r])
            if n:
                g = int(p.group[tasks[at]])
                arrivals.setdefault((r, g), []).extend(tasks[at:at + n])
                at += n
    for key in arrivals:
        arrivals[key].sort(reverse=True)  # pop() from the end: TaskId order
    slots = [(int(c), int(g), int(n)) for c, g, n in zip(node_c, node_g, arrive) if n] + \
            [(int(c), int(g), int(n)) for c, g, n in zip(direct_c, direct_g, direct) if n]
    for c, g, n in sorted(slots):
        queue = arrivals[(int(p.client_rack[c]), g)]
        for _ in range(n):
            placement[queue.pop()] = c
    return placement
