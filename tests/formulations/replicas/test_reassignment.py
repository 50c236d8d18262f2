"""``exact.spread``'s reassignment under a time limit: which path runs where, and what answers when time runs out."""

from __future__ import annotations

import time

import numpy as np
import pytest

from kipopt import solve
from kipopt.datasets import generate
from kipopt.formulations import highs
from kipopt.formulations.replicas import leaders, network, reassignment
from kipopt.formulations.replicas import moves as SM
from kipopt.formulations.replicas.model import Cluster
from kipopt.formulations.replicas.spread import _fresh

ADD_RACK = dict(partitions=600, replication_factor=3, brokers=20, added_brokers=4, racks=5, added_racks=1)
"""bench_limits' add-a-rack shape, small."""
MISSED = dict(partitions=1_000, replication_factor=3, brokers=25, added_brokers=5, racks=5, added_racks=1)
"""With seed 1, a slipped start where the read-back misses its bound: the flows decide (508 moves)."""


def _cluster(seed: int = 5, **params):
    x = generate("replicas", seed, **(params or ADD_RACK))
    return x, Cluster.of(x)


def test_the_flows_start_beside_the_read_back_only_when_time_is_short():
    _, c = _cluster()
    now = time.perf_counter()
    assert not reassignment.flows_alongside(c, None)
    assert not reassignment.flows_alongside(c, now + 3600)
    assert reassignment.flows_alongside(c, now + 1e-4)
    x, every_rack = _cluster(1, partitions=400, brokers=16, added_brokers=4, racks=2)  # R < RF
    assert not every_rack.one_per_rack and not reassignment.flows_alongside(every_rack, now + 1e-4)


def test_past_the_flows_size_nothing_starts_beside_the_read_back(monkeypatch):
    _, c = _cluster()
    monkeypatch.setattr(reassignment, "MAX_PAIRS_WITH_AN_ANSWER", reassignment.flow_arcs(c) - 1)
    monkeypatch.setattr(reassignment, "MAX_PAIRS_AS_LPS", reassignment.flow_arcs(c) - 1)
    assert not reassignment.flows_alongside(c, time.perf_counter() + 1e-4)


def test_a_network_starts_in_a_killable_child_at_the_typical_rate(monkeypatch):
    """Here (nothing can stop the solver) the generous estimate decides; in a child the deadline kills, the
    typical one: a network between the two estimates starts only there."""
    arcs = 1_000_000
    between = time.perf_counter() + arcs * (network.SECONDS_PER_ARC + network.SECONDS_PER_ARC_IN_CHILD) / 2
    assert network.flow_fits(None, arcs)
    assert not network.flow_fits(between, arcs)
    monkeypatch.setattr(highs, "_KILLABLE", True)
    assert network.flow_fits(between, arcs)
    assert not network.flow_fits(between, arcs, loses_work=True)  # a kill there would lose finished work
    assert not network.flow_fits(time.perf_counter() - 1, arcs)


def test_without_a_replica_flow_answer_no_mip_is_started(monkeypatch):
    """The joint MIP is larger than the flow: with no flow answer in time it is not tried (the caller's
    fallback answers); it stays the fallback when the sets admit no leader choice."""
    x, c = _cluster()
    fresh = _fresh(x, c, None, None, {})
    monkeypatch.setattr(reassignment, "solve_replica_flow", lambda *a, **k: (None, None, 7))
    monkeypatch.setattr(reassignment, "solve_moves_one_per_rack",
                        lambda *a, **k: pytest.fail("the MIP was started"))
    info: dict = {}
    assert reassignment._reassign_one_per_rack(x, c, fresh, time.perf_counter() + 60, None, info) == ({}, 7)
    assert "model" not in info


