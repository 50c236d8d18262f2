"""exact.range and exact.balanced: brute force on tiny groups, grouped vs member-level models,
never worse than a registered port, properties on generated groups, time limits, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.level_policy as level_policy
from kipopt import from_dict, solve
from kipopt.api import check
from kipopt.datasets import generate
from kipopt.formulations.consumers.balanced import balance_face, greedy_balanced, solve_balanced
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.pulp_models import solve_balanced_members, solve_range_members
from kipopt.formulations.consumers.range import plain_range, range_problem, read_back, run_range, solve_grouped
from kipopt.formulations.consumers.rules import (balanced_objective, balanced_violations, range_objective,
                                                range_violations)
from kipopt.methods import SolveOptions, methods, rules
from kipopt.solution import Status

KIPOPT = Path(sys.executable).parent / "kipopt"
CONSUMER_METHODS = sorted(n for n, m in methods().items() if m.family == "consumers")
PORTS = [n for n in CONSUMER_METHODS if not methods()[n].exact]


from consumer_cases import brute_force, tiny_groups


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_groups())
def test_brute_force(inst):
    """exact.range is the range optimum; exact.balanced the balanced optimum (small: proven by the
    rule's MILP), and its dec-min stage the optimum over the most balanced assignments."""
    best_range, _ = brute_force(inst, "range")
    best_balanced, best_decmin = brute_force(inst, "balanced")
    r = solve(inst, "exact.range")
    assert (r.status, r.objective, r.metrics["violations"]) == (Status.OPTIMAL, best_range, [])
    b = solve(inst, "exact.balanced")
    assert (b.status, b.objective, b.metrics["violations"]) == (Status.OPTIMAL, best_balanced, [])
    decmin, status, _ = solve_balanced(inst)
    assert status == "optimal" and balanced_objective(inst, decmin) == best_decmin


GENERATED = [dict(partitions=p, members=m, subscriptions=s, replication_factor=rf, topics=t, seed=seed)
             for seed, (p, m, s, rf, t) in enumerate([
                 (40, 6, "mixed", 2, 4), (60, 7, "equal", 2, 3), (30, 9, "mixed", 3, 5),
                 (50, 5, "equal", 3, 2), (80, 12, "mixed", 2, 6), (25, 4, "mixed", 1, 3)])]


@pytest.mark.parametrize("params", GENERATED, ids=lambda p: f"{p['subscriptions']}-{p['partitions']}x{p['members']}")
def test_grouped_equals_member_level(params):
    """The grouped transportation LPs reach the member-level PuLP optima (range; balanced on the
    most balanced assignments, lexicographic by two integer solves)."""
    inst = generate("consumers", **params)
    problem = range_problem(inst)
    flows, status, _ = solve_grouped(problem)
    grouped = read_back(problem, flows)
    members, _, value = solve_range_members(inst)
    assert status == "optimal" and range_objective(inst, grouped) == value
    assert not range_violations(inst, grouped) and not range_violations(inst, members)
    decmin, _, info = solve_balanced(inst)
    reference, _, squares = solve_balanced_members(inst)
    assert sum(len(v) ** 2 for v in decmin.values()) == squares == info["sum_squares"]
    assert balanced_objective(inst, decmin) == balanced_objective(inst, reference)
    assert not balanced_violations(inst, decmin)


def _port_target(s):
    return s.target if s.target is not None else s.assignment


@pytest.mark.parametrize("port", PORTS or [pytest.param(None, marks=pytest.mark.skip("no port registered"))])
@pytest.mark.parametrize("seed", range(4))
def test_exact_never_worse_than_a_port(port, seed):
    """On the port's own rule, the port is feasible and never below exact's bound (nor its optimum).

    Round robin promises no balance with mixed subscriptions (Kafka deals each partition to the next
    subscriber in a cycle over all members), so there it may break ``balanced``; it must not with equal
    subscriptions, and where it is feasible it is compared like the others."""
    mixed = bool(seed % 2)
    inst = generate("consumers", seed, partitions=20, members=5, topics=3, conflicts=0.0,
                    subscriptions="mixed" if mixed else "equal")
    rule = rules()[methods()[port].rule]
    s = solve(inst, port)
    broken = rule.violations(inst, _port_target(s))
    if port == "kafka.round_robin" and mixed and broken:
        assert {v.rule for v in broken} == {"balance"}
        return
    assert not broken
    e = solve(inst, rule.exact_method)
    assert s.objective >= e.bound
    if e.status is Status.OPTIMAL:
        assert s.objective >= e.objective


@pytest.mark.parametrize("method", CONSUMER_METHODS)
def test_no_cross_rack_when_every_rack_holds_every_partition(method):
    inst = generate("consumers", 5, racks=3, replication_factor=3, partitions=30, members=7, conflicts=0.0)
    assert all(len(t.racks[p]) == 3 for t in inst.topics.values() for p in range(t.partitions))
    assert solve(inst, method).metrics["cross_rack"] == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), partitions=st.integers(3, 60), members=st.integers(1, 12),
       subscriptions=st.sampled_from(["mixed", "equal"]), rf=st.integers(1, 3),
       rackless=st.sampled_from([0.0, 0.3]))
