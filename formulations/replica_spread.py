"""KIP-36's rule ``spread`` and its exact method ``exact.spread``.

Rule. Every partition gets ``replication_factor`` distinct brokers, the first
being its preferred leader, spread over ``min(RF, #racks)`` distinct racks
(one replica per rack while racks are plentiful, every rack otherwise; a
broker without a rack counts as the "no rack" rack, and a cluster without
racks has no rack rule). Then, lexicographically: the replica imbalance
``D`` (max − min replicas per broker), the leader imbalance ``L`` (max − min
preferred leaders per broker) and, when the instance has ``current``, the
moves ``M`` (replicas on a broker that did not hold that partition before).
The single objective that orders these lexicographically is

    objective = D·W² + L·W + M,   W = partitions·RF + 1,

since ``L <= partitions < W`` and ``M <= partitions·RF < W``.

Exact method, by case (R racks, the "no rack" rack included):

* **no ``current``, R >= RF** (one replica per rack): brokers of one rack are
  interchangeable and so are partitions. A small integer program over rack
  totals (replicas ``T_r`` and leaders ``Λ_r`` per rack, ``Λ_r <= T_r <= P``,
  ``ΣT = P·RF``, ``ΣΛ = P``) minimizes ``(P+1)·D + L`` where each rack's brokers
  carry ``⌊T_r/n_r⌋`` or ``⌈T_r/n_r⌉`` (an even split is optimal for both
  imbalances at once, and a leader split nested inside the replica split
  always respects leaders ≤ replicas). A greedy de-aggregation turns the
  totals into partitions; the evaluator checks the result.
* **no ``current``, 2 <= R < RF** (every rack used): the same rack-total
  program with ``P <= T_r <= P·min(n_r, RF − R + 1)``; partitions get one
  replica per rack plus extras spread cyclically, and each rack is one
  cyclic fill over its brokers (its leaders first, then blocks of
  consecutive brokers, ordered so no block covers its own leader). Should
  that greedy order get stuck (rare), the broker-level MIP decides.
* **no racks (or one), no ``current``**: leaders on an evenly spread
  ("balanced word") pattern and replicas on the RF consecutive brokers after
  each leader; both imbalances then meet their lower bounds (0, or 1 when the
  counts do not divide).
* **``current`` given, R >= RF**: ``D`` and ``L`` are those of the
  aggregated model (``current`` does not change what is feasible). Moves are
  then a min-cost flow: each partition sends RF units through
  (partition, rack) slots that keep a current replica (cost 0) or go to the
  rack's pool (cost 1, a move; one replica per rack makes a rack's brokers
  interchangeable for an incoming replica), and every broker's load stays in
  a window of width ``D``. Each window position is a network LP, integral at
  its vertices (interior point plus crossover, seconds at 10,000 partitions).
  Leaders ignore moves, so they are chosen afterwards by a second flow with
  leader imbalance ``L``, keeping current leaders where possible. Should no
  leader choice fit, a joint MIP of replicas and leaders decides.
* **otherwise** (a reassignment with R < RF, racks or not): the
  broker-level MIP, solved in three lexicographic stages. It is exact but
  meant for small and medium instances (a 2-rack reassignment took 2.7 s at
  300 partitions × 12 brokers and 54 s at 1,000 × 20 on 2 cores).

>>> from kipopt.instance import from_dict
>>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 6, "replication_factor": 3,
...     "brokers": [{"id": i, "rack": r} for i, r in enumerate("aabbcc")]})
>>> r = solve_spread(inst)
>>> r.status.value, r.objective
('optimal', 0.0)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from kipopt.errors import MethodError
from kipopt.evaluation.replicas import evaluate_replicas
from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, Rule, SolveOptions, Violation
from kipopt.solution import Status

# --------------------------------------------------------------------------- the rule


def weight(instance: ReplicasInstance) -> int:
    """``W = partitions·RF + 1``: larger than any leader imbalance or move count."""
    return instance.partitions * instance.replication_factor + 1


def lexicographic(instance: ReplicasInstance, replica_imbalance: float, leader_imbalance: float,
                  moves: float) -> float:
    """``D·W² + L·W + M``.

    >>> from kipopt.instance import from_dict
    >>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 3, "replication_factor": 2,
    ...                   "brokers": [{"id": 0}, {"id": 1}]})
    >>> lexicographic(inst, 1, 2, 3)   # W = 7
    66.0
    """
    w = weight(instance)
    return float(replica_imbalance * w * w + leader_imbalance * w + moves)


def spread_objective(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> float:
    """The rule's objective, recomputed from the assignment alone."""
    m = evaluate_replicas(instance, assignment).metrics
    return lexicographic(instance, m["replica_imbalance"], m["leader_imbalance"], m.get("moves", 0))