@pytest.mark.parametrize("alongside", [False, True])
def test_under_a_limit_the_flows_answer_as_without_one(monkeypatch, alongside):
    """In their child (beside the read-back's or after it) the flows reach the optimum found in-process."""
    x = generate("replicas", 1, **MISSED)
    free = solve(x, "exact.spread")
    assert free.metrics["model"] == "replica_flow+leader_flow" and free.status.value == "optimal"
    monkeypatch.setattr(reassignment, "flows_alongside", lambda c, deadline: alongside and deadline is not None)
    limited = solve(x, "exact.spread", time_limit=120)
    assert limited.status.value == "optimal" and limited.objective == free.objective
    assert limited.metrics["model"] == "replica_flow+leader_flow" and limited.metrics["violations"] == []


@pytest.mark.parametrize("alongside", [False, True])
def test_children_that_do_not_finish_leave_the_balanced_placement_with_its_bound(monkeypatch, alongside):
    """Read-back and flows cut by the deadline (made to wait for it): the fresh placement answers, feasible,
    its bound below its objective, its note saying why."""
    x = generate("replicas", 1, **MISSED)
    monkeypatch.setattr(reassignment, "flows_alongside", lambda c, deadline: alongside)
    stall = lambda *a, **k: time.sleep(60)  # noqa: E731
    monkeypatch.setattr(reassignment, "fast_replica_sets", stall)
    monkeypatch.setattr(reassignment, "solve_replica_flow", stall)
    s = solve(x, "exact.spread", time_limit=1.5)
    assert s.status.value == "feasible" and s.metrics["violations"] == []
    assert s.bound <= s.objective and "time limit" in s.metrics["moves_note"]


def _leader_arcs(x, c, sets):
    ids = np.asarray(c.brokers)
    arc_p = np.repeat(np.arange(c.partitions), [len(s) for s in sets])
    arc_b = np.searchsorted(ids, [b for s in sets for b in s])
    old = arc_b == leaders._current_leaders(x, c, ids)[arc_p]
    return arc_p, arc_b, old


@pytest.mark.parametrize("seed,params", [(3, dict(partitions=200, brokers=12, added_brokers=3, racks=3, added_racks=1)),
                                         (5, ADD_RACK), (1, MISSED), (6, dict(ADD_RACK, current_rack_slips=0.0))])
def test_quick_leaders_keep_the_window_and_at_the_bound_the_most_leaders(seed, params):
    """Short of time the leaders come from maximum flows: same window as the min-cost flow's; when the
    bound's keeps fit, exactly as many current leaders kept as the min-cost flow keeps."""
    x = generate("replicas", seed, **params)
    c = Cluster.of(x)
    fresh = _fresh(x, c, None, None, {})
    sets, _, _ = SM.solve_replica_flow(x, c, fresh.d, None, None)
    best = SM.choose_leaders(x, c, sets, fresh.l, None, None)
    said: dict = {}
    quick = SM.choose_leaders(x, c, sets, fresh.l, time.perf_counter() - 1, None, info=said)  # no time for the flow
    assert "not proven the most" in said["leaders_note"]
    kept = []
    for answer in (best, quick):
        counts = np.bincount([c.brokers.index(bs[0]) for bs in answer.values()], minlength=len(c.brokers))
        assert counts.max() - counts.min() <= fresh.l
        assert all(sorted(bs) == sorted(s) for bs, s in zip(answer.values(), sets))
        kept.append(sum(x.current[p][0] == bs[0] for p, bs in answer.items()))
    assert kept[1] <= kept[0]
    arc_p, arc_b, old = _leader_arcs(x, c, sets)
    avg = c.partitions / len(c.brokers)
    lo = int(np.floor(avg))
    at_bound = leaders.kept_leaders_at_bound(c.partitions, len(c.brokers), arc_p, arc_b, old, lo, lo + fresh.l)
    if at_bound is not None:
        assert int((arc_b == at_bound[arc_p])[old].sum()) == kept[0]


def test_window_leaders_refuses_a_window_no_choice_fits():
    arc_p, arc_b = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    assert leaders.window_leaders(2, 2, arc_p, arc_b, 1, 1).tolist() in ([0, 1], [1, 0])
    assert leaders.window_leaders(2, 2, arc_p, arc_b, 2, 2) is None
    assert leaders.window_leaders(2, 2, arc_p, arc_b, np.array([2, 0]), np.array([2, 0])).tolist() == [0, 0]


