"""Generators (kipopt.datasets.generate) and the KIP scenario files.

Determinism (byte-identical JSON for the same seed, also across processes
with different hash seeds), the realism the generators promise (unequal
racks, partitions missing from racks, skew, imperfect history, sparse lags),
parameter checking, and that each scenario says what its KIP says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.costs import role_cost
from kipopt.datasets import (TasksParams, generate, generate_tasks, generator_params, load_scenario,
                             scenario_names, scenario_solutions)
from kipopt.datasets.generators import PARAMS
from kipopt.datasets.scenarios import SCENARIOS, describe, scenario_files
from kipopt.errors import InstanceError
from kipopt.evaluation import evaluate
from kipopt.instance import FAMILIES, from_dict, java_string_key, to_dict
from kipopt.solution import parse_solution

KIPOPT = Path(sys.executable).with_name("kipopt")


def dumps(instance) -> str:
    return json.dumps(to_dict(instance), separators=(",", ":"))


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_bytes_different_seed_differs(family):
    """Same family, seed and params give byte-identical JSON; another seed gives another instance."""
    texts = [dumps(generate(family, seed)) for seed in (11, 11, 12)]
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_identical_across_processes_and_hash_seeds():
    """The command line writes the same bytes under different PYTHONHASHSEEDs (no hash order leaks in)."""
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run([str(KIPOPT), "generate", "consumers", "--seed", "5", "--members", "4"],
                             capture_output=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].decode() == dumps(generate("consumers", 5, members=4)) + "\n"


def test_cli_generate_writes_a_file(tmp_path, capsys):
    """``kipopt generate FAMILY --seed S --param ... --out F`` writes the same instance as generate()."""
    from kipopt.cli import main
    out = tmp_path / "t.json"
    assert main(["generate", "tasks", "--seed", "3", "--tasks", "9", "--clients", "3", "--strategy",
                 "balance_subtopology", "--caught-up", "0.5", "--out", str(out)]) == 0
    expected = generate("tasks", 3, tasks=9, clients=3, strategy="balance_subtopology", caught_up=0.5)
    assert out.read_text() == dumps(expected) + "\n"
    assert "wrote tasks instance" in capsys.readouterr().err


# --------------------------------------------------------------------------- parameters


def test_generator_params_is_the_union_with_types():
    """Every family's parameters are offered once, each with a type and a help text."""
    params = generator_params()
    for name in ("racks", "brokers", "added_brokers", "members", "subscriptions", "tasks", "clients",
                 "num_standby_replicas", "strategy", "caught_up"):
        assert name in params
    assert params["racks"][0] is int and params["caught_up"][0] is float and params["strategy"][0] is str
    assert all(isinstance(h, str) and h for _, h in params.values())


@pytest.mark.parametrize("family,params,flag,words", [
    ("replicas", {"members": 3}, "--members", "does not apply to family replicas"),
    ("consumers", {"brokers": 3}, "--brokers", "does not apply"),
    ("tasks", {"bogus": 1}, "--bogus", "does not apply"),
    ("replicas", {"racks": 0}, "--racks", ">= 1"),
    ("replicas", {"replication_factor": 9}, "--replication-factor", "between 1 and brokers"),
    ("replicas", {"racks": 8}, "--racks", "at least 8 brokers"),
    ("replicas", {"added_racks": 2}, "--added-racks", "between 0 and added_brokers"),
    ("replicas", {"current_rack_slips": 1.5}, "--current-rack-slips", "between 0 and 1"),
    ("consumers", {"subscriptions": "some"}, "--subscriptions", "equal, mixed"),
    ("consumers", {"conflicts": 1.5}, "--conflicts", "between 0 and 1 (a share)"),
    ("consumers", {"partitions": 2, "topics": 3}, "--partitions", "at least topics"),
    ("tasks", {"strategy": "min_cost"}, "--strategy", "none, min_traffic, balance_subtopology"),
    ("tasks", {"max_capacity": 0}, "--max-capacity", ">= min_capacity"),
    ("tasks", {"tasks": "12"}, "--tasks", "must be int"),
    ("tasks", {"caught_up": True}, "--caught-up", "must be float"),
    ("tasks", {"new_clients": 4}, "--new-clients", "between 0 and clients - 1"),
    ("tasks", {"max_end_offset": 5}, "--max-end-offset", "must exceed"),
])
def test_bad_parameters_name_the_flag(family, params, flag, words):
    """A parameter that does not apply, or a bad value, is an InstanceError naming the flag."""
    with pytest.raises(InstanceError) as info:
        generate(family, 1, **params)
    assert info.value.field == flag
    assert words in info.value.message


