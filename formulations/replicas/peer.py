"""A peer in the benchmark: the public ILP reassigner's model, restated (``exact.peer_reassign``).

The model of ``kafka-reassign-optimizer.py`` (github.com/everpeace/kafka-reassign-optimizer,
"strongly inspired by" killerwhile/kafka-assignment-optimizer), a PuLP binary program over
x[p, b] = 1 when broker b holds a replica of partition p:

* each partition has the instance's replication factor;
* each broker's load Σ_p x[p, b] lies within ``[avg·min_factor, avg·max_factor]``,
  ``avg = replicas / brokers`` (an equality when the two bounds meet);
* minimise the moves, Σ over (p, b) of x[p, b] where b did not hold p and of
  1 − x[p, b] where it did, halved (a move drops one replica and adds one).

No racks, no leaders: the peer prints each partition's brokers in ascending
id order, so the smallest id leads. Restated here (own code, same model) so
that the benchmark and ``kipopt check`` measure it on kipopt's instances.

The rule ``peer_reassign`` is that model's: the evaluator's hard rules plus
``peer_balance`` (every broker's replica count within the band), objective
the evaluator's ``moves``. kipopt's method fixes the tightest band integers
allow, ``min_factor = ⌊avg⌋/avg`` and ``max_factor = ⌈avg⌉/avg`` (the
factors that give the replica balance of ``exact.spread``); :func:`peer_model`
takes any factors. The method applies where the rack rule cannot bind (no
racks, one rack or RF 1): elsewhere the peer's answer may break
``rack_spread``, which the benchmark shows by calling :func:`solve_peer`
directly.

>>> from kipopt.instance import from_dict
>>> inst = from_dict({"format": 1, "family": "replicas", "partitions": 3, "replication_factor": 2,
...     "brokers": [{"id": 0}, {"id": 1}, {"id": 2}], "current": {"0": [0, 1], "1": [0, 1], "2": [1, 0]}})
>>> solved = solve_peer(inst)
>>> solved.status, solved.moves, sorted(evaluate_replicas(inst, solved.assignment).metrics["replicas_per_broker"].values())
('optimal', 2, [2, 2, 2])
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from dataclasses import dataclass
from typing import Iterator

from kipopt.evaluation.replicas import evaluate_replicas, required_racks
from kipopt.instance import ReplicasInstance
from kipopt.methods import Method, MethodResult, Rule, SolveOptions, Violation
from kipopt.solution import Status


def tight_band(instance: ReplicasInstance) -> tuple[int, int]:
    """``⌊avg⌋, ⌈avg⌉`` replicas per broker, ``avg = partitions·RF / brokers``."""
    total, n = instance.partitions * instance.replication_factor, len(instance.brokers)
    return total // n, -(-total // n)


def _band(instance: ReplicasInstance, min_factor: float | None, max_factor: float | None) -> tuple[int, int]:
    """The integer loads the peer's real bounds allow."""
    if min_factor is None or max_factor is None:
        return tight_band(instance)
    avg = instance.partitions * instance.replication_factor / len(instance.brokers)
    return math.ceil(avg * min_factor - 1e-9), math.floor(avg * max_factor + 1e-9)


def peer_model(instance: ReplicasInstance, min_factor: float | None = None, max_factor: float | None = None):
    """The peer's PuLP problem and its variables x[(pid, broker)] (the instance's replication factor everywhere)."""
    import pulp

    low, high = _band(instance, min_factor, max_factor)
    current = instance.current or {}
    prob = pulp.LpProblem("peer_reassign_minimum_moves", pulp.LpMinimize)
    x = {(p, b): pulp.LpVariable(f"x_{p}_{b}", cat="Binary") for p in instance.partition_ids for b in instance.broker_ids}
    held = {(p, b) for p, brokers in current.items() for b in brokers}
    # replicas placed on a broker that did not hold the partition (the evaluator's moves): the peer's half of
    # the symmetric difference when `current` lists the partition with RF replicas, all of them where it lists none
    prob += pulp.lpSum(x[k] for k in x if k not in held)
    for p in instance.partition_ids:
        prob += pulp.lpSum(x[p, b] for b in instance.broker_ids) == instance.replication_factor, f"replicas_{p}"
    for b in instance.broker_ids:
        load = pulp.lpSum(x[p, b] for p in instance.partition_ids)
        if low == high:
            prob += load == low, f"load_{b}"
        else:
            prob += load >= low, f"load_min_{b}"
            prob += load <= high, f"load_max_{b}"
    return prob, x


@dataclass
class PeerResult:
    status: str
    assignment: dict[int, tuple[int, ...]]
    moves: int | None
    seconds: float