def test_properties(seed, partitions, members, subscriptions, rf, rackless):
    """Both exact answers meet their rules, beat the naive feasible answers, and sit on their bounds;
    the dec-min stage is as balanced as the stage-1 optimum says."""
    inst = generate("consumers", seed, partitions=partitions, members=members, subscriptions=subscriptions,
                    replication_factor=rf, rackless_partitions=rackless)
    r = solve(inst, "exact.range")
    assert r.status is Status.OPTIMAL and r.metrics["violations"] == [] and r.bound == r.objective
    assert r.objective <= range_objective(inst, plain_range(inst))
    b = solve(inst, "exact.balanced")
    assert b.metrics["violations"] == [] and b.bound <= b.objective
    greedy = greedy_balanced(inst)
    if not balanced_violations(inst, greedy) and b.status is Status.OPTIMAL:
        assert b.objective <= balanced_objective(inst, greedy)
    decmin, _, info = solve_balanced(inst)
    face = balance_face(inst, layout(inst))
    assert sum(len(v) ** 2 for v in decmin.values()) == info["sum_squares"] == face.info["sum_squares"]
    if subscriptions == "equal":
        lo, hi = len(inst.subscribed_partitions) // members, -(-len(inst.subscribed_partitions) // members)
        assert {len(v) for v in b.assignment.values()} <= {lo, hi} and b.status is Status.OPTIMAL


def test_owned_partitions_are_kept_when_balance_allows():
    """Owners hold a balanced, rack-local history: exact.balanced keeps it all."""
    inst = from_dict({"format": 1, "family": "consumers",
                      "topics": {"t": {"racks": [["a"], ["b"], ["a"], ["b"]]}},
                      "members": [{"id": "x", "rack": "a", "topics": ["t"], "owned": ["t-0", "t-2"], "generation": 4},
                                  {"id": "y", "rack": "b", "topics": ["t"], "owned": ["t-1", "t-3"], "generation": 4}]})
    s = solve(inst, "exact.balanced")
    assert (s.objective, sorted(s.assignment["x"])) == (0, ["t-0", "t-2"])


@pytest.mark.parametrize("method", ["exact.range", "exact.balanced"])
def test_time_limit_still_answers(method):
    """With no time at all the methods still return a feasible assignment with a bound."""
    inst = generate("consumers", 3, partitions=400, members=40, topics=6)
    s = solve(inst, method, time_limit=1e-9)
    assert s.status in (Status.OPTIMAL, Status.FEASIBLE) and s.metrics["violations"] == []
    assert s.bound is not None and s.bound <= s.objective


def test_range_grouped_model_does_not_grow_with_members():
    small = range_problem(generate("consumers", 1, partitions=300, members=10, topics=4))
    large = range_problem(generate("consumers", 1, partitions=3000, members=300, topics=4))
    assert large.lp.num_col <= 4 * 4 * 7  # topics × rack sets (RF 2 of 3 racks, or none) × racks
    assert small.lp.num_col <= large.lp.num_col


def test_cli_solve_and_check(tmp_path):
    inst = tmp_path / "g.json"
    run = subprocess.run([str(KIPOPT), "generate", "consumers", "--seed", "4", "--partitions", "16",
                          "--members", "5"], capture_output=True, text=True, timeout=120)
    inst.write_text(run.stdout)
    for method, rule in (("exact.range", "range"), ("exact.balanced", "balanced")):
        out = subprocess.run([str(KIPOPT), "solve", str(inst), "--method", method], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        solution = tmp_path / f"{rule}.json"
        solution.write_text(out.stdout)
        assert json.loads(out.stdout)["metrics"]["violations"] == []
        verdict = subprocess.run([str(KIPOPT), "check", str(inst), str(solution), "--rule", rule],
                                 capture_output=True, text=True, timeout=120)
        assert verdict.returncode == 0 and json.loads(verdict.stdout)["ok"], verdict.stdout


def test_check_flags_a_broken_range_assignment():
    inst = generate("consumers", 2, partitions=12, members=3, subscriptions="equal", topics=1)
    everything = {m.id: () for m in inst.members}
    everything[inst.members[0].id] = inst.subscribed_partitions
    verdict = check(inst, everything, rule="range")
    assert not verdict.feasible and {v.rule for v in verdict.rule_violations} == {"range_quota"}


def test_run_range_member_model_and_grouped_model_agree():
    inst = generate("consumers", 9, partitions=30, members=5)
    a = run_range(inst, SolveOptions(), model="pulp")
    b = run_range(inst, SolveOptions(), model="arrays")
    assert a.objective == b.objective and a.info["model"] == "pulp" and b.info["model"] == "grouped"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), partitions=st.integers(6, 300), members=st.integers(1, 40),
       topics=st.integers(1, 6), rf=st.integers(1, 3), conflicts=st.sampled_from([0.0, 0.2]))
