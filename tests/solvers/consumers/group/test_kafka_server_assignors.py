"""The KIP-848 server-side assignor ports: Kafka's own tests, the §7 input mapping, generated instances.

Kafka's group-coordinator tests build their ``GroupSpec`` by hand: members in
a ``TreeMap`` (sorted), fixed ``Uuid`` strings for the uniform builders
(random ones for range, whose result does not depend on them), current
assignments as ``HashMap``s (``mkAssignment``) or ``LinkedHashMap``s
(``mkOrderedAssignment``) of ``HashSet<Integer>``. ``spec`` below does the
same, so each scenario runs on exactly Kafka's input; Kafka's assertions
compare each member's topic -> partition-set map, i.e. sets per member.
(``UniformAssignorTest`` does not exist at this commit; its cases live in the
two builder tests.)
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt import solve
from kipopt.datasets import generate
from kipopt.errors import InstanceError, NotApplicableError
from kipopt.instance import from_dict, to_dict
from kipopt.methods import get_method
from kipopt.solvers.java_util import hashmap_order, integer_hash, topic_uuid, uuid_from_string, uuid_hash
from kipopt.solvers.consumers.group.spec import GroupSpec, MemberSpec, group_spec, single_owner
from kipopt.solvers.consumers.client.range import range_assign
from kipopt.solvers.consumers.group.range import server_range
from kipopt.solvers.consumers.group.uniform import uniform_assign
from kipopt.solvers.consumers.group.uniform_heterogeneous import PartitionAssignorException as HeteroError
from kipopt.solvers.consumers.group.uniform_homogeneous import PartitionAssignorException as HomoError

from consumer_ports import as_sets, check_port, consumer_params, generate_from, range_balanced

T1 = uuid_from_string("T1-A4s3VTwiI5CTbEp6POw")
T2 = uuid_from_string("T2-B4s3VTwiI5YHbPp6YUe")
T3 = uuid_from_string("T3-CU8fVTLCz5YMkLoDQsa")
T4 = uuid_from_string("T4-Tw9fVTLCz5HbPp6YQsa")
NAMES = {T1: "topic1", T2: "topic2", T3: "topic3", T4: "topic4"}


def assignment(*entries, ordered: bool = False):
    """``mkAssignment`` (a HashMap: Java order by Uuid hash) or ``mkOrderedAssignment`` (listed order),
    each partition set a ``HashSet<Integer>``."""
    order = [t for t, _ in entries] if ordered else hashmap_order([t for t, _ in entries], uuid_hash)
    sets = dict(entries)
    return tuple((t, tuple(hashmap_order(sets[t], integer_hash))) for t in order)


def spec(partitions: dict, members: dict, homogeneous: bool) -> GroupSpec:
    """A hand-built ``GroupSpecImpl`` over a ``TreeMap`` of members: ``{id: (topics, assignment)}``."""
    ms = tuple(MemberSpec(mid, tuple(topics), current) for mid, (topics, current) in sorted(members.items()))
    return GroupSpec(ms, partitions, {t: NAMES[t] for t in partitions}, homogeneous)


def expect(**members) -> dict[str, set[str]]:
    """Kafka's expected ``{member: {topic: partitions}}`` as partition strings."""
    return {m: {f"{NAMES[t]}-{p}" for t, ps in topics.items() for p in ps} for m, topics in members.items()}


# --------------------------------------------------------------------------- UniformHomogeneousAssignmentBuilderTest
# (OptimizedUniformAssignmentBuilderTest at this commit)


def test_homogeneous_one_member_no_topic_subscription():
    got = uniform_assign(spec({T1: 3}, {"A": ((), ())}, True))
    assert got == {"A": ()}


def test_homogeneous_subscription_to_nonexistent_topic_throws():
    with pytest.raises(HomoError):
        uniform_assign(spec({T1: 3}, {"A": ((T2,), ())}, True))


def test_homogeneous_first_assignment_two_members_two_topics():
    got = uniform_assign(spec({T1: 3, T3: 2}, {"A": ((T1, T3), ()), "B": ((T1, T3), ())}, True))
    assert as_sets(got) == expect(A={T1: [0], T3: [0, 1]}, B={T1: [1, 2]})


