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
* **``current`` given, any racks** (first): the target model of
  :mod:`.targets`. Moves only depend on how many replicas each broker keeps,
  so a bound comes from per-broker targets (a concave allocation over
  brokers, each rack's total within the rack rule) and a greedy read-back
  keeps each broker's targets and places the rest; when its moves meet the
  bound the answer is optimal (leaders then by a greedy or one max flow).
  Nothing in it grows with partitions × brokers. Brokers in ``current`` but
  not in ``brokers`` (decommissioned) lose every replica. Only if the
  read-back misses its bound do the flows below decide (above
  :data:`MAX_PAIRS_WITH_AN_ANSWER` pairs the read-back's answer is returned,
  ``feasible`` with the bound).
* **``current`` given, R >= RF**: ``D`` and ``L`` are those of the
  aggregated model (``current`` does not change what is feasible). Moves are
  then a min-cost flow: each partition sends RF units through
  (partition, rack) slots that keep a current replica (cost 0) or go to the
  rack's pool (cost 1, a move; one replica per rack makes a rack's brokers
  interchangeable for an incoming replica), and every broker's load stays in
  a window of width ``D``. Each window position is a min-cost flow, solved
  by a dedicated network solver (:mod:`.network`: OR-Tools' cost scaling,
  2.4 CPU s at 100,000 partitions × 300 brokers where HiGHS' interior point
  needed some 240; a slot with a single current replica is folded into its
  broker, which forwards what it does not keep; without OR-Tools HiGHS
  solves it as an LP, integral at its vertices after crossover).
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

import dataclasses
import functools
import math
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from kipopt.errors import MethodError
from kipopt.evaluation.replicas import evaluate_replicas
from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, Rule, SolveOptions, Violation
from kipopt.solution import Status

from kipopt.formulations.replicas.model import Cluster, Model, Outcome, solve_model  # noqa: F401  (public names of this module)
from kipopt.formulations.replicas.network import dedicated_solver_available
from kipopt.formulations.replicas.moves import (choose_leaders, solve_full, solve_moves_broker_level,  # noqa: F401
                           solve_moves_one_per_rack, solve_replica_flow)
from kipopt.formulations.replicas.targets import fast_leaders, fast_replica_sets, least_imbalance_leaders, weights_of
from kipopt.formulations.replicas.placement import (RackTotals, balanced_placement, extra_counts, partition_racks,  # noqa: F401
                               place_every_rack, place_in_racks, replicas_per_rack, solve_rack_totals,
                               split_imbalance, wrap_placement)

# --------------------------------------------------------------------------- the rule


def _evaluated(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]):
    """The evaluation of the assignment ``exact.spread`` just returned: the rule's objective, criteria and
    violations are asked for right after, and :func:`evaluate_replicas` answers them from its last
    evaluation while the assignment is unchanged."""
    return evaluate_replicas(instance, assignment)


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


def bytes_weight(instance: ReplicasInstance) -> int:
    """``W = RF·Σ sizes + 1`` (or ``partitions·RF + 1`` without sizes): more than any bytes moved."""
    if instance.sizes is None:
        return weight(instance)
    return instance.replication_factor * sum(instance.sizes.values()) + 1


def lexicographic_bytes(instance: ReplicasInstance, replica_imbalance: float, leader_imbalance: float,
                        bytes_moved: float) -> float:
    """``D·W² + L·W + B`` with ``W`` = :func:`bytes_weight` (exact in a float up to 2^53; the criteria always)."""
    w = bytes_weight(instance)
    return float(int(replica_imbalance) * w * w + int(leader_imbalance) * w + int(bytes_moved))


def _moved_bytes(m: Mapping) -> int:
    return m.get("bytes_moved", m.get("moves", 0))


