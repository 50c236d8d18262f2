"""The KIP-925 active problem with per-(client, sub-topology) bounds: the per-client network, priced.

The network of :mod:`kipopt.formulations.tasks.rack.balance` keeps one arc per
(client, sub-topology) pair, because Kafka's caps are per pair; at 10,000 ×
1,000 with 100 sub-topologies that is about 100,000 of its 133,000 columns,
and almost all of them carry nothing at the optimum. This model is the same
network, made smaller in two exact ways:

* **Supplies folded into owners.** A task that stays is counted where its
  owner ``c`` meets sub-topology ``g``. So node ``(c, g)`` itself supplies
  ``c``'s ``owned[c, g]`` tasks; per traffic vector ``v`` a *leave* arc
  (at most the ``n_k`` tasks of ``k = (g, v, c)``, cost ``non_overlap −
  v[rack(c)]``) sends tasks to the pool ``(g, v, rack(c))``, and the stays'
  own cost ``Σ_t v_t[rack(owner)]`` is a constant. ``(c, g)`` also receives
  arrivals from ``(rack(c), g)`` and passes at most ``upper[c, g]`` (at least
  ``lower``) to ``c``. Conservation at ``(c, g)`` is ``owned − leaves +
  arrivals = count``, so stays ``= n_k − leave_k`` is the old model's stay
  column, minus one node and one column per ``k``.
* **Arrival arcs priced in.** The arc ``(rack(c), g) → c`` for a pair
  where ``c`` owns nothing of ``g`` (bounds ``[lower, upper]``) enters the
  model only when its reduced cost ``π(c) − π(rack(c), g)`` is negative
  (column generation, :func:`kipopt.formulations.highs.solve_priced`). The
  first model holds the pairs with a positive floor and those one feasible
  count matrix uses (:func:`feasible_counts`), so it has a flow of its own:
  every task can reach any rack, hence any such count matrix is routable.
  One artificial route per rack, ``(r, g) → hub_r → c`` with cost ``M``
  above any assignment's cost, is a safety net, never read back. When pricing
  finds nothing, the restricted optimum has every column's reduced cost
  non-negative: it is the full model's optimum. A positive artificial flow or
  a fractional vertex at the end sends the problem to the per-client network
  (``info["priced_fallback"]``), so the answer is exact either way.

The read-back is that of the per-client network: per ``k`` the first
``n_k − leave_k`` tasks (``TaskId`` order) stay, pools send tasks to racks in
rack order, and each ``(rack, sub-topology)`` hands its arrivals to clients in
Kafka's client order. Every column is a network arc, so the simplex vertex is
integral. The per-client network stays as the cross-check (tests compare the
two on generated instances). At 10,000 × 1,000 with 100 sub-topologies:
42,000 columns and 12,000 rows (the per-client network: 133,000 and 21,800),
about 140 arcs priced in one round.
"""

from __future__ import annotations

import math
import time

import numpy as np

from kipopt.deadline import Deadline

from kipopt.formulations.highs import ArrayLP, NewColumns, build_csc, is_integral, solve_priced, solve_tu_lp
from kipopt.formulations.tasks.rack.balance import solve_balance_grouped
from kipopt.formulations.tasks.rack.model import ActiveProblem, ActiveSolution, finish


def _index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``keys`` (sorted) and each row's index among them."""
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def solve_balance_priced(p: ActiveProblem, deadline: Deadline = Deadline.never(),
                         threads: int | None = None) -> ActiveSolution:
    """Solve ``p`` (with bounds) through the priced network of the module docstring."""
    if p.upper is None:
        raise ValueError("the priced bounded model needs per-(client, sub-topology) bounds")
    t0 = time.perf_counter()
    net = _PricedNetwork(p)
    lp = net.build()
    t1 = time.perf_counter()
    res, rounds = solve_priced(lp, net.price, threads=threads, deadline=deadline)
    info = {"model": "balance-priced", "columns": lp.num_col, "rows": lp.num_row,
            "priced_columns": net.added, "pricing_rounds": rounds, "candidate_arcs": net.D,
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(time.perf_counter() - t1, 6),
            "presolve": res.presolve}
    if res.x is None:
        return ActiveSolution(None, res.status, None, res.bound, info)
    v = np.rint(res.x).astype(np.int64)
    if not is_integral(res.x) or v[net.col_art:net.col_art + net.n_art].any():
        # a fractional vertex or an artificial unit: not this model's promise; the per-client network decides
        sol = solve_balance_grouped(p, deadline, threads)
        return ActiveSolution(sol.placement, sol.status, sol.objective, sol.bound,
                              {**sol.info, "priced_info": info, "priced_fallback": True})
    placement = net.read(v)
    objective = None if res.objective is None else res.objective + net.offset
    bound = None if res.bound is None or not np.isfinite(res.bound) else res.bound + net.offset
    if bound is not None and res.status != "optimal":
        bound = math.ceil(bound - 1e-6)  # integer costs: the optimum is an integer
    return finish(p, placement, res.status, objective, bound, info)