def test_homogeneous_more_members_than_partitions():
    got = uniform_assign(spec({T3: 2}, {m: ((T3,), ()) for m in "ABC"}, True))
    assert as_sets(got) == expect(A={T3: [0]}, B={T3: [1]}, C={})


def test_homogeneous_validity_and_balance_for_large_sample_set():
    topics = {topic_uuid(f"topic-{i}"): 3 for i in range(1, 100)}
    s = GroupSpec(tuple(MemberSpec(f"member{i}", tuple(topics)) for i in sorted(range(1, 50), key=str)),
                  topics, {t: f"x{i}" for i, t in enumerate(topics)}, True)
    got = uniform_assign(s)
    sizes = [len(ps) for ps in got.values()]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 297
    assert len({p for ps in got.values() for p in ps}) == 297


def test_homogeneous_reassignment_given_unbalanced_previous_assignment():
    got = uniform_assign(spec({T1: 3, T2: 3}, {
        "A": ((T1, T2), assignment((T1, [0, 1]), (T2, [0, 1]), ordered=True)),
        "B": ((T1, T2), assignment((T1, [2]), (T2, [2]), ordered=True))}, True))
    assert as_sets(got) == expect(A={T1: [0, 1], T2: [0]}, B={T1: [2], T2: [1, 2]})


def test_homogeneous_reassignment_when_partitions_are_added():
    got = uniform_assign(spec({T1: 6, T2: 5}, {
        "A": ((T1, T2), assignment((T1, [0, 2]), (T2, [0]), ordered=True)),
        "B": ((T1, T2), assignment((T1, [1]), (T2, [1, 2]), ordered=True))}, True))
    assert as_sets(got) == expect(A={T1: [0, 2, 3], T2: [0, 3, 4]}, B={T1: [1, 4, 5], T2: [1, 2]})


def test_homogeneous_reassignment_when_one_member_added():
    got = uniform_assign(spec({T1: 3, T2: 3}, {
        "A": ((T1, T2), assignment((T1, [0, 2]), (T2, [0]), ordered=True)),
        "B": ((T1, T2), assignment((T1, [1]), (T2, [1, 2]), ordered=True)),
        "C": ((T1, T2), ())}, True))
    assert as_sets(got) == expect(A={T1: [0, 2]}, B={T1: [1], T2: [1]}, C={T2: [0, 2]})


def test_homogeneous_reassignment_when_one_member_removed():
    got = uniform_assign(spec({T1: 3, T2: 3}, {
        "A": ((T1, T2), assignment((T1, [0]), (T2, [0]))),
        "B": ((T1, T2), assignment((T1, [1]), (T2, [1])))}, True))
    assert as_sets(got) == expect(A={T1: [0], T2: [0, 2]}, B={T1: [1, 2], T2: [1]})


def test_homogeneous_reassignment_when_one_subscription_removed():
    got = uniform_assign(spec({T1: 2, T2: 2}, {
        "A": ((T2,), assignment((T1, [0]), (T2, [0]))),
        "B": ((T2,), assignment((T1, [1]), (T2, [1])))}, True))
    assert as_sets(got) == expect(A={T2: [0]}, B={T2: [1]})


# --------------------------------------------------------------------------- UniformHeterogeneousAssignmentBuilderTest
# (GeneralUniformAssignmentBuilderTest before KAFKA-17710)


def test_heterogeneous_two_members_no_topic_subscription():
    assert uniform_assign(spec({T1: 3}, {"A": ((), ()), "B": ((), ())}, False)) == {"A": (), "B": ()}


def test_heterogeneous_subscriptions_to_nonexistent_topics_throw():
    with pytest.raises(HeteroError):
        uniform_assign(spec({T1: 3}, {"A": ((T3,), ()), "B": ((T2,), ())}, False))


def test_heterogeneous_first_assignment_two_members_two_topics():
    got = uniform_assign(spec({T1: 3, T3: 6}, {"A": ((T1, T3), ()), "B": ((T3,), ())}, False))
    assert as_sets(got) == expect(A={T1: [0, 1, 2], T3: [4]}, B={T3: [0, 1, 2, 3, 5]})


def test_heterogeneous_more_members_than_partitions():
    got = uniform_assign(spec({T3: 1, T1: 2}, {"A": ((T3,), ()), "B": ((T3,), ()), "C": ((T1,), ())}, False))
    assert as_sets(got) == expect(A={T3: [0]}, B={}, C={T1: [0, 1]})