def test_unknown_family_and_bad_seed():
    """An unknown family or a non-integer seed is rejected, not crashed on."""
    with pytest.raises(InstanceError) as info:
        generate("brokers", 1)
    assert info.value.field == "FAMILY"
    with pytest.raises(InstanceError):
        generate("tasks", "1")


def test_integers_accepted_for_float_parameters():
    """``caught_up=1`` means 1.0 (Python callers pass ints naturally)."""
    assert generate("tasks", 2, caught_up=1) == generate("tasks", 2, caught_up=1.0)


# --------------------------------------------------------------------------- realism


@pytest.mark.parametrize("seed", range(8))
def test_replicas_racks_unequal_and_reassignment(seed):
    """Brokers sit on unequal racks; with added brokers, 'current' uses only the original ones."""
    inst = generate("replicas", seed, brokers=12, racks=3, partitions=10, added_brokers=3, added_racks=1,
                    rackless_brokers=0)
    original = [b for b in inst.brokers if b.id < 12]
    sizes = Counter(b.rack for b in original)
    assert len(sizes) == 3 and max(sizes.values()) > min(sizes.values())
    assert {b.rack for b in inst.brokers if b.id >= 12} == {"r4"}
    assert set(inst.current) == set(inst.partition_ids)
    for replicas in inst.current.values():
        assert len(replicas) == 3 and len(set(replicas)) == 3 and max(replicas) < 12


@pytest.mark.parametrize("slips,invalid", [(0.0, False), (0.2, True), (1.0, True)])
def test_replicas_current_rack_slips(slips, invalid):
    """``current_rack_slips`` 0 gives a rack-valid current placement; the default 0.2 slips now and then."""
    inst = generate("replicas", 3, brokers=15, racks=4, partitions=400, added_brokers=5, added_racks=1,
                    current_rack_slips=slips)
    rack = {b.id: b.rack for b in inst.brokers}
    slipped = sum(len({rack[b] for b in bs}) < len(bs) for bs in inst.current.values())
    assert (slipped > 0) is invalid


def test_replicas_rackless_brokers():
    """``rackless_brokers`` leaves that many brokers without a rack."""
    inst = generate("replicas", 4, brokers=6, rackless_brokers=2)
    assert sum(b.rack is None for b in inst.brokers) == 2


@pytest.mark.parametrize("seed", range(6))
def test_consumers_realism(seed):
    """Skewed topics, partitions on rf of the racks, members on unequal racks, stale and conflicting claims."""
    inst = generate("consumers", seed, topics=3, partitions=30, racks=3, replication_factor=2, members=12,
                    conflicts=0.5, rackless_members=0.25)
    counts = [t.partitions for t in inst.topics.values()]
    assert sum(counts) == 30 and len(set(counts)) > 1
    for topic in inst.topics.values():
        assert all(len(r) == 2 for r in topic.racks)
    missing = Counter(rack for t in inst.topics.values() for r in t.racks for rack in {"r1", "r2", "r3"} - set(r))
    assert len(missing) >= 2  # partitions are absent from more than one rack
    owners = Counter(p for m in inst.members for p in m.owned)
    assert max(owners.values()) == 2  # some partitions are claimed twice
    for m in inst.members:
        assert all(p.rpartition("-")[0] in m.topics for p in m.owned)