def feasible_counts(p: ActiveProblem) -> np.ndarray:
    """A ``C × G`` count matrix with row sums ``orig``, column sums ``n_g`` and every entry within its
    bounds: solved for classes of clients with equal count and bounds, then dealt out round robin.

    A class ``K`` of ``m`` identical clients gets ``Y[K, g]`` tasks of ``g`` (a transportation LP,
    ``m·lower <= Y <= m·upper``, rows ``m·orig``, columns ``n_g``; feasible since the fractional shares
    ``orig·n_g/T`` are, and integral at a vertex). Dealing the class's units one by one to its clients
    in turn, group after group, gives each client ``floor`` or ``ceil`` of ``Y[K, g]/m`` of ``g`` (within
    ``[lower, upper]``) and exactly ``orig`` in all (``m·orig`` units dealt in turn). Both rules' bounds
    always admit an assignment, so a class LP that is not optimal is a bug and raises.
    """
    C, G = p.num_clients, len(p.groups)
    _, first, cls = np.unique(p.orig, return_index=True, return_inverse=True)
    cls = cls.reshape(-1)
    if not (np.array_equal(p.upper, p.upper[first][cls]) and np.array_equal(p.lower, p.lower[first][cls])):
        _, first, cls = np.unique(np.column_stack([p.orig, p.lower, p.upper]), axis=0, return_index=True,
                                  return_inverse=True)
        cls = cls.reshape(-1)
    KC = len(first)
    size = np.bincount(cls, minlength=KC)
    yc, yg = np.nonzero(p.upper[first] > 0)
    n = len(yc)
    cols = np.concatenate([np.arange(n), np.arange(n)])
    rows = np.concatenate([yc, KC + yg])
    start, index, value = build_csc(n, cols, rows, np.ones(2 * n))
    rhs = np.concatenate([size * p.orig[first], np.bincount(p.group, minlength=G)]).astype(float)
    lp = ArrayLP(np.zeros(n), (size[yc] * p.lower[first][yc, yg]).astype(float),
                 (size[yc] * p.upper[first][yc, yg]).astype(float), rhs, rhs.copy(), start, index, value)
    res, _ = solve_tu_lp(lp)
    if res.status != "optimal":
        raise RuntimeError(f"the class count LP ended with status {res.status}: the bounds admit no assignment")
    y = np.zeros((KC, G), dtype=np.int64)
    y[yc, yg] = np.rint(res.x).astype(np.int64)
    # member j of its class (0..m-1, Kafka's client order) and units dealt before each group
    member = np.zeros(C, dtype=np.int64)
    order = np.argsort(cls, kind="stable")
    member[order] = np.arange(C) - np.repeat(np.cumsum(size) - size, size)
    cum = np.cumsum(y, axis=1)[cls]
    m = size[cls][:, None]
    j = member[:, None]
    dealt = lambda x: np.maximum(0, (x - j + m - 1) // m)  # noqa: E731  units i < x with i % m == j
    return dealt(cum) - dealt(cum - y[cls])


def feasible_placement(p: ActiveProblem) -> np.ndarray:
    """An assignment meeting every count and bound, without optimising: :func:`repaired_placement` when
    it succeeds, else one built from :func:`feasible_counts` (each client's own tasks first, ``TaskId``
    order, then the sub-topology's other tasks to clients in Kafka's order). What ``exact.rack_active``
    answers at its time limit when the starting assignment breaks the caps."""
    repaired = repaired_placement(p)
    if repaired is not None:
        return repaired
    need = feasible_counts(p)
    placement = np.full(p.num_tasks, -1, dtype=np.int64)
    for t, (c, g) in enumerate(zip(p.owner.tolist(), p.group.tolist())):
        if need[c, g] > 0:
            need[c, g] -= 1
            placement[t] = c
    rest = np.nonzero(placement < 0)[0]
    for g in np.unique(p.group[rest]).tolist():
        tasks = rest[p.group[rest] == g]
        placement[tasks] = np.repeat(np.arange(p.num_clients), need[:, g])  # column sums are group sizes
    return placement


def repaired_placement(p: ActiveProblem) -> np.ndarray | None:
    """The starting assignment with only the tasks over a cap moved (no floors): every client keeps its own
    tasks up to each cap (``TaskId`` order); the rest go, sub-topology by sub-topology, to clients short of
    tasks with room under that cap, in Kafka's client order. ``None`` if some task finds no room (then
    moving others would be needed) or if there are floors."""
    if np.any(p.lower > 0):
        return None
    C, G = p.num_clients, len(p.groups)
    kept = np.zeros((C, G), dtype=np.int64)
    placement = p.owner.copy()
    released: list[list[int]] = [[] for _ in range(G)]
    for t, (c, g) in enumerate(zip(p.owner.tolist(), p.group.tolist())):
        if kept[c, g] < p.upper[c, g]:
            kept[c, g] += 1
        else:
            released[g].append(t)
    short = p.orig - kept.sum(axis=1)
    # the sub-topologies with the fewest clients able to take them first; inside one, one task per client
    # in turn, the clients shortest of tasks first (ties: Kafka's client order)
    takers_of = ((p.upper - kept) > 0) & (short > 0)[:, None]
    for g in sorted(range(G), key=lambda g: (int(takers_of[:, g].sum()), g)):
        tasks = released[g]
        while tasks:
            room = np.minimum(p.upper[:, g] - kept[:, g], short)
            takers = np.nonzero(room > 0)[0]
            if len(takers) == 0:
                return None
            takers = takers[np.argsort(-short[takers], kind="stable")][:len(tasks)]
            placement[tasks[:len(takers)]] = takers
            del tasks[:len(takers)]
            kept[takers, g] += 1
            short[takers] -= 1
    return placement


class _PricedNetwork:
    """Index sets, the restricted network LP, its pricing and the read-back (module docstring)."""

    def __init__(self, p: ActiveProblem) -> None:
        self.p = p
        C, R, G = p.num_clients, len(p.racks), len(p.groups)
        self.C, self.R, self.G = C, R, G
        # leave groups k = (g, v, owner) and pools q = (g, v, owner rack)
        kkeys, self.task_k = _index(np.column_stack([p.group, p.traffic, p.owner]))
        self.K = len(kkeys)
        self.k_group, self.k_traffic, self.k_owner = kkeys[:, 0], kkeys[:, 1:1 + R], kkeys[:, 1 + R]
        qkeys, self.k_q = _index(np.column_stack([self.k_group, self.k_traffic, p.client_rack[self.k_owner]]))
        self.Q = len(qkeys)
        self.q_group, self.q_traffic = qkeys[:, 0], qkeys[:, 1:1 + R]
        self.supply = np.bincount(self.task_k, minlength=self.K)
        owned = np.zeros((C, G), dtype=np.int64)
        np.add.at(owned, (p.owner, p.group), 1)
        self.owned = owned
        self.node_c, self.node_g = np.nonzero(owned)
        self.N = len(self.node_c)
        self.node_of = np.full((C, G), -1, dtype=np.int64)
        self.node_of[self.node_c, self.node_g] = np.arange(self.N)
        # candidate arrival arcs: pairs where the client owns nothing of g and may hold some
        self.direct_c, self.direct_g = np.nonzero((owned == 0) & (p.upper > 0))
        self.D = len(self.direct_c)
        self.in_model = (p.lower[self.direct_c, self.direct_g] > 0) | self._feasible_pairs()
        self.added = 0
        self.order: list[np.ndarray] = []  # candidate indices in the order their columns exist
        self.offset = int(p.traffic[np.arange(p.num_tasks), p.client_rack[p.owner]].sum())
        # rows: pools Q | rack nodes R·G | (c, g) nodes N | clients C | artificial hubs R
        self.row_rg = self.Q
        self.row_n = self.row_rg + R * G
        self.row_c = self.row_n + self.N
        self.row_hub = self.row_c + C

    def _feasible_pairs(self) -> np.ndarray:
        """Candidate arcs used by one feasible per-(client, sub-topology) count matrix (see
        :func:`feasible_counts`); with them the first restricted model has a flow of its own."""
        counts = feasible_counts(self.p)
        return counts[self.direct_c, self.direct_g] > 0

    def build(self) -> ArrayLP:
        p, K, Q, R, G, N, C = self.p, self.K, self.Q, self.R, self.G, self.N, self.C
        big = float(p.num_tasks * (p.non_overlap + int(p.traffic.max(initial=0))) + 1)
        # columns: leave K | pool->rack Q·R | arrive N | bound N | artificial (r,g)->hub R·G, hub->c C
        self.col_pool, self.col_arrive = K, K + Q * R
        self.col_bound = self.col_arrive + N
        self.col_art = self.col_bound + N
        self.n_art = R * G
        self.col_direct = self.col_art + R * G + C
        ks, qr, ns, rg, cs = np.arange(K), np.arange(Q * R), np.arange(N), np.arange(R * G), np.arange(C)
        q_of, r_of = np.divmod(qr, R)
        k_rack = p.client_rack[self.k_owner]
        tails = [self.row_n + self.node_of[self.k_owner, self.k_group], q_of,
                 self.row_rg + p.client_rack[self.node_c] * G + self.node_g, self.row_n + ns,
                 self.row_rg + rg, self.row_hub + p.client_rack]
        heads = [self.k_q, self.row_rg + r_of * G + self.q_group[q_of], self.row_n + ns, self.row_c + self.node_c,
                 self.row_hub + rg // G, self.row_c + cs]
        cols = np.arange(self.col_direct)
        cost = np.concatenate([p.non_overlap - self.k_traffic[ks, k_rack], self.q_traffic.reshape(-1),
                               np.zeros(2 * N), np.full(R * G, big), np.zeros(C)]).astype(float)
        lower = np.concatenate([np.zeros(K + Q * R + N), p.lower[self.node_c, self.node_g], np.zeros(R * G + C)])
        upper = np.concatenate([self.supply, np.full(Q * R + N, np.inf), p.upper[self.node_c, self.node_g],
                                np.full(R * G + C, np.inf)])
        first = np.nonzero(self.in_model)[0]
        self.order.append(first)
        d_tail, d_head = self._direct_rows(first)
        rows = np.concatenate(tails + [d_tail] + heads + [d_head])
        all_cols = np.concatenate([cols, self.col_direct + np.arange(len(first))])
        vals = np.concatenate([np.ones(len(all_cols)), -np.ones(len(all_cols))])
        cost = np.concatenate([cost, np.zeros(len(first))])
        lower = np.concatenate([lower, p.lower[self.direct_c[first], self.direct_g[first]]])
        upper = np.concatenate([upper, p.upper[self.direct_c[first], self.direct_g[first]]])
        # +1 where an arc leaves a node, -1 where it enters; (c, g) rows supply owned[c, g], clients -orig
        rhs = np.concatenate([np.zeros(Q + R * G), self.owned[self.node_c, self.node_g], -p.orig,
                              np.zeros(R)]).astype(float)
        start, index, value = build_csc(len(cost), np.concatenate([all_cols, all_cols]), rows, vals)
        return ArrayLP(cost, lower.astype(float), upper.astype(float), rhs, rhs.copy(), start, index, value)

    def _direct_rows(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, g = self.direct_c[d], self.direct_g[d]
        return self.row_rg + self.p.client_rack[c] * self.G + g, self.row_c + c

    def price(self, row_dual: np.ndarray) -> NewColumns | None:
        """The candidate arcs not yet in the model with a negative reduced cost ``0 − (π_tail − π_head)``."""
        tail, head = self._direct_rows(np.arange(self.D))
        reduced = row_dual[head] - row_dual[tail]
        new = np.nonzero((reduced < -1e-9) & ~self.in_model)[0]
        if len(new) == 0:
            return None
        self.in_model[new] = True
        self.order.append(new)
        self.added += len(new)
        n = len(new)
        t, h = tail[new], head[new]
        index = np.column_stack([t, h]).reshape(-1)
        value = np.tile([1.0, -1.0], n)
        return NewColumns(np.zeros(n), self.p.lower[self.direct_c[new], self.direct_g[new]].astype(float),
                          self.p.upper[self.direct_c[new], self.direct_g[new]].astype(float),
                          np.arange(0, 2 * n + 1, 2, dtype=np.int64), index, value)

    def read(self, v: np.ndarray) -> np.ndarray:
        """Placement from an integral flow (module docstring)."""
        p = self.p
        placement = p.owner.copy()
        leave = v[:self.K]
        pool_to_rack = v[self.col_pool:self.col_arrive].reshape(self.Q, self.R)
        order = np.argsort(self.task_k, kind="stable")
        first = np.concatenate(([0], np.cumsum(self.supply)))
        pools: list[list[int]] = [[] for _ in range(self.Q)]
        for k in np.nonzero(leave)[0].tolist():
            members = order[first[k]:first[k + 1]]
            pools[self.k_q[k]].extend(members[self.supply[k] - leave[k]:].tolist())
        arrivals: dict[tuple[int, int], list[int]] = {}
        for q in range(self.Q):
            tasks = sorted(pools[q])
            at = 0
            for r in range(self.R):
                n = int(pool_to_rack[q, r])
                if n:
                    arrivals.setdefault((r, int(self.q_group[q])), []).extend(tasks[at:at + n])
                    at += n
        for key in arrivals:
            arrivals[key].sort(reverse=True)  # pop() from the end: TaskId order
        direct = np.concatenate(self.order)
        flows = v[self.col_direct:self.col_direct + len(direct)]
        slots = [(int(c), int(g), int(n)) for c, g, n in
                 zip(self.node_c, self.node_g, v[self.col_arrive:self.col_bound]) if n]
        slots += [(int(self.direct_c[d]), int(self.direct_g[d]), int(n)) for d, n in zip(direct, flows) if n]
        for c, g, n in sorted(slots):
            queue = arrivals[(int(p.client_rack[c]), g)]
            for _ in range(n):
                placement[queue.pop()] = c
        return placement