def test_heterogeneous_reassignment_given_unbalanced_previous_assignment():
    got = uniform_assign(spec({T1: 6, T2: 4, T3: 4}, {
        "A": ((T1,), assignment((T1, [0, 1, 2]))),
        "B": ((T1, T2), assignment((T1, [3]), (T2, [0]))),
        "C": ((T1, T2, T3), assignment((T1, [4, 5]), (T2, [1, 2, 3]), (T3, [0, 1, 2, 3])))}, False))
    assert as_sets(got) == expect(A={T1: [0, 1, 2, 5]}, B={T1: [3], T2: [0, 1, 2, 3]}, C={T1: [4], T3: [0, 1, 2, 3]})


def test_heterogeneous_reassignment_when_partitions_are_added():
    got = uniform_assign(spec({T1: 6, T2: 5, T3: 3, T4: 3}, {
        "A": ((T1, T3), assignment((T1, [0, 1, 2, 3]), (T3, [0, 1]))),
        "B": ((T1, T2, T3, T4), assignment((T2, [0, 1, 2]), (T4, [0, 1, 2])))}, False))
    assert as_sets(got) == expect(A={T1: [0, 1, 2, 3, 4, 5], T3: [0, 1, 2]}, B={T2: [0, 1, 2, 3, 4], T4: [0, 1, 2]})


def test_heterogeneous_reassignment_when_member_and_partitions_added():
    got = uniform_assign(spec({T1: 6, T2: 7}, {
        "A": ((T1,), assignment((T1, [0, 2]), (T2, [0]))),
        "B": ((T1, T2), assignment((T1, [1]), (T2, [1, 2]))),
        "C": ((T1, T2), ())}, False))
    assert as_sets(got) == expect(A={T1: [0, 2, 3, 4, 5]}, B={T1: [1], T2: [1, 2, 6]}, C={T2: [0, 3, 4, 5]})


def test_heterogeneous_reassignment_when_one_member_removed():
    got = uniform_assign(spec({T1: 3, T2: 8, T3: 3}, {
        "A": ((T1, T3), assignment((T1, [0, 1, 2]), (T3, [0, 1]))),
        "B": ((T2,), assignment((T2, [3, 4, 5, 6])))}, False))
    assert as_sets(got) == expect(A={T1: [0, 1, 2], T3: [0, 1, 2]}, B={T2: list(range(8))})


def test_heterogeneous_reassignment_when_one_subscription_removed():
    got = uniform_assign(spec({T1: 3, T2: 5}, {
        "A": ((T1,), assignment((T1, [0, 2]), (T2, [1, 3]))),
        "B": ((T1, T2), assignment((T1, [1]), (T2, [0, 2, 4])))}, False))
    assert as_sets(got) == expect(A={T1: [0, 1, 2]}, B={T2: [0, 1, 2, 3, 4]})


def test_heterogeneous_partitions_run_out_before_balance():
    got = uniform_assign(spec({T1: 2, T2: 2, T3: 2}, {
        "A": ((T1, T2, T3), assignment((T1, [0, 1]), (T2, [0, 1]), (T3, [0, 1]))),
        "B": ((T1, T2, T3), ())}, False))
    assert as_sets(got) == expect(A={T2: [0], T3: [0, 1]}, B={T1: [0, 1], T2: [1]})


def test_heterogeneous_one_member_without_subscriptions():
    got = uniform_assign(spec({T1: 3}, {"A": ((T1,), ()), "B": ((), ())}, False))
    assert as_sets(got) == expect(A={T1: [0, 1, 2]}, B={})


# --------------------------------------------------------------------------- group-coordinator RangeAssignorTest

R1, R2, R3 = (topic_uuid(n) for n in ("topic1", "topic2", "topic3"))
RNAMES = {R1: "topic1", R2: "topic2", R3: "topic3"}


def rspec(partitions: dict, members: dict, homogeneous: bool, instances: dict | None = None) -> GroupSpec:
    instances = instances or {}
    ms = tuple(MemberSpec(mid, tuple(topics), current, instances.get(mid))
               for mid, (topics, current) in sorted(members.items()))
    return GroupSpec(ms, partitions, {t: RNAMES[t] for t in partitions}, homogeneous)


