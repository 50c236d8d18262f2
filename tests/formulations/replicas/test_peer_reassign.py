"""The public PuLP reassigner's model restated (``exact.peer_reassign``): brute force, both solvers, the band."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt import solve
from kipopt.datasets import generate
from kipopt.errors import NotApplicableError
from kipopt.evaluation.replicas import evaluate_replicas
from kipopt.formulations.replicas.peer import peer_violations, solve_peer, tight_band
from kipopt.instance import from_dict
from kipopt.solution import Status


def _instance(brokers: int, partitions: int, rf: int, current: dict, racks=None):
    return from_dict({"format": 1, "family": "replicas", "partitions": partitions, "replication_factor": rf,
                      "brokers": [{"id": b, **({"rack": racks[b]} if racks else {})} for b in range(brokers)],
                      "current": {str(p): list(v) for p, v in current.items()}})


def brute_force(inst) -> int:
    """Fewest moves over every assignment whose broker loads lie in the tight band."""
    low, high = tight_band(inst)
    best = None
    choices = list(itertools.combinations(inst.broker_ids, inst.replication_factor))
    for pick in itertools.product(choices, repeat=inst.partitions):
        loads = [sum(b in brokers for brokers in pick) for b in inst.broker_ids]
        if all(low <= n <= high for n in loads):
            moves = sum(len(set(brokers) - set(inst.current[p])) for p, brokers in enumerate(pick))
            best = moves if best is None else min(best, moves)
    return best


@st.composite
def small(draw):
    brokers = draw(st.integers(2, 4))
    rf = draw(st.integers(1, min(2, brokers)))
    partitions = draw(st.integers(1, 4))
    ids = list(range(brokers))
    current = {p: draw(st.permutations(ids))[:rf] for p in range(partitions)}
    return _instance(brokers, partitions, rf, current)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small())
def test_peer_matches_brute_force_and_meets_its_rule(inst):
    s = solve(inst, "exact.peer_reassign")
    assert s.status is Status.OPTIMAL and s.objective == s.bound == brute_force(inst)
    assert not peer_violations(inst, s.assignment)


def test_cbc_and_highs_agree_and_the_smallest_broker_leads():
    inst = generate("replicas", 3, partitions=40, brokers=6, racks=1, added_brokers=2)
    cbc, highs = solve_peer(inst, solver="cbc"), solve_peer(inst, solver="highs")
    assert cbc.status == highs.status == "optimal" and cbc.moves == highs.moves
    assert all(list(v) == sorted(v) for v in cbc.assignment.values())
    assert evaluate_replicas(inst, cbc.assignment).metrics["moves"] == cbc.moves


def test_looser_factors_never_need_more_moves():
    inst = generate("replicas", 4, partitions=40, brokers=6, racks=1, added_brokers=2)
    tight, loose = solve_peer(inst), solve_peer(inst, min_factor=0.5, max_factor=1.5)
    assert loose.moves <= tight.moves
    assert loose.moves < tight.moves  # the added brokers may stay nearly empty


def test_as_few_moves_as_exact_spread_without_racks_but_leaders_unbalanced():
    """Same replica band and no racks: the peer's moves are a lower bound on exact.spread's third criterion,
    reached here; the peer leaves leaders to broker ids."""
    inst = generate("replicas", 1, partitions=60, brokers=9, racks=1, added_brokers=3)
    peer, spread = solve(inst, "exact.peer_reassign"), solve(inst, "exact.spread")
    assert peer.metrics["moves"] == spread.metrics["moves"]
    assert peer.metrics["leader_imbalance"] > spread.metrics["leader_imbalance"]


def test_not_applicable_where_racks_bind_or_without_current():
    racked = _instance(4, 2, 2, {0: [0, 1], 1: [2, 3]}, racks=["a", "a", "b", "b"])
    with pytest.raises(NotApplicableError, match=r"brokers: rack_spread asks for 2 racks .* 2 racks"):
        solve(racked, "exact.peer_reassign")
    # a broker without a rack counts as a rack of its own, in the message as in the rule (it said "1 racks")
    half = _instance(3, 2, 2, {0: [0, 1], 1: [1, 2]}, racks=["a", None, "a"])
    with pytest.raises(NotApplicableError, match=r"asks for 2 racks per partition \(replication_factor 2, 2 racks"):
        solve(half, "exact.peer_reassign")
    fresh = from_dict({"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 1,
                       "brokers": [{"id": 0}, {"id": 1}]})
    with pytest.raises(NotApplicableError, match="current"):
        solve(fresh, "exact.peer_reassign")
    # on a racked cluster the model still runs (the benchmark does this) and may break the rack rule
    assert solve_peer(racked).status == "optimal"


def test_balance_outside_the_band_is_a_violation():
    inst = _instance(3, 3, 1, {0: [0], 1: [0], 2: [0]})
    assert [v.rule for v in peer_violations(inst, {0: (0,), 1: (0,), 2: (1,)})] == ["peer_balance"]


@pytest.mark.parametrize("seed", range(12))
def test_the_greedy_balancing_is_in_the_band_and_between_the_bound_and_what_it_claims(seed):
    """The answer at the limit: within the band, its moves the evaluator's, the bound at most the model's
    optimum and the optimum at most the greedy's moves."""
    from kipopt.formulations.replicas.peer import balanced_from_current, moves_bound
    x = generate("replicas", seed, partitions=30 + 3 * seed, brokers=4 + seed % 5, added_brokers=1 + seed % 2, racks=1,
                 replication_factor=1 + seed % 3)
    assignment, moves, bound = balanced_from_current(x)
    assert bound == moves_bound(x)
    assert peer_violations(x, assignment) == []
    assert evaluate_replicas(x, assignment).metrics["moves"] == moves
    assert all(list(bs) == sorted(bs) for bs in assignment.values())
    assert moves_bound(x) <= solve_peer(x).moves <= moves


