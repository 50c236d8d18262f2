"""The solve/check façade trusts no method: it recomputes objectives and rules itself.

These tests register small throwaway methods and a rule (the registry is
module state, restored by monkeypatch) to exercise the façade's own logic
independently of any real solver.
"""

from __future__ import annotations

import json

import pytest

from kipopt import Status, TaskRoles, check, from_dict, solve
from kipopt import methods as registry
from kipopt.cli import main
from kipopt.costs import role_cost
from kipopt.methods import Method, MethodResult, Rule, Violation
from kipopt.solution import current_assignment

from examples import TASKS_SPEC_EXAMPLE as SPEC_EXAMPLE


def _active_cost(instance, assignment):
    return role_cost(instance, assignment, "active").total


def _keeps_counts(instance, assignment):
    bad = [c for c, roles in assignment.items() if len(roles.active) != len(instance.clients[c].active)]
    return [Violation("active_count_changed", len(bad), tuple(bad))] if bad else []


def _swap(instance, options):
    """Swap the two clients' actives: a feasible but worse assignment."""
    return MethodResult({"p1": TaskRoles(("0_1",)), "p2": TaskRoles(("0_0",))})


def _stay(instance, options):
    return MethodResult(current_assignment(instance), Status.OPTIMAL, objective=0, bound=0)


def _liar(instance, options):
    return MethodResult(current_assignment(instance), Status.OPTIMAL, objective=-5, bound=-5)


def _breaks_rule(instance, options):
    return MethodResult({"p1": TaskRoles(("0_0", "0_1")), "p2": TaskRoles()}, Status.OPTIMAL)


@pytest.fixture
def toy_registry(monkeypatch):
    rule = Rule("toy", "tasks", "exact.toy_stay", _active_cost, _keeps_counts, "toy active cost")
    methods = {m.name: m for m in (
        Method("kafka.toy_swap", "tasks", "toy", _swap, "swap"),
        Method("exact.toy_stay", "tasks", "toy", _stay, "stay"),
        Method("exact.toy_liar", "tasks", "toy", _liar, "claims a wrong objective"),
        Method("exact.toy_broken", "tasks", "toy", _breaks_rule, "breaks the rule"),
    )}
    monkeypatch.setattr(registry, "_methods", methods)
    monkeypatch.setattr(registry, "_rules", {"toy": rule})
    return methods


@pytest.fixture
def instance():
    return from_dict(SPEC_EXAMPLE)


def test_port_reports_the_rule_objective(toy_registry, instance):
    """A heuristic's solution carries the objective of its rule, recomputed: swap = 10 traffic + 2 moves."""
    s = solve(instance, "kafka.toy_swap")
    assert s.status is Status.FEASIBLE and s.objective == 12 and s.bound is None
    assert s.metrics["violations"] == []


def test_optimal_solution_gets_a_bound(toy_registry, instance):
    s = solve(instance, "exact.toy_stay")
    assert (s.status, s.objective, s.bound, s.gap) == (Status.OPTIMAL, 0, 0, 0.0)


def test_wrong_claimed_objective_is_an_error(toy_registry, instance):
    """Never trust a solver's own number: the claim -5 disagrees with the recomputed 0."""
    s = solve(instance, "exact.toy_liar")
    assert s.status is Status.ERROR and "claimed objective -5" in s.message


def test_exact_method_breaking_its_rule_is_an_error(toy_registry, instance):
    s = solve(instance, "exact.toy_broken")
    assert s.status is Status.ERROR and "active_count_changed" in s.message


def test_check_verdicts(toy_registry, instance):
    """The oracle: worse than optimal fails at tolerance 0, passes within a loose tolerance."""
    worse = {"p1": TaskRoles(("0_1",)), "p2": TaskRoles(("0_0",))}
    result = check(instance, worse, rule="toy")
    assert (result.objective, result.optimum, result.ok) == (12, 0, False)
    assert check(instance, worse, rule="toy", tolerance=20).ok
    assert result.gap == 1.0  # |12 - 0| / max(1, 12)
    assert check(instance, worse, rule="toy", tolerance=result.gap).ok, "a tolerance equal to the printed gap passes"
    assert not check(instance, worse, rule="toy", tolerance=0.99).ok
    assert check(instance, current_assignment(instance), rule="toy").ok