def solve_peer(instance: ReplicasInstance, min_factor: float | None = None, max_factor: float | None = None,
               solver: str = "cbc", time_limit: float | None = None, threads: int | None = None,
               files: str | None = None) -> PeerResult:
    """Build and solve the peer's model with PuLP's default CBC, as the peer's script does (``solver="highs"``
    for PuLP's HiGHS, which is ten times slower on these models: 78 s against 7 s at 1,000 × 30).

    The assignment lists each partition's brokers in ascending id order, as the peer prints them. CBC reads
    the model from a file PuLP writes (42 MB at 3,000 x 48): ``files`` is the folder for it (the caller's to
    remove; PuLP removes its files only when CBC ends normally).
    """
    import time

    import pulp

    from kipopt.formulations.tasks.rack.pulp_models import _solve
    from kipopt.formulations.highs import quiet_stdout

    start = time.perf_counter()
    prob, x = peer_model(instance, min_factor, max_factor)
    if solver == "cbc":
        cbc = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, threads=threads)
        if files is not None:
            cbc.tmpDir = files
        with quiet_stdout():
            prob.solve(cbc)
        name = pulp.LpStatus[prob.status]
        status = {"Optimal": "optimal" if prob.sol_status == pulp.LpSolutionOptimal else "feasible",
                  "Infeasible": "infeasible"}.get(name, "error")
    else:
        status = _solve(prob, mip=True, time_limit=time_limit, threads=threads)
    if status not in ("optimal", "feasible") and time_limit is not None and time.perf_counter() - start >= time_limit:
        status = "time_limit"  # CBC reports a run stopped before any solution as infeasible
    if status not in ("optimal", "feasible"):
        return PeerResult(status, {}, None, time.perf_counter() - start)
    assignment = {p: tuple(b for b in instance.broker_ids if (x[p, b].value() or 0) > 0.5) for p in instance.partition_ids}
    held = {(p, b) for p, brokers in (instance.current or {}).items() for b in brokers}
    moves = sum((p, b) not in held for p, brokers in assignment.items() for b in brokers)
    return PeerResult(status, assignment, moves, time.perf_counter() - start)


# --------------------------------------------------------------------------- the rule and the method


def peer_objective(instance: ReplicasInstance, assignment) -> float:
    return float(evaluate_replicas(instance, assignment).metrics.get("moves", 0))


def peer_violations(instance: ReplicasInstance, assignment) -> list[Violation]:
    """The evaluator's hard rules, and ``peer_balance``: brokers outside ``[⌊avg⌋, ⌈avg⌉]`` replicas."""
    evaluation = evaluate_replicas(instance, assignment)
    low, high = tight_band(instance)
    outside = [f"broker {b} holds {n} replicas, not within [{low}, {high}]"
               for b, n in evaluation.metrics["replicas_per_broker"].items() if not low <= n <= high]
    extra = [Violation("peer_balance", len(outside), tuple(outside[:3]))] if outside else []
    return evaluation.violations + extra


def requires_rackless(instance: ReplicasInstance) -> str | None:
    """The peer has no racks: it applies where the rack rule cannot bind, and it needs ``current``."""
    need = required_racks(instance)
    if need is not None and need > 1:
        racks = len({b.rack for b in instance.brokers})
        return (f"brokers: rack_spread asks for {need} racks per partition (replication_factor "
                f"{instance.replication_factor}, {racks} racks, brokers without a rack counting as one); the peer's "
                "model has no racks (its answer may break rack_spread), so it applies with at most one rack")
    if instance.current is None:
        return "current: the peer minimises moves from a current assignment; the instance has none"
    return None


def _run(instance: ReplicasInstance, options: SolveOptions) -> MethodResult:
    """The peer's model (CBC, as its script); under a time limit in a child killed at the deadline (building
    its P x B binaries ignores any limit: 191 s under a 5 s limit at 10,000 x 55), with the current
    assignment balanced into the band greedily (:func:`balanced_from_current`, made first) as the answer
    when the model has none."""
    from kipopt.deadline import call_before

    if instance.replication_factor > len(instance.brokers):
        return MethodResult({}, Status.INFEASIBLE, message=f"replication_factor {instance.replication_factor} "
                                                           f"exceeds the {len(instance.brokers)} brokers")
    deadline = options.deadline()
    fallback = None if deadline.at is None else balanced_from_current(instance)
    with _scratch() as files:
        solved = call_before(deadline, lambda: solve_peer(instance, time_limit=deadline.limit(),
                                                          threads=options.threads, files=files))
    if solved is not None and solved.status == "infeasible":
        return MethodResult({}, Status.INFEASIBLE, message="no assignment meets the peer's balance band")
    if solved is None or solved.status == "time_limit":
        assignment, moves, bound = fallback if fallback is not None else balanced_from_current(instance)
        return MethodResult(assignment, Status.OPTIMAL if moves <= bound else Status.FEASIBLE, objective=moves,
                            bound=min(moves, bound), info={"model": "greedy"},
                            message="time limit: the peer's model found no assignment in time; returning the current "
                                    "assignment balanced into the band greedily" + (
                                        ", whose moves meet the lower bound (optimal)" if moves <= bound else ""))
    if solved.status not in ("optimal", "feasible"):
        return MethodResult({}, Status.ERROR, message=f"the peer's model ended {solved.status}")
    if solved.status == "optimal":
        bound = solved.moves
    else:  # CBC's incumbent: the bound of the greedy start holds for it too
        bound = min(solved.moves, fallback[2] if fallback is not None else moves_bound(instance))
    return MethodResult(solved.assignment, Status.OPTIMAL if bound >= solved.moves else Status.FEASIBLE,
                        objective=solved.moves, bound=bound, info={"peer_seconds": round(solved.seconds, 3)})


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    """A folder for PuLP's model files, removed on every way out: a child killed at the deadline, an
    interrupt (the command line ends the process from its watcher thread: :func:`kipopt.interrupts.at_stop`)."""
    from kipopt.interrupts import at_stop
    folder = tempfile.mkdtemp(prefix="kipopt-peer-")
    withdraw = at_stop(lambda sig: shutil.rmtree(folder, ignore_errors=True))
    try:
        yield folder
    finally:
        withdraw()
        shutil.rmtree(folder, ignore_errors=True)