def test_consumers_equal_and_mixed_subscriptions():
    """'equal' subscribes everyone to everything; 'mixed' does not (for this seed and size)."""
    equal = generate("consumers", 1, subscriptions="equal", topics=4, members=6)
    assert all(m.topics == tuple(equal.topics) for m in equal.members)
    mixed = generate("consumers", 1, subscriptions="mixed", topics=4, members=6)
    assert len({m.topics for m in mixed.members}) > 1


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_consumers_static_members_leave_the_rest_of_the_instance_unchanged(seed):
    """--static-members only adds group_instance_id to a share of the members, interleaved with dynamic
    ones; everything else, and the default instance of every seed, stays as before."""
    plain = to_dict(generate("consumers", seed, members=20))
    assert all("group_instance_id" not in m for m in plain["members"])
    mixed = to_dict(generate("consumers", seed, members=20, static_members=0.5))
    ids = [m.pop("group_instance_id", None) for m in mixed["members"]]
    assert mixed == plain
    statics = [i for i in ids if i is not None]
    assert 0 < len(statics) < 20 and len(set(statics)) == len(statics)
    kinds = "".join("s" if i else "d" for i in ids)
    assert "dsd" in kinds or "sds" in kinds  # interleaved, not a static block
    everyone = generate("consumers", seed, members=20, static_members=1.0)
    assert all(m.group_instance_id for m in everyone.members)
    order = sorted(everyone.members, key=lambda m: java_string_key(m.group_instance_id))
    assert [m.id for m in order] != [m.id for m in sorted(everyone.members, key=lambda m: java_string_key(m.id))]


def test_consumers_generations_include_stale_members():
    """Across a few seeds, some members report an older generation than the group's newest."""
    stale = 0
    for seed in range(5):
        inst = generate("consumers", seed, members=10)
        newest = max(m.generation for m in inst.members)
        stale += sum(m.generation < newest for m in inst.members)
    assert stale > 0


@pytest.mark.parametrize("seed", range(6))
def test_tasks_ownership_and_sparse_lags(seed):
    """Each task active on exactly one client; standbys elsewhere; lags only where state is held."""
    inst = generate("tasks", seed, tasks=40, clients=6, subtopologies=4, new_clients=1, num_standby_replicas=2)
    actives = Counter(t for c in inst.clients.values() for t in c.active)
    assert actives == Counter(list(inst.tasks))
    for c in inst.clients.values():
        assert not set(c.active) & set(c.standby)
        assert set(c.lags) <= set(c.active) | set(c.standby)
        assert all(inst.tasks[t].stateful for t in c.lags)
        assert c.capacity in range(1, 5)
        assert set(c.tags) == {"zone", "cluster"}
    standbys = Counter(t for c in inst.clients.values() for t in c.standby)
    assert all(standbys[t] == 2 for t, task in inst.tasks.items() if task.stateful)
    newest = inst.client_ids[-1]
    assert not inst.clients[newest].active and not inst.clients[newest].lags
    for tid, task in inst.tasks.items():
        holders = [c for c in inst.clients.values() if tid in c.active or tid in c.standby]
        if task.stateful:
            assert all(tid in c.lags for c in holders)
            assert task.end_offset > inst.config.acceptable_recovery_lag


def test_tasks_lag_mix_and_skew():
    """Caught-up and lagging state holders, stateless tasks and skewed sub-topologies all occur."""
    inst = generate("tasks", 9, tasks=60, clients=8, subtopologies=4, stateless_share=0.25, caught_up=0.6)
    limit = inst.config.acceptable_recovery_lag
    lags = [lag for c in inst.clients.values() for lag in c.lags.values()]
    assert any(lag <= limit for lag in lags) and any(lag > limit for lag in lags)
    assert sum(not t.stateful for t in inst.tasks.values()) > 0
    per_sub = Counter(t.subtopology for t in inst.tasks.values())
    assert len(set(per_sub.values())) > 1
    racks_missing = Counter(len(rs) for t in inst.topics.values() for rs in t.racks)
    assert set(racks_missing) == {2}  # replication factor 2 of 3 racks: each partition misses one rack


def test_tasks_benchmark_shape():
    """The issue-3 benchmark shape is reachable through parameters alone."""
    p = TasksParams(tasks=30, clients=7, racks=3, replication_factor=2, inputs=2, changelogs=1,
                    min_capacity=1, max_capacity=4, stateless_share=0.0)
    inst = generate_tasks(21, p)
    assert inst == generate("tasks", 21, tasks=30, clients=7, stateless_share=0.0)  # the defaults are the shape
    racks = {r for t in inst.topics.values() for rs in t.racks for r in rs}
    assert racks == {"r1", "r2", "r3"}
    for t in inst.tasks.values():
        assert len(t.inputs) == 2 and len(t.changelogs) == 1 and t.stateful
    assert {c.capacity for c in inst.clients.values()} <= {1, 2, 3, 4}
    assert sum(len(c.active) for c in inst.clients.values()) == 30


