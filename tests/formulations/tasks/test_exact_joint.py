"""``exact.joint`` and the ``joint`` rule: brute force, ports, pinned counts, time limits, priorities."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys

import pytest

from kipopt import api
from kipopt.datasets import generate
from kipopt.errors import InstanceError
from kipopt.formulations.tasks.joint import solve_joint
from kipopt.formulations.tasks.joint_stages import JointScores, priority_order, staging_table
from kipopt.instance import JOINT_STAGES, from_dict, to_dict
from kipopt.methods import methods
from kipopt.solution import Status, TaskRoles


def _vector(instance, assignment, order):
    values = JointScores.of(instance).stages(instance, assignment)
    return tuple(values[s] for s in order)


def _every_assignment(instance):
    """Every assignment meeting the joint rule's hard rules (tiny instances only)."""
    clients = instance.client_ids
    k = JointScores.of(instance).standbys
    tasks = instance.task_ids
    options = []
    for t in tasks:
        here = []
        for active in clients:
            others = [c for c in clients if c != active]
            sizes = range(k + 1) if instance.tasks[t].stateful else range(1)
            for n in sizes:
                here.extend((active, group) for group in itertools.combinations(others, n))
        options.append(here)
    for choice in itertools.product(*options):
        roles = {c: ([], []) for c in clients}
        for t, (active, standbys) in zip(tasks, choice):
            roles[active][0].append(t)
            for c in standbys:
                roles[c][1].append(t)
        yield {c: TaskRoles(tuple(a), tuple(s)) for c, (a, s) in roles.items()}


