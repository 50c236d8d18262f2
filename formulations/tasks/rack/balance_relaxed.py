"""The KIP-925 active problem with per-(client, sub-topology) caps: a model over task and pair classes whose
optimum is a lower bound, read back to an assignment that meets it.

The caps of ``balance_subtopology`` (and the ceilings of ``balanced_subtopology``) are per (client,
sub-topology) pair, but clients cannot be merged exactly: two clients of one rack and one count differ in
the tasks they own, and which of them keeps a task decides the non-overlap cost. Merging them is a
*relaxation*, and a relaxation is exact when an assignment meets its bound. This model keeps, of the caps,
only what the costs force:

* a pair ``(c, g)`` owning no more tasks than its cap (*regular*) can keep all of them, so its tasks are
  pooled by (traffic vector ``v``, owner rack ``ρ``), as in the transportation problem of
  :mod:`kipopt.formulations.tasks.rack.transport`: a group ``k = (v, ρ)`` sends ``n_k`` tasks to racks,
  at cost ``v[r]`` plus ``non_overlap`` when ``r ≠ ρ``;
* a pair owning more than its cap ``hi`` must let go of the excess. Pairs with one *profile* (owner rack,
  cap, tasks per traffic vector) form a class of ``m`` pairs: per vector, a supply node sends tasks either
  to the class's keep node (cost ``v[ρ]``, at most ``m × hi`` in all) or away, to any rack including
  ``ρ`` (cost ``v[r] + non_overlap``);
* rack ``r`` takes exactly the tasks its clients keep in count, ``Σ_{c ∈ r} orig_c``.

Every assignment meeting the caps maps to a flow of this network costing no more (a task kept in its
owner's rack but not by its owner pays the non-overlap cost in the assignment and not in the flow; a
capped pair keeps at most ``hi``), so the network's optimum is a lower bound on the rule's optimum. The
network has ``K·R + S·(R + 1) + P`` columns for ``K`` task groups (at most vectors × racks), ``P``
profiles and ``S`` (profile, vector) supplies: it grows with the distinct profiles, not with clients ×
sub-topologies (1,106 columns at 100,000 tasks × 5,000 clients × 1,000 sub-topologies: 18 groups, 112
profiles of 2,020 capped pairs, where the priced per-client network needs 444,074). Its matrix is a network matrix, so the simplex
vertex is integral.

Read-back (:meth:`_Relaxed.read`):

1. a profile class's kept units per vector are dealt to its ``m`` pairs in one rotation, vector after
   vector: each pair keeps ``⌊s_v/m⌋`` or ``⌈s_v/m⌉`` of vector ``v`` (at most what it owns, since
   ``s_v <= m × owned_v``) and ``⌊Σs/m⌋`` or ``⌈Σs/m⌉`` in all (at most ``hi``, since ``Σs <= m × hi``):
   integral interval splitting, so this step always succeeds;
2. a regular group's leaving tasks are taken one per owner in turn (owners' free slots spread out), those
   whose leaving would take their pair below its floor last;
3. each rack deals its arrivals to its clients' free slots: first greedily, sub-topology by sub-topology,
   the largest arrivals first, each unit to a client with room under the cap and the most free slots left
   (the Havel–Hakimi order); with floors, or where the greedy deal gets stuck, as a transportation problem
   (sub-topologies × clients with free slots, each arc between the floor still missing and the room under
   the cap), which finds a deal whenever one exists for the leavers of step 2.

Every task that stays keeps its owner and every moved task pays exactly what its arc charged, so when
step 3 fills every slot the assignment costs the network's optimum: it is optimal, and the evaluator's
recomputed cost is compared with the bound (:func:`~kipopt.formulations.tasks.rack.model.finish`).
Floors (``balanced_subtopology`` with shares of at least one task) are not in the network: the read-back
is checked against them (:func:`meets_bounds`). When a floor is broken or step 3 leaves a slot empty, the
answer is ``"not_dealt"`` with the network's optimum as a bound, and
:func:`~kipopt.formulations.tasks.rack.rules.solve_active` solves the priced per-client network of
:mod:`kipopt.formulations.tasks.rack.balance_priced` instead.
"""