def test_tasks_large_instance_stays_sparse():
    """10,000 tasks x 1,000 clients: lags listed only by state holders, so the JSON stays small."""
    inst = generate("tasks", 1, tasks=10_000, clients=1_000, subtopologies=10)
    entries = sum(len(c.lags) for c in inst.clients.values())
    stateful = sum(t.stateful for t in inst.tasks.values())
    assert entries == stateful * 2  # the active owner and one previous standby per stateful task
    assert len(dumps(inst)) < 5_000_000


def test_tasks_rackless_clients_and_tags():
    """Rack-less clients and more tag dimensions are available as parameters."""
    inst = generate("tasks", 5, clients=10, rackless_clients=0.5, tags=3)
    assert any(c.rack is None for c in inst.clients.values())
    assert inst.config.rack_aware_assignment_tags == ("zone", "cluster", "host_group")
    assert all(len(c.tags) == 3 for c in inst.clients.values())


# --------------------------------------------------------------------------- scenarios


def test_every_scenario_file_is_registered():
    """Each JSON file in datasets/scenarios belongs to a documented scenario, and vice versa."""
    names = set(scenario_names())
    assert names == {s.name for s in SCENARIOS}
    for file in scenario_files():
        assert file.split(".")[0] in names, file
    for name in names:
        assert f"{name}.json" in scenario_files()
        assert describe(name).kip.startswith("KIP-")


def test_unknown_scenario():
    """An unknown scenario name is an InstanceError listing the known ones."""
    with pytest.raises(InstanceError) as info:
        load_scenario("kip999")
    assert "kip36_six_brokers" in info.value.message


@pytest.mark.parametrize("name", scenario_names())
def test_scenario_solutions_are_feasible_assignments(name):
    """Every assignment a KIP states parses against its instance and breaks no hard rule."""
    inst = load_scenario(name)
    solutions = scenario_solutions(name)
    assert solutions
    for label, sol in solutions.items():
        evaluation = evaluate(inst, parse_solution(inst, sol))
        assert evaluation.feasible, (label, evaluation.violations)


def test_kip36_adminutils_placement():
    """KIP-36: the rack-alternated list is 0,2,4,1,3,5; each partition spans 3 racks; even load."""
    inst = load_scenario("kip36_six_brokers")
    placement = parse_solution(inst, scenario_solutions("kip36_six_brokers")["adminutils"])
    assert [placement[p][0] for p in range(6)] == [0, 2, 4, 1, 3, 5]
    for replicas in placement.values():
        assert len({inst.rack_of[b] for b in replicas}) == 3
    assert Counter(b for r in placement.values() for b in r) == Counter({b: 3 for b in range(6)})


def test_kip441_scenarios():
    """KIP-441: first rebalances put actives on the most caught-up clients; stable states balance."""
    out = load_scenario("kip441_scale_out")
    first = parse_solution(out, scenario_solutions("kip441_scale_out")["first_rebalance"])
    assert all(first[c].active == out.clients[c].active for c in out.clients)
    assert first["I3"].warmup == ("0_0", "0_2")
    for name in ("kip441_scale_in_a", "kip441_scale_in_b"):
        inst = load_scenario(name)
        assign = parse_solution(inst, scenario_solutions(name)["first_rebalance"])
        limit = inst.config.acceptable_recovery_lag
        for cid, roles in assign.items():
            for t in roles.active:
                rank = {c: (0 if inst.lag(c, t) <= limit else inst.lag(c, t)) for c in inst.clients}
                assert rank[cid] == min(rank.values()), (name, t)
    loads = {c: len(r.active) for c, r in parse_solution(
        load_scenario("kip441_scale_in_b"), scenario_solutions("kip441_scale_in_b")["first_rebalance"]).items()}
    assert loads == {"I2": 3, "I3": 1}


