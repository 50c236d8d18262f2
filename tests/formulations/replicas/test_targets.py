"""The target model of exact.spread reassignments: its bound is a bound, its answers are the optimum.

Cross-checked against the broker-level MIP (the exact three-stage model) on random small clusters with
decommissioned brokers, changed replication factors and rule-breaking current placements, and against
brute force for bytes moved.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt import evaluate, solve
from kipopt.formulations.replicas.model import Cluster
from kipopt.formulations.replicas.moves import solve_full
from kipopt.formulations.replicas.spread import _present_only, spread_bytes_objective, spread_objective
from kipopt.formulations.replicas.targets import fast_replica_sets, weights_of
from kipopt.instance import from_dict
from kipopt.solution import Status

from test_exact_spread import rack_totals


def random_instance(seed: int, brokers: int, racks: int, partitions: int, rf: int, departed: int,
                    old_rf: int, sizes: bool = False):
    """Brokers 0..brokers-1 (racks round robin, none if ``racks`` is 0); current drawn over them and
    ``departed`` more brokers (ids from 100) with ``old_rf`` replicas each."""
    rnd = random.Random(seed)
    rack = (lambda i: f"r{i % racks}") if racks else (lambda i: None)
    ids = list(range(brokers)) + [100 + k for k in range(departed)]
    current = {str(p): rnd.sample(ids, min(old_rf, len(ids))) for p in range(partitions) if rnd.random() < 0.9}
    d = {"format": 1, "family": "replicas", "partitions": partitions, "replication_factor": rf,
         "brokers": [{"id": i, "rack": rack(i)} for i in range(brokers)], "current": current}
    if sizes:
        d["sizes"] = {str(p): rnd.choice([1, 10, 100, 1000]) for p in range(partitions)}
    return from_dict(d)


def mip_optimum(inst) -> float:
    """The rule's optimum by the broker-level MIP (three lexicographic stages)."""
    stripped = _present_only(inst)
    assignment, stages = solve_full(stripped, Cluster.of(stripped), None, 1)
    assert [s.status for s in stages] == ["optimal"] * 3
    return spread_objective(inst, assignment)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), brokers=st.integers(3, 8), racks=st.sampled_from([0, 1, 2, 3, 4]),
       partitions=st.integers(1, 14), rf=st.integers(1, 3), departed=st.integers(0, 2),
       old_rf=st.integers(1, 4))
def test_exact_spread_matches_the_broker_level_mip(seed, brokers, racks, partitions, rf, departed, old_rf):
    """Whatever model answers (targets or the flows behind it), an optimal answer is the MIP's optimum."""
    inst = random_instance(seed, brokers, racks, partitions, rf, departed, old_rf)
    s = solve(inst, "exact.spread")
    assert not evaluate(inst, s.assignment).violations
    assert s.status is Status.OPTIMAL
    assert s.objective == mip_optimum(inst) == s.bound


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), brokers=st.integers(3, 8), racks=st.sampled_from([0, 1, 2, 3, 4]),
       partitions=st.integers(1, 14), rf=st.integers(1, 3), departed=st.integers(0, 2),
       old_rf=st.integers(1, 4))
def test_target_bound_never_exceeds_the_fewest_moves(seed, brokers, racks, partitions, rf, departed, old_rf):
    """The target model's bound is a lower bound on the moves at the optimal replica imbalance, and when
    its read-back succeeds its count is the evaluator's."""
    inst = random_instance(seed, brokers, racks, partitions, rf, departed, old_rf)
    if rf > brokers:
        return
    stripped = _present_only(inst)
    c = Cluster.of(inst)
    assignment, stages = solve_full(stripped, c, None, 1)
    assert [s.status for s in stages] == ["optimal"] * 3
    best = evaluate(inst, assignment).metrics  # the MIP's optimum: fewest moves at the least D and then L
    fast = fast_replica_sets(inst, c, best["replica_imbalance"], weights_of(inst, False))
    assert fast.bound <= best["moves"]
    if fast.sets is not None:
        moved = sum(1 for p, s in enumerate(fast.sets) for b in s
                    if b not in set((inst.current or {}).get(c.start + p, ())))
        assert moved == fast.moves
        assert len(set(map(len, fast.sets))) == 1 and len(fast.sets[0]) == rf


