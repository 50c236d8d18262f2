"""``exact.spread`` with ``current``: the target model first, the flows when it misses, within the limit.

The target model (:mod:`.targets`) answers most reassignments alone: its
read-back meets its bound, so the answer is optimal. When it misses, the
flows of :mod:`.moves` decide (the replica flow, then the leader flow; a MIP
only if no leader choice fits). Neither the read-back nor the network solver
watches the clock, so under a time limit each runs in a child the deadline
kills (:func:`kipopt.formulations.highs.call_highs_before_with`; the flows'
child is told a deadline a little earlier, :data:`GRACE_SHARE`, so it
normally answers itself), while this process makes the answer given if they
do not finish (the read-back's placement, else the balanced placement): no
phase runs past the limit.

When the time left is too short to run the read-back and then the flows one
after the other (:func:`flows_alongside`, from per-replica and per-arc
estimates), the flows' child starts first and the read-back's beside it, at a
lower priority (the balanced placement made here meanwhile); an optimal
read-back kills the flows' child at once.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass, field
from typing import Callable

from kipopt.deadline import Deadline
from kipopt.instance import ReplicasInstance
from kipopt.solution import Status

from kipopt.formulations.replicas.model import Cluster
from kipopt.formulations.replicas.moves import (choose_leaders, solve_moves_broker_level, solve_moves_one_per_rack,
                                                solve_replica_flow)
from kipopt.formulations.replicas.network import SECONDS_PER_ARC_IN_CHILD, dedicated_solver_available
from kipopt.formulations.replicas.scores import evaluated as _evaluated, lexicographic, lexicographic_bytes
from kipopt.formulations.replicas.targets import fast_leaders, fast_replica_sets, least_imbalance_leaders, weights_of

MAX_PAIRS_WITH_AN_ANSWER = 1_000_000
"""Above this many arcs of the replica flow ((partition, broker) pairs; (partition, rack) slots and current
replicas with one replica per rack), a target-model answer that misses its bound is returned as is
(``feasible``, with the bound) rather than handed to the flows, which take longer than a user waits there:
as min-cost flows 2.4 CPU s at 900,000 (100,000 partitions x (RF 3 + 6 racks), a reduced network of 657,280
arcs); as LPs (without OR-Tools) minutes past 300,000, hence :data:`MAX_PAIRS_AS_LPS` then."""

MAX_PAIRS_AS_LPS = 300_000

MAX_BROKER_PAIRS = 2_000_000
"""Largest partitions x brokers for which the reassignment models over (partition, broker) pairs are built."""

GRACE_SHARE = 0.1
"""Share of the time left that the flows' child keeps back for sending its answer (at least :data:`GRACE_MIN`)."""
GRACE_MIN = 0.2

INLINE_ARCS = 5_000
"""Up to this many arcs of the replica flow (:func:`flow_arcs`) the read-back and the flows run in this process
even under a deadline: at most about 20 ms there
(:data:`~kipopt.formulations.replicas.network.SECONDS_PER_ARC_IN_CHILD`), about what forking and starting
a child costs, and a small reassignment then never waits on one. A full
suite once saw the read-back's child of a 23-partition cluster end with no answer (the run about 20 s longer
than usual: silent until its 20 s deadline, it seems), which left the fresh placement to answer
(``feasible``); the same cluster solved in process 200 times was optimal every time."""

READ_BACK_NICENESS = 5
"""How much lower the read-back's child runs when it runs beside the flows' child (:func:`flows_alongside`):
on a busy machine the flows, the answer whenever the read-back misses, get the larger share of a core."""

READ_BACK_SECONDS_PER_REPLICA = 6e-6
"""The target model's time per current replica (measured: 1.2-1.7 CPU s for 300,000 replicas at 100,000 x 300
brokers, targets, forced drops and the read-back that misses; a loaded machine)."""