TINY = [dict(tasks=3, clients=3, subtopologies=2, stateless_share=0.5, tags=1, tag_values=2),
        dict(tasks=4, clients=3, subtopologies=1, stateless_share=0.0, tags=2, tag_values=2),
        dict(tasks=3, clients=4, subtopologies=1, stateless_share=0.0, tags=1, tag_values=2, caught_up=0.3)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("params", TINY)
def test_the_lexicographic_optimum_equals_brute_force(seed, params):
    """Enumerating every assignment that meets the hard rules finds no better stage vector (default order)."""
    x = generate("tasks", seed, **params)
    order = priority_order(x)
    best = min(_vector(x, a, order) for a in _every_assignment(x))
    solution = api.solve(x, "exact.joint")
    assert solution.status is Status.OPTIMAL
    assert tuple(solution.metrics["criteria"].values()) == best
    assert [r["value"] for r in solution.metrics["joint_stages"]] == list(best)


@pytest.mark.parametrize("order", [("traffic", "non_overlap"), ("balance", "tags", "traffic")])
def test_brute_force_agrees_under_other_priority_orders(order):
    """The order is the user's: the model follows it stage by stage."""
    x = generate("tasks", 5, **TINY[1])
    x = api.with_priorities(x, order)
    full = priority_order(x)
    assert full[:len(order)] == order and sorted(full) == sorted(JOINT_STAGES)
    best = min(_vector(x, a, full) for a in _every_assignment(x))
    solution = api.solve(x, "exact.joint")
    assert tuple(solution.metrics["criteria"].values()) == best


def _lexicographically_at_most(a, b):
    return tuple(a) <= tuple(b)


@pytest.mark.parametrize("seed", range(6))
def test_never_worse_than_any_task_port_in_lexicographic_order(seed):
    """Every kafka.* task method's assignment that meets the joint rule's hard rules scores no better."""
    x = generate("tasks", seed, tasks=30, clients=6, tags=2, strategy="min_traffic")
    exact = api.solve(x, "exact.joint")
    assert exact.status is Status.OPTIMAL
    ports = sorted(m for m, found in methods().items() if found.family == "tasks" and m.startswith("kafka."))
    assert ports, "no task port registered"
    compared = 0
    for port in ports:
        found = api.solve(x, port)
        if found.status not in (Status.OPTIMAL, Status.FEASIBLE):
            continue
        scored = api.score(x, found.assignment, "joint")
        if scored["violations"]:
            continue
        assert _lexicographically_at_most(exact.metrics["criteria"].values(), scored["criteria"].values()), port
        assert exact.objective <= scored["objective"], port
        compared += 1
    assert compared >= 1


@pytest.mark.parametrize("seed", range(4))
def test_with_counts_pinned_the_traffic_stage_equals_rack_active(seed):
    """Per-client active counts pinned to the instance's, no standbys, traffic first: exact.rack_active's optimum."""
    x = generate("tasks", seed, tasks=40, clients=8, strategy="min_traffic", non_overlap_cost=0,
                 num_standby_replicas=0, current_standbys=0)
    counts = {c: len(x.clients[c].active) for c in x.client_ids}
    solution = solve_joint(x, ["traffic"], pinned_active_counts=counts)
    rows = {r["stage"]: r for r in solution.stage_rows()}
    assert rows["traffic"]["status"] == "optimal"
    assert rows["traffic"]["value"] == api.solve(x, "exact.rack_active").objective
    assert {c: len(r.active) for c, r in solution.assignment.items()} == counts


def test_a_time_limit_returns_an_assignment_with_the_stage_where_it_stopped(monkeypatch):
    """At the limit: status feasible, an assignment that breaks no hard rule, a bound below the objective.
    The model's own time-limit path, so the guard (which answers with the start when no time is left,
    ``tests/test_limits.py``) is bypassed."""
    from kipopt.formulations.tasks import guard
    monkeypatch.setattr(guard, "run_guarded",
                        lambda instance, options, run, start, objective=None: run(instance, options))
    x = generate("tasks", 1, tasks=120, clients=12, tags=2)
    solution = api.solve(x, "exact.joint", time_limit=0.001)
    assert solution.status is Status.FEASIBLE
    assert solution.metrics["violations"] == []
    assert solution.bound is not None and solution.bound <= solution.objective
    assert solution.gap is not None
    assert "time limit reached in stage" in solution.message
    assert any(r["status"] != "optimal" for r in solution.metrics["joint_stages"])


def test_the_start_the_guard_answers_with_carries_its_stages():
    """No time for the model (the guard answers with the start): ``joint_stages`` still holds every stage,
    its value the start's and its status ``not_reached``, in the run's order (it was missing)."""
    x = generate("tasks", 1, tasks=120, clients=12, tags=2)
    solution = api.solve(api.with_priorities(x, ("traffic",)), "exact.joint", time_limit=0.001)
    assert solution.status is Status.FEASIBLE and solution.metrics["model"] == "start"
    rows = solution.metrics["joint_stages"]
    assert [r["stage"] for r in rows] == solution.metrics["joint_order"] == list(solution.metrics["criteria"])
    assert rows[0]["stage"] == "traffic" and all(r["status"] == "not_reached" for r in rows)
    assert {r["stage"]: r["value"] for r in rows} == solution.metrics["criteria"]


def test_the_staging_table_says_where_a_port_first_falls_short():
    x = generate("tasks", 2, tasks=30, clients=6, tags=2)
    exact = api.solve(x, "exact.joint")
    port = api.solve(x, "kafka.rack_active")
    rows = {r["method"]: r for r in staging_table(x, {"exact.joint": exact.assignment,
                                                      "kafka.rack_active": port.assignment})}
    assert rows["exact.joint"]["first_shortfall"] is None
    stage, by = rows["kafka.rack_active"]["first_shortfall"], rows["kafka.rack_active"]["shortfall"]
    order = priority_order(x)
    if stage is None:
        assert all(rows["kafka.rack_active"][s] == rows["exact.joint"][s] for s in order)
    else:
        earlier = order[:order.index(stage)]
        assert all(rows["kafka.rack_active"][s] == rows["exact.joint"][s] for s in earlier)
        assert by > 0


def test_more_standbys_than_allowed_is_a_violation_of_the_rule():
    x = generate("tasks", 3, tasks=6, clients=4, num_standby_replicas=1)
    exact = api.solve(x, "exact.joint")
    spare = dict(exact.assignment)
    task = next(t for t in x.task_ids if x.tasks[t].stateful)
    free = next(c for c in x.client_ids if task not in spare[c].active + spare[c].standby)
    spare[free] = dataclasses.replace(spare[free], standby=spare[free].standby + (task,))
    assert api.score(x, spare, "joint")["violations"] == 1


def test_joint_priorities_are_validated_naming_the_field():
    d = to_dict(generate("tasks", 1, tasks=6, clients=3))
    d["config"]["joint_priorities"] = ["traffic", "traffic"]
    with pytest.raises(InstanceError, match=r"config.joint_priorities\[1\]"):
        from_dict(d)
    d["config"]["joint_priorities"] = ["traffic", "latency"]
    with pytest.raises(InstanceError, match=r"config.joint_priorities\[1\]: unknown stage 'latency'"):
        from_dict(d)
    d["config"]["joint_priorities"] = ["balance"]
    assert from_dict(d).config.joint_priorities == ("balance",)
    assert to_dict(from_dict(d))["config"]["joint_priorities"] == ["balance"]


def test_cli_priorities_override_the_instance_and_are_validated(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(to_dict(generate("tasks", 1, tasks=12, clients=4))))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "kipopt", "solve", str(path), "--method", "exact.joint", *args],
                              capture_output=True, text=True, timeout=120)

    done = run("--priorities", "traffic,non_overlap")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["metrics"]["joint_order"][:2] == ["traffic", "non_overlap"]
    assert list(out["metrics"]["criteria"])[:2] == ["traffic", "non_overlap"]
    bad = run("--priorities", "traffic,speed")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == ["kipopt: error: --priorities[1]: unknown stage 'speed'; stages: "
                                               "caught_up, standbys, tags, balance, traffic, non_overlap"]