def test_the_time_limit_holds_and_answers_with_the_greedy_balancing(monkeypatch):
    """Building the peer's P x B binaries ignores any limit (191 s under a 5 s limit at 10,000 x 55), and a
    CBC run stopped before any solution answered ``status: error`` with no assignment: the model now runs in
    a child killed at the deadline, and the current assignment balanced greedily answers, with its bound."""
    from kipopt.formulations.replicas import peer
    from replica_cases import solved_past_a_stage_that_never_ends
    x = generate("replicas", 45, partitions=83, brokers=12, added_brokers=1, racks=1)
    answer = solved_past_a_stage_that_never_ends(monkeypatch, peer, "solve_peer", x, "exact.peer_reassign")
    assert answer.status in (Status.OPTIMAL, Status.FEASIBLE) and answer.metrics["violations"] == []
    assert answer.bound <= answer.objective and "time limit" in answer.message
    assert answer.objective == solve_peer(x).moves  # here the greedy is optimal, and the bound proves it
    assert answer.status is Status.OPTIMAL


def test_a_peer_run_killed_at_its_deadline_leaves_no_file_and_no_cbc(tmp_path, monkeypatch):
    """CBC reads the model from a file PuLP writes and removes only when CBC ends normally: a run killed at
    its deadline left a 42 MB ``*-pulp.mps`` in the temporary folder every time (and CBC itself running)."""
    import os
    import tempfile
    import time
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where PuLP writes by itself
    x = generate("replicas", 4, partitions=1000, brokers=30, added_brokers=3, racks=1)
    began = time.monotonic()
    answer = solve(x, "exact.peer_reassign", time_limit=2.5)
    assert time.monotonic() - began < 10 and answer.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert list(tmp_path.iterdir()) == []
    cbc = [p for p in os.listdir("/proc") if p.isdigit() and _command(p).startswith("cbc")]
    assert cbc == [], "CBC outlived its run"


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return os.path.basename(handle.read().split(b"\0")[0].decode(errors="replace"))
    except OSError:
        return ""