def test_kept_leaders_at_bound_keeps_as_many_as_the_min_cost_flow():
    """Three partitions lead on broker 0 today, one on broker 1, every partition on both, two leaders each:
    the bound keeps min(3, 2) + min(1, 2) = 3, the max flow places the fourth, and the min-cost flow
    agrees that 3 is the most."""
    arc_p, arc_b = np.repeat(np.arange(4), 2), np.tile([0, 1], 4)
    old = arc_b == np.array([0, 0, 0, 1])[arc_p]
    lead = leaders.kept_leaders_at_bound(4, 2, arc_p, arc_b, old, 2, 2)
    assert lead.tolist() == [0, 0, 1, 1]
    net, model, arcs = leaders.leader_network(4, 2, arc_p, arc_b, old, 2, 0)
    assert network.solve_network(net, model, None, None).objective == 4 - 3


@pytest.mark.parametrize("alongside", [False, True])
def test_bytes_moved_under_a_limit_as_without_one(monkeypatch, alongside):
    """exact.spread_bytes: the flow priced by bytes answers from its child what it answers in-process."""
    import dataclasses
    import random
    x = generate("replicas", 1, **MISSED)
    rnd = random.Random(3)
    x = dataclasses.replace(x, sizes={p: rnd.randint(1, 10 ** 6) for p in x.partition_ids})
    free = solve(x, "exact.spread_bytes")
    monkeypatch.setattr(reassignment, "flows_alongside", lambda c, deadline: alongside and deadline is not None)
    limited = solve(x, "exact.spread_bytes", time_limit=120)
    assert (limited.status, limited.objective, limited.metrics.get("model")) == (
        free.status, free.objective, free.metrics.get("model"))
    assert limited.metrics["violations"] == []


def test_a_flows_child_that_fails_is_said_not_hidden(monkeypatch):
    """A flows' child that ends without an answer long before the deadline leaves a note in the metrics
    (the answer is then the fallback's, never presented as the flows')."""
    import dataclasses
    import random
    x = generate("replicas", 1, **MISSED)
    rnd = random.Random(3)
    x = dataclasses.replace(x, sizes={p: rnd.randint(1, 10 ** 6) for p in x.partition_ids})

    def broken(*args, **kwargs):
        raise RuntimeError("a flow that breaks")

    monkeypatch.setattr(reassignment, "_flows", broken)
    monkeypatch.setattr(reassignment, "flows_alongside", lambda c, deadline: deadline is not None)
    limited = solve(x, "exact.spread_bytes", time_limit=120)
    assert limited.metrics["violations"] == []
    assert limited.status.value == "feasible" and limited.metrics.get("model") == "rack_totals"
    assert "ended early without an answer" in limited.metrics.get("flows_note", "")
    assert "RuntimeError: a flow that breaks" in limited.metrics["flows_note"]
    by_moves = solve(x, "exact.spread", time_limit=120)  # its moves' note says why, not "the time limit"
    assert "ended early without an answer" in by_moves.metrics.get("flows_note", "")
    assert "(not the time limit)" in by_moves.metrics["moves_note"]
    for answer in (limited, by_moves):  # the solution's message says why it is not proven, not only metrics
        assert "ended early without an answer" in answer.message


def test_a_small_reassignment_under_a_limit_forks_no_child(monkeypatch):
    """Up to INLINE_ARCS arcs the read-back and the flows run in this process, time limit or not (milliseconds;
    a child that gave no answer once left a 23-partition cluster at its fallback), with the answer the
    unlimited solve gives."""
    import kipopt.deadline as deadline
    x = generate("replicas", 195, racks=1, brokers=2, rackless_brokers=1, partitions=23, replication_factor=1,
                 added_brokers=1, added_racks=1)
    assert reassignment.flow_arcs(Cluster.of(x)) <= reassignment.INLINE_ARCS
    free = solve(x, "exact.spread")

    def no_fork(fn):
        raise AssertionError("a child was forked")

    monkeypatch.setattr(deadline, "_fork", no_fork)
    for method in ("exact.spread", "exact.spread_bytes"):
        limited = solve(x, method, time_limit=20)
        assert limited.status.value == "optimal", limited.metrics
    assert solve(x, "exact.spread", time_limit=20).objective == free.objective


