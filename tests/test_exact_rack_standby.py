"""``exact.rack_standby``, the rule checks of all three rules, model export and ``kipopt check``."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import highspy
import pytest
from hypothesis import HealthCheck, given, settings

from kipopt.api import solve
from kipopt.cli import main
from kipopt.costs import role_cost
from kipopt.formulations.rack_pulp import solve_standby_pulp, write_model
from kipopt.formulations.rack_standby_model import solve_standby, standby_problem
from kipopt.instance import from_dict, load_instance, to_dict
from kipopt.methods import rules
from kipopt.solution import Status, TaskRoles, assignment_to_json, current_assignment

from rack_instances import random_instance, standby_instances

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def spread_ok(instance, hosts: dict[str, set[str]]) -> bool:
    """KIP-708 spread as the rule states it, recomputed here independently."""
    for key in instance.config.rack_aware_assignment_tags:
        values = {c.tags[key] for c in instance.clients.values() if key in c.tags}
        for t, hs in hosts.items():
            seen = {instance.clients[c].tags[key] for c in hs if key in instance.clients[c].tags}
            if len(seen) < min(len(hs), len(values)):
                return False
    return True


def brute_force_standby(instance) -> int | None:
    """Minimum standby cost over every placement with the instance's counts; None if none exists."""
    clients = list(instance.clients)
    active = {t: {c for c in clients if t in instance.clients[c].active} for t in instance.tasks}
    copies = Counter(t for c in instance.clients.values() for t in c.standby)
    tasks = [t for t in instance.task_ids if copies[t]]
    choices = [list(itertools.combinations([c for c in clients if c not in active[t]], copies[t])) for t in tasks]
    best = None
    for combo in itertools.product(*choices):
        per = Counter(c for chosen in combo for c in chosen)
        if any(per[c] != len(instance.clients[c].standby) for c in clients):
            continue
        hosts = {t: set(active[t]) for t in instance.tasks}
        for t, chosen in zip(tasks, combo):
            hosts[t] |= set(chosen)
        if not spread_ok(instance, hosts):
            continue
        a = {c: TaskRoles(instance.clients[c].active, tuple(t for t, ch in zip(tasks, combo) if c in ch))
             for c in clients}
        cost = role_cost(instance, a, "standby").total
        best = cost if best is None else min(best, cost)
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(standby_instances(max_tasks=4, max_clients=4))
def test_brute_force_standby(instance):
    """Tiny instances, with and without tags: optimum == brute force, or both say infeasible."""
    s = solve(instance, "exact.rack_standby")
    expected = brute_force_standby(instance)
    if expected is None:
        assert s.status is Status.INFEASIBLE and "rack_standby" in s.message
    else:
        assert s.status is Status.OPTIMAL and s.objective == expected and s.metrics["violations"] == []


@FAST
@given(standby_instances(max_tasks=10, max_clients=6))
def test_standby_arrays_equal_pulp(instance):
    """The array model and the readable PuLP model of the standby problem agree."""
    p = standby_problem(instance)
    a, b = solve_standby(p), solve_standby_pulp(p)
    assert a.status == b.status
    if a.status == "optimal":
        assert a.objective == b.objective


@pytest.mark.parametrize("tags", [(), ("zone",)])
def test_standby_one_key_is_lp(tags):
    """No tag or one tag key: the LP is totally unimodular, solved without integrality, and integral."""
    s = solve(random_instance(4, tasks=30, clients=6, standbys=1, tags=tags), "exact.rack_standby")
    assert s.status is Status.OPTIMAL and s.metrics["ilp"] is False and s.metrics["violations"] == []


def test_generated_standby_with_tags():
    """A generated instance with zone/cluster tags: optimal or a clear infeasible message."""
    datasets = pytest.importorskip("kipopt.datasets")
    instance = datasets.generate("tasks", 11, tasks=20, clients=6, num_standby_replicas=1)
    s = solve(instance, "exact.rack_standby")
    if s.status is Status.INFEASIBLE:
        assert "tag" in s.message
    else:
        assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
        assert s.objective <= role_cost(instance, current_assignment(instance), "standby").total


# --------------------------------------------------------------------------- rule checks


def test_rack_active_violations():
    """Changed counts, Kafka's (double-precision) caps and the fair shares are each reported."""
    x = load_instance(str(Path(__file__).parent / "data" / "kip925_balance_float_cap.json"))
    kafka, fair = rules()["rack_active"], rules()["balanced_subtopology"]
    start = current_assignment(x)
    assert kafka.violations(x, start) == [] and fair.violations(x, start) == []
    assert kafka.objective(x, start) == role_cost(x, start, "active").total == 250

    def c0_takes(n0: int) -> dict:
        """c0 (14 tasks) gets n0 tasks of sub-topology 0 and 14 - n0 of sub-topology 1."""
        g0, g1 = [f"0_{p}" for p in range(25)], [f"1_{p}" for p in range(25)]
        rest0, rest1 = g0[n0:], g1[14 - n0:]
        c1 = rest0[:8] + rest1[:9]
        c2 = rest0[8:] + rest1[9:]
        return {"c0": TaskRoles(tuple(g0[:n0] + g1[:14 - n0])), "c1": TaskRoles(tuple(c1)), "c2": TaskRoles(tuple(c2))}

    eight, nine = c0_takes(8), c0_takes(9)
    assert [v.rule for v in kafka.violations(x, eight)] == []  # ceil(7.000000000000001) = 8
    assert [v.rule for v in fair.violations(x, eight)] == ["subtopology_share"]
    assert "subtopology_cap" in [v.rule for v in kafka.violations(x, nine)]
    short = dict(start, c0=TaskRoles(start["c0"].active[1:]))
    assert "active_count_changed" in [v.rule for v in kafka.violations(x, short)]
    assert "active_count_changed" in [v.rule for v in fair.violations(x, short)]