@dataclass
class Fresh:
    """A placement meeting the optimal imbalances ``d`` and ``l`` (moves ignored), its status, and lower bounds
    on the imbalances (:meth:`floor` gives the rule's bound in its own scale).

    The placement itself is built on first use: a reassignment the target model answers never needs it."""

    build: Callable[[], dict | None]
    d: int
    l: int
    status: Status
    d_low: int
    """Proven lower bounds on the imbalances (``d`` and ``l`` themselves when ``status`` is optimal): a bound
    that keeps the placement's ``d`` and ``l`` after its model was stopped passed the optimum."""
    l_low: int

    def floor(self, instance: ReplicasInstance, score: Callable[..., float], last: float) -> float:
        """The rule's bound, ``last`` a proven lower bound on the last criterion (moves, bytes) at ``d`` and
        ``l``: that bound when they are proven optimal, else the imbalances' own bounds with nothing moved."""
        if self.status is Status.OPTIMAL:
            return score(instance, self.d, self.l, last)
        return score(instance, self.d_low, self.l_low, 0)

    @functools.cached_property
    def assignment(self) -> dict[int, tuple[int, ...]] | None:
        return self.build()


@dataclass
class FlowAnswer:
    """What the flows found: an assignment (empty: none in time), a lower bound on the (weighted) moves, and
    what to report (``info`` entries)."""

    assignment: dict
    bound: int
    info: dict = field(default_factory=dict)


def present_only(instance: ReplicasInstance) -> ReplicasInstance:
    """``current`` without the brokers being decommissioned (for the models indexed by broker: moves are the
    same, since no assignment can use a departed broker)."""
    if not instance.departing:
        return instance
    known = set(instance.broker_ids)
    current = {p: tuple(b for b in bs if b in known) for p, bs in instance.current.items()}
    return dataclasses.replace(instance, current=current)


def flow_arcs(c: Cluster) -> int:
    """The replica flow's size in arcs ((partition, rack) slots and current replicas, or (partition, broker))."""
    return c.partitions * ((c.rf + c.num_racks) if c.one_per_rack else len(c.brokers))


def max_flow_pairs() -> int:
    return MAX_PAIRS_WITH_AN_ANSWER if dedicated_solver_available() else MAX_PAIRS_AS_LPS


def flows_alongside(c: Cluster, deadline: float | None) -> bool:
    """Whether the flows should start before the read-back and run beside it: a deadline too close for the
    read-back then the flows (replica and leader networks, typical per-arc time), one per rack, and flows the
    size allows."""
    if deadline is None or not c.one_per_rack or flow_arcs(c) > max_flow_pairs():
        return False
    replicas = c.partitions * c.rf
    needed = READ_BACK_SECONDS_PER_REPLICA * replicas + SECONDS_PER_ARC_IN_CHILD * (flow_arcs(c) + replicas)
    return deadline - time.perf_counter() < needed


def reassign(instance: ReplicasInstance, c: Cluster, fresh: Fresh, deadline: float | None, threads: int | None,
             info: dict, by_bytes: bool = False) -> tuple[dict, Status, float | None]:
    """Fewest moves at the fresh placement's imbalances; the read-back's or the fresh placement if the flows
    do not finish in time. The target model answers first (alongside the flows if time is short); it is
    optimal when its moves meet its bound, else the flows decide (with bytes: the flow priced by bytes)."""
    present = present_only(instance)
    job = functools.partial(_flows, present, c, fresh, threads, by_bytes)
    inline = deadline is None or flow_arcs(c) <= INLINE_ARCS  # no child for the read-back nor the flows
    targets = functools.partial(_targets, instance, c, fresh, threads, info, by_bytes, None if inline else deadline)
    early, alongside = None, not inline and flows_alongside(c, deadline)
    if alongside:
        early, fast = _in_child(job, deadline, lambda: targets(True), wanted=lambda found: found is None)
    else:
        fast = targets(False)
    if fast is not None:
        return fast
    fast_assignment, fast_bound = info.pop("_fast_assignment", None), info.pop("_bound", 0)
    stuck = not c.one_per_rack and fresh.assignment is None  # R < RF and the greedy order got stuck
    if fast_assignment is not None and flow_arcs(c) > max_flow_pairs() and (stuck or not by_bytes):
        info["model"] = "targets+greedy"
        info["moves_note"] = (f"not proven minimal: the read-back missed the bound {fast_bound:,} and "
                              f"{c.partitions:,} x {len(c.brokers):,} is past the flows' size")
        return fast_assignment, Status.FEASIBLE, fresh.floor(instance, lexicographic, fast_bound)
    if stuck:
        return _broker_level_only(present, c, deadline, threads, info, by_bytes)
    if alongside:
        found = early
    elif inline:
        found = job(deadline)
    else:
        found = _in_child(job, deadline, lambda: None if fast_assignment is not None else fresh.assignment)[0]
    if found is None and deadline is not None and time.perf_counter() < deadline:
        # no answer before the deadline: the child ended without one (an error or a kill from outside)
        from kipopt.deadline import child_failure
        why = child_failure()
        info["flows_note"] = ("the flows' child ended early without an answer: the fallback answers"
                              + (f" ({why})" if why else ""))
        info["moves_note"] = "not proven minimal: the flows' child ended early without an answer (not the time limit)"
    found = found or FlowAnswer({}, 0)  # the child did not finish in time
    info.update(found.info)
    if by_bytes:
        return _bytes_answer(present, fresh, info, found, fast_assignment, fast_bound)
    return _moves_answer(present, fresh, info, found, fast_assignment, fast_bound)