@pytest.mark.parametrize("method", ["exact.spread", "exact.spread_bytes", "exact.spread_moves_first"])
def test_a_stopped_rack_model_gives_a_bound_below_the_optimum(monkeypatch, method):
    """The rack totals' model stopped at its limit (a 0.003 s limit): its incumbent's imbalances are no
    bounds. ``exact.spread_bytes`` and ``exact.spread_moves_first`` kept its leader imbalance (8, the optimum
    has 1) in their bound, which then passed the proven optimum (42,472 against 41,058) and ``check``
    measured answers against it."""
    import dataclasses
    from kipopt.formulations.replicas import spread
    x = generate("replicas", 13, partitions=67, brokers=7, added_brokers=2, racks=2)
    optimum = solve(x, method)
    assert optimum.status.value == "optimal"
    real = spread.solve_rack_totals

    def stopped(c, deadline, threads):
        return dataclasses.replace(real(c, deadline, threads), optimal=False, bound=None,
                                   leader_imbalance=8)  # an incumbent that is worse than it could be

    monkeypatch.setattr(spread, "solve_rack_totals", stopped)
    limited = solve(x, method, time_limit=30)
    assert limited.status.value == "feasible"
    assert limited.bound <= optimum.objective, (limited.bound, optimum.objective)


def test_moves_first_without_current_has_a_bound_when_the_rack_model_stops(monkeypatch):
    """Without ``current`` it answered ``feasible`` with bound null under a 0.001 s limit."""
    import dataclasses
    from kipopt.formulations.replicas import spread
    x = generate("replicas", 1, partitions=60, brokers=7, racks=3)
    assert x.current is None
    optimum = solve(x, "exact.spread_moves_first")
    real = spread.solve_rack_totals
    monkeypatch.setattr(spread, "solve_rack_totals", lambda c, deadline, threads: dataclasses.replace(
        real(c, deadline, threads), optimal=False, bound=None))
    limited = solve(x, "exact.spread_moves_first", time_limit=30)
    assert limited.status.value == "feasible" and limited.bound is not None
    assert limited.bound <= optimum.objective


def test_moves_first_reads_back_in_a_child_the_deadline_kills(monkeypatch):
    """With the rack model stopped early its D is far from the optimum's and the read-back walked every level
    up to it in this process: over 180 s under a 0.01 s limit at 100,000 partitions."""
    from kipopt.formulations.replicas import moves_first
    from replica_cases import solved_past_a_stage_that_never_ends
    x = generate("replicas", 13, partitions=67, brokers=7, added_brokers=2, racks=2)
    answer = solved_past_a_stage_that_never_ends(monkeypatch, moves_first, "_fewest_moves", x,
                                                 "exact.spread_moves_first")
    assert answer.status.value == "feasible" and answer.bound <= answer.objective
    assert "time limit came first" in answer.message and answer.metrics["violations"] == []


def test_a_bytes_bound_is_in_the_bytes_rules_own_scale():
    """Without ``current`` and with sizes of zero, exact.spread_bytes answered optimal at 4 beside a bound of
    374: the fresh placement's bound was in the moves rule's scale (weights P·RF + 1), not the bytes rule's."""
    from kipopt.instance import from_dict
    x = from_dict({"format": 1, "family": "replicas", "partitions": 5, "replication_factor": 2,
                   "brokers": [{"id": i, "rack": f"r{i % 2}"} for i in range(3)],
                   "sizes": {str(p): 0 for p in range(5)}})
    answer = solve(x, "exact.spread_bytes")
    assert answer.status.value == "optimal" and answer.bound == answer.objective