def test_the_oracle_scores_a_solution_in_the_joint_order_it_records(tmp_path):
    """A solution ``solve --priorities`` wrote records its order (``metrics.joint_order``): check, a batch
    line and assert_optimal score it in that order (it was 'NOT ok', gap 0.99, unless --priorities was
    repeated); a malformed order is exit 2 naming the field."""
    from kipopt.batch import Oracle
    from kipopt.cli import main
    from kipopt.testing import assert_optimal
    inst = generate("tasks", 1, tasks=12, clients=4)
    order = ("traffic", "tags")
    doc = api.solve(api.with_priorities(inst, order), "exact.joint").to_dict()
    assert doc["status"] == "optimal" and doc["metrics"]["joint_order"][:2] == list(order)
    assert api.check(inst, doc).ok and api.check(inst, doc, priorities="caught_up").gap > 0
    assert_optimal(inst, doc)
    line = json.dumps({"id": 1, "instance": to_dict(inst), "solution": doc})
    assert Oracle("check").answer(line)[0]["ok"]
    (tmp_path / "i.json").write_text(json.dumps(to_dict(inst)))
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "i.json"), str(tmp_path / "s.json")]) == 0
    doc["metrics"]["joint_order"] = ["speed"]
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "i.json"), str(tmp_path / "s.json")]) == 2


def test_the_bench_scores_every_method_on_the_joint_rule():
    """A grid family's ``score_rules``: each method gets a second row, on the joint rule, with its stage
    vector and the first stage where it falls short of exact.joint."""
    from kipopt.bench import grid as G
    from kipopt.bench import pipeline as P

    grid = G.parse_grid({"families": {"tasks": {
        "seeds": 1, "methods": ["kafka.rack_active", "exact.rack_active"], "score_rules": ["joint"],
        "sizes": [{"tasks": 24, "clients": 6}]}}})
    (item,) = P.expand(grid)
    assert item.score_rules == ("joint",) and P.WorkItem.from_row(item.to_row()) == item
    rows = P.run_item(item, P.ItemSettings(None, 5.0, 1, G.DEFAULT_GENERATOR, ()))
    by = {(r["method"], r["rule"]): r for r in rows}
    assert set(by) == {("exact.rack_active", "rack_active"), ("kafka.rack_active", "rack_active"),
                       ("exact.joint", "joint"), ("kafka.rack_active", "joint"), ("exact.rack_active", "joint")}
    exact = by[("exact.joint", "joint")]
    assert exact["status"] == "optimal" and exact["gap"] == 0
    instance = G.load_generator(G.DEFAULT_GENERATOR)("tasks", item.seed, **dict(item.params))
    port = api.solve(instance, "kafka.rack_active")
    scored = by[("kafka.rack_active", "joint")]
    assert scored["objective"] == api.score(instance, port.assignment, "joint")["objective"]
    assert scored["objective"] >= exact["objective"]
    metrics = json.loads(scored["metrics"])
    assert metrics["criteria_order"] == list(priority_order(instance))
    assert metrics["criteria"] == api.score(instance, port.assignment, "joint")["criteria"]
    assert "first_shortfall" in metrics
    criteria = json.loads(scored["criteria"])
    assert [c[0] for c in criteria] == list(priority_order(instance))
    exact_values = api.score(instance, api.solve(instance, "exact.joint").assignment, "joint")["criteria"]
    assert [c[2] for c in criteria] == list(exact_values.values())