from __future__ import annotations

import time

import numpy as np

from kipopt.deadline import Deadline

from kipopt.formulations.highs import ArrayLP, build_csc, solve_tu_lp
from kipopt.formulations.tasks.rack.model import ActiveProblem, ActiveSolution, finish
from kipopt.formulations.tasks.rack.transport import unique_rows


class _Relaxed:
    """Classes of tasks and pairs, the network over them and its read-back (module docstring)."""

    def __init__(self, p: ActiveProblem) -> None:
        self.p = p
        T, G, R = p.num_tasks, len(p.groups), len(p.racks)
        self.R = R
        vectors, self.task_v = unique_rows(p.traffic)
        self.vectors, self.V = vectors, len(vectors)
        self.rho = p.client_rack[p.owner]
        # pairs (owner, sub-topology) that own tasks, and their caps
        pair_code = p.owner * G + p.group
        pairs, self.task_pair, owned = np.unique(pair_code, return_inverse=True, return_counts=True)
        self.task_pair = self.task_pair.reshape(-1)
        self.pair_c, self.pair_g = np.divmod(pairs, G)
        self.pair_hi = p.upper[self.pair_c, self.pair_g]
        self.pair_owned = owned
        over = owned > self.pair_hi
        self.regular = ~over[self.task_pair]
        # regular groups k = (v, ρ)
        kkeys, k_of = unique_rows(np.column_stack([self.task_v[self.regular], self.rho[self.regular]]))
        self.k_v, self.k_rho = kkeys[:, 0], kkeys[:, 1]
        self.task_k = np.full(T, -1, dtype=np.int64)
        self.task_k[self.regular] = k_of
        self.k_supply = np.bincount(k_of, minlength=len(kkeys))
        # capped pairs: profile (ρ, hi, owned per vector) -> class f
        over_pairs = np.nonzero(over)[0]
        per_v = np.zeros((len(over_pairs), self.V), dtype=np.int64)
        local = np.full(len(pairs), -1, dtype=np.int64)
        local[over_pairs] = np.arange(len(over_pairs))
        capped_tasks = np.nonzero(~self.regular)[0]
        np.add.at(per_v, (local[self.task_pair[capped_tasks]], self.task_v[capped_tasks]), 1)
        self.over_pairs = over_pairs
        fkeys, self.pair_f = unique_rows(np.column_stack([p.client_rack[self.pair_c[over_pairs]],
                                                         self.pair_hi[over_pairs], per_v])) \
            if len(over_pairs) else (np.zeros((0, 2 + self.V), dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.F = len(fkeys)
        self.f_rho, self.f_hi, self.f_owned = fkeys[:, 0], fkeys[:, 1], fkeys[:, 2:]
        self.f_size = np.bincount(self.pair_f, minlength=self.F)
        self.fv_f, self.fv_v = np.nonzero(self.f_owned > 0)  # the (profile, vector) supplies, by profile
        self.demand = np.bincount(p.client_rack, weights=p.orig, minlength=R).astype(np.int64)
        self.floors = bool(np.any(p.lower > 0))

    @property
    def K(self) -> int:
        return len(self.k_supply)

    def build(self) -> ArrayLP:
        """Columns: regular ``k → r`` (K·R) | capped ``(f, v) → keep_f`` (FV: the vectors a profile owns) |
        ``keep_f → ρ_f`` (F) | capped ``(f, v) → r`` (FV·R). Rows: groups K | capped supplies FV | keep
        nodes F | racks R."""
        K, F, R, no = self.K, self.F, self.R, self.p.non_overlap
        FV = len(self.fv_f)
        kr = np.arange(K * R)
        k, r = np.divmod(kr, R)
        fv, f, v = np.arange(FV), self.fv_f, self.fv_v
        fv2, r2 = np.divmod(np.arange(FV * R), R)
        v2 = v[fv2]
        row_fv, row_keep, row_rack = K, K + FV, K + FV + F
        c_keep, c_out, c_away = K * R, K * R + FV, K * R + FV + F
        self.c_keep, self.c_out, self.c_away = c_keep, c_out, c_away
        n_col = c_away + FV * R
        tails = [k, row_fv + fv, row_keep + np.arange(F), row_fv + fv2]
        heads = [row_rack + r, row_keep + f, row_rack + self.f_rho, row_rack + r2]
        cols = np.arange(n_col)
        cost = np.concatenate([self.vectors[self.k_v[k], r] + no * (r != self.k_rho[k]),
                               self.vectors[v, self.f_rho[f]], np.zeros(F),
                               self.vectors[v2, r2] + no]).astype(float)
        supply_fv = self.f_owned[f, v] * self.f_size[f]
        upper = np.concatenate([np.repeat(self.k_supply, R), supply_fv, self.f_size * self.f_hi,
                                np.repeat(supply_fv, R)]).astype(float)
        rhs = np.concatenate([self.k_supply, supply_fv, np.zeros(F), -self.demand]).astype(float)
        start, index, value = build_csc(n_col, np.concatenate([cols, cols]), np.concatenate(tails + heads),
                                        np.concatenate([np.ones(n_col), -np.ones(n_col)]))
        return ArrayLP(cost, np.zeros(n_col), upper, rhs, rhs.copy(), start, index, value)

    # ----------------------------------------------------------------------------------- read-back

    def leavers(self, flow: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tasks that leave their owner and the rack each goes to (steps 1 and 2)."""
        K, F, V, R = self.K, self.F, self.V, self.R
        moved: list[np.ndarray] = []
        dest: list[np.ndarray] = []
        # step 2: regular groups, one leaver per owner in turn, TaskId order inside an owner; tasks whose
        # leaving would take their pair below its floor last
        to_rack = flow[:K * R].reshape(K, R)
        tasks = np.nonzero(self.regular)[0]
        owner = self.p.owner[tasks]
        by = np.lexsort((tasks, owner, self.task_k[tasks]))
        tasks, owner, kk = tasks[by], owner[by], self.task_k[tasks[by]]
        rank = _rank_in_runs(np.column_stack([kk, owner]))
        by = np.lexsort((owner, rank, self._below_floor(tasks), kk))
        tasks, kk = tasks[by], kk[by]
        first = np.searchsorted(kk, np.arange(K + 1))
        for k in range(K):
            out = to_rack[k].copy()
            out[self.k_rho[k]] = 0
            n = int(out.sum())
            if n:
                moved.append(tasks[first[k]:first[k] + n])
                dest.append(np.repeat(np.arange(R), out))
        # step 1: capped classes, kept units dealt to their pairs in one rotation
        keep = flow[self.c_keep:self.c_out]
        away = flow[self.c_away:].reshape(-1, R)
        fv_first = np.searchsorted(self.fv_f, np.arange(F + 1))
        capped = np.nonzero(~self.regular)[0]
        pair_tasks: dict[int, list[int]] = {}
        for t in capped.tolist():
            pair_tasks.setdefault(int(self.task_pair[t]), []).append(t)
        members: list[list[int]] = [[] for _ in range(F)]
        for local, pair in enumerate(self.over_pairs.tolist()):
            members[int(self.pair_f[local])].append(pair)
        for f in range(F):
            m, turn = len(members[f]), 0
            kept = np.zeros((m, V), dtype=np.int64)
            for e in range(fv_first[f], fv_first[f + 1]):
                units = int(keep[e])
                np.add.at(kept[:, self.fv_v[e]], (turn + np.arange(units)) % m, 1)
                turn = (turn + units) % m
            leaving: list[list[int]] = [[] for _ in range(V)]
            for i, pair in enumerate(members[f]):
                seen = np.zeros(V, dtype=np.int64)
                for t in pair_tasks[pair]:
                    v = int(self.task_v[t])
                    if seen[v] >= kept[i, v]:
                        leaving[v].append(t)
                    seen[v] += 1
            for e in range(fv_first[f], fv_first[f + 1]):
                v = int(self.fv_v[e])
                if leaving[v]:
                    moved.append(np.array(sorted(leaving[v]), dtype=np.int64))
                    dest.append(np.repeat(np.arange(R), away[e]))
        if not moved:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(moved), np.concatenate(dest)

    def _below_floor(self, tasks: np.ndarray) -> np.ndarray:
        """Per task: whether its pair keeps no more than its floor once it and the pair's tasks before it
        (``TaskId`` order) have left."""
        p = self.p
        pair = self.task_pair[tasks]
        by = np.lexsort((tasks, pair))
        index = np.empty(len(tasks), dtype=np.int64)
        index[by] = _rank_in_runs(pair[by][:, None])
        spare = self.pair_owned[pair] - p.lower[self.pair_c[pair], self.pair_g[pair]]
        return index >= spare

    def read(self, flow: np.ndarray, deadline: Deadline = Deadline.never()) -> np.ndarray | None:
        """A placement costing the flow's cost, or ``None`` if some rack's arrivals find no room (step 3) or
        the ``deadline`` stops its exact deal."""
        p = self.p
        moved, dest = self.leavers(flow)
        placement = p.owner.copy()
        free = np.bincount(p.owner[moved], minlength=p.num_clients)
        stays = np.ones(p.num_tasks, dtype=bool)
        stays[moved] = False
        for r in range(self.R):
            arriving = moved[dest == r]
            if len(arriving) == 0:
                continue
            takers = np.nonzero((free > 0) & (p.client_rack == r))[0]
            before = free[takers].copy()
            if self.floors or not _deal(p, arriving, takers, free, stays, placement):
                free[takers] = before
                if not _deal_exact(p, arriving, takers, free, stays, placement, deadline):
                    return None
        return placement


def _rank_in_runs(keys: np.ndarray) -> np.ndarray:
    """For rows sorted by ``keys``: each row's position inside its run of equal keys."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.ones(n, dtype=bool)
    starts[1:] = np.any(keys[1:] != keys[:-1], axis=1)
    run_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    return np.arange(n) - run_start


def _deal(p: ActiveProblem, arriving: np.ndarray, takers: np.ndarray, free: np.ndarray, stays: np.ndarray,
          placement: np.ndarray) -> bool:
    """Step 3 for one rack: every arriving task to a taker with a free slot and room under its cap; the
    sub-topologies with the most arrivals first, each unit to the takers with the most free slots left
    (ties: Kafka's client order). ``stays`` marks the tasks kept by their owners. ``False`` if some task
    finds no taker."""
    local = np.full(p.num_clients, -1, dtype=np.int64)
    local[takers] = np.arange(len(takers))
    mine = stays & (local[p.owner] >= 0)
    room = np.ascontiguousarray(p.upper[takers].T)  # sub-topologies × takers: what each may still take
    np.subtract.at(room, (p.group[mine], local[p.owner[mine]]), 1)
    groups = p.group[arriving]
    order = np.lexsort((arriving, groups))
    arriving, groups = arriving[order], groups[order]
    gs, first, sizes = np.unique(groups, return_index=True, return_counts=True)
    left = free[takers]
    for i in np.argsort(-sizes, kind="stable").tolist():
        g, tasks = int(gs[i]), arriving[first[i]:first[i] + sizes[i]]
        done = 0
        while done < len(tasks):
            ok = np.nonzero((left > 0) & (room[g] > 0))[0]
            if len(ok) == 0:
                return False
            ok = ok[np.argsort(-left[ok], kind="stable")][:len(tasks) - done]
            placement[tasks[done:done + len(ok)]] = takers[ok]
            left[ok] -= 1
            room[g, ok] -= 1
            done += len(ok)
    free[takers] = left
    return True


MAX_DEAL_ARCS = 1_000_000
"""Step 3's exact dealing (:func:`_deal_exact`) is built up to this many (sub-topology, taker) arcs per rack."""


def _deal_exact(p: ActiveProblem, arriving: np.ndarray, takers: np.ndarray, free: np.ndarray, stays: np.ndarray,
                placement: np.ndarray, deadline: Deadline = Deadline.never()) -> bool:
    """Step 3 for one rack as a transportation problem: arrivals per sub-topology to the takers' free slots,
    each (sub-topology, taker) arc between what the taker lacks of its floor and its room under the cap
    (totally unimodular, so integral). Used with floors, and where the greedy deal gets stuck; ``False``
    when it has no solution (or more than :data:`MAX_DEAL_ARCS` arcs)."""
    gs, sizes = np.unique(p.group[arriving], return_counts=True)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    n, m = len(takers), len(gs)
    if n * m > MAX_DEAL_ARCS or n == 0:
        return False
    local = np.full(p.num_clients, -1, dtype=np.int64)
    local[takers] = np.arange(n)
    mine = stays & (local[p.owner] >= 0)
    held = np.zeros((n, len(p.groups)), dtype=np.int64)
    np.add.at(held, (local[p.owner[mine]], p.group[mine]), 1)
    if np.any(np.delete(p.lower[takers] - held, gs, axis=1) > 0):  # a floor no arrival can reach
        return False
    lo = np.maximum(0, p.lower[takers][:, gs] - held[:, gs]).T.reshape(-1)  # arc (g, taker): g-major
    hi = (p.upper[takers][:, gs] - held[:, gs]).T.reshape(-1)
    if np.any(hi < lo):
        return False
    arcs = np.arange(m * n)
    g_of, t_of = np.divmod(arcs, n)
    rhs = np.concatenate([sizes, free[takers]]).astype(float)
    start, index, value = build_csc(m * n, np.concatenate([arcs, arcs]), np.concatenate([g_of, m + t_of]),
                                    np.ones(2 * m * n))
    lp = ArrayLP(np.zeros(m * n), lo.astype(float), hi.astype(float), rhs, rhs.copy(), start, index, value)
    res, _ = solve_tu_lp(lp, deadline=deadline)
    if res.status != "optimal" or res.x is None:
        return False
    x = np.rint(res.x).astype(np.int64)
    by = np.lexsort((arriving, p.group[arriving]))
    ordered = arriving[by]
    for i in range(m):
        to = np.repeat(takers, x[i * n:(i + 1) * n])
        placement[ordered[first[i]:first[i] + sizes[i]]] = to
    free[takers] = 0
    return True


def meets_bounds(p: ActiveProblem, placement: np.ndarray) -> bool:
    """Whether every client holds its count and every (client, sub-topology) count lies within its bounds."""
    if not np.array_equal(np.bincount(placement, minlength=p.num_clients), p.orig):
        return False
    G = len(p.groups)
    codes, counts = np.unique(placement * G + p.group, return_counts=True)
    c, g = np.divmod(codes, G)
    if np.any(counts > p.upper[c, g]):
        return False
    if not np.any(p.lower > 0):
        return True
    full = np.zeros_like(p.lower)
    full[c, g] = counts
    return bool(np.all(full >= p.lower))


def solve_balance_relaxed(p: ActiveProblem, deadline: Deadline = Deadline.never(),
                          threads: int | None = None) -> ActiveSolution:
    """The relaxation's optimum and its read-back: ``optimal`` when the read-back meets every bound (floors
    are checked, not modelled) and costs the relaxation's optimum; else ``"not_dealt"`` with no placement
    and the relaxation's optimum as a bound on the rule's."""
    if p.upper is None:
        raise ValueError("the relaxed bounded model needs per-(client, sub-topology) bounds")
    t0 = time.perf_counter()
    net = _Relaxed(p)
    lp = net.build()
    t1 = time.perf_counter()
    res, integer = solve_tu_lp(lp, threads=threads, deadline=deadline)
    t2 = time.perf_counter()
    info = {"model": "balance-relaxed", "columns": lp.num_col, "rows": lp.num_row, "task_groups": net.K,
            "capped_classes": net.F, "capped_pairs": len(net.over_pairs),
            "build_seconds": round(t1 - t0, 6), "solver_seconds": round(t2 - t1, 6), "ilp_fallback": integer}
    if res.x is None or res.status != "optimal":
        return ActiveSolution(None, res.status, None, None, info)
    bound = int(round(res.objective))
    placement = net.read(np.rint(res.x).astype(np.int64), deadline)
    info["read_seconds"] = round(time.perf_counter() - t2, 6)
    info["dealt"] = placement is not None and meets_bounds(p, placement)
    if not info["dealt"]:
        return ActiveSolution(None, "not_dealt", None, bound, info)
    return finish(p, placement, "optimal", bound, bound, info)
