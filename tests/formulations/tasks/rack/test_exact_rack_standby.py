"""``exact.rack_standby``, the rule checks of all three rules, model export and ``kipopt check``."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import highspy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.api import solve
from kipopt.cli import main
from kipopt.costs import role_cost
from kipopt.formulations.tasks.rack.pulp_models import solve_standby_pulp, write_model
from kipopt.formulations.tasks.rack.standby_model import solve_standby, standby_problem
from kipopt.formulations.tasks.rack.rules import run_rack_standby
from kipopt.instance import from_dict, load_instance, to_dict
from kipopt.methods import SolveOptions, rules
from kipopt.solution import Status, TaskRoles, assignment_to_json, current_assignment

from rack_instances import random_instance, standby_instances, tagged_standby_instances

FAST = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def distinct_pairs(instance, hosts: set[str]) -> int:
    """Distinct (tag key, value) pairs over ``hosts``, every key counted (recomputed here independently)."""
    return len({kv for c in hosts for kv in instance.clients[c].tags.items()})


def distinctness_ok(instance, start: dict[str, set[str]], hosts: dict[str, set[str]]) -> bool:
    """No task's hosts carry fewer distinct tag pairs than at the start (only with tags configured)."""
    if not instance.config.rack_aware_assignment_tags:
        return True
    return all(distinct_pairs(instance, hosts[t]) >= distinct_pairs(instance, start[t]) for t in hosts)


def brute_force_standby(instance) -> int:
    """Minimum standby cost over every placement with the instance's counts and tag distinctness."""
    clients = list(instance.clients)
    active = {t: {c for c in clients if t in instance.clients[c].active} for t in instance.tasks}
    copies = Counter(t for c in instance.clients.values() for t in c.standby)
    tasks = [t for t in instance.task_ids if copies[t]]
    choices = [list(itertools.combinations([c for c in clients if c not in active[t]], copies[t])) for t in tasks]
    start = {t: active[t] | {c for c in clients if t in instance.clients[c].standby} for t in instance.tasks}
    best = None
    for combo in itertools.product(*choices):
        per = Counter(c for chosen in combo for c in chosen)
        if any(per[c] != len(instance.clients[c].standby) for c in clients):
            continue
        hosts = {t: set(active[t]) for t in instance.tasks}
        for t, chosen in zip(tasks, combo):
            hosts[t] |= set(chosen)
        if not distinctness_ok(instance, start, hosts):
            continue
        a = {c: TaskRoles(instance.clients[c].active, tuple(t for t, ch in zip(tasks, combo) if c in ch))
             for c in clients}
        cost = role_cost(instance, a, "standby").total
        best = cost if best is None else min(best, cost)
    assert best is not None  # the starting assignment is always a candidate
    return best


@FAST
@given(standby_instances(max_tasks=4, max_clients=4, tags=False))
def test_brute_force_standby_without_tags(instance):
    """Tiny instances without tags: optimum == brute force."""
    s = solve(instance, "exact.rack_standby")
    assert s.status is Status.OPTIMAL and s.objective == brute_force_standby(instance)
    assert s.metrics["violations"] == []


@FAST
@given(tagged_standby_instances(max_tasks=5, max_clients=5))
def test_brute_force_standby_with_tags(instance):
    """Tiny tagged instances (zone, or zone and host; few values): optimum == brute force, never infeasible."""
    s = solve(instance, "exact.rack_standby")
    assert s.status is Status.OPTIMAL and s.objective == brute_force_standby(instance)
    assert s.metrics["violations"] == []


@FAST
@given(st.one_of(standby_instances(max_tasks=10, max_clients=6, tags=True),
                 tagged_standby_instances(max_tasks=12, max_clients=6)))
def test_standby_arrays_equal_pulp(instance):
    """The array model and the readable PuLP model of the tagged standby problem agree."""
    p = standby_problem(instance)
    a, b = solve_standby(p), solve_standby_pulp(p)
    assert a.status == b.status
    if a.status == "optimal":
        assert a.objective == b.objective


def test_standby_without_tags_is_lp():
    """Without tags the LP is totally unimodular: solved without integrality, no tag rows, and integral."""
    s = solve(random_instance(4, tasks=30, clients=6, standbys=1), "exact.rack_standby")
    assert s.status is Status.OPTIMAL and s.metrics["ilp"] is False and s.metrics["tag_rows"] == 0
    assert s.metrics["violations"] == []


