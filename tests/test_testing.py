"""``kipopt.testing``: assertion helpers for other projects' tests, under pytest and unittest alike.

Each helper passes on the right answer given in every accepted form (typed,
solution object, bare JSON assignment, path, :class:`Solution`) and fails
with an :class:`AssertionError` whose message names the broken rules with
examples and the gap; unittest counts that as a failure, not an error.
"""

from __future__ import annotations

import io
import json
import unittest

import pytest

from kipopt import InstanceError, api, methods as registry
from kipopt.datasets import generate, load_scenario
from kipopt.instance import to_dict
from kipopt.methods import Method, MethodResult, Rule, Status
from kipopt.solution import TaskRoles, assignment_to_json, current_assignment
from kipopt.testing import assert_feasible, assert_optimal, assert_same_as_kafka

INSTANCE = generate("tasks", 5, tasks=12, clients=4)
PORT = api.solve(INSTANCE, "kafka.rack_active")
START = current_assignment(INSTANCE)


def forms(tmp_path, instance, solution):
    """The same (instance, assignment) in every form the helpers accept."""
    (tmp_path / "i.json").write_text(json.dumps(to_dict(instance)))
    (tmp_path / "s.json").write_text(json.dumps(solution.to_dict()))
    as_json = assignment_to_json(instance.family, solution.assignment)
    return [(instance, solution.assignment), (to_dict(instance), {"assignment": as_json}),
            (to_dict(instance), as_json), (tmp_path / "i.json", tmp_path / "s.json"),
            (str(tmp_path / "i.json"), solution), (instance, solution.to_dict())]


def test_helpers_pass_on_the_right_answer_in_every_form(tmp_path):
    for instance, assignment in forms(tmp_path, INSTANCE, PORT):
        assert_feasible(instance, assignment)
        assert_optimal(instance, assignment, "rack_active")
        assert_same_as_kafka(instance, assignment, "kafka.rack_active")


def test_assert_feasible_lists_broken_rules_with_examples():
    broken = {c: TaskRoles() for c in INSTANCE.clients}
    with pytest.raises(AssertionError) as info:
        assert_feasible(INSTANCE, broken)
    message = str(info.value)
    assert message.startswith("the assignment breaks") and "unassigned_active (12)" in message
    assert "0_0" in message and "more" in message  # examples, then how many were not shown


def test_assert_optimal_reports_objective_optimum_and_gap():
    result = api.check(INSTANCE, START, "rack_active")
    with pytest.raises(AssertionError) as info:
        assert_optimal(INSTANCE, START, "rack_active")
    message = str(info.value)
    assert f"objective {int(result.objective)}, optimum {int(result.optimum)}" in message
    assert f"gap {result.gap:.6g} > tolerance 0" in message
    assert_optimal(INSTANCE, START, "rack_active", tolerance=result.gap)
    with pytest.raises(AssertionError, match="(?s)not feasible for rule rack_active.*unassigned_active"):
        assert_optimal(INSTANCE, {c: TaskRoles() for c in INSTANCE.clients}, "rack_active")


def test_assert_same_as_kafka_lists_differences_and_the_objective_gap():
    with pytest.raises(AssertionError) as info:
        assert_same_as_kafka(INSTANCE, START, "kafka.rack_active")
    message = str(info.value)
    assert message.startswith("the assignment differs from kafka.rack_active (org.apache.kafka")
    assert "active: missing" in message
    own = api.check(INSTANCE, START, "rack_active").objective
    assert f"objective {int(own)}, Kafka's {int(PORT.objective)} (difference {int(own - PORT.objective)})" in message


def test_replica_order_matters():
    """Swapping a partition's leader and follower is a different assignment for Kafka."""
    instance = load_scenario("kip36_six_brokers")
    port = api.solve(instance, "kafka.adminutils").assignment
    assert_same_as_kafka(instance, port, "kafka.adminutils")
    swapped = dict(port)
    swapped[0] = tuple(reversed(port[0]))
    with pytest.raises(AssertionError, match=r"partition 0: Kafka \[0, 2, 4\], got \[4, 2, 0\]"):
        assert_same_as_kafka(instance, swapped, "kafka.adminutils")