def rexpect(**members):
    return {m: {f"{RNAMES[t]}-{p}" for t, ps in topics.items() for p in ps} for m, topics in members.items()}


def test_server_range_one_member_no_topic():
    assert server_range(rspec({R1: 3}, {"A": ((), ())}, True)) == {"A": ()}


def test_server_range_first_assignments():
    got = server_range(rspec({R1: 3, R3: 2}, {"A": ((R1, R3), ()), "B": ((R1, R3), ())}, True))
    assert as_sets(got) == rexpect(A={R1: [0, 1], R3: [0]}, B={R1: [2], R3: [1]})
    got = server_range(rspec({R1: 3, R2: 3, R3: 2}, {"A": ((R1, R2), ()), "B": ((R3,), ()), "C": ((R2, R3), ())}, False))
    assert as_sets(got) == rexpect(A={R1: [0, 1, 2], R2: [0, 1]}, B={R3: [0]}, C={R2: [2], R3: [1]})
    got = server_range(rspec({R1: 3, R3: 2}, {m: ((R1, R3), ()) for m in "ABC"}, True))
    assert as_sets(got) == rexpect(A={R1: [0], R3: [0]}, B={R1: [1], R3: [1]}, C={R1: [2]})


def test_server_range_static_membership_keeps_ranges_by_instance_id():
    first = server_range(rspec({R1: 5}, {m: ((R1,), ()) for m in "ACB"}, True, {"A": "instanceA", "C": "instanceC"}))
    again = server_range(rspec({R1: 5}, {m: ((R1,), ()) for m in ("memberA1", "C", "B")}, True,
                               {"memberA1": "instanceA", "C": "instanceC"}))
    assert first["A"] == again["memberA1"] and first["B"] == again["B"] and first["C"] == again["C"]


def test_instance_ids_reach_the_server_assignors():
    """group_spec carries each member's group_instance_id: server range orders static members first by instance
    id (as client range does without racks); the uniform assignor never reads it."""
    x = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[]] * 5}},
                   "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"], "group_instance_id": "z"},
                               {"id": "c", "topics": ["t"], "group_instance_id": "y"}]})
    assert [m.instance_id for m in group_spec(x).members if m.id != "a"] != [None, None]
    assert as_sets(server_range(group_spec(x, current=False))) == {"c": {"t-0", "t-1"}, "b": {"t-2", "t-3"},
                                                                   "a": {"t-4"}}
    assert as_sets(server_range(group_spec(x, current=False))) == as_sets(range_assign(x).assignment)
    dynamic = from_dict({**to_dict(x),
                        "members": [{"id": m, "topics": ["t"]} for m in "abc"]})
    assert as_sets(uniform_assign(group_spec(x))) == as_sets(uniform_assign(group_spec(dynamic)))


def test_server_range_reassignments_ignore_the_current_assignment():
    cur = lambda *e: assignment(*e)  # noqa: E731
    got = server_range(rspec({R1: 2, R2: 2}, {"A": ((R1, R2), cur((R1, [0]), (R2, [0]))),
                                              "B": ((R1, R2), cur((R1, [1]), (R2, [1]))), "C": ((R1, R2), ())}, True))
    assert as_sets(got) == rexpect(A={R1: [0], R2: [0]}, B={R1: [1], R2: [1]}, C={})
    got = server_range(rspec({R1: 4, R2: 4}, {"A": ((R1, R2), cur((R1, [0, 1]), (R2, [0, 1]))),
                                              "B": ((R1, R2), cur((R1, [2]), (R2, [2])))}, True))
    assert as_sets(got) == rexpect(A={R1: [0, 1], R2: [0, 1]}, B={R1: [2, 3], R2: [2, 3]})
    got = server_range(rspec({R1: 3, R2: 3}, {"A": ((R1, R2), cur((R1, [0, 1]), (R2, [0, 1]))),
                                              "B": ((R1, R2), cur((R1, [2]), (R2, [2]))), "C": ((R1, R2), ())}, True))
    assert as_sets(got) == rexpect(A={R1: [0], R2: [0]}, B={R1: [1], R2: [1]}, C={R1: [2], R2: [2]})
    got = server_range(rspec({R1: 4, R2: 3}, {"A": ((R1, R2), cur((R1, [0, 1]), (R2, [0, 1]))),
                                              "B": ((R1, R2), cur((R1, [2]), (R2, [2]))), "C": ((R1,), ())}, False))
    assert as_sets(got) == rexpect(A={R1: [0, 1], R2: [0, 1]}, B={R1: [2], R2: [2]}, C={R1: [3]})
    got = server_range(rspec({R1: 3, R2: 3}, {"B": ((R1, R2), cur((R1, [2]), (R2, [2])))}, True))
    assert as_sets(got) == rexpect(B={R1: [0, 1, 2], R2: [0, 1, 2]})
    got = server_range(rspec({R1: 3, R2: 3, R3: 2}, {
        "A": ((R1,), cur((R1, [0, 1, 2]), (R2, [0]))), "B": ((R1, R2, R3), cur((R2, [1]))),
        "C": ((R2,), cur((R2, [2]), (R3, [0, 1])))}, False))
    assert as_sets(got) == rexpect(A={R1: [0, 1]}, B={R1: [2], R2: [0, 1], R3: [0, 1]}, C={R2: [2]})


