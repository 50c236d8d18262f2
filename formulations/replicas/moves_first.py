"""KIP-36 in the order operators ask for: rule ``spread_moves_first`` and ``exact.spread_moves_first``.

A preferred leader changes by reordering a partition's replicas, which moves
no data: the rule ``spread`` (KIP-36's order) does not count it as a move,
and ranks leader balance *before* moves, so it may move replicas to balance
leaders. Operators usually rank it after: racks (hard), replica imbalance
``D``, moves ``M``, then leader imbalance ``L`` — leaders are "free", so they
are balanced within whatever the fewest moves allow:

    objective = D·W² + M·W + L,   W = partitions·RF + 1   (M, L < W).

Exact method: ``D`` is the fresh optimum (``current`` does not change what
is feasible); the fewest moves at ``D`` come from the target model (optimal
when it meets its bound) or else the replica flows; then the smallest leader
imbalance those replica sets allow, by max flows (at the fresh ``L`` and
the two above it, else a greedy). The answer is ``optimal`` when the moves meet their bound and ``L``
equals the least leader imbalance of any placement (the fresh ``L``);
otherwise ``feasible`` with that bound.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from kipopt.deadline import call_before
from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, Rule, SolveOptions
from kipopt.solution import Status

from kipopt.formulations.replicas.model import Cluster
from kipopt.formulations.replicas.moves import solve_replica_flow
from kipopt.formulations.replicas.spread import (MAX_BROKER_PAIRS, _evaluated, _fresh, _present_only, solve_spread,
                                                 spread_violations, weight)
from kipopt.formulations.replicas.targets import fast_replica_sets, least_imbalance_leaders, weights_of


def lexicographic_moves_first(instance: ReplicasInstance, replica_imbalance: float, moves: float,
                              leader_imbalance: float) -> float:
    """``D·W² + M·W + L``."""
    w = weight(instance)
    return float(replica_imbalance * w * w + moves * w + leader_imbalance)


def moves_first_objective(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> float:
    m = _evaluated(instance, assignment).metrics
    return lexicographic_moves_first(instance, m["replica_imbalance"], m.get("moves", 0), m["leader_imbalance"])


def moves_first_criteria(instance: ReplicasInstance, assignment: Mapping[int, Sequence[int]]) -> dict[str, float]:
    m = _evaluated(instance, assignment).metrics
    return {"replica_imbalance": m["replica_imbalance"], "moves": m.get("moves", 0),
            "leader_imbalance": m["leader_imbalance"]}


def solve_moves_first(instance: ReplicasInstance, options: SolveOptions = SolveOptions()) -> MethodResult:
    """``exact.spread_moves_first``: see the module docstring."""
    c = Cluster.of(instance)
    if instance.current is None:  # no moves to count: the KIP's order gives the same optimum
        return _as_moves_first(instance, solve_spread(instance, options))
    if c.rf > len(c.brokers):
        return MethodResult({}, Status.INFEASIBLE,
                            message=f"replication_factor {c.rf} exceeds the {len(c.brokers)} brokers")
    deadline = options.deadline()
    info: dict = {}
    fresh = _fresh(instance, c, deadline.at, options.threads, info)
    if fresh is None:
        return _as_moves_first(instance, solve_spread(instance, options), proven=False)
    # the read-back, the flows and the leaders in a child the deadline kills: with the rack model stopped early
    # its D is far from the optimum's (3,825 against 1 at 100,000 partitions) and the read-back walks every
    # level up to it (over 180 s under a 0.01 s limit)
    found = call_before(deadline, lambda: _fewest_moves(instance, c, fresh, deadline.at, options.threads))
    if found is None:
        info["moves_note"] = "not minimised: the time limit came first; the balanced placement answers"
        assignment, least_l, moves_bound = fresh.assignment, None, 0
    else:
        assignment, least_l, moves_bound, more = found
        info.update(more)
        if assignment is None:
            assignment = fresh.assignment
    m = _evaluated(instance, assignment).metrics
    objective = lexicographic_moves_first(instance, m["replica_imbalance"], m["moves"], m["leader_imbalance"])
    optimal = (fresh.status is Status.OPTIMAL and m["moves"] <= moves_bound and least_l == fresh.l)
    if optimal:
        bound = objective
    elif fresh.status is Status.OPTIMAL:  # D proven; the fewest moves at D bounded; L at least the fresh L
        bound = lexicographic_moves_first(instance, fresh.d, min(m["moves"], moves_bound), fresh.l)
    else:  # the rack model was stopped: only the imbalances' own lower bounds hold
        bound = lexicographic_moves_first(instance, fresh.d_low, 0, fresh.l_low)
    return MethodResult(assignment, Status.OPTIMAL if optimal else Status.FEASIBLE, objective=objective,
                        bound=bound, info=info, message=None if optimal else info.get("moves_note"))


def _fewest_moves(instance: ReplicasInstance, c: Cluster, fresh, deadline: float | None, threads: int | None
                  ) -> tuple[dict | None, int | None, int, dict]:
    """The replica sets with the fewest moves at the fresh ``D`` (target model, else the replica flows), then
    the least leader imbalance they allow: ``(assignment or None, least L, moves bound, info)``."""
    info: dict = {"model": "targets+greedy"}
    fast = fast_replica_sets(instance, c, fresh.d, weights_of(instance, False))
    sets, moves_bound = fast.sets, fast.bound
    if sets is None or fast.moves > fast.bound:
        if c.one_per_rack or c.partitions * len(c.brokers) <= MAX_BROKER_PAIRS:
            flow_sets, _, flow_bound = solve_replica_flow(_present_only(instance), c, fresh.d, deadline, threads)
            moves_bound = max(moves_bound, flow_bound)
            if flow_sets is not None:
                sets, info["model"] = flow_sets, "replica_flow"
    if sets is None:
        info["moves_note"] = "not minimised: no replica sets in time; the balanced placement answers"
        return None, None, moves_bound, info
    assignment, least_l = least_imbalance_leaders(instance, c, sets, fresh.l)
    info["model"] += "+least_leader_imbalance"
    return assignment, least_l, moves_bound, info


def _as_moves_first(instance: ReplicasInstance, r: MethodResult, proven: bool = True) -> MethodResult:
    """``exact.spread``'s answer scored on this rule. Its bound ``D·W² + L·W + M`` holds ``(D, L)``
    lexicographically, and with ``M >= 0`` so does ``D·W² + 0·W + L`` here (a bound was missing: feasible
    with bound null under a 0.001 s limit)."""
    if not r.assignment:
        return r
    r.objective = moves_first_objective(instance, r.assignment)
    if not proven:
        r.status = Status.FEASIBLE
    if r.status is Status.OPTIMAL:
        r.bound = r.objective
    elif r.bound is not None:
        w = weight(instance)
        d, rest = divmod(int(r.bound), w * w)
        r.bound = min(r.objective, lexicographic_moves_first(instance, d, 0, rest // w))
    return r


def _run(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    return solve_moves_first(instance, options)


RULES = [Rule("spread_moves_first", "replicas", "exact.spread_moves_first", moves_first_objective,
              spread_violations, "KIP-36 racks, then the order operators ask for: replica imbalance, moves, "
              "leader imbalance (D·W² + M·W + L, W = partitions·RF + 1)", criteria=moves_first_criteria)]
METHODS = [Method("exact.spread_moves_first", "replicas", "spread_moves_first", _run,
                  "rack spread, replica balance, fewest moves, then the leader balance those moves allow")]