def test_standby_violations():
    """Every standby rule fires on a crafted assignment, and only those that are broken."""
    d = {"format": 1, "family": "tasks",
         "topics": {"in": {"racks": [["a"], ["b"]]}, "cl": {"racks": [["a"], ["b"]]}},
         "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]},
                   "0_1": {"inputs": ["in-1"], "changelogs": ["cl-1"]}},
         "clients": {"x": {"rack": "a", "active": ["0_0"], "standby": ["0_1"]},
                     "y": {"rack": "b", "active": ["0_1"], "standby": ["0_0"]}, "z": {"rack": "a"}},
         "config": {"num_standby_replicas": 1, "rack_aware_assignment_strategy": "min_traffic"}}
    x = from_dict(d)
    rule = rules()["rack_standby"]
    assert rule.violations(x, current_assignment(x)) == []
    assert rule.objective(x, current_assignment(x)) == 20  # both standbys read a changelog across racks
    bad = {"x": TaskRoles(("0_0",), ("0_1", "0_0")), "y": TaskRoles((), ("0_0",)), "z": TaskRoles(("0_1",))}
    assert {v.rule for v in rule.violations(x, bad)} == {
        "standby_count_changed", "task_standby_count_changed", "standby_on_active_client", "active_changed"}
    swap = {"x": TaskRoles(("0_0",), ()), "y": TaskRoles(("0_1",), ()), "z": TaskRoles((), ("0_0",))}
    assert {v.rule for v in rule.violations(x, swap)} == {"standby_count_changed", "task_standby_count_changed"}
    best = solve(x, "exact.rack_standby")
    assert best.status is Status.OPTIMAL and best.objective == 20  # z may not take a standby: counts are fixed


def test_tag_spread_violation():
    """Two hosts of one task in the same zone while another zone exists: tag_spread."""
    d = {"format": 1, "family": "tasks",
         "topics": {"in": {"racks": [["a"]]}, "cl": {"racks": [["a"]]}},
         "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]}},
         "clients": {"x": {"rack": "a", "tags": {"zone": "a"}, "active": ["0_0"]},
                     "y": {"rack": "a", "tags": {"zone": "a"}, "standby": ["0_0"]},
                     "z": {"rack": "b", "tags": {"zone": "b"}}},
         "config": {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"],
                    "rack_aware_assignment_strategy": "min_traffic"}}
    x = from_dict(d)
    assert [v.rule for v in rules()["rack_standby"].violations(x, current_assignment(x))] == ["tag_spread"]
    # the tag spread forces the standby to z (cross-rack, moved); y must keep a standby: infeasible
    s = solve(x, "exact.rack_standby")
    assert s.status is Status.INFEASIBLE
    d["clients"]["z"]["standby"] = []
    d["clients"]["y"]["tags"] = {"zone": "b"}
    assert solve(from_dict(d), "exact.rack_standby").status is Status.OPTIMAL


# --------------------------------------------------------------------------- export


@pytest.mark.parametrize("rule", ["rack_active", "balanced_subtopology", "rack_standby"])
@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_write_model_round_trip(tmp_path, rule, suffix):
    """The exported model, read back by HiGHS, has the method's optimum."""
    x = random_instance(9, tasks=10, clients=4, standbys=1, strategy="balance_subtopology")
    path = write_model(x, tmp_path / f"m{suffix}", rule)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    method = rules()[rule].exact_method
    assert round(h.getInfo().objective_function_value) == solve(x, method).objective


# --------------------------------------------------------------------------- kipopt check


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_cli_check(tmp_path, capsys):
    """check: 0 on the exact optimum, 1 on a worse or rule-breaking assignment; cost, optimum, gap printed."""
    x = random_instance(12, tasks=20, clients=5, strategy="min_traffic")
    inst = _write(tmp_path, "i.json", to_dict(x))
    best = solve(x, "exact.rack_active")
    start_cost = role_cost(x, current_assignment(x), "active").total
    assert start_cost > best.objective  # seed chosen so that the start is not optimal
    good = _write(tmp_path, "good.json", best.to_dict())
    assert main(["check", inst, good]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["objective"] == out["optimum"] == best.objective and out["gap"] == 0
    start = _write(tmp_path, "start.json", {"assignment": assignment_to_json("tasks", current_assignment(x))})
    assert main(["check", inst, start]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["objective"] == start_cost and out["gap"] > 0
    loose = (start_cost - best.objective) / best.objective + 1e-9  # tolerance is relative to the optimum
    assert main(["check", inst, start, "--tolerance", str(loose)]) == 0
    capsys.readouterr()
    broken = assignment_to_json("tasks", best.assignment)
    donor = next(c for c in broken if broken[c]["active"])
    other = next(c for c in broken if c != donor)
    broken[other]["active"].append(broken[donor]["active"].pop())
    assert main(["check", inst, _write(tmp_path, "bad.json", {"assignment": broken})]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["feasible"] and "active_count_changed" in {v["rule"] for v in out["violations"]}


def test_cli_check_standby_and_balanced(tmp_path, capsys):
    """--rule selects the standby and balanced rules; their exact outputs pass their own check."""
    x = random_instance(13, tasks=12, clients=4, standbys=1)
    inst = _write(tmp_path, "i.json", to_dict(x))
    for rule, method in (("rack_standby", "exact.rack_standby"), ("balanced_subtopology", "exact.balanced_subtopology")):
        sol = _write(tmp_path, f"{rule}.json", solve(x, method).to_dict())
        assert main(["check", inst, sol, "--rule", rule]) == 0
        assert json.loads(capsys.readouterr().out)["rule"] == rule