@pytest.mark.parametrize("seed", range(3))
def test_generated_standby_with_tags(seed):
    """Generated instances with zone/cluster tags: optimal (the start is feasible), at most the start's cost."""
    datasets = pytest.importorskip("kipopt.datasets")
    instance = datasets.generate("tasks", 11 + seed, tasks=40, clients=8, num_standby_replicas=1)
    s = solve(instance, "exact.rack_standby")
    assert s.status is Status.OPTIMAL and s.metrics["violations"] == []
    assert run_rack_standby(instance, SolveOptions(), model="clients").info["tag_rows"] > 0
    assert s.objective <= role_cost(instance, current_assignment(instance), "standby").total


def binding_instance(tags: tuple[str, ...] = ("zone",)) -> dict:
    """Three tasks, one standby each on c0, c1, c3; 0_1's cheapest host shares its active's zone.

    Standby costs (traffic 10 per cross-rack changelog, 1 per move): 0_0
    (changelog on rack b) costs 10 on c1 and 1 on c3; 0_1 (rack a) costs 10
    on c3, 11 on c0, 1 on c1; 0_2 (rack a) costs 10 on c0, 1 on c1. The
    start costs 30. Without tags the optimum is 12 (0_0 -> c3, 0_1 -> c1,
    0_2 -> c0), but then 0_1's hosts c2 and c1 both carry zone c: 1 pair,
    it had 2 (zones c and b). With tags the optimum is 13 (0_0 -> c3,
    0_1 -> c0, 0_2 -> c1), which keeps 2 distinct zones for every task.
    """
    return {"format": 1, "family": "tasks",
            "topics": {"in": {"racks": [["a"], ["a"], ["a"]]}, "cl": {"racks": [["b"], ["a"], ["a"]]}},
            "tasks": {f"0_{i}": {"inputs": [f"in-{i}"], "changelogs": [f"cl-{i}"]} for i in range(3)},
            "clients": {"c0": {"rack": "b", "tags": {"zone": "a"}, "active": ["0_0"], "standby": ["0_2"]},
                        "c1": {"rack": "a", "tags": {"zone": "c"}, "standby": ["0_0"]},
                        "c2": {"rack": "a", "tags": {"zone": "c"}, "active": ["0_1"]},
                        "c3": {"rack": "b", "tags": {"zone": "b"}, "active": ["0_2"], "standby": ["0_1"]}},
            "config": {"num_standby_replicas": 1, "rack_aware_assignment_strategy": "min_traffic",
                       "rack_aware_assignment_tags": list(tags)}}


def test_tag_distinctness_binds():
    """The cheapest placement would lose a distinct zone, so the tagged optimum pays one more."""
    free, tagged = from_dict(binding_instance(())), from_dict(binding_instance())
    assert role_cost(tagged, current_assignment(tagged), "standby").total == 30
    loose = solve(free, "exact.rack_standby")
    assert loose.status is Status.OPTIMAL and loose.objective == 12 == brute_force_standby(free)
    assert loose.assignment["c1"].standby == ("0_1",)
    dropped = rules()["rack_standby"].violations(tagged, loose.assignment)
    assert [(v.rule, v.examples) for v in dropped] == [
        ("tag_distinctness_dropped", ("0_1: 1 distinct tag pairs, had 2",))]
    best = solve(tagged, "exact.rack_standby")
    assert best.status is Status.OPTIMAL and best.objective == 13 == brute_force_standby(tagged)
    assert best.metrics["violations"] == []
    assert {c: r.standby for c, r in best.assignment.items()} == {"c0": ("0_1",), "c1": ("0_2",), "c2": (),
                                                                   "c3": ("0_0",)}


def test_distinctness_rows_only_where_needed():
    """Rows only for tasks whose start adds pairs beyond their actives'; no indicator for an active's pair."""
    x = from_dict(binding_instance())
    p = standby_problem(x)
    g = p.tags
    assert g.pairs == (("zone", "a"), ("zone", "b"), ("zone", "c"))
    # every task's standby adds one zone to its active's
    assert g.need_task.tolist() == [0, 1, 2] and g.need.tolist() == [1, 1, 1]
    made = {(p.tasks[t], g.pairs[k][1]) for t, k in zip(g.pair_task.tolist(), g.pair_id.tolist())}
    assert made == {("0_0", "b"), ("0_0", "c"), ("0_1", "a"), ("0_1", "b"), ("0_2", "a"), ("0_2", "c")}
    d = binding_instance()
    d["clients"]["c1"]["tags"] = {"zone": "a"}  # 0_0's standby now adds nothing: no row for it
    assert standby_problem(from_dict(d)).tags.need_task.tolist() == [1, 2]
    r = run_rack_standby(from_dict(d), SolveOptions(), model="clients")
    assert r.status is Status.OPTIMAL and r.info["tag_rows"] == 2


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