def test_consumer_partitions_compare_as_sets_and_targets_are_compared(monkeypatch):
    """With a throwaway consumer port: reordering a member's partitions is the same answer; a wrong
    ``target`` in a solution object is reported."""
    def toy(instance, options):
        assignment = {m.id: () for m in instance.members}
        assignment[instance.members[0].id] = instance.subscribed_partitions
        return MethodResult(assignment, Status.FEASIBLE, target=assignment)

    monkeypatch.setattr(registry, "_methods", {**registry.methods(),
                                               "kafka.toy": Method("kafka.toy", "consumers", "toy", toy, "toy")})
    monkeypatch.setattr(registry, "_rules", {**registry.rules(), "toy": Rule(
        "toy", "consumers", "exact.none", lambda i, a: 0, lambda i, a: [], "nothing")})
    instance = generate("consumers", 2, members=3, partitions=6)
    first, everything = instance.members[0].id, list(instance.subscribed_partitions)
    mine = {m.id: [] for m in instance.members}
    mine[first] = everything[::-1]
    assert_same_as_kafka(instance, mine, "kafka.toy")
    wrong_target = {m.id: [] for m in instance.members}
    with pytest.raises(AssertionError, match=f"target: member {first}: missing"):
        assert_same_as_kafka(instance, {"assignment": mine, "target": wrong_target}, "kafka.toy")


def test_bad_input_is_an_error_not_a_failed_assertion(tmp_path):
    with pytest.raises(InstanceError, match="capacity"):
        bad = to_dict(INSTANCE)
        next(iter(bad["clients"].values()))["capacity"] = 0
        assert_feasible(bad, START)
    with pytest.raises(InstanceError, match="client 'nobody'"):
        assert_feasible(INSTANCE, {"nobody": {"active": []}})
    with pytest.raises(InstanceError, match="^method: "):  # named as the function's argument, not a CLI flag
        assert_same_as_kafka(INSTANCE, START, "exact.rack_active")
    with pytest.raises(InstanceError, match="^rule: "):
        assert_optimal(INSTANCE, START, "fastest")
    with pytest.raises(InstanceError, match="^tolerance: rule rack_active has no criteria"):
        assert_optimal(INSTANCE, START, "rack_active", tolerance="speed=1")
    with pytest.raises(TypeError):
        assert_feasible(42, START)


# --------------------------------------------------------------------------- unittest, without a plugin


class OracleTestCase(unittest.TestCase):
    """A unittest suite as another project would write it (also collected by pytest, and passes)."""

    def test_port_answer_is_optimal(self):
        assert_optimal(INSTANCE, PORT.assignment, "rack_active")
        assert_same_as_kafka(INSTANCE, PORT, "kafka.rack_active")


def test_unittest_reports_a_failure_not_an_error():
    class Suite(unittest.TestCase):
        def test_good(self):
            assert_feasible(INSTANCE, PORT.assignment)

        def test_bad(self):
            assert_optimal(INSTANCE, START, "rack_active")

    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(Suite))
    assert result.testsRun == 2 and len(result.errors) == 0 and len(result.failures) == 1
    assert "not optimal for rule rack_active" in result.failures[0][1]


def test_same_as_kafka_runs_a_drawing_port_with_the_solutions_seed():
    """``kafka.striped``'s answer depends on java.util.Random's seed: Kafka's own answer for seed 5 was
    reported as different (the port ran with its default)."""
    from kipopt import solve
    from kipopt.datasets import generate
    from kipopt.testing import assert_same_as_kafka
    inst = generate("replicas", 5, brokers=6, racks=3, partitions=12, replication_factor=3)
    answer = solve(inst, "kafka.striped", seed=5)
    assert_same_as_kafka(inst, answer, "kafka.striped")
    assert_same_as_kafka(inst, answer.to_dict(), "kafka.striped")
    assert_same_as_kafka(inst, answer.to_dict()["assignment"], "kafka.striped", seed=5)
    with pytest.raises(AssertionError, match="differs"):
        assert_same_as_kafka(inst, answer.to_dict()["assignment"], "kafka.striped", seed=6)


def test_same_as_kafka_counts_an_entry_listed_twice():
    """Compared as sets, a partition listed twice for one member passed as Kafka's answer."""
    from kipopt import solve
    from kipopt.datasets import generate
    from kipopt.testing import assert_same_as_kafka
    inst = generate("consumers", 3, members=4, topics=3, partitions=12)
    doc = solve(inst, "kafka.range").to_dict()
    member = next(m for m, parts in doc["assignment"].items() if parts)
    doc["assignment"][member].append(doc["assignment"][member][0])
    with pytest.raises(AssertionError, match=r"extra .* \(Kafka"):
        assert_same_as_kafka(inst, doc, "kafka.range")