# --------------------------------------------------------------------------- the §7 mapping from an instance


def test_group_spec_follows_the_porting_contract():
    x = from_dict({"format": 1, "family": "consumers",
                   "topics": {"t4": {"racks": [[]] * 20}, "t1": {"racks": [[]] * 20}},
                   "members": [{"id": "b", "topics": ["t4", "t1"], "owned": ["t1-17", "t4-3", "t1-1"]},
                               {"id": "a", "topics": ["t1", "t4"]}]})
    s = group_spec(x)
    assert [m.id for m in s.members] == hashmap_order(["b", "a"]) == ["a", "b"]
    assert s.homogeneous
    b = s.members[1]
    assert b.topics == tuple(hashmap_order([topic_uuid("t4"), topic_uuid("t1")], uuid_hash))
    # partitions 17 and 1 share bucket 1 of a 16-slot HashSet<Integer>: insertion order
    assert dict(b.assignment)[topic_uuid("t1")] == (17, 1)
    assert s.assigned == {(topic_uuid("t1"), 17), (topic_uuid("t4"), 3), (topic_uuid("t1"), 1)}


def test_compute_if_absent_puts_colliding_topics_in_reverse():
    """Two topic ids in one bucket: ``computeIfAbsent`` inserts at the chain head, so the second comes first."""
    names = [f"topic-{i}" for i in range(200)]
    buckets: dict[int, list[str]] = {}
    for n in names:
        buckets.setdefault((uuid_hash(topic_uuid(n)) ^ ((uuid_hash(topic_uuid(n)) & 0xFFFFFFFF) >> 16)) & 15,
                           []).append(n)
    first, second = next(ns for ns in buckets.values() if len(ns) >= 2)[:2]
    x = from_dict({"format": 1, "family": "consumers", "topics": {first: {"racks": [[]]}, second: {"racks": [[]]}},
                   "members": [{"id": "a", "topics": [first, second], "owned": [f"{first}-0", f"{second}-0"]}]})
    order = [t for t, _ in group_spec(x).members[0].assignment]
    assert order == [topic_uuid(second), topic_uuid(first)]


def test_double_claims_make_server_methods_not_applicable():
    x = generate("consumers", 3, members=6, partitions=40, conflicts=1.0)
    reason = single_owner(x)
    assert reason is not None and reason.startswith("members[") and "is also claimed by" in reason
    for method in ("kafka.server_uniform", "kafka.server_range"):
        assert get_method(method).requires is single_owner
        with pytest.raises(NotApplicableError) as err:
            solve(x, method)
        assert isinstance(err.value, InstanceError) and str(err.value) == reason
    assert single_owner(generate("consumers", 3, members=6, partitions=40, conflicts=0.0)) is None


# --------------------------------------------------------------------------- generated instances


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(consumer_params, st.sampled_from([0.0, 0.5, 1.0]))
def test_server_ports_on_generated_instances(params, owned):
    inst = generate_from(params, owned=owned, conflicts=0.0)
    assert single_owner(inst) is None
    spec = group_spec(inst)
    uniform = uniform_assign(spec)
    check_port(inst, uniform)
    for parts in uniform.values():
        assert list(parts) == sorted(parts, key=lambda p: (p.rpartition("-")[0], int(p.rpartition("-")[2])))
    if spec.homogeneous and inst.members[0].topics:
        sizes = [len(ps) for ps in uniform.values()]
        assert max(sizes) - min(sizes) <= 1
    ranged = server_range(spec)
    check_port(inst, ranged)
    assert range_balanced(inst, ranged)
    client = range_assign(inst)
    if not client.rack_aware:  # §9: server range equals client range without rack matching
        assert as_sets(ranged) == as_sets(client.assignment)


