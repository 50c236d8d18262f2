"""A group of independent parts: found as the member-topic graph's components, packed within the cell limit,
and solved part by part to the optimum the whole group's solve proves (claims across parts, stale and tied
generations, static members included), also against brute force."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kipopt.formulations.consumers.parts as parts_module
from kipopt.datasets import generate
from kipopt.formulations.consumers.balanced import _run_whole, run_balanced
from kipopt.formulations.consumers.parts import parts
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations, owners
from kipopt.instance import from_dict, to_dict
from kipopt.methods import SolveOptions, Status

from consumer_cases import brute_force


def joined(seeds: list[int], rnd: random.Random, cross_claims: int, **params) -> dict:
    """Groups generated apart, renamed ``g<k>.`` and put side by side, with ``cross_claims`` members also
    claiming a partition of another group's topic (at a random generation, so some of them own it)."""
    doc = {"format": 1, "family": "consumers", "topics": {}, "members": []}
    for k, seed in enumerate(seeds):
        one = to_dict(generate("consumers", seed, **params))
        doc["topics"].update({f"g{k}.{t}": v for t, v in one["topics"].items()})
        for m in one["members"]:
            m = dict(m, id=f"g{k}.{m['id']}", topics=[f"g{k}.{t}" for t in m["topics"]],
                     owned=[f"g{k}.{p}" for p in m.get("owned", [])])
            if "group_instance_id" in m:
                m["group_instance_id"] = f"g{k}.{m['group_instance_id']}"
            doc["members"].append(m)
    partitions = [f"{t}-{p}" for t, v in doc["topics"].items() for p in range(len(v["racks"]))]
    for m in rnd.sample(doc["members"], min(cross_claims, len(doc["members"]))):
        m["owned"] = m.get("owned", []) + [p for p in [rnd.choice(partitions)] if p not in m.get("owned", [])]
        m["generation"] = rnd.randint(1, 9)
    rnd.shuffle(doc["members"])
    return doc


def _both(inst, monkeypatch):
    monkeypatch.setattr(parts_module, "PART_CELLS", 1)   # every component a part of its own
    by_parts = run_balanced(inst, SolveOptions(time_limit=60))
    whole = _run_whole(inst, SolveOptions(time_limit=60))
    return by_parts, whole


def test_components_are_found_and_packed():
    doc = {"format": 1, "family": "consumers",
           "topics": {"a": {"racks": [["r1"]] * 3}, "b": {"racks": [["r1"]] * 2}, "c": {"racks": [["r2"]]},
                      "d": {"racks": [["r1"]]}},
           "members": [{"id": "m1", "rack": "r1", "topics": ["a"]}, {"id": "m2", "rack": "r1", "topics": ["c"]},
                       {"id": "m3", "rack": "r2", "topics": ["b", "a"]}, {"id": "m4", "rack": None, "topics": ["d"]},
                       {"id": "m5", "rack": "r2", "topics": ["c"]}]}
    inst = from_dict(doc)
    alone = parts(inst, cells=1)
    assert [(p.members, sorted(p.topics)) for p in alone] == [((0, 2), ["a", "b"]), ((1, 4), ["c"]), ((3,), ["d"])]
    assert len(parts(inst)) == 1                              # small: packed into one, solved whole


@pytest.mark.parametrize("seed", range(6))
def test_parts_prove_the_optimum_of_the_whole(seed, monkeypatch):
    rnd = random.Random(seed)
    doc = joined([seed * 10 + k for k in range(rnd.randint(2, 4))], rnd, cross_claims=rnd.randint(0, 6),
                 partitions=rnd.randint(20, 80), members=rnd.randint(3, 8), topics=rnd.randint(1, 4),
                 subscriptions="mixed", conflicts=0.2, static_members=0.5)
    inst = from_dict(doc)
    assert len(parts(inst, cells=1)) >= 2
    by_parts, whole = _both(inst, monkeypatch)
    assert by_parts.info["parts"] >= 2 and "parts" not in whole.info
    assert by_parts.status == whole.status == Status.OPTIMAL
    assert by_parts.objective == by_parts.bound == whole.objective == balanced_objective(inst, by_parts.assignment)
    assert not balanced_violations(inst, by_parts.assignment)
    assert set(by_parts.assignment) == {m.id for m in inst.members}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 3))