def spread_criteria(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> dict[str, float]:
    """The rule's criteria in priority order (the bench reports each one's own gap)."""
    m = evaluate_replicas(instance, assignment).metrics
    return {"replica_imbalance": m["replica_imbalance"], "leader_imbalance": m["leader_imbalance"],
            "moves": m.get("moves", 0)}


def spread_violations(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> list[Violation]:
    """Missing partitions, wrong replica counts, duplicate brokers, too few racks (by the evaluator's names)."""
    return evaluate_replicas(instance, assignment).violations


# --------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class Cluster:
    """Brokers sorted by id, grouped by rack (``None`` is a rack of its own in a mixed cluster)."""

    brokers: tuple[int, ...]
    racks: tuple[tuple[int, ...], ...]
    racked: bool
    partitions: int
    rf: int
    start: int

    @staticmethod
    def of(instance: ReplicasInstance) -> "Cluster":
        groups: dict = {}
        for b in instance.broker_ids:
            groups.setdefault(instance.rack_of[b], []).append(b)
        names = sorted(groups, key=lambda r: (r is not None, r or ""))
        racked = any(r is not None for r in groups)
        return Cluster(instance.broker_ids, tuple(tuple(groups[r]) for r in names), racked,
                       instance.partitions, instance.replication_factor, instance.start_partition_id)

    @property
    def num_racks(self) -> int:
        return len(self.racks)

    @property
    def one_per_rack(self) -> bool:
        """R >= RF with racks: at most one replica of a partition per rack."""
        return self.racked and self.num_racks >= self.rf

    @property
    def rack_of_index(self) -> dict[int, int]:
        return {b: r for r, members in enumerate(self.racks) for b in members}


# --------------------------------------------------------------------------- HiGHS, from arrays


@dataclass
class Model:
    """Columns and COO rows for :class:`highspy.HighsLp`."""

    cost: list = field(default_factory=list)
    lower: list = field(default_factory=list)
    upper: list = field(default_factory=list)
    integer: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    cols: list = field(default_factory=list)
    vals: list = field(default_factory=list)
    row_lower: list = field(default_factory=list)
    row_upper: list = field(default_factory=list)

    @property
    def num_col(self) -> int:
        return sum(len(c) for c in self.cost)

    def add_vars(self, n: int, lb: float = 0.0, ub: float = 1.0, integer: bool = True,
                 cost: float | np.ndarray = 0.0) -> np.ndarray:
        first = self.num_col
        self.cost.append(np.broadcast_to(np.asarray(cost, dtype=float), (n,)).copy())
        self.lower.append(np.full(n, lb, dtype=float))
        self.upper.append(np.full(n, ub, dtype=float))
        self.integer.append(np.full(n, integer, dtype=bool))
        return np.arange(first, first + n)

    @property
    def num_row(self) -> int:
        return sum(len(r) for r in self.row_lower)

    def add_rows(self, lower: np.ndarray, upper: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                 vals: np.ndarray | float) -> None:
        """Rows ``lower <= A x <= upper``; ``rows`` index the new rows from 0."""
        first = self.num_row
        lower = np.asarray(lower, dtype=float)
        self.row_lower.append(lower)
        self.row_upper.append(np.broadcast_to(np.asarray(upper, dtype=float), lower.shape).copy())
        rows = np.asarray(rows)
        self.rows.append(rows + first)
        self.cols.append(np.asarray(cols))
        self.vals.append(np.broadcast_to(np.asarray(vals, dtype=float), rows.shape).copy())

    def set_cost(self, cost: np.ndarray) -> None:
        self.cost = [np.asarray(cost, dtype=float)]

    def costs(self) -> np.ndarray:
        return np.concatenate(self.cost)


@dataclass
class Outcome:
    status: str  # optimal | feasible | infeasible | time_limit | error
    x: np.ndarray | None
    objective: float | None
    bound: float | None


def solve_model(model: Model, deadline: float | None, threads: int | None, presolve: bool = True,
                solver: str | None = None) -> Outcome:
    """One MIP (or LP) solve; ``deadline`` is a ``time.perf_counter()`` instant."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.5)  # objectives are integral
    if not presolve:
        h.setOptionValue("presolve", "off")
    if solver:
        h.setOptionValue("solver", solver)
    if threads:
        # HiGHS keeps one global scheduler; a different thread count needs a reset or run() fails
        highspy.Highs.resetGlobalScheduler(True)
        h.setOptionValue("threads", int(threads))
    if deadline is not None:
        h.setOptionValue("time_limit", max(0.01, deadline - time.perf_counter()))
    lp = highspy.HighsLp()
    n = model.num_col
    lp.num_col_, lp.num_row_ = n, model.num_row
    lp.col_cost_ = model.costs()
    lp.col_lower_ = np.concatenate(model.lower)
    lp.col_upper_ = np.concatenate(model.upper)
    lp.row_lower_ = np.concatenate(model.row_lower)
    lp.row_upper_ = np.concatenate(model.row_upper)
    rows, cols, vals = (np.concatenate(a) for a in (model.rows, model.cols, model.vals))
    order = np.argsort(cols, kind="stable")
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n), out=start[1:])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = rows[order].astype(np.int32)
    lp.a_matrix_.value_ = vals[order]
    integer = np.concatenate(model.integer)
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integer]
    h.passModel(lp)
    h.run()
    return _outcome(h)


def _outcome(h) -> Outcome:
    name = h.modelStatusToString(h.getModelStatus()).lower()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2
    x = np.asarray(h.getSolution().col_value) if has_x else None
    obj = float(info.objective_function_value) if has_x else None
    bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
    if name == "optimal":
        return Outcome("optimal", x, obj, obj)
    if "infeasible" in name:
        return Outcome("infeasible", None, None, None)
    if "time" in name or "limit" in name or "interrupt" in name:
        return Outcome("feasible" if has_x else "time_limit", x, obj, bound)
    return Outcome("error", x, obj, bound)


# --------------------------------------------------------------------------- rack totals (R >= RF)


@dataclass(frozen=True)
class RackTotals:
    """Replicas ``T_r`` and leaders ``Λ_r`` per rack, with the imbalances of even splits."""

    replicas: tuple[int, ...]
    leaders: tuple[int, ...]
    replica_imbalance: int
    leader_imbalance: int
    optimal: bool
    bound: float | None  # of W·D + L


def _even(total: int, n: int) -> list[int]:
    q, s = divmod(total, n)
    return [q + 1] * s + [q] * (n - s)


def split_imbalance(totals: Sequence[int], sizes: Sequence[int]) -> int:
    """max − min broker load when each rack splits its total evenly.

    >>> split_imbalance([4, 3], [2, 2])
    1
    """
    loads = [x for t, n in zip(totals, sizes) for x in _even(t, n)]
    return max(loads) - min(loads)


def replicas_per_rack(c: Cluster) -> tuple[list[int], list[int]]:
    """How many replicas of one partition each rack may hold: ``[0, 1]`` when R >= RF,
    else ``[1, min(n_r, RF - R + 1)]`` (every rack used)."""
    if c.one_per_rack:
        return [0] * c.num_racks, [1] * c.num_racks
    return [1] * c.num_racks, [min(len(r), c.rf - c.num_racks + 1) for r in c.racks]


def solve_rack_totals(c: Cluster, deadline: float | None, threads: int | None) -> RackTotals:
    """Minimize ``(P+1)·D + L`` over rack totals ``T_r`` in ``[P·low_r, P·high_r]`` (:func:`replicas_per_rack`)."""
    m = Model()
    R, P = c.num_racks, c.partitions
    sizes = np.array([len(r) for r in c.racks], dtype=float)
    big = P + 1
    low, high = replicas_per_rack(c)
    T = m.add_vars(R, 0, P)
    m.lower[-1] = P * np.array(low, dtype=float)
    m.upper[-1] = P * np.array(high, dtype=float)
    Lam = m.add_vars(R, 0, P)
    hi, lo, lhi, llo = (m.add_vars(1, 0, P, cost=k)[0] for k in (big, -big, 1, -1))
    for total, top, bottom in ((T, hi, lo), (Lam, lhi, llo)):
        q = m.add_vars(R, 0, P)
        s = m.add_vars(R, 0, 0)
        m.upper[-1] = np.maximum(sizes - 1, 0)
        u = m.add_vars(R, 0, 1)
        idx = np.arange(R)
        # total = n·q + s
        m.add_rows(np.zeros(R), 0, np.r_[idx, idx, idx], np.r_[total, q, s], np.r_[np.ones(R), -sizes, -np.ones(R)])
        # s <= (n-1)·u ; top >= q + u ; q >= bottom
        m.add_rows(np.full(R, -np.inf), 0, np.r_[idx, idx], np.r_[s, u], np.r_[np.ones(R), -(sizes - 1)])
        m.add_rows(np.zeros(R), np.inf, np.r_[idx, idx, idx], np.r_[np.full(R, top), q, u],
                   np.r_[np.ones(R), -np.ones(R), -np.ones(R)])
        m.add_rows(np.zeros(R), np.inf, np.r_[idx, idx], np.r_[q, np.full(R, bottom)], np.r_[np.ones(R), -np.ones(R)])
    idx = np.arange(R)
    m.add_rows(np.full(R, -np.inf), 0, np.r_[idx, idx], np.r_[Lam, T], np.r_[np.ones(R), -np.ones(R)])
    m.add_rows([P * c.rf], [P * c.rf], np.zeros(R, dtype=int), T, 1.0)
    m.add_rows([P], [P], np.zeros(R, dtype=int), Lam, 1.0)
    out = solve_model(m, deadline, threads)
    if out.x is None:
        raise MethodError(f"the rack-level model gave no solution ({out.status})")
    t = tuple(int(round(v)) for v in out.x[T])
    lam = tuple(int(round(v)) for v in out.x[Lam])
    sz = [len(r) for r in c.racks]
    return RackTotals(t, lam, split_imbalance(t, sz), split_imbalance(lam, sz), out.status == "optimal",
                      out.bound)


def partition_racks(c: Cluster, totals: RackTotals) -> list[tuple[int, list[int]]]:
    """Leader rack and follower racks of each partition, meeting the rack totals exactly.

    Greedy, one partition at a time: lead from a rack whose remaining leaders
    equal its remaining replicas (it must lead all of them), else from the
    rack with most leaders left; then take every rack that must appear in all
    remaining partitions, then the racks with most replicas left.
    """
    T, Lam = list(totals.replicas), list(totals.leaders)
    R, out = c.num_racks, []
    for m in range(c.partitions, 0, -1):
        leader = max((r for r in range(R) if Lam[r] > 0),
                     key=lambda r: (Lam[r] == T[r], T[r] == m, Lam[r], T[r], -r))
        blocked = {r for r in range(R) if r != leader and T[r] > 0 and Lam[r] == T[r]}
        rest = sorted((r for r in range(R) if r != leader and r not in blocked and T[r] > 0),
                      key=lambda r: (-(T[r] == m), -T[r], -(T[r] - Lam[r]), r))
        followers = rest[:c.rf - 1]
        if len(followers) < c.rf - 1 or any(T[r] == m for r in rest[c.rf - 1:]):
            raise MethodError("rack totals could not be de-aggregated (this is a bug)")
        Lam[leader] -= 1
        for r in [leader] + followers:
            T[r] -= 1
        out.append((leader, followers))
    return out


def place_in_racks(c: Cluster, totals: RackTotals, racks: list[tuple[int, list[int]]]) -> dict[int, tuple[int, ...]]:
    """Brokers for each partition: each rack's leader and follower entries go to its brokers' even quotas."""
    lead_slots, follow_slots = [], []
    for r, members in enumerate(c.racks):
        rho = _even(totals.replicas[r], len(members))
        lam = _even(totals.leaders[r], len(members))
        lead_slots.append(iter([b for b, k in zip(members, lam) for _ in range(k)]))
        follow_slots.append(iter([b for b, k, l in zip(members, rho, lam) for _ in range(k - l)]))
    out = {}
    for i, (leader, followers) in enumerate(racks):
        out[c.start + i] = (next(lead_slots[leader]),) + tuple(next(follow_slots[r]) for r in followers)
    return out


# --------------------------------------------------------------------------- R < RF, no current


def extra_counts(c: Cluster, totals: RackTotals) -> list[list[int]]:
    """Replicas of each partition in each rack when every rack must be used (R < RF).

    Each partition has one replica per rack plus ``RF − R`` extras; rack r's
    ``T_r − P`` extras are laid on one cyclic sequence over the partitions,
    rack after rack, so every partition gets exactly ``RF − R`` extras and at
    most ``⌈(T_r − P)/P⌉ <= high_r − 1`` of them in rack r.
    """
    P = c.partitions
    counts = [[1] * c.num_racks for _ in range(P)]
    position = 0
    for r, t in enumerate(totals.replicas):
        for _ in range(t - P):
            counts[position % P][r] += 1
            position += 1
    return counts


def _follower_order(n: int, led: list[int], others: list[int], followers: dict[int, int]
                    ) -> tuple[list[int], dict[int, int]] | None:
    """Order one rack's follower blocks and give each led partition a leader slot outside its own block.

    The fill puts the ``len(led)`` leaders on slots ``0, 1, ...`` (so slot
    ``k`` is used ``⌊Λ/n⌋`` or ``⌈Λ/n⌉`` times), then the blocks of
    ``followers[p]`` consecutive slots. Greedy: at each slot, the led partition
    with the biggest block that still avoids some free leader slot goes next
    (taking the free slot with most copies left); partitions this rack does
    not lead fill in when none fits. Led partitions without followers take
    the leader slots left at the end. None if it gets stuck.
    """
    tokens = [0] * n
    for j in range(len(led)):
        tokens[j % n] += 1
    waiting: dict[int, list[int]] = {}  # block size -> led partitions
    for p in led:
        if followers[p] > 0:
            waiting.setdefault(followers[p], []).append(p)
    free = [p for p in others if followers[p] > 0]
    order: list[int] = []
    lead_at: dict[int, int] = {}
    slot = len(led) % n
    while waiting or free:
        pick = None
        for f in sorted(waiting, reverse=True):
            fits = [k for k in range(n) if tokens[k] and (k - slot) % n >= f]
            if fits:
                pick = waiting[f].pop()
                if not waiting[f]:
                    del waiting[f]
                k = max(fits, key=lambda k: tokens[k])
                tokens[k] -= 1
                lead_at[pick] = k
                break
        if pick is None:
            if not free:
                return None
            pick = free.pop()
        order.append(pick)
        slot = (slot + followers[pick]) % n
    rest = [k for k in range(n) for _ in range(tokens[k])]
    for p, k in zip((p for p in led if p not in lead_at), rest):
        lead_at[p] = k
    return order, lead_at


def place_every_rack(c: Cluster, totals: RackTotals) -> dict[int, tuple[int, ...]] | None:
    """Brokers for each partition when R < RF, or None if the greedy block order gets stuck.

    Per rack, one cyclic fill over its brokers: first the leaders of the
    partitions it leads, one slot each, then every partition's remaining
    replicas in that rack as a block of consecutive slots. A single fill
    gives each broker ⌊T_r/n_r⌋ or ⌈T_r/n_r⌉ replicas and ⌊Λ_r/n_r⌋ or
    ⌈Λ_r/n_r⌉ leaders, the extras of both on the first brokers (so nested).
    """
    P = c.partitions
    counts = extra_counts(c, totals)
    leader_rack = [r for r, k in enumerate(totals.leaders) for _ in range(k)]
    chosen: list[list[int]] = [[] for _ in range(P)]
    leaders = [0] * P
    for r, members in enumerate(c.racks):
        n = len(members)
        led = [p for p in range(P) if leader_rack[p] == r]
        led_set = set(led)
        followers = {p: counts[p][r] - (p in led_set) for p in range(P)}
        planned = _follower_order(n, led, [p for p in range(P) if p not in led_set], followers)
        if planned is None:
            return None
        order, lead_at = planned
        for p, j in lead_at.items():
            leaders[p] = members[j]
        slot = len(led)
        for p in order:
            chosen[p].extend(members[(slot + k) % n] for k in range(followers[p]))
            slot += followers[p]
    return {c.start + p: (leaders[p],) + tuple(chosen[p]) for p in range(P)}


# --------------------------------------------------------------------------- no racks


def balanced_placement(c: Cluster) -> dict[int, tuple[int, ...]]:
    """Leaders on a balanced word over the brokers, replicas on the RF brokers from the leader on.

    Every window of RF consecutive brokers then holds ⌊RF·a/N⌋ or ⌈RF·a/N⌉
    of the ``a = P mod N`` extra leaders, so both imbalances are at most 1.

    >>> c = Cluster((0, 1, 2, 3), ((0, 1, 2, 3),), False, 6, 2, 0)
    >>> balanced_placement(c)
    {0: (0, 1), 1: (1, 2), 2: (1, 2), 3: (2, 3), 4: (3, 0), 5: (3, 0)}
    """
    n = len(c.brokers)
    q, a = divmod(c.partitions, n)
    leaders = [q + ((i + 1) * a // n - i * a // n) for i in range(n)]
    out, pid = {}, c.start
    for i, k in enumerate(leaders):
        for _ in range(k):
            out[pid] = tuple(c.brokers[(i + j) % n] for j in range(c.rf))
            pid += 1
    return out


# --------------------------------------------------------------------------- reassignment, R >= RF


def solve_moves_one_per_rack(instance: ReplicasInstance, c: Cluster, d_max: int, l_max: int,
                             deadline: float | None, threads: int | None) -> tuple[dict, Outcome]:
    """Joint MIP: fewest moves with replica imbalance <= ``d_max`` and leader imbalance <= ``l_max``.

    One keep (and keep-as-leader) variable per current replica, one add (and
    add-as-leader) variable per (partition, rack). The fallback when the two
    flows cannot place leaders, and an independent cross-check in the tests.
    """
    P, R, N = c.partitions, c.num_racks, len(c.brokers)
    bidx = {b: i for i, b in enumerate(c.brokers)}
    rack_of = c.rack_of_index
    current = instance.current or {}
    kp, kb = [], []  # current replicas: partition row, broker index
    for i in range(P):
        for b in current.get(c.start + i, ()):
            kp.append(i)
            kb.append(bidx[b])
    kp, kb = np.array(kp, dtype=np.int64), np.array(kb, dtype=np.int64)
    kr = np.array([rack_of[c.brokers[j]] for j in kb], dtype=np.int64)
    K = len(kp)
    m = Model()
    keep = m.add_vars(K)
    lkeep = m.add_vars(K)
    add = m.add_vars(P * R, cost=1.0)  # (p, r) at p·R + r
    ladd = m.add_vars(P * R)
    a = m.add_vars(N, 0, P)
    la = m.add_vars(N, 0, P)
    lo, llo = m.add_vars(1, 0, P), m.add_vars(1, 0, P)
    pr_p = np.repeat(np.arange(P), R)
    # RF replicas and one leader per partition
    m.add_rows(np.full(P, c.rf), c.rf, np.r_[kp, pr_p], np.r_[keep, add], 1.0)
    m.add_rows(np.ones(P), 1, np.r_[kp, pr_p], np.r_[lkeep, ladd], 1.0)
    m.add_rows(np.full(K, -np.inf), 0, np.r_[np.arange(K), np.arange(K)], np.r_[lkeep, keep], np.r_[np.ones(K), -np.ones(K)])
    m.add_rows(np.full(P * R, -np.inf), 0, np.r_[np.arange(P * R), np.arange(P * R)], np.r_[ladd, add],
               np.r_[np.ones(P * R), -np.ones(P * R)])
    # at most one replica per (partition, rack)
    m.add_rows(np.full(P * R, -np.inf), 1, np.r_[kp * R + kr, np.arange(P * R)], np.r_[keep, add], 1.0)
    # adds into a rack = adds to its brokers
    b_rack = np.array([rack_of[b] for b in c.brokers])
    for var, bvar in ((add, a), (ladd, la)):
        m.add_rows(np.zeros(R), 0, np.r_[np.tile(np.arange(R), P), b_rack], np.r_[var, bvar],
                   np.r_[np.ones(P * R), -np.ones(N)])
    m.add_rows(np.full(N, -np.inf), 0, np.r_[np.arange(N), np.arange(N)], np.r_[la, a], np.r_[np.ones(N), -np.ones(N)])
    # load windows: lo <= kept + added <= lo + d_max, likewise for leaders
    for kvar, bvar, low, width in ((keep, a, lo[0], d_max), (lkeep, la, llo[0], l_max)):
        rows = np.r_[kb, np.arange(N), np.arange(N)]
        cols = np.r_[kvar, bvar, np.full(N, low)]
        vals = np.r_[np.ones(K), np.ones(N), -np.ones(N)]
        m.add_rows(np.zeros(N), width, rows, cols, vals)
    out = solve_model(m, deadline, threads)
    if out.x is None:
        return {}, out
    x = np.rint(out.x).astype(np.int64)
    return _read_moves(c, x, keep, lkeep, add, ladd, a, la, kp, kb), out


def _read_moves(c: Cluster, x, keep, lkeep, add, ladd, a, la, kp, kb) -> dict[int, tuple[int, ...]]:
    P, R = c.partitions, c.num_racks
    lead_slots, follow_slots = [], []
    for r, members in enumerate(c.racks):
        idx = [c.brokers.index(b) for b in members]
        lead_slots.append(iter([c.brokers[j] for j in idx for _ in range(x[la[j]])]))
        follow_slots.append(iter([c.brokers[j] for j in idx for _ in range(x[a[j]] - x[la[j]])]))
    leader: list[int | None] = [None] * P
    others: list[list[int]] = [[] for _ in range(P)]
    for k in range(len(kp)):
        if not x[keep[k]]:
            continue
        if x[lkeep[k]]:
            leader[kp[k]] = c.brokers[kb[k]]
        else:
            others[kp[k]].append(c.brokers[kb[k]])
    for p in range(P):
        for r in range(R):
            if x[add[p * R + r]]:
                if x[ladd[p * R + r]]:
                    leader[p] = next(lead_slots[r])
                else:
                    others[p].append(next(follow_slots[r]))
    return {c.start + p: (leader[p],) + tuple(others[p]) for p in range(P)}


def _lp_solve(m: Model, deadline: float | None, threads: int | None) -> Outcome:
    """A linear program (every column continuous): interior point, then crossover to a vertex.

    On these flow matrices simplex needs a minute at 10,000 partitions where
    IPM with crossover takes seconds; the crossover vertex is what makes a
    totally unimodular model's answer integral (and callers check it is).
    """
    m.integer = [np.zeros(len(c), dtype=bool) for c in m.cost]
    out = solve_model(m, deadline, threads, solver="ipm")
    retry = out.status == "error" or (out.status == "optimal" and not _integral(out.x))
    if retry:  # IPM can fail to classify an infeasible flow; simplex settles both cases
        out = solve_model(m, deadline, threads, solver="simplex")
    return out


@dataclass(frozen=True)
class _Network:
    """The replica flow of a reassignment with one replica per rack (arc columns of a :class:`Model`)."""

    model: Model
    keep: np.ndarray        # arc slot -> current broker, one per current replica
    keep_p: np.ndarray
    keep_b: np.ndarray      # broker index
    add: np.ndarray         # arcs into a rack pool (from a slot or straight from a partition)
    add_p: np.ndarray
    add_r: np.ndarray
    to_broker: np.ndarray   # arc pool_r -> b, one per broker
    sink: np.ndarray        # arc b -> sink, one per broker


def _replica_network(instance: ReplicasInstance, c: Cluster, d_max: int, lo: int) -> _Network:
    """Min-cost flow: partitions send RF units through (partition, rack) slots to brokers.

    A slot exists for every rack where the partition has current replicas; it
    either keeps one of them (cost 0) or sends its unit to the rack's pool
    (cost 1, a move). Racks without a current replica are reached by an arc
    straight into their pool (cost 1). Pools feed their brokers, and each
    broker's total lies in ``[lo, lo + d_max]``. The matrix is a node-arc
    incidence matrix, so every vertex is integral.
    """
    P, R, N = c.partitions, c.num_racks, len(c.brokers)
    bidx = {b: i for i, b in enumerate(c.brokers)}
    rack_of = c.rack_of_index
    current = instance.current or {}
    slot_of: dict[tuple[int, int], int] = {}
    keep_p, keep_b, keep_s = [], [], []
    for p in range(P):
        for b in current.get(c.start + p, ()):
            s = slot_of.setdefault((p, rack_of[b]), len(slot_of))
            keep_p.append(p)
            keep_b.append(bidx[b])
            keep_s.append(s)
    S = len(slot_of)
    slot_p = np.array([k[0] for k in slot_of], dtype=np.int64)
    slot_r = np.array([k[1] for k in slot_of], dtype=np.int64)
    direct = [(p, r) for p in range(P) for r in range(R) if (p, r) not in slot_of]
    dir_p = np.array([d[0] for d in direct], dtype=np.int64)
    dir_r = np.array([d[1] for d in direct], dtype=np.int64)
    keep_p, keep_b, keep_s = (np.array(v, dtype=np.int64) for v in (keep_p, keep_b, keep_s))
    node_slot, node_pool, node_b = P, P + S, P + S + R
    m = Model()
    tails, heads = [], []

    def arcs(n: int, tail, head, ub: float, cost: float, lb: float = 0.0) -> np.ndarray:
        cols = m.add_vars(n, lb, ub, integer=False, cost=cost)
        tails.append(np.broadcast_to(tail, (n,)))
        heads.append(np.broadcast_to(head, (n,)))
        return cols

    arcs(S, slot_p, node_slot + np.arange(S), 1, 0)
    keep = arcs(len(keep_p), node_slot + keep_s, node_b + keep_b, 1, 0)
    slot_add = arcs(S, node_slot + np.arange(S), node_pool + slot_r, 1, 1)
    dir_add = arcs(len(direct), dir_p, node_pool + dir_r, 1, 1)
    b_rack = np.array([rack_of[b] for b in c.brokers], dtype=np.int64)
    to_broker = arcs(N, node_pool + b_rack, node_b + np.arange(N), P, 0)
    sink_lb, sink_ub = lo, lo + d_max
    sink = arcs(N, node_b + np.arange(N), -1, sink_ub, 0, lb=sink_lb)
    tails, heads = np.concatenate(tails), np.concatenate(heads)
    cols = np.arange(len(tails))
    n_nodes = P + S + R + N
    out_ok, in_ok = tails >= 0, heads >= 0
    supply = np.zeros(n_nodes)
    supply[:P] = c.rf
    m.add_rows(supply, supply, np.r_[tails[out_ok], heads[in_ok]], np.r_[cols[out_ok], cols[in_ok]],
               np.r_[np.ones(out_ok.sum()), -np.ones(in_ok.sum())])
    add = np.r_[slot_add, dir_add]
    return _Network(m, keep, keep_p, keep_b, add, np.r_[slot_p, dir_p], np.r_[slot_r, dir_r], to_broker, sink)


def _read_network(c: Cluster, net: _Network, x: np.ndarray, instance: ReplicasInstance) -> list[list[int]]:
    """Replica sets (unordered) of every partition from an integral flow."""
    P = c.partitions
    sets: list[list[int]] = [[] for _ in range(P)]
    for k in np.flatnonzero(x[net.keep] > 0.5):
        sets[net.keep_p[k]].append(c.brokers[net.keep_b[k]])
    quota = [[] for _ in range(c.num_racks)]
    rack_of = c.rack_of_index
    for j, b in enumerate(c.brokers):
        quota[rack_of[b]].extend([b] * int(round(x[net.to_broker[j]])))
    current = instance.current or {}
    for k in np.flatnonzero(x[net.add] > 0.5):
        p, r = net.add_p[k], net.add_r[k]
        held = set(current.get(c.start + p, ()))
        pool = quota[r]
        pick = next((i for i in range(len(pool) - 1, -1, -1) if pool[i] not in held), len(pool) - 1)
        sets[p].append(pool.pop(pick))
    return sets


def _integral(x: np.ndarray) -> bool:
    return bool(np.all(np.abs(x - np.rint(x)) < 1e-6))


def solve_replica_flow(instance: ReplicasInstance, c: Cluster, d_max: int, deadline: float | None,
                       threads: int | None) -> tuple[list[list[int]] | None, int | None, int]:
    """Fewest moves with replica imbalance <= ``d_max`` (leaders ignored): sets, moves, lower bound.

    The window ``[lo, lo + d_max]`` of broker loads must contain the average
    load, which leaves ``d_max + 1`` values of ``lo`` at most; each is a pure
    network flow, solved exactly, and the best one is optimal once all are
    solved. Until then the bound is ``Σ_b max(0, lowest lo − current load of b)``.
    """
    avg = c.partitions * c.rf / len(c.brokers)
    candidates = list(range(max(0, math.ceil(avg) - d_max), math.floor(avg) + 1))
    held = {b: 0 for b in c.brokers}
    for brokers in (instance.current or {}).values():
        for b in brokers:
            held[b] += 1
    bound = sum(max(0, candidates[0] - k) for k in held.values())
    best: tuple | None = None
    complete = True
    for lo in sorted(candidates, key=lambda v: abs(v + d_max / 2 - avg)):
        net = _replica_network(instance, c, d_max, lo)
        o = _lp_solve(net.model, deadline, threads)
        complete &= o.status in ("optimal", "infeasible")
        if o.x is not None and o.status == "optimal" and _integral(o.x) and (best is None or o.objective < best[0]):
            best = (o.objective, net, o.x)
        if best is not None and round(best[0]) <= bound:
            break
    if best is None:
        return None, None, bound
    if complete:  # every window was solved exactly: the best one is optimal
        bound = max(bound, round(best[0]))
    return _read_network(c, best[1], best[2], instance), round(best[0]), bound


def choose_leaders(instance: ReplicasInstance, c: Cluster, sets: list[list[int]], l_max: int,
                   deadline: float | None, threads: int | None) -> dict[int, tuple[int, ...]] | None:
    """One leader per partition among its replicas, leader imbalance <= ``l_max`` (a flow).

    Among such choices, keeps as many current preferred leaders as possible.
    """
    P, N = c.partitions, len(c.brokers)
    bidx = {b: i for i, b in enumerate(c.brokers)}
    current = instance.current or {}
    arc_p = np.repeat(np.arange(P), [len(s) for s in sets])
    arc_b = np.array([bidx[b] for s in sets for b in s], dtype=np.int64)
    old = np.array([bool(current.get(c.start + p)) and current[c.start + p][0] == c.brokers[b]
                    for p, b in zip(arc_p, arc_b)], dtype=bool)
    avg = P / N
    for llo in range(math.floor(avg), max(0, math.ceil(avg) - l_max) - 1, -1):
        m = Model()
        arcs = m.add_vars(len(arc_p), 0, 1, integer=False, cost=np.where(old, 0.0, 1.0))
        m.add_rows(np.ones(P), 1, arc_p, arcs, 1.0)
        m.add_rows(np.full(N, llo), llo + l_max, arc_b, arcs, 1.0)
        o = _lp_solve(m, deadline, threads)
        if o.x is not None and o.status == "optimal" and _integral(o.x):
            lead = {int(p): c.brokers[int(b)] for p, b, v in zip(arc_p, arc_b, o.x) if v > 0.5}
            return {c.start + p: (lead[p],) + tuple(sorted(b for b in sets[p] if b != lead[p])) for p in range(P)}
    return None


# --------------------------------------------------------------------------- broker-level MIP


def solve_full(instance: ReplicasInstance, c: Cluster, deadline: float | None,
               threads: int | None) -> tuple[dict, list[Outcome]]:
    """Broker-level model, three lexicographic stages: replica, then leader imbalance, then moves."""
    P, N, R = c.partitions, len(c.brokers), c.num_racks
    rack_of = c.rack_of_index
    m = Model()
    x = m.add_vars(P * N)  # (p, b) at p·N + b
    y = m.add_vars(P * N)
    hi, lo, lhi, llo = (m.add_vars(1, 0, P)[0] for _ in range(4))
    pn_p = np.repeat(np.arange(P), N)
    pn_b = np.tile(np.arange(N), P)
    m.add_rows(np.full(P, c.rf), c.rf, pn_p, x, 1.0)
    m.add_rows(np.ones(P), 1, pn_p, y, 1.0)
    m.add_rows(np.full(P * N, -np.inf), 0, np.r_[np.arange(P * N), np.arange(P * N)], np.r_[y, x],
               np.r_[np.ones(P * N), -np.ones(P * N)])
    if c.racked:
        b_rack = np.array([rack_of[b] for b in c.brokers])
        low, up = (0, 1) if c.one_per_rack else (1, np.inf)
        m.add_rows(np.full(P * R, low), up, pn_p * R + b_rack[pn_b], x, 1.0)
    for var, top, bottom in ((x, hi, lo), (y, lhi, llo)):
        m.add_rows(np.full(N, -np.inf), 0, np.r_[pn_b, np.arange(N)], np.r_[var, np.full(N, top)],
                   np.r_[np.ones(P * N), -np.ones(N)])
        m.add_rows(np.zeros(N), np.inf, np.r_[pn_b, np.arange(N)], np.r_[var, np.full(N, bottom)],
                   np.r_[np.ones(P * N), -np.ones(N)])
    held = np.zeros(P * N)
    for pid, brokers in (instance.current or {}).items():
        for b in brokers:
            held[(pid - c.start) * N + c.brokers.index(b)] = 1
    n_col = m.num_col
    stages = []
    objectives = [{hi: 1, lo: -1}, {lhi: 1, llo: -1}] + ([None] if instance.current is not None else [])
    for objective in objectives:
        cost = np.zeros(n_col)
        if objective is None:
            cost[x] = 1 - held
        else:
            for k, v in objective.items():
                cost[k] = v
        m.set_cost(cost)
        out = solve_model(m, deadline, threads)
        stages.append(out)
        if out.status != "optimal":
            break
        # fix this stage's optimum before the next
        m.add_rows([-np.inf], [round(out.objective)], np.zeros(int((cost != 0).sum()), dtype=int),
                   np.flatnonzero(cost), cost[cost != 0])
    final = next((s for s in reversed(stages) if s.x is not None), None)
    if final is None:
        return {}, stages
    xv = np.rint(final.x).astype(np.int64)
    out = {}
    for p in range(P):
        row = slice(p * N, (p + 1) * N)
        chosen = [c.brokers[j] for j in np.flatnonzero(xv[x[row]])]
        lead = [c.brokers[j] for j in np.flatnonzero(xv[y[row]])]
        out[c.start + p] = tuple(lead) + tuple(b for b in chosen if b not in lead)
    return out, stages


# --------------------------------------------------------------------------- the method


def _lower_bounds(c: Cluster) -> tuple[int, int]:
    """Imbalances can be 0 only when the counts divide."""
    n = len(c.brokers)
    return int(c.partitions * c.rf % n != 0), int(c.partitions % n != 0)


def solve_spread(instance: ReplicasInstance, options: SolveOptions = SolveOptions()) -> MethodResult:
    """``exact.spread``: see the module docstring for the model used in each case."""
    c = Cluster.of(instance)
    if c.rf > len(c.brokers):
        return MethodResult({}, Status.INFEASIBLE,
                            message=f"replication_factor {c.rf} exceeds the {len(c.brokers)} brokers")
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    info: dict = {}
    if c.one_per_rack:
        totals = solve_rack_totals(c, deadline, options.threads)
        info["model"] = "rack_totals"
        if instance.current is None:
            assignment = place_in_racks(c, totals, partition_racks(c, totals))
            status, bound = _status_and_bound(instance, totals)
        else:
            assignment, out = _reassign_one_per_rack(instance, c, totals, deadline, options.threads, info)
            if not assignment:
                return MethodResult({}, Status.ERROR, message=f"the moves model gave no solution ({out.status})")
            status = Status.OPTIMAL if totals.optimal and out.status == "optimal" else Status.FEASIBLE
            moves_bound = math.ceil(out.bound - 1e-6) if out.bound is not None else 0
            bound = lexicographic(instance, totals.replica_imbalance, totals.leader_imbalance, moves_bound)
            if not totals.optimal:
                bound = _status_and_bound(instance, totals)[1]
    elif instance.current is None and c.num_racks == 1:
        info["model"] = "balanced_word"
        assignment = balanced_placement(c)
        status, bound = Status.OPTIMAL, lexicographic(instance, *_lower_bounds(c), 0)
    elif instance.current is None and (placed := _every_rack(c, deadline, options.threads)) is not None:
        info["model"] = "rack_totals_every_rack"
        assignment, status, bound = placed[0], *_status_and_bound(instance, placed[1])
    else:
        info["model"] = "broker_level"
        assignment, stages = solve_full(instance, c, deadline, options.threads)
        if not assignment:
            return MethodResult({}, Status.ERROR if stages[-1].status != "infeasible" else Status.INFEASIBLE,
                                message=f"the broker-level model gave no solution ({stages[-1].status})")
        status, bound = _staged_bound(instance, stages)
    evaluation = evaluate_replicas(instance, assignment)
    if evaluation.violations:
        raise MethodError("exact.spread built an assignment that breaks "
                          + ", ".join(v.rule for v in evaluation.violations) + " (this is a bug)")
    objective = spread_objective(instance, assignment)
    if status is Status.OPTIMAL:
        bound = objective if bound is None or bound <= objective else bound
    return MethodResult(assignment, status, objective=objective, bound=bound, info=info)


def _every_rack(c: Cluster, deadline: float | None, threads: int | None) -> tuple[dict, RackTotals] | None:
    totals = solve_rack_totals(c, deadline, threads)
    assignment = place_every_rack(c, totals)
    return None if assignment is None else (assignment, totals)


def _reassign_one_per_rack(instance: ReplicasInstance, c: Cluster, totals: RackTotals, deadline: float | None,
                           threads: int | None, info: dict) -> tuple[dict, Outcome]:
    """The replica flow, then leaders by a flow; the joint MIP only if no leader choice fits."""
    d, l = totals.replica_imbalance, totals.leader_imbalance
    sets, moves, bound = solve_replica_flow(instance, c, d, deadline, threads)
    if sets is not None:
        assignment = choose_leaders(instance, c, sets, l, deadline, threads)
        if assignment is not None:
            info["model"] = "replica_flow+leader_flow"
            status = "optimal" if moves == bound else "feasible"
            return assignment, Outcome(status, None, float(moves), float(bound))
    info["model"] = "moves_one_per_rack_mip"
    return solve_moves_one_per_rack(instance, c, d, l, deadline, threads)


def _status_and_bound(instance: ReplicasInstance, totals: RackTotals) -> tuple[Status, float | None]:
    if totals.optimal:
        return Status.OPTIMAL, lexicographic(instance, totals.replica_imbalance, totals.leader_imbalance, 0)
    if totals.bound is None:
        return Status.FEASIBLE, None
    big = instance.partitions + 1  # the rack model weighs D by P + 1
    d_lb = math.floor((totals.bound + 1e-6) / big)
    return Status.FEASIBLE, lexicographic(instance, d_lb, 0, 0)


def _staged_bound(instance: ReplicasInstance, stages: list[Outcome]) -> tuple[Status, float | None]:
    values = []
    for s in stages:
        if s.status == "optimal":
            values.append(round(s.objective))
        else:
            values.append(math.ceil(s.bound - 1e-6) if s.bound is not None else 0)
            break
    wanted = 3 if instance.current is not None else 2
    status = Status.OPTIMAL if len(stages) == wanted and stages[-1].status == "optimal" else Status.FEASIBLE
    values += [0] * (3 - len(values))
    return status, lexicographic(instance, *values)


def _run(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    return solve_spread(instance, options)


RULES = [Rule("spread", "replicas", "exact.spread", spread_objective, spread_violations,
              "KIP-36: min(RF, #racks) racks per partition; then replica imbalance, leader imbalance, "
              "moves, lexicographically (D·W² + L·W + M, W = partitions·RF + 1)", criteria=spread_criteria)]
METHODS = [Method("exact.spread", "replicas", "spread", _run,
                  "rack spread as hard constraints, then replica and leader balance, then fewest moves, exactly")]