def test_a_bad_bare_assignment_names_its_field_once():
    from kipopt.errors import InstanceError
    from kipopt.testing import assert_feasible
    inst = {"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
            "brokers": [{"id": 0, "rack": "a"}, {"id": 1, "rack": "b"}]}
    with pytest.raises(InstanceError) as caught:
        assert_feasible(inst, {"0": [0, 99], "1": [1, 0]})
    assert caught.value.field == "assignment.0[1]"  # it read "assignment assignment.0[1]"


def test_a_member_named_assignment_is_read_from_a_solution_object_and_from_a_bare_assignment():
    """A group with a member called "assignment": the solution object ``{"assignment": {...}}`` and the
    bare assignment ``{"assignment": [...], ...}`` are each read as what they are (a path always was)."""
    doc = to_dict(generate("consumers", 3, members=3, topics=2, partitions=12))
    doc["members"][0]["id"] = "assignment"
    inst = api.as_instance(doc)
    solved = api.solve(inst, "kafka.range").to_dict()
    assert "assignment" in solved["assignment"]
    assert_same_as_kafka(inst, solved, "kafka.range")
    assert_same_as_kafka(inst, solved["assignment"], "kafka.range")
    assert_feasible(inst, solved, rule="range")
    wrong = dict(solved["assignment"], assignment=[])
    with pytest.raises(AssertionError, match="unassigned_partition"):
        assert_feasible(inst, wrong)
    with pytest.raises(AssertionError, match="unassigned_partition"):
        assert_feasible(inst, {"assignment": wrong})


@pytest.mark.parametrize("value", [[], None, 42, "".join])
def test_an_argument_of_the_wrong_type_is_an_instance_error(value):
    """As documented: bad input raises kipopt.InstanceError naming the argument (also a TypeError)."""
    with pytest.raises(InstanceError, match="^instance: not an instance") as caught:
        assert_feasible(value, START)
    assert isinstance(caught.value, TypeError)
    with pytest.raises(InstanceError, match="^assignment: not an assignment"):
        assert_feasible(INSTANCE, value)
    with pytest.raises(InstanceError, match="^instance: not an instance: Solution .*to_dict"):
        to_dict(PORT)


def test_assert_optimal_takes_a_time_limit():
    assert_optimal(INSTANCE, PORT.assignment, "rack_active", time_limit=30)
    for bad in (0, -1.0, float("inf"), float("nan"), "5", True):
        with pytest.raises(InstanceError, match="^time_limit: must be a finite number of seconds > 0, got "):
            assert_optimal(INSTANCE, PORT.assignment, "rack_active", time_limit=bad)


def test_a_client_named_assignment_beside_others_is_a_bare_assignment():
    """Tasks: ``{"assignment": {}, "p2": {...}}`` gives client ``assignment`` nothing (it was read as a solution
    object, "p2: unknown field"); ``{"assignment": {"assignment": [...], "nobody": [...]}}`` of a group is a
    solution object whose unknown member is named."""
    doc = to_dict(INSTANCE)
    first = next(iter(doc["clients"]))
    doc["clients"]["assignment"] = doc["clients"].pop(first)
    inst = api.as_instance(doc)
    bare = {c: {"active": []} for c in doc["clients"]}
    bare["assignment"] = {}
    with pytest.raises(AssertionError, match="unassigned_active"):
        assert_feasible(inst, bare)
    group = to_dict(generate("consumers", 3, members=3, topics=2, partitions=12))
    group["members"][0]["id"] = "assignment"
    with pytest.raises(InstanceError, match="nobody"):
        assert_feasible(group, {"assignment": {"assignment": [], "nobody": []}})


@pytest.mark.parametrize("call, field", [
    (lambda: assert_optimal(INSTANCE, PORT.assignment, "rack_active", time_limit=10**400), "time_limit"),
    (lambda: assert_optimal(INSTANCE, PORT.assignment, "rack_active", tolerance=10**400), "tolerance"),
    (lambda: assert_optimal(INSTANCE, PORT.assignment, ["rack_active"]), "rule"),
    (lambda: assert_same_as_kafka(INSTANCE, PORT.assignment, "kafka.rack_active", seed="x"), "seed"),
    (lambda: assert_optimal(INSTANCE, PORT.assignment, "rack_active", time_limit="5"), "time_limit"),
])
def test_odd_arguments_are_instance_errors_naming_them(call, field):
    with pytest.raises(InstanceError) as caught:
        call()
    assert caught.value.field == field