def test_tag_distinctness_violation():
    """Every tag key counts, not only the configured ones: a swap keeping the zones but losing a host fails.

    0_0 starts on x (zone a, host h1) and y (zone b, host h2): 4 pairs.
    Swapped to z (zone b, host h1) it keeps both zones but has 3 pairs.
    """
    d = {"format": 1, "family": "tasks",
         "topics": {"in": {"racks": [["a"], ["a"]]}, "cl": {"racks": [["a"], ["a"]]}},
         "tasks": {"0_0": {"inputs": ["in-0"], "changelogs": ["cl-0"]},
                   "0_1": {"inputs": ["in-1"], "changelogs": ["cl-1"]}},
         "clients": {"x": {"rack": "a", "tags": {"zone": "a", "host": "h1"}, "active": ["0_0", "0_1"]},
                     "y": {"rack": "a", "tags": {"zone": "b", "host": "h2"}, "standby": ["0_0"]},
                     "z": {"rack": "a", "tags": {"zone": "b", "host": "h1"}, "standby": ["0_1"]}},
         "config": {"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"],
                    "rack_aware_assignment_strategy": "min_traffic"}}
    x = from_dict(d)
    rule = rules()["rack_standby"]
    assert rule.violations(x, current_assignment(x)) == []
    swap = {"x": TaskRoles(("0_0", "0_1")), "y": TaskRoles((), ("0_1",)), "z": TaskRoles((), ("0_0",))}
    assert [(v.rule, v.count, v.examples) for v in rule.violations(x, swap)] == [
        ("tag_distinctness_dropped", 1, ("0_0: 3 distinct tag pairs, had 4",))]
    d["config"]["rack_aware_assignment_tags"] = []  # without configured tags there is no tag constraint
    assert rule.violations(from_dict(d), swap) == []


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


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_write_tagged_standby_model(tmp_path, suffix):
    """With tag rows the export is the ILP (binary y and z); read back, it has the tagged optimum."""
    path = write_model(from_dict(binding_instance()), tmp_path / f"m{suffix}", "rack_standby")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert round(h.getInfo().objective_function_value) == 13


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
    assert main(["check", inst, start, "--rule", "rack_active"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["objective"] == start_cost and out["gap"] > 0
    loose = (start_cost - best.objective) / best.objective + 1e-9  # tolerance is relative to the optimum
    assert main(["check", inst, start, "--rule", "rack_active", "--tolerance", str(loose)]) == 0
    capsys.readouterr()
    broken = assignment_to_json("tasks", best.assignment)
    donor = next(c for c in broken if broken[c]["active"])
    other = next(c for c in broken if c != donor)
    broken[other]["active"].append(broken[donor]["active"].pop())
    assert main(["check", inst, _write(tmp_path, "bad.json", {"assignment": broken}), "--rule", "rack_active"]) == 1
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


def test_a_large_time_limited_standby_solve_runs_in_a_child_with_the_same_answer(monkeypatch):
    """Above HARD_DEADLINE_COLUMNS a time-limited solve of the task-level models runs in a forked child the
    deadline can kill (HiGHS' model set-up does not watch the clock); the answer is the in-process one."""
    from kipopt.datasets import generate
    from kipopt.formulations.tasks.rack import standby_model as M

    x = generate("tasks", 3, tasks=40, clients=8, tags=2)
    here = run_rack_standby(x, SolveOptions(time_limit=60), model="tasks")
    monkeypatch.setattr(M, "HARD_DEADLINE_COLUMNS", 0)
    child = run_rack_standby(x, SolveOptions(time_limit=60), model="tasks")
    assert child.status == here.status and child.objective == here.objective
    assert child.info["killed_at_deadline"] is False and child.assignment == here.assignment


def reference_distinct_pairs(instance, roles) -> dict:
    """The set-per-task count :func:`distinct_tag_pairs` vectorises."""
    found = {t: set() for t, task in instance.tasks.items() if task.stateful}
    for cid, r in roles.items():
        for t in (*r.active, *r.standby):
            if t in found:
                found[t].update(instance.clients[cid].tags.items())
    return {t: len(s) for t, s in found.items()}


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tagged_standby_instances(max_tasks=10, max_clients=6))
def test_distinct_tag_pairs_counts_as_sets_do(instance):
    from kipopt.formulations.tasks.rack.standby_model import distinct_tag_pairs

    start = current_assignment(instance)
    assert distinct_tag_pairs(instance, start) == reference_distinct_pairs(instance, start)
    best = solve(instance, "exact.rack_standby").assignment
    assert distinct_tag_pairs(instance, best) == reference_distinct_pairs(instance, best)