def _in_child(job: Callable[[float | None], FlowAnswer], deadline: float, meanwhile: Callable,
              wanted: Callable | None = None) -> tuple[FlowAnswer | None, object]:
    """``job`` in a child the deadline kills (told a deadline :data:`GRACE_SHARE` earlier), ``meanwhile``
    here: ``(job's answer or None, meanwhile's result)``."""
    from kipopt.formulations.highs import call_highs_before_with
    left = deadline - time.perf_counter()
    if left <= 0:
        return None, meanwhile()
    inner = deadline - max(GRACE_MIN, GRACE_SHARE * left)
    return call_highs_before_with(Deadline(deadline), lambda: job(inner), meanwhile, wanted)


def _targets(instance: ReplicasInstance, c: Cluster, fresh: Fresh, threads: int | None, info: dict,
             by_bytes: bool, deadline: float | None, fallback: bool) -> tuple[dict, Status, float | None] | None:
    """:func:`_reassign_by_targets`; under a deadline in a child it kills (its read-back does not watch the
    clock), while this process makes the fresh placement if ``fallback`` (the answer should nothing finish)."""
    if deadline is None:
        return _reassign_by_targets(instance, c, fresh, threads, info, by_bytes)
    from kipopt.formulations.highs import call_highs_before_with

    def job() -> tuple:
        if fallback:  # beside the flows' child, which answers when the read-back misses: that one goes first
            _lower_priority(READ_BACK_NICENESS)
        mine: dict = {}
        return _reassign_by_targets(instance, c, fresh, threads, mine, by_bytes), mine

    found, _ = call_highs_before_with(Deadline(deadline), job, lambda: fresh.assignment if fallback else None)
    if found is None:
        return None
    fast, made = found
    info.update(made)
    return fast


def _lower_priority(increment: int) -> None:
    import os
    try:
        os.nice(increment)
    except (AttributeError, OSError):  # no nice on this platform: both children share the cores evenly
        pass


def _flows(instance: ReplicasInstance, c: Cluster, fresh: Fresh, threads: int | None, by_bytes: bool,
           deadline: float | None) -> FlowAnswer:
    """The flows' answer (run in the child under a deadline): see :func:`reassign`."""
    info: dict = {}
    if by_bytes:
        assignment, bound = _bytes_by_flow(instance, c, fresh, deadline, threads, info)
    elif c.one_per_rack:
        assignment, bound = _reassign_one_per_rack(instance, c, fresh, deadline, threads, info)
    else:
        assignment, bound = _reassign_broker_level(instance, c, fresh, deadline, threads, info)
    return FlowAnswer(assignment or {}, bound, info)


def _moves_answer(instance: ReplicasInstance, fresh: Fresh, info: dict, found: FlowAnswer,
                  fast_assignment: dict | None, fast_bound: int) -> tuple[dict, Status, float | None]:
    assignment, moves_bound = found.assignment, max(found.bound, fast_bound)
    if not assignment and fast_assignment is not None:
        info["model"] = "targets+greedy"
        info.setdefault("moves_note", "not proven minimal: the time limit came first")
        assignment = fast_assignment
    if not assignment:
        info.setdefault("moves_note", "not minimised: the time limit came first")
        assignment = fresh.assignment
    if fresh.status is not Status.OPTIMAL:
        return assignment, Status.FEASIBLE, fresh.floor(instance, lexicographic, 0)
    moves = _evaluated(instance, assignment).metrics["moves"]
    status = Status.OPTIMAL if moves <= moves_bound else Status.FEASIBLE
    return assignment, status, lexicographic(instance, fresh.d, fresh.l, min(moves, max(moves_bound, 0)))