def spread_bytes_objective(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> float:
    m = _evaluated(instance, assignment).metrics
    return lexicographic_bytes(instance, m["replica_imbalance"], m["leader_imbalance"], _moved_bytes(m))


def spread_bytes_criteria(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> dict[str, float]:
    m = _evaluated(instance, assignment).metrics
    return {"replica_imbalance": m["replica_imbalance"], "leader_imbalance": m["leader_imbalance"],
            "bytes_moved": _moved_bytes(m)}


def spread_objective(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> float:
    """The rule's objective, recomputed from the assignment alone."""
    m = _evaluated(instance, assignment).metrics
    return lexicographic(instance, m["replica_imbalance"], m["leader_imbalance"], m.get("moves", 0))


def spread_criteria(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> dict[str, float]:
    """The rule's criteria in priority order (the bench reports each one's own gap)."""
    m = _evaluated(instance, assignment).metrics
    return {"replica_imbalance": m["replica_imbalance"], "leader_imbalance": m["leader_imbalance"],
            "moves": m.get("moves", 0)}


def spread_violations(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> list[Violation]:
    """Missing partitions, wrong replica counts, duplicate brokers, too few racks (by the evaluator's names)."""
    return _evaluated(instance, assignment).violations


# --------------------------------------------------------------------------- the method


def _lower_bounds(c: Cluster) -> tuple[int, int]:
    """Imbalances can be 0 only when the counts divide."""
    n = len(c.brokers)
    return int(c.partitions * c.rf % n != 0), int(c.partitions % n != 0)


class _Fresh:
    """A placement meeting the optimal imbalances ``d`` and ``l`` (moves ignored), its status and bound.

    The placement itself is built on first use: a reassignment the target model answers never needs it."""

    def __init__(self, build: Callable[[], dict | None], d: int, l: int, status: Status, bound: float | None):
        self._build, self.d, self.l, self.status, self.bound = build, d, l, status, bound

    @functools.cached_property
    def assignment(self) -> dict[int, tuple[int, ...]] | None:
        return self._build()


def solve_spread(instance: ReplicasInstance, options: SolveOptions = SolveOptions(),
                 by_bytes: bool = False) -> MethodResult:
    """``exact.spread``: see the module docstring for the model used in each case.

    The deadline of ``options`` bounds everything: a reassignment cut short
    answers with the best placement found, at worst the balanced placement
    with moves not yet minimised (``feasible``, with its bound).
    """
    c = Cluster.of(instance)
    if c.rf > len(c.brokers):
        return MethodResult({}, Status.INFEASIBLE,
                            message=f"replication_factor {c.rf} exceeds the {len(c.brokers)} brokers")
    deadline = options.deadline().at
    info: dict = {}
    fresh = _fresh(instance, c, deadline, options.threads, info)
    if instance.current is not None:
        assignment, status, bound = _reassign(instance, c, fresh, deadline, options.threads, info, by_bytes)
    elif fresh is not None:
        assignment, status, bound = fresh.assignment, fresh.status, fresh.bound
    else:
        info["model"] = "broker_level"
        assignment, stages = solve_full(instance, c, deadline, options.threads)
        if not assignment:
            return MethodResult({}, Status.ERROR if stages[-1].status != "infeasible" else Status.INFEASIBLE,
                                message=f"the broker-level model gave no solution ({stages[-1].status})")
        status, bound = _staged_bound(instance, stages)
    evaluation = _evaluated(instance, assignment)
    if evaluation.violations:
        raise MethodError("exact.spread built an assignment that breaks "
                          + ", ".join(v.rule for v in evaluation.violations) + " (this is a bug)")
    m = evaluation.metrics
    if by_bytes:
        objective = lexicographic_bytes(instance, m["replica_imbalance"], m["leader_imbalance"], _moved_bytes(m))
    else:
        objective = lexicographic(instance, m["replica_imbalance"], m["leader_imbalance"], m.get("moves", 0))
    if status is Status.OPTIMAL:
        bound = objective if bound is None or bound <= objective else bound
    return MethodResult(assignment, status, objective=objective, bound=bound, info=info)


def _fresh(instance: ReplicasInstance, c: Cluster, deadline: float | None, threads: int | None,
           info: dict) -> _Fresh | None:
    """The best placement ignoring ``current`` (None if the R < RF greedy order gets stuck)."""
    if c.one_per_rack:
        info["model"] = "rack_totals"
        totals = solve_rack_totals(c, deadline, threads)
        build = lambda: (wrap_placement(c, totals)  # noqa: E731
                         or place_in_racks(c, totals, partition_racks(c, totals)))
    elif c.num_racks == 1:
        info["model"] = "balanced_word"
        d, l = _lower_bounds(c)
        return _Fresh(lambda: balanced_placement(c), d, l, Status.OPTIMAL, lexicographic(instance, d, l, 0))
    else:
        info["model"] = "rack_totals_every_rack"
        totals = solve_rack_totals(c, deadline, threads)
        if instance.current is None and place_every_rack(c, totals) is None:
            return None
        build = lambda: place_every_rack(c, totals)  # noqa: E731
    status, bound = _status_and_bound(instance, totals)
    return _Fresh(build, totals.replica_imbalance, totals.leader_imbalance, status, bound)


def _present_only(instance: ReplicasInstance) -> ReplicasInstance:
    """``current`` without the brokers being decommissioned (for the models indexed by broker: moves are the
    same, since no assignment can use a departed broker)."""
    if not instance.departing:
        return instance
    known = set(instance.broker_ids)
    current = {p: tuple(b for b in bs if b in known) for p, bs in instance.current.items()}
    return dataclasses.replace(instance, current=current)


def _reassign(instance: ReplicasInstance, c: Cluster, fresh: _Fresh | None, deadline: float | None,
              threads: int | None, info: dict, by_bytes: bool = False) -> tuple[dict, Status, float | None]:
    """Fewest moves at the fresh placement's imbalances; the fresh placement if time runs out first.

    The target model (:mod:`.targets`) answers first; it is optimal when its moves meet its bound, else
    the flows below decide (unweighted moves only: with bytes its sets, or the fresh placement, answer
    with the bound)."""
    if fresh is not None:
        fast = _reassign_by_targets(instance, c, fresh, deadline, threads, info, by_bytes)
        if fast is not None:
            return fast
    if fresh is not None and fresh.assignment is None:  # R < RF and the greedy order got stuck
        fresh = None
    instance = _present_only(instance)
    fast_assignment, fast_bound = info.pop("_fast_assignment", None), info.pop("_bound", 0)
    if by_bytes and fresh is not None:
        return _reassign_bytes_by_flow(instance, c, fresh, deadline, threads, info, fast_assignment, fast_bound)
    flow_size = c.partitions * ((c.rf + c.num_racks) if c.one_per_rack else len(c.brokers))
    if fast_assignment is not None and flow_size > _max_flow_pairs():
        info["model"] = "targets+greedy"
        info["moves_note"] = (f"not proven minimal: the read-back missed the bound {fast_bound:,} and "
                              f"{c.partitions:,} x {len(c.brokers):,} is past the flows' size")
        return fast_assignment, Status.FEASIBLE, lexicographic(instance, fresh.d, fresh.l, fast_bound)
    if fresh is None:  # R < RF and the greedy order got stuck: the three-stage broker-level MIP
        info["model"] = "broker_level"
        assignment, stages = solve_full(instance, c, deadline, threads)
        if not assignment:
            raise MethodError(f"the broker-level model gave no solution ({stages[-1].status})")
        return (assignment, *_staged_bound(instance, stages))
    if c.one_per_rack:
        assignment, moves_bound = _reassign_one_per_rack(instance, c, fresh, deadline, threads, info)
    else:
        assignment, moves_bound = _reassign_broker_level(instance, c, fresh, deadline, threads, info)
    if not assignment and fast_assignment is not None:
        info["model"] = "targets+greedy"
        info.setdefault("moves_note", "not proven minimal: the time limit came first")
        assignment, moves_bound = fast_assignment, fast_bound
    if not assignment:
        info.setdefault("moves_note", "not minimised: the time limit came first")
        assignment, moves_bound = fresh.assignment, fast_bound
    if fresh.status is not Status.OPTIMAL:
        return assignment, Status.FEASIBLE, fresh.bound
    moves = _evaluated(instance, assignment).metrics["moves"]  # once more: cheap (vectorised)
    status = Status.OPTIMAL if moves <= moves_bound else Status.FEASIBLE
    return assignment, status, lexicographic(instance, fresh.d, fresh.l, min(moves, max(moves_bound, 0)))


def _reassign_bytes_by_flow(instance: ReplicasInstance, c: Cluster, fresh: _Fresh, deadline: float | None,
                            threads: int | None, info: dict, fast_assignment: dict | None,
                            fast_bound: int) -> tuple[dict, Status, float | None]:
    """Bytes moved by the replica flow with each move priced at its partition's bytes, then leaders."""
    w = weights_of(instance, True)
    assignment, bound = None, fast_bound
    if c.one_per_rack or c.partitions * len(c.brokers) <= MAX_BROKER_PAIRS:
        sets, _, flow_bound = solve_replica_flow(instance, c, fresh.d, deadline, threads, w)
        bound = max(bound, flow_bound)
        if sets is not None:
            assignment = fast_leaders(instance, c, sets, fresh.l) or choose_leaders(instance, c, sets, fresh.l,
                                                                                   deadline, threads)
    if assignment is None:
        info["moves_note"] = "bytes moved not proven minimal (no flow answer in time or size)"
        return fast_assignment or fresh.assignment, Status.FEASIBLE, lexicographic_bytes(instance, fresh.d, fresh.l,
                                                                                       bound)
    info["model"] = "replica_flow_bytes+leaders"
    moved = _evaluated(instance, assignment).metrics.get("bytes_moved", 0)
    status = Status.OPTIMAL if moved <= bound and fresh.status is Status.OPTIMAL else Status.FEASIBLE
    return assignment, status, lexicographic_bytes(instance, fresh.d, fresh.l, min(moved, bound))


def _reassign_by_targets(instance: ReplicasInstance, c: Cluster, fresh: _Fresh, deadline: float | None,
                         threads: int | None, info: dict, by_bytes: bool) -> tuple[dict, Status, float | None] | None:
    """Targets, bound and greedy read-back (:func:`fast_replica_sets`), leaders greedily or by the leader flow.
    None unless the moves meet the bound (the caller then runs the flows)."""
    w = weights_of(instance, by_bytes)
    fast = fast_replica_sets(instance, c, fresh.d, w)
    info["_bound"] = fast.bound
    if fast.sets is None:
        return None
    assignment = fast_leaders(instance, c, fast.sets, fresh.l)  # exact: a max flow decides each window
    if assignment is None:  # these sets allow no leader choice within L: keep the least imbalance as an answer
        info["_fast_assignment"] = least_imbalance_leaders(instance, c, fast.sets, fresh.l + 1)[0]
        return None
    if fast.moves > fast.bound:
        info["_fast_assignment"] = assignment
        return None
    info["model"] = "targets+greedy"
    info.pop("_bound", None)
    m = _evaluated(instance, assignment).metrics
    moves = m.get("bytes_moved", m["moves"]) if by_bytes else m["moves"]
    score = lexicographic_bytes if by_bytes else lexicographic
    if fresh.status is not Status.OPTIMAL:
        return assignment, Status.FEASIBLE, fresh.bound
    status = Status.OPTIMAL if moves <= fast.bound else Status.FEASIBLE
    return assignment, status, score(instance, fresh.d, fresh.l, min(moves, fast.bound))


def _reassign_one_per_rack(instance: ReplicasInstance, c: Cluster, fresh: _Fresh, deadline: float | None,
                           threads: int | None, info: dict) -> tuple[dict, int]:
    """The replica flow, then leaders by a flow; the joint MIP only if no leader choice fits.
    Returns the assignment (empty if none was found in time) and a lower bound on the moves."""
    d, l = fresh.d, fresh.l
    sets, moves, bound = solve_replica_flow(instance, c, d, deadline, threads)
    if sets is not None:
        assignment = choose_leaders(instance, c, sets, l, deadline, threads)
        if assignment is not None:
            info["model"] = "replica_flow+leader_flow"
            return assignment, bound
    if _expired(deadline):
        return {}, bound
    info["model"] = "moves_one_per_rack_mip"
    assignment, out = solve_moves_one_per_rack(instance, c, d, l, deadline, threads)
    if out.status == "optimal":
        return assignment, round(out.objective)
    return assignment, max(bound, math.ceil(out.bound - 1e-6) if out.bound is not None else 0)


def _reassign_broker_level(instance: ReplicasInstance, c: Cluster, fresh: _Fresh, deadline: float | None,
                           threads: int | None, info: dict) -> tuple[dict, int]:
    """R < RF (or one rack): the replica flow over (partition, broker) arcs and the leader flow; the
    moves MIP started from the fresh placement only if no leader choice fits. Both models have a column
    per (partition, broker) pair: above :data:`MAX_BROKER_PAIRS` neither is built (2 GB at a million
    pairs, 16 GB at 30 million) and the balanced placement answers, moves not minimised."""
    if c.partitions * len(c.brokers) > MAX_BROKER_PAIRS:
        info["moves_note"] = (f"not minimised: {c.partitions:,} partitions x {len(c.brokers):,} brokers exceed the "
                         f"{MAX_BROKER_PAIRS:,} (partition, broker) pairs the fewer-racks-than-RF models are built for")
        return {}, 0
    if c.racked and c.num_racks > 1:
        sets, _, bound = solve_replica_flow(instance, c, fresh.d, deadline, threads)
        if sets is not None:
            assignment = choose_leaders(instance, c, sets, fresh.l, deadline, threads)
            if assignment is not None:
                info["model"] = "every_rack_flow+leader_flow"
                return assignment, bound
    info["model"] = "moves_broker_level"
    assignment, out = solve_moves_broker_level(instance, c, fresh.d, fresh.l, fresh.assignment, deadline, threads)
    if out.status == "optimal":
        return assignment, round(out.objective)
    return assignment, math.ceil(out.bound - 1e-6) if out.bound is not None else 0


MAX_PAIRS_WITH_AN_ANSWER = 1_000_000
"""Above this many arcs of the replica flow ((partition, broker) pairs; (partition, rack) slots and current
replicas with one replica per rack), a target-model answer that misses its bound is returned as is
(``feasible``, with the bound) rather than handed to the flows, which take longer than a user waits there:
as min-cost flows 2.4 CPU s at 900,000 (100,000 partitions x (RF 3 + 6 racks), a reduced network of 657,280
arcs); as LPs (without OR-Tools) minutes past 300,000, hence :data:`MAX_PAIRS_AS_LPS` then."""

MAX_PAIRS_AS_LPS = 300_000


def _max_flow_pairs() -> int:
    return MAX_PAIRS_WITH_AN_ANSWER if dedicated_solver_available() else MAX_PAIRS_AS_LPS

MAX_BROKER_PAIRS = 2_000_000
"""Largest partitions x brokers for which the reassignment models over (partition, broker) pairs are built."""


def _expired(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def _status_and_bound(instance: ReplicasInstance, totals: RackTotals) -> tuple[Status, float | None]:
    if totals.optimal:
        return Status.OPTIMAL, lexicographic(instance, totals.replica_imbalance, totals.leader_imbalance, 0)
    d_lb, l_lb = _lower_bounds(Cluster.of(instance))  # imbalances are 0 only when the counts divide
    if totals.bound is None:
        return Status.FEASIBLE, lexicographic(instance, d_lb, l_lb, 0)
    big = instance.partitions + 1  # the rack model weighs D by P + 1
    d_lb = max(d_lb, math.floor((totals.bound + 1e-6) / big))
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


def _run_bytes(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    return solve_spread(instance, options, by_bytes=True)


RULES = [Rule("spread", "replicas", "exact.spread", spread_objective, spread_violations,
              "KIP-36: min(RF, #racks) racks per partition; then replica imbalance, leader imbalance, "
              "moves, lexicographically (D·W² + L·W + M, W = partitions·RF + 1)", criteria=spread_criteria),
         Rule("spread_bytes", "replicas", "exact.spread_bytes", spread_bytes_objective, spread_violations,
              "spread with each move weighed by its partition's bytes (instance sizes): replica imbalance, "
              "leader imbalance, bytes moved (D·W² + L·W + B, W = RF·Σ sizes + 1)", criteria=spread_bytes_criteria)]
METHODS = [Method("exact.spread", "replicas", "spread", _run,
                  "rack spread as hard constraints, then replica and leader balance, then fewest moves, exactly"),
           Method("exact.spread_bytes", "replicas", "spread_bytes", _run_bytes,
                  "exact.spread with the fewest bytes moved (a move weighs its partition's size)")]