def _loads(instance: ReplicasInstance) -> tuple[dict[int, set[int]], list[int]]:
    """The partitions each broker holds in ``current`` (present brokers only), and the partitions short of
    replicas there (one entry per missing replica: listed on a broker that is gone, or not listed)."""
    holds: dict[int, set[int]] = {b: set() for b in instance.broker_ids}
    short: list[int] = []
    current = instance.current or {}
    for p in instance.partition_ids:
        kept = [b for b in dict.fromkeys(current.get(p, ())) if b in holds][:instance.replication_factor]
        for b in kept:
            holds[b].add(p)
        short += [p] * (instance.replication_factor - len(kept))
    return holds, short


def moves_bound(instance: ReplicasInstance) -> int:
    """A lower bound on the moves into the band: every replica short of its partition is placed (a move),
    and every broker below the band receives, one move per replica, what it lacks.

    >>> from kipopt.instance import from_dict
    >>> moves_bound(from_dict({"format": 1, "family": "replicas", "partitions": 4, "replication_factor": 1,
    ...     "brokers": [{"id": 0}, {"id": 1}], "current": {"0": [0], "1": [0], "2": [0], "3": [0]}}))
    2
    """
    return _bound(tight_band(instance)[0], *_loads(instance))


def _bound(low: int, holds: dict[int, set[int]], short: list[int]) -> int:
    return max(len(short), sum(max(0, low - len(held)) for held in holds.values()))


def balanced_from_current(instance: ReplicasInstance) -> tuple[dict[int, tuple[int, ...]], int, int]:
    """An assignment within the tight band, made from ``current`` by moving replicas one at a time: each
    missing replica to the least loaded broker without its partition, then from the most to the least loaded
    broker while either lies outside the band (the fuller one always holds a partition the other lacks).
    Each partition lists its brokers in ascending id order, as the peer prints them. Returns it, its moves
    and :func:`moves_bound` (read from the same loads before they change).
    """
    import heapq

    low, high = tight_band(instance)
    holds, short = _loads(instance)
    bound = _bound(low, holds, short)
    held = {(p, b) for b, ps in holds.items() for p in ps}
    fewest = [(len(ps), b) for b, ps in holds.items()]
    heapq.heapify(fewest)
    for p in short:  # the least loaded broker without p (entries whose load changed are pushed again)
        skipped = []
        while True:
            n, b = heapq.heappop(fewest)
            if n != len(holds[b]):
                continue
            if p not in holds[b]:
                break
            skipped.append((n, b))
        holds[b].add(p)
        for entry in skipped + [(len(holds[b]), b)]:
            heapq.heappush(fewest, entry)
    most = [(-len(ps), b) for b, ps in holds.items()]
    least = [(len(ps), b) for b, ps in holds.items()]
    heapq.heapify(most)
    heapq.heapify(least)
    while True:
        while -most[0][0] != len(holds[most[0][1]]):
            heapq.heappop(most)
        while least[0][0] != len(holds[least[0][1]]):
            heapq.heappop(least)
        giver, taker = most[0][1], least[0][1]
        if len(holds[giver]) <= high and len(holds[taker]) >= low:
            break
        p = next(p for p in holds[giver] if p not in holds[taker])  # a fuller broker has one the other lacks
        holds[giver].remove(p)
        holds[taker].add(p)
        heapq.heappush(most, (-len(holds[giver]), giver))
        heapq.heappush(least, (len(holds[giver]), giver))
        heapq.heappush(most, (-len(holds[taker]), taker))
        heapq.heappush(least, (len(holds[taker]), taker))
    assignment: dict[int, list[int]] = {p: [] for p in instance.partition_ids}
    for b in sorted(holds):
        for p in holds[b]:
            assignment[p].append(b)
    moves = sum((p, b) not in held for b, ps in holds.items() for p in ps)
    return {p: tuple(bs) for p, bs in assignment.items()}, moves, bound


METHODS = [
    Method("exact.peer_reassign", "replicas", "peer_reassign", _run,
           "the public PuLP reassigner's model (kafka-reassign-optimizer): replica counts within the tightest "
           "band, fewest moves; no racks, smallest broker id leads",
           requires=requires_rackless),
]
RULES = [Rule("peer_reassign", "replicas", "exact.peer_reassign", peer_objective, peer_violations,
              "the public ILP reassigner's problem: replicas per broker within [⌊avg⌋, ⌈avg⌉], fewest moves")]