def test_cli_answers_a_double_claim_with_exit_2_naming_the_field(tmp_path, capsys):
    from kipopt.cli import main
    from kipopt.instance import to_dict
    x = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [["a"]] * 5}},
                   "members": [{"id": "consumer-2", "topics": ["t"], "owned": ["t-4"]},
                               {"id": "consumer-1", "topics": ["t"]},
                               {"id": "consumer-3", "topics": ["t"], "owned": ["t-0", "t-4"]}]})
    path = tmp_path / "x.json"
    path.write_text(__import__("json").dumps(to_dict(x)))
    capsys.readouterr()
    assert main(["solve", str(path), "--method", "kafka.server_uniform"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kipopt: error: members[2].owned[1]: partition t-4 is also claimed by consumer-2")
    assert main(["solve", str(path), "--method", "kafka.range"]) == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(consumer_params, st.sampled_from([0.0, 0.1]))
def test_ports_are_feasible_for_their_rules(params, conflicts):
    """Through the façade: every port's output breaks no hard rule of the evaluator or of its rule."""
    inst = generate_from(params, conflicts=conflicts)
    methods = ["kafka.range"] + (["kafka.server_range", "kafka.server_uniform"] if single_owner(inst) is None else [])
    for method in methods:
        sol = solve(inst, method)
        assert sol.status.value == "feasible" and sol.metrics["violations"] == [], (method, sol.metrics["violations"])
        assert sol.objective is not None


# --------------------------------------------------------------------------- Kafka's real outputs

VECTORS = __import__("json").loads((__import__("pathlib").Path(__file__).parent / "data" / "kafka_consumer_vectors.json")
                                   .read_text())["vectors"]
STATIC = __import__("json").loads((__import__("pathlib").Path(__file__).parent / "data"
                                   / "kafka_server_static_vectors.json").read_text())
"""Groups with static members only (``RangeAssignor`` orders them by instance id before the dynamic ones)."""


def test_static_vectors_cover_what_the_instance_id_decides():
    params = [v["params"] for v in STATIC["vectors"]]
    assert STATIC["kafka_commit"] == "1eb7644349cb07139d6a3c1ad1986979647cac99" and len(params) >= 40
    assert {p["static_members"] for p in params} == {0.3, 0.6, 1.0}
    assert {p["subscriptions"] for p in params} == {"equal", "mixed"} and max(p["members"] for p in params) >= 100


@pytest.mark.parametrize("vector", VECTORS + STATIC["vectors"], ids=lambda v: f"seed{v['seed']}")
def test_ports_reproduce_kafkas_real_outputs(vector):
    """Vectors printed by Kafka's own classes (commit 1eb7644, javac 17): client range list by list (where the
    vector has it), the server assignors as sets (their lists come from Java hash sets)."""
    inst = generate("consumers", vector["seed"], **vector["params"])
    outputs = vector["outputs"]
    if "kafka.range" in outputs:
        assert range_assign(inst).assignment == {m: tuple(ps) for m, ps in outputs["kafka.range"].items()}
    spec = group_spec(inst)
    assert as_sets(uniform_assign(spec)) == as_sets(outputs["kafka.server_uniform"])
    assert as_sets(server_range(spec)) == as_sets(outputs["kafka.server_range"])


def test_server_range_equals_client_range_without_rack_matching():
    """Reference §9: whenever client range does not turn rack-aware, server range gives the same sets."""
    compared = 0
    for seed in range(60):
        inst = generate("consumers", seed, members=1 + seed % 9, topics=1 + seed % 4, partitions=10 + seed,
                        rackless_members=[0.0, 0.5, 1.0][seed % 3], replication_factor=1 + seed % 3, conflicts=0.0)
        client = range_assign(inst)
        if not client.rack_aware:
            compared += 1
            assert as_sets(server_range(group_spec(inst, current=False))) == as_sets(client.assignment)
    assert compared >= 20