def test_greedy_fallback_is_balanced_and_keeps_a_fitting_history(seed, partitions, members, topics, rf, conflicts):
    """The fallback meets the rule on mixed groups with history and racks, gives every subscribed partition,
    and, where the dec-min answer keeps everything (a balanced history read at least cost), so does it."""
    inst = generate("consumers", seed, partitions=partitions, members=members, topics=topics,
                    subscriptions="mixed", replication_factor=rf, conflicts=conflicts)
    greedy = greedy_balanced(inst)
    assert not balanced_violations(inst, greedy)
    assert sorted(p for ps in greedy.values() for p in ps) == sorted(inst.subscribed_partitions)
    assert greedy == greedy_balanced(inst)


@settings(max_examples=60, deadline=None)
@given(loads=st.lists(st.integers(0, 20), min_size=1, max_size=12), n=st.integers(0, 80))
def test_water_fill_is_one_unit_at_a_time_to_the_least_loaded(loads, n):
    """The fallback deals a group at once what unit-by-unit dealing to the least loaded (first among
    equals) would give."""
    import heapq
    import numpy as np
    from kipopt.formulations.consumers.greedy import _water_fill
    heap = [(load, i) for i, load in enumerate(loads)]
    heapq.heapify(heap)
    one_by_one = [0] * len(loads)
    for _ in range(n):
        load, i = heapq.heappop(heap)
        one_by_one[i] += 1
        heapq.heappush(heap, (load + 1, i))
    assert _water_fill(np.array(loads, dtype=np.int64), n).tolist() == one_by_one


def test_greedy_fallback_keeps_a_balanced_rack_local_history_and_moves_what_it_must():
    """Owners that fit keep their partitions; a partition whose owner left goes to the member on its rack."""
    kept = from_dict({"format": 1, "family": "consumers",
                      "topics": {"t": {"racks": [["a"], ["a"], ["b"], ["b"]]}},
                      "members": [{"id": "x", "rack": "a", "topics": ["t"], "owned": ["t-0", "t-1"], "generation": 4},
                                  {"id": "y", "rack": "b", "topics": ["t"], "owned": ["t-2", "t-3"], "generation": 4}]})
    assert balanced_objective(kept, greedy_balanced(kept)) == 0
    moved = from_dict({"format": 1, "family": "consumers",
                       "topics": {"t": {"racks": [["a"], ["a"], ["b"], ["b"]]}},
                       "members": [{"id": "x", "rack": "a", "topics": ["t"], "owned": ["t-0", "t-1", "t-2", "t-3"],
                                    "generation": 4},
                                   {"id": "y", "rack": "b", "topics": ["t"]}]})
    answer = greedy_balanced(moved)
    assert sorted(answer["x"]) == ["t-0", "t-1"] and sorted(answer["y"]) == ["t-2", "t-3"]
    assert balanced_objective(moved, answer) == 2   # no cross-rack read, two revocations: the least possible


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), partitions=st.integers(6, 200), members=st.integers(1, 30),
       rf=st.integers(1, 3), rackless=st.sampled_from([0.0, 0.3]))
def test_layout_objective_is_the_rules(seed, partitions, members, rf, rackless):
    """run_balanced prices its dec-min and fallback answers through the layout: the same number as the
    rule's objective, also on answers that are not balanced (kafka.range's)."""
    from kipopt.formulations.consumers.balanced import layout_objective
    inst = generate("consumers", seed, partitions=partitions, members=members, subscriptions="mixed",
                    replication_factor=rf, rackless_partitions=rackless)
    lay = layout(inst)
    answers = [greedy_balanced(inst), solve(inst, "kafka.range").assignment]
    decmin, _, _ = solve_balanced(inst)
    answers += [decmin] if decmin is not None else []
    for a in answers:
        assert layout_objective(inst, lay, a) == balanced_objective(inst, a)


