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
  ``feasible`` with the bound). Under a time limit the read-back and the
  flows run in children the deadline kills, beside each other when time is
  short (:mod:`.reassignment`); should neither finish, the read-back's or
  the balanced placement answers, ``feasible`` with its bound.
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
  leader imbalance ``L``, keeping current leaders where possible (:mod:`.leaders`;
  short of time, maximum flows keep them, not proven the most). Should no
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
from typing import Mapping, Sequence

from kipopt.errors import MethodError
from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, Rule, SolveOptions, Violation
from kipopt.solution import Status

from kipopt.formulations.replicas.model import Cluster, Model, Outcome, solve_model  # noqa: F401  (public names of this module)
from kipopt.formulations.replicas.moves import (choose_leaders, solve_full, solve_moves_broker_level,  # noqa: F401
                           solve_moves_one_per_rack, solve_replica_flow)
from kipopt.formulations.replicas.reassignment import (MAX_BROKER_PAIRS, MAX_PAIRS_AS_LPS,  # noqa: F401
                                                       MAX_PAIRS_WITH_AN_ANSWER, Fresh, reassign)
from kipopt.formulations.replicas.reassignment import present_only as _present_only  # noqa: F401
from kipopt.formulations.replicas.scores import (bytes_weight, evaluated as _evaluated, lexicographic,  # noqa: F401
                                                 lexicographic_bytes, staged_bound as _staged_bound, weight)
from kipopt.formulations.replicas.placement import (RackTotals, balanced_placement, extra_counts, partition_racks,  # noqa: F401
                               place_every_rack, place_in_racks, replicas_per_rack, solve_rack_totals,
                               split_imbalance, wrap_placement)

# --------------------------------------------------------------------------- the rule


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
        assignment, status, bound = reassign(instance, c, fresh, deadline, options.threads, info, by_bytes)
    elif fresh is not None:  # the bound in the rule's own scale: bytes weigh otherwise than moves
        score = lexicographic_bytes if by_bytes else lexicographic
        assignment, status, bound = fresh.assignment, fresh.status, fresh.floor(instance, score, 0)
    else:
        info["model"] = "broker_level"
        assignment, stages = solve_full(instance, c, deadline, options.threads)
        if not assignment:
            return MethodResult({}, Status.ERROR if stages[-1].status != "infeasible" else Status.INFEASIBLE,
                                message=f"the broker-level model gave no solution ({stages[-1].status})")
        status, bound = _staged_bound(instance, stages, by_bytes)
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
    return MethodResult(assignment, status, objective=objective, bound=bound, info=info,
                        message=None if status is Status.OPTIMAL else _why_open(info))


def _why_open(info: dict) -> str | None:
    """Why an answer is not proven optimal, from the notes its stages left (``message`` says it, not only
    ``metrics``: a flows' child that ended early was visible in ``flows_note`` alone)."""
    notes = [info[k] for k in ("flows_note", "moves_note") if k in info]
    return "; ".join(notes) or None


def _fresh(instance: ReplicasInstance, c: Cluster, deadline: float | None, threads: int | None,
           info: dict) -> Fresh | None:
    """The best placement ignoring ``current`` (None if the R < RF greedy order gets stuck)."""
    if c.one_per_rack:
        info["model"] = "rack_totals"
        totals = solve_rack_totals(c, deadline, threads)
        build = lambda: (wrap_placement(c, totals)  # noqa: E731
                         or place_in_racks(c, totals, partition_racks(c, totals)))
    elif c.num_racks == 1:
        info["model"] = "balanced_word"
        d, l = _lower_bounds(c)
        return Fresh(lambda: balanced_placement(c), d, l, Status.OPTIMAL, d, l)
    else:
        info["model"] = "rack_totals_every_rack"
        totals = solve_rack_totals(c, deadline, threads)
        if instance.current is None and place_every_rack(c, totals) is None:
            return None
        build = lambda: place_every_rack(c, totals)  # noqa: E731
    status, d_low, l_low = _status_and_lows(instance, totals)
    return Fresh(build, totals.replica_imbalance, totals.leader_imbalance, status, d_low, l_low)


def _status_and_lows(instance: ReplicasInstance, totals: RackTotals) -> tuple[Status, int, int]:
    """Whether the rack totals are proven optimal, and proven lower bounds on the two imbalances."""
    if totals.optimal:
        return Status.OPTIMAL, totals.replica_imbalance, totals.leader_imbalance
    d_lb, l_lb = _lower_bounds(Cluster.of(instance))  # imbalances are 0 only when the counts divide
    if totals.bound is None:
        return Status.FEASIBLE, d_lb, l_lb
    big = instance.partitions + 1  # the rack model weighs D by P + 1
    return Status.FEASIBLE, max(d_lb, math.floor((totals.bound + 1e-6) / big)), 0


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