def test_cli_check_exit_codes(toy_registry, tmp_path, capsys):
    instance_path = tmp_path / "i.json"
    instance_path.write_text(json.dumps(SPEC_EXAMPLE))
    worse = tmp_path / "worse.json"
    worse.write_text(json.dumps({"assignment": {"p1": {"active": ["0_1"]}, "p2": {"active": ["0_0"]}}}))
    assert main(["check", str(instance_path), str(worse), "--rule", "toy"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["objective"], out["optimum"], out["ok"]) == (12, 0, False)
    assert main(["check", str(instance_path), str(worse), "--rule", "toy", "--tolerance", "12"]) == 0


def test_cli_solve_prints_solution_object(toy_registry, tmp_path, capsys):
    instance_path = tmp_path / "i.json"
    instance_path.write_text(json.dumps(SPEC_EXAMPLE))
    assert main(["solve", str(instance_path), "--method", "kafka.toy_swap"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"family", "method", "assignment", "status", "objective", "bound", "gap", "seconds",
                        "metrics"}
    assert out["assignment"]["p1"] == {"active": ["0_1"], "standby": [], "warmup": []}
    assert main(["solve", str(instance_path), "--method", "exact.toy_liar"]) == 1


def test_cli_unknown_method_is_bad_input(toy_registry, tmp_path, capsys):
    instance_path = tmp_path / "i.json"
    instance_path.write_text(json.dumps(SPEC_EXAMPLE))
    assert main(["solve", str(instance_path), "--method", "exact.nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kipopt: error: --method: unknown method 'exact.nope'")


@pytest.mark.parametrize("argv, field", [
    (["solve", "INSTANCE", "--method", "x", "--time-limit", "-1"], "--time-limit"),
    (["solve", "INSTANCE", "--method", "x", "--threads", "0"], "--threads"),
    (["check", "INSTANCE", "INSTANCE", "--tolerance", "nan"], "--tolerance"),
    (["frobnicate"], "invalid choice"),
])
def test_cli_bad_arguments_are_one_line(argv, field, tmp_path, capsys):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(SPEC_EXAMPLE))
    assert main([str(path) if a == "INSTANCE" else a for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


def test_a_rule_restating_an_evaluator_rule_is_reported_once(toy_registry, instance, monkeypatch):
    """A rule may re-check what the evaluator checks (e.g. replica counts); the report names it once."""
    def also_duplicate(inst, assignment):
        actives = [t for roles in assignment.values() for t in roles.active]
        twice = sorted({t for t in actives if actives.count(t) > 1})
        return _keeps_counts(inst, assignment) + ([Violation("duplicate_active", len(twice), tuple(twice))]
                                                  if twice else [])

    rule = registry._rules["toy"]
    monkeypatch.setitem(registry._rules, "toy", Rule(rule.name, rule.family, rule.exact_method, rule.objective,
                                                     also_duplicate, rule.description))
    both = {"p1": TaskRoles(("0_0", "0_1")), "p2": TaskRoles(("0_0",))}
    names = [v["rule"] for v in check(instance, both, rule="toy").to_dict()["violations"]]
    assert sorted(names) == ["active_count_changed", "duplicate_active"]


def _identity_hash_tie(instance, options):
    from kipopt.solvers.java_tree_bin import TreeTieError
    raise TreeTieError("keys 'a' and 'b' share a hash in a java.util.HashMap tree bin")


def _not_implemented(instance, options):
    raise NotImplementedError("a port's own gap")


def test_a_java_identity_hash_order_is_a_refusal_not_an_internal_error(toy_registry, instance, monkeypatch):
    """Where Kafka's answer hangs on ``System.identityHashCode`` there is nothing to reproduce: the method does
    not apply (exit 2, a message naming why), while any other ``NotImplementedError`` stays an internal error."""
    from kipopt.errors import NotApplicableError
    toy_registry["kafka.toy_tie"] = Method("kafka.toy_tie", "tasks", "toy", _identity_hash_tie, "tie")
    toy_registry["kafka.toy_gap"] = Method("kafka.toy_gap", "tasks", "toy", _not_implemented, "gap")
    with pytest.raises(NotApplicableError, match="changes from run to run"):
        solve(instance, "kafka.toy_tie")
    with pytest.raises(NotImplementedError, match="own gap"):
        solve(instance, "kafka.toy_gap")


@pytest.mark.parametrize("family, params, method", [
    ("consumers", dict(partitions=6000, members=100, topics=20), "kafka.range"),
    ("replicas", dict(partitions=2000, brokers=20, racks=3, added_brokers=2), "kafka.adminutils"),
    ("tasks", dict(tasks=300, clients=12), "kafka.sticky")])
def test_reprs_are_one_line_whatever_the_size(family, params, method):
    """A notebook cell showing a solution, a verdict or an instance printed it whole (the dataclasses' own
    reprs: 104 KB for a Solution of 6,000 partitions, 112 KB for its CheckResult, 269 KB for the instance)."""
    import kipopt
    from kipopt.datasets import generate
    x = generate(family, 1, **params)
    solution = kipopt.solve(x, method)
    for obj in (x, solution, kipopt.evaluate(x, solution), kipopt.check(x, solution, time_limit=30)):
        text = repr(obj)
        assert "\n" not in text and len(text) < 700, (type(obj).__name__, len(text))