@pytest.mark.parametrize("name", ["kip708_nine_clients", "kip708_six_nodes"])
def test_kip708_ideal_distribution(name):
    """KIP-708: the listed standby choices give the task's hosts distinct zones and clusters."""
    inst = load_scenario(name)
    hosts_needed = 1 + inst.config.num_standby_replicas
    for label, sol in scenario_solutions(name).items():
        assign = parse_solution(inst, sol)
        hosts = [c for c, r in assign.items() if "0_0" in r.active + r.standby]
        assert len(hosts) == hosts_needed
        for tag in inst.config.rack_aware_assignment_tags:
            assert len({inst.clients[c].tags[tag] for c in hosts}) == hosts_needed, (label, tag)


def test_kip925_costs():
    """KIP-925: the current assignment costs 20 (traffic 10 per cross-rack partition), the optimum 2."""
    inst = load_scenario("kip925_two_tasks")
    sols = {k: parse_solution(inst, v) for k, v in scenario_solutions("kip925_two_tasks").items()}
    initial, best = role_cost(inst, sols["initial"], "active"), role_cost(inst, sols["min_cost"], "active")
    assert (initial.traffic, initial.non_overlap, initial.total) == (20, 0, 20)
    assert (best.traffic, best.non_overlap, best.total) == (0, 2, 2)


# --------------------------------------------------------------------------- parameter fuzz

_PARAM_VALUES = {
    int: st.integers(-2, 12),
    float: st.floats(-0.5, 1.5, allow_nan=False),
    str: st.sampled_from(["equal", "mixed", "none", "min_traffic", "balance_subtopology", "x"]),
}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 10**6), data=st.data())
def test_any_parameters_give_an_instance_or_a_flag_error(family, seed, data):
    """Whatever the parameter values, generate() returns a valid instance or names the bad flag."""
    cls = PARAMS[family]
    names = data.draw(st.lists(st.sampled_from([f.name for f in fields(cls)]), max_size=4, unique=True))
    params = {n: data.draw(_PARAM_VALUES[type(getattr(cls(), n))]) for n in names}
    try:
        inst = generate(family, seed, **params)
    except InstanceError as exc:
        # the flag named is one of the family's (for a clash of two values, possibly the one left at default)
        assert exc.field.startswith("--") and exc.field[2:].replace("-", "_") in {f.name for f in fields(cls)}
        assert params
        return
    assert from_dict(to_dict(inst)) == inst


def test_decommissioning_a_broker_keeps_it_in_current_only():
    """--decommissioned-brokers: the current assignment uses the leaving broker, the cluster no longer has it."""
    inst = generate("replicas", 4, partitions=40, brokers=9, racks=3, decommissioned_brokers=1)
    ids = {b.id for b in inst.brokers}
    used = {b for replicas in inst.current.values() for b in replicas}
    assert len(ids) == 8 and len(inst.departing) == 1 and set(inst.departing) == used - ids


def test_adding_a_rack_puts_every_added_broker_on_it():
    inst = generate("replicas", 4, partitions=40, brokers=9, racks=3, added_brokers=3, added_racks=1)
    assert {b.rack for b in inst.brokers if b.id >= 9} == {"r4"} and set(inst.current) == set(inst.partition_ids)


def test_decommission_that_leaves_too_few_brokers_is_refused():
    with pytest.raises(InstanceError) as info:
        generate("replicas", 1, brokers=3, racks=1, replication_factor=3, decommissioned_brokers=1)
    assert info.value.field == "--decommissioned-brokers"


def test_direct_owner_draw_keeps_the_history_shape():
    """owner_draw='direct' (linear time) keeps the promises of the default draw: every owner subscribes,
    a double claim goes to a second, different subscriber, the shares hold roughly."""
    inst = generate("consumers", 8, partitions=3000, members=40, topics=6, owned=0.8, conflicts=0.1,
                    owner_draw="direct")
    owners = Counter()
    for m in inst.members:
        for p in m.owned:
            assert p.rsplit("-", 1)[0] in m.topics
            owners[p] += 1
    assert max(owners.values()) == 2
    claimed = len(owners) / 3000
    twice = sum(n == 2 for n in owners.values()) / len(owners)
    assert 0.75 < claimed < 0.85 and 0.07 < twice < 0.13
    assert generate("consumers", 8, partitions=50, owner_draw="direct") != generate("consumers", 8, partitions=50)