def test_score_rules_are_validated_naming_the_field():
    from kipopt.bench import grid as G
    with pytest.raises(InstanceError, match=r"families.tasks.score_rules\[0\]: no rule 'spread' for family tasks"):
        G.parse_grid({"families": {"tasks": {"seeds": 1, "methods": ["exact.joint"], "score_rules": ["spread"]}}})


def test_check_reports_every_stage_of_the_assignment_and_of_the_optimum():
    """For a lexicographic rule the oracle says where an assignment falls short, not only the scalar gap."""
    x = generate("tasks", 4, tasks=30, clients=6, tags=2)
    port = api.solve(x, "kafka.rack_active")
    verdict = api.check(x, port.assignment, rule="joint").to_dict()
    assert list(verdict["criteria"]) == list(priority_order(x))
    assert verdict["criteria"] == api.score(x, port.assignment, "joint")["criteria"]
    assert verdict["optimum_criteria"] == api.solve(x, "exact.joint").metrics["criteria"]
    assert "criteria" not in api.check(x, port.assignment, rule="rack_active").to_dict()


def test_a_lexicographic_objective_beyond_double_precision_still_writes_its_row(tmp_path):
    """The joint rule's scalar can exceed 2**53 (it encodes six stages): the Parquet row keeps it as the
    nearest double instead of failing the item's write (and with it the Spark job)."""
    from kipopt.bench import pipeline as P
    from kipopt.methods import rules

    big = 2**60 + 1
    run = P.MethodRun("feasible", objective=big, metrics={"criteria": {"traffic": 3}})
    row = P._row({"item_id": "x", "instance_id": "x", "family": "tasks", "params": "{}", "seed": 1},
                 "kafka.ha", 10.0, rules()["joint"], run, None)
    P.write_part(str(tmp_path), "x", [row])
    import pyarrow.parquet as pq
    assert pq.read_table(str(tmp_path / P.RESULTS_DIR / "x.parquet")).column("objective")[0].as_py() == float(big)


def test_priorities_for_a_rule_other_than_joint_are_refused_not_ignored():
    """--priorities orders the joint rule only: on a method or check of another rule it would change
    nothing, so it is exit 2 naming it (it was accepted and ignored)."""
    x = generate("tasks", 1, tasks=12, clients=4)
    with pytest.raises(InstanceError, match="^--priorities: .*exact.lag_active is scored on rule lag_active"):
        api.solve(x, "exact.lag_active", priorities="traffic")
    start = api.solve(x, "kafka.ha")
    with pytest.raises(InstanceError, match="^--priorities: .*on rule lag_active"):
        api.check(x, start, rule="lag_active", priorities="traffic")


def test_a_stage_stopped_by_memory_is_not_called_a_time_limit():
    """Under ``ulimit -v`` HiGHS stopped the 'balance' stage with 'Memory limit reached', and exact.joint said
    "time limit reached in stage 'balance'" with no time limit given."""
    from types import SimpleNamespace
    from kipopt.formulations.tasks.joint import _stopped_message
    memory = SimpleNamespace(message="Memory limit reached", status="out_of_memory", stopped=3)
    assert _stopped_message(memory, "balance") == "the model stopped in stage 'balance': Memory limit reached"
    timed = SimpleNamespace(message="time limit in stage 4 of 6", status="feasible", stopped=3)
    assert _stopped_message(timed, "balance") == "time limit reached in stage 'balance'"
    realized = SimpleNamespace(message="", status="optimal", stopped=None)
    assert "misses the model's value" in _stopped_message(realized, "balance")