def _bytes_by_flow(instance: ReplicasInstance, c: Cluster, fresh: Fresh, deadline: float | None,
                   threads: int | None, info: dict) -> tuple[dict | None, int]:
    """Bytes moved by the replica flow with each move priced at its partition's bytes, then leaders."""
    if not (c.one_per_rack or c.partitions * len(c.brokers) <= MAX_BROKER_PAIRS):
        return None, 0
    w = weights_of(instance, True)
    sets, _, bound = solve_replica_flow(instance, c, fresh.d, deadline, threads, w)
    if sets is None:
        return None, bound
    assignment = fast_leaders(instance, c, sets, fresh.l) or choose_leaders(instance, c, sets, fresh.l, deadline,
                                                                           threads)
    if assignment is not None:
        info["model"] = "replica_flow_bytes+leaders"
    return assignment, bound


def _bytes_answer(instance: ReplicasInstance, fresh: Fresh, info: dict, found: FlowAnswer,
                  fast_assignment: dict | None, fast_bound: int) -> tuple[dict, Status, float | None]:
    bound = max(fast_bound, found.bound)
    if not found.assignment:
        info["moves_note"] = "bytes moved not proven minimal (no flow answer in time or size)"
        return fast_assignment or fresh.assignment, Status.FEASIBLE, fresh.floor(instance, lexicographic_bytes, bound)
    moved = _evaluated(instance, found.assignment).metrics.get("bytes_moved", 0)
    status = Status.OPTIMAL if moved <= bound and fresh.status is Status.OPTIMAL else Status.FEASIBLE
    return found.assignment, status, fresh.floor(instance, lexicographic_bytes, min(moved, bound))


def _reassign_by_targets(instance: ReplicasInstance, c: Cluster, fresh: Fresh, threads: int | None, info: dict,
                         by_bytes: bool) -> tuple[dict, Status, float | None] | None:
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
    if fresh.status is not Status.OPTIMAL:  # in the rule's own scale (bytes weigh otherwise than moves)
        return assignment, Status.FEASIBLE, fresh.floor(instance, score, 0)
    status = Status.OPTIMAL if moves <= fast.bound else Status.FEASIBLE
    return assignment, status, score(instance, fresh.d, fresh.l, min(moves, fast.bound))


def _reassign_one_per_rack(instance: ReplicasInstance, c: Cluster, fresh: Fresh, deadline: float | None,
                           threads: int | None, info: dict) -> tuple[dict, int]:
    """The replica flow, then leaders by a flow; the joint MIP only if no leader choice fits (with no flow
    answer in time the MIP, a larger model, would not have one either: the caller's fallback answers).
    Returns the assignment (empty if none was found in time) and a lower bound on the moves."""
    d, l = fresh.d, fresh.l
    sets, moves, bound = solve_replica_flow(instance, c, d, deadline, threads)
    if sets is None:
        return {}, bound
    assignment = choose_leaders(instance, c, sets, l, deadline, threads, info=info)
    if assignment is not None:
        info["model"] = "replica_flow+leader_flow"
        return assignment, bound
    if deadline is not None and time.perf_counter() >= deadline:
        return {}, bound
    info["model"] = "moves_one_per_rack_mip"
    assignment, out = solve_moves_one_per_rack(instance, c, d, l, deadline, threads)
    if out.status == "optimal":
        return assignment, round(out.objective)
    return assignment, max(bound, math.ceil(out.bound - 1e-6) if out.bound is not None else 0)


def _reassign_broker_level(instance: ReplicasInstance, c: Cluster, fresh: Fresh, deadline: float | None,
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


def _broker_level_only(instance: ReplicasInstance, c: Cluster, deadline: float | None, threads: int | None,
                       info: dict, by_bytes: bool) -> tuple[dict, Status, float | None]:
    """R < RF and the greedy order got stuck: the three-stage broker-level MIP."""
    from kipopt.errors import MethodError
    from kipopt.formulations.replicas.moves import solve_full
    from kipopt.formulations.replicas.scores import staged_bound
    info["model"] = "broker_level"
    assignment, stages = solve_full(instance, c, deadline, threads)
    if not assignment:
        raise MethodError(f"the broker-level model gave no solution ({stages[-1].status})")
    return (assignment, *staged_bound(instance, stages, by_bytes))