def brute_force_bytes(inst) -> float:
    brokers, rf = inst.broker_ids, inst.replication_factor
    choices = [(lead,) + rest for lead in brokers
               for rest in itertools.combinations([b for b in brokers if b != lead], rf - 1)]
    best = float("inf")
    for combo in itertools.product(choices, repeat=inst.partitions):
        a = dict(zip(inst.partition_ids, combo))
        if not evaluate(inst, a).violations:
            best = min(best, spread_bytes_objective(inst, a))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_bytes_moved_brute_force(seed):
    """exact.spread_bytes: optimal answers equal the enumerated optimum of (D, L, bytes moved)."""
    rnd = random.Random(seed)
    inst = random_instance(seed, rnd.choice([3, 4]), rnd.choice([0, 2]), rnd.choice([2, 3]), 2,
                           rnd.choice([0, 1]), 2, sizes=True)
    s = solve(inst, "exact.spread_bytes")
    assert not evaluate(inst, s.assignment).violations
    best = brute_force_bytes(inst)
    assert s.objective >= best
    if s.status is Status.OPTIMAL:
        assert s.objective == best == s.bound
    else:
        assert s.bound <= best


def test_bytes_moved_prefers_small_partitions():
    """A broker added to two: the moves go to the small partitions, where counting moves cannot tell."""
    current = {str(p): [0, 1] for p in range(6)}
    sizes = {"0": 1000, "1": 1000, "2": 1000, "3": 1, "4": 1, "5": 1}
    inst = from_dict({"format": 1, "family": "replicas", "partitions": 6, "replication_factor": 2,
                      "brokers": [{"id": b} for b in range(3)], "current": current, "sizes": sizes})
    s = solve(inst, "exact.spread_bytes")
    assert s.status is Status.OPTIMAL
    # 4 replicas leave brokers 0 and 1; a partition can lose only one (broker 2 is the only other), so three
    # small partitions and one large one move: counting moves alone cannot tell them apart
    assert s.metrics["moves"] == 4 and s.metrics["bytes_moved"] == 1003


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), brokers=st.integers(3, 4), racks=st.sampled_from([0, 2]),
       partitions=st.integers(1, 3), departed=st.integers(0, 1))
def test_moves_first_brute_force(seed, brokers, racks, partitions, departed):
    """exact.spread_moves_first (D, then moves, then L): optimal answers are the enumerated optimum, and its
    moves never exceed exact.spread's (which ranks leaders before moves)."""
    from kipopt.formulations.replicas.moves_first import moves_first_objective
    inst = random_instance(seed, brokers, racks, partitions, 2, departed, 2)
    s = solve(inst, "exact.spread_moves_first")
    assert not evaluate(inst, s.assignment).violations
    rf = inst.replication_factor
    choices = [(lead,) + rest for lead in inst.broker_ids
               for rest in itertools.combinations([b for b in inst.broker_ids if b != lead], rf - 1)]
    best = min(moves_first_objective(inst, a) for combo in itertools.product(choices, repeat=inst.partitions)
               if not evaluate(inst, a := dict(zip(inst.partition_ids, combo))).violations)
    assert s.objective >= best and s.bound <= best
    if s.status is Status.OPTIMAL:
        assert s.objective == best
    assert s.metrics["moves"] <= solve(inst, "exact.spread").metrics["moves"]


@settings(max_examples=200, deadline=None)
@given(spec=rack_totals())
def test_wrap_placement_meets_the_totals_or_declines(spec):
    """The vectorised de-aggregation (wrap-around, leaders by a max flow) meets any feasible rack totals
    exactly, one replica per rack, each broker within its even quotas, or returns None."""
    from kipopt.formulations.replicas.placement import RackTotals, _even, wrap_placement
    rf, P, T, lam, sizes = spec
    racks, i = [], 0
    for n in sizes:
        racks.append(tuple(range(i, i + n)))
        i += n
    c = Cluster(tuple(range(i)), tuple(racks), True, P, rf, 0)
    a = wrap_placement(c, RackTotals(tuple(T), tuple(lam), 0, 0, True, None))
    if a is None:
        return
    assert sorted(a) == list(range(P))
    rack_of = {b: r for r, ms in enumerate(racks) for b in ms}
    assert all(len({rack_of[b] for b in bs}) == rf == len(bs) for bs in a.values())
    for r, members in enumerate(racks):
        load = [sum(b in bs for bs in a.values()) for b in members]
        leads = [sum(bs[0] == b for bs in a.values()) for b in members]
        assert load == _even(T[r], len(members)) and leads == _even(lam[r], len(members))