def test_few_members_with_many_partitions_reach_the_member_milp_after_a_tree_probe():
    """Ten members over 1,000 partitions and ten topics: the level box has about 10^20 vectors, the member
    MILP about 50 pairs. The tree gets only its probe before the MILP. With its box relaxations the probe
    (given time to spare here: this is not a timing test) proves the optimum itself; bounding boxes in closed form only, it does not, and the MILP proves it (the
    tree's second turn never runs)."""
    from unittest import mock

    from kipopt.formulations.consumers import balanced as B

    inst = generate("consumers", 1, partitions=1000, members=10, topics=10, replication_factor=3,
                    subscriptions="mixed", conflicts=0.05, owner_draw="direct")
    lay = layout(inst)
    size = B.milp_pairs(lay)
    assert size <= B.MILP_PROBE_PAIRS
    order = B._stage_order(lay, 1000, size)
    assert [stage for stage, _ in order] == [B._tree_stage, B._milp_stage, B._tree_stage]
    assert order[0][1](60.0) == B.TREE_PROBE_SECONDS and order[1][1](40.0) == 20.0 and order[2][1](7.0) == 7.0
    with mock.patch.object(B, "TREE_PROBE_SECONDS", 5.0):  # it needs about 0.6 s: a loaded CI machine took more
        probe = B.run_balanced(inst, SolveOptions(time_limit=60, threads=1))
    assert probe.status is Status.OPTIMAL and probe.bound == probe.objective
    assert probe.info["level_box_lps"] > 0 and "milp_status" not in probe.info
    with mock.patch.object(level_policy, "BOX_LP_MAX_COLUMNS", 0):
        result = B.run_balanced(inst, SolveOptions(time_limit=60, threads=1))
    assert result.status is Status.OPTIMAL and result.bound == result.objective == probe.objective
    assert result.info["milp_status"] in ("optimal", "nothing below the cutoff")
    assert not balanced_violations(inst, result.assignment)


def test_stage_order_keeps_the_tree_first_for_many_members_and_the_milp_first_for_many_topics():
    from kipopt.formulations.consumers import balanced as B

    many = layout(generate("consumers", 2, partitions=600, members=60, topics=5, subscriptions="mixed"))
    assert [s for s, _ in B._stage_order(many, 600, B.milp_pairs(many))] == [B._tree_stage, B._milp_stage]
    wide = layout(generate("consumers", 3, partitions=300, members=20, topics=14, subscriptions="mixed"))
    assert [s for s, _ in B._stage_order(wide, 300, B.milp_pairs(wide))] == [B._milp_stage, B._tree_stage]
    assert [s for s, _ in B._stage_order(wide, 300, B.MILP_MAX_COLUMNS + 1)] == [B._tree_stage]


def test_the_tree_keeps_the_whole_time_when_the_milp_build_would_not_fit():
    from kipopt.formulations.consumers import balanced as B

    lay = layout(generate("consumers", 2, partitions=600, members=60, topics=5, subscriptions="mixed"))
    (tree_stage, turn), (milp_stage, _) = B._stage_order(lay, 600, 50_000)   # 7.5 s of estimated build, 30 s to fit
    assert (tree_stage, milp_stage) == (B._tree_stage, B._milp_stage)
    assert turn(100.0) == 50.0 and turn(40.0) == 40.0


@pytest.mark.parametrize("emptied", ["no topics", "no subscriptions", "owners subscribe to nothing"])
def test_nothing_to_assign_is_proven(emptied):
    """A group none of whose members subscribes to a topic with partitions has one assignment, the empty one:
    every exact method proves it (it was answered ``feasible`` with a fallback message by ``exact.balanced``)."""
    doc = json.loads(json.dumps(_nothing_doc()))
    if emptied == "no topics":
        doc["topics"] = {}
    for m in doc["members"]:
        m["topics"] = []
        if emptied != "owners subscribe to nothing":
            m["owned"] = []
    inst = from_dict(doc)
    for method in ("exact.balanced", "exact.range"):
        sol = solve(inst, method)
        assert sol.status is Status.OPTIMAL and sol.objective == sol.bound
        assert all(not partitions for partitions in sol.assignment.values())
        assert set(sol.assignment) == {m["id"] for m in doc["members"]}


def _nothing_doc() -> dict:
    from kipopt.instance import to_dict
    return to_dict(generate("consumers", 3, partitions=40, members=6, topics=3, static_members=0.5,
                            subscriptions="mixed"))