def test_parts_equal_brute_force(seed, cross_claims):
    """Two or three tiny groups side by side, claims across them: the optimum brute force finds."""
    rnd = random.Random(seed)
    topics = rnd.randint(1, 2)
    doc = joined([seed + k for k in range(rnd.randint(2, 3))], rnd, cross_claims, partitions=rnd.randint(topics, 3),
                 members=rnd.randint(1, 2), topics=topics, subscriptions="mixed", conflicts=0.3)
    inst = from_dict(doc)
    saved = parts_module.PART_CELLS
    parts_module.PART_CELLS = 1
    try:
        found = run_balanced(inst, SolveOptions(time_limit=60))
    finally:
        parts_module.PART_CELLS = saved
    best, _ = brute_force(inst, "balanced")
    assert found.status == Status.OPTIMAL and found.objective == found.bound == best
    assert balanced_objective(inst, found.assignment) == best


def test_an_owner_outside_its_topics_part_is_a_constant(monkeypatch):
    """A member owning (at the highest generation) a partition of a topic only another part subscribes to:
    that partition is revoked whatever the answer, and counted once in the bound."""
    doc = {"format": 1, "family": "consumers",
           "topics": {"a": {"racks": [["r1"], ["r2"]]}, "b": {"racks": [["r1"], ["r2"]]}},
           "members": [{"id": "x", "rack": "r1", "topics": ["a"], "owned": ["b-0"], "generation": 5},
                       {"id": "y", "rack": "r2", "topics": ["b"], "owned": ["b-0", "b-1"], "generation": 2},
                       {"id": "z", "rack": "r1", "topics": ["b"], "owned": ["a-1"], "generation": 2}]}
    inst = from_dict(doc)
    assert owners(inst) == {"b-0": "x", "b-1": "y", "a-1": "z"}
    by_parts, whole = _both(inst, monkeypatch)
    assert by_parts.info["parts"] == 2
    assert by_parts.objective == by_parts.bound == whole.objective == whole.bound


@pytest.mark.parametrize("limit", [0.02, 0.3])
def test_parts_at_a_short_limit_answer_validly_with_a_valid_bound(limit, monkeypatch):
    """Every part gets its share of the limit; parts left with too little answer by the fallback. The joined
    answer is valid and its bound at most the proven optimum (optimal where the bound meets it)."""
    rnd = random.Random(11)
    inst = from_dict(joined(list(range(5)), rnd, cross_claims=4, partitions=300, members=20, topics=6,
                            subscriptions="mixed", conflicts=0.1))
    monkeypatch.setattr(parts_module, "PART_CELLS", 1)
    short = run_balanced(inst, SolveOptions(time_limit=limit))
    best = run_balanced(inst, SolveOptions(time_limit=60))
    assert best.status == Status.OPTIMAL
    assert not balanced_violations(inst, short.assignment)
    assert short.bound <= best.objective <= short.objective == balanced_objective(inst, short.assignment)
    assert (short.status == Status.OPTIMAL) == (short.bound == short.objective)


def test_without_a_limit_the_parts_share_the_methods_default_and_the_unproven_get_a_second_turn():
    """No time limit: the parts' turns share the method's default (each took the whole default before); a
    part that ends unproven (here: its first answer's bound withheld) gets a second turn with the time
    left, and its better answer and bound count."""
    from dataclasses import replace
    from kipopt.formulations.consumers.parts import solve_parts
    rnd = random.Random(5)
    inst = from_dict(joined([1, 2, 3], rnd, cross_claims=2, partitions=60, members=6, topics=3,
                            subscriptions="mixed", conflicts=0.1))
    found = parts(inst, cells=1)
    calls = []

    def one(sub, options):
        done = _run_whole(sub, options)
        calls.append((sub, options.deadline_at))
        first = sum(1 for s, _ in calls if s is sub) == 1
        return replace(done, bound=0.0, status=Status.FEASIBLE) if first else done

    start = time.perf_counter()
    joined_result = solve_parts(inst, found, SolveOptions(), one, default_seconds=30.0)
    turns = len(found)
    assert all(at <= start + 30.0 + 0.05 for _, at in calls)      # every turn ends by the method's default
    assert len(calls) == 2 * turns
    whole = _run_whole(inst, SolveOptions(time_limit=60))
    assert joined_result.status == Status.OPTIMAL and joined_result.objective == whole.objective
