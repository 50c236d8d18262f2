"""The instance contract (spec/instance-format.md) at the model level.

Round trips (load -> to_dict -> load is the identity) for every family, many
seeds and every scenario file; Kafka's defaults; every error rule raised as
an ``InstanceError`` naming the right field. The same rules seen from the
command line are in ``test_cli_errors.py``.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt._read import parse_json
from kipopt.datasets import generate, load_scenario, scenario_names
from kipopt.errors import InstanceError
from kipopt.instance import (ConsumersInstance, ReplicasInstance, TasksInstance, from_dict, java_string_key,
                             load_instance, parse_partition, parse_task_id, to_dict)

from examples import CONSUMERS_SPEC_EXAMPLE, TASKS_SPEC_EXAMPLE

REPLICAS_SPEC_EXAMPLE = {
    "format": 1, "family": "replicas",
    "brokers": [{"id": 0, "rack": "r1"}, {"id": 1, "rack": "r1"}, {"id": 2, "rack": "r2"}, {"id": 3, "rack": "r3"}],
    "partitions": 8, "replication_factor": 3, "start_index": 0, "start_partition_id": 0,
    "current": {"0": [0, 2, 3]},
}
SPEC_EXAMPLES = {"replicas": REPLICAS_SPEC_EXAMPLE, "consumers": CONSUMERS_SPEC_EXAMPLE, "tasks": TASKS_SPEC_EXAMPLE}


def round_trip(instance):
    """load -> to_dict -> JSON text -> load."""
    text = json.dumps(to_dict(instance))
    again = from_dict(parse_json(text))
    return again, text


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("family", sorted(SPEC_EXAMPLES))
def test_spec_examples_round_trip(family):
    """The examples printed in the spec are valid and survive a round trip."""
    inst = from_dict(copy.deepcopy(SPEC_EXAMPLES[family]))
    again, text = round_trip(inst)
    assert again == inst
    assert json.dumps(to_dict(again)) == text


@pytest.mark.parametrize("name", scenario_names())
def test_scenarios_round_trip(name):
    """Every KIP scenario file is the identity under load -> to_dict -> load."""
    inst = load_scenario(name)
    again, text = round_trip(inst)
    assert again == inst
    assert json.dumps(to_dict(again)) == text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(["replicas", "consumers", "tasks"]), seed=st.integers(0, 2**31 - 1),
       size=st.integers(1, 4))
def test_generated_round_trip(family, seed, size):
    """Generated instances of every family (many seeds, several sizes) round-trip exactly."""
    params = {"replicas": {"brokers": 3 * size, "partitions": 4 * size, "added_brokers": size % 3,
                           "added_racks": (size % 3) // 2},
              "consumers": {"members": 2 * size, "partitions": 5 * size, "topics": size,
                            "subscriptions": ["equal", "mixed"][size % 2], "rackless_partitions": 0.1},
              "tasks": {"tasks": 5 * size, "clients": 1 + size, "subtopologies": size, "new_clients": size // 2}}
    inst = generate(family, seed, **params[family])
    again, _ = round_trip(inst)
    assert again == inst


def test_defaults_are_filled_in_and_written_out():
    """Missing optional fields take Kafka's defaults, and to_dict writes them explicitly."""
    inst = from_dict({"format": 1, "family": "tasks", "topics": {"t": {"racks": [["a"]]}},
                      "tasks": {"0_0": {"inputs": ["t-0"]}}, "clients": {"p1": {}}})
    assert isinstance(inst, TasksInstance)
    assert inst.clients["p1"].capacity == 1 and inst.clients["p1"].rack is None
    assert inst.tasks["0_0"].stateful is False
    c = inst.config
    assert (c.num_standby_replicas, c.acceptable_recovery_lag, c.max_warmup_replicas) == (0, 10_000, 2)
    assert c.rack_aware_assignment_strategy == "none"
    assert (c.traffic_cost, c.non_overlap_cost) == (10, 1)
    d = to_dict(inst)
    assert d["clients"]["p1"] == {"rack": None, "tags": {}, "capacity": 1, "active": [], "standby": [], "lags": {}}
    assert "rack_aware_assignment_traffic_cost" not in d["config"]  # unset stays unset
    r = from_dict({"format": 1, "family": "replicas", "brokers": [{"id": 4}], "partitions": 1,
                   "replication_factor": 1})
    assert isinstance(r, ReplicasInstance)
    assert (r.start_index, r.start_partition_id, r.current) == (0, 0, None)
    m = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[]]}},
                   "members": [{"id": "m", "topics": ["t"]}]})
    assert isinstance(m, ConsumersInstance)
    assert (m.members[0].owned, m.members[0].generation) == ((), -1)


def test_stateful_defaults_to_having_changelogs():
    """``stateful`` defaults to true exactly when the task has changelog partitions."""
    inst = from_dict({"format": 1, "family": "tasks", "topics": {"t": {"racks": [["a"]]}, "c": {"racks": [["a"]]}},
                      "tasks": {"0_0": {"inputs": ["t-0"], "changelogs": ["c-0"]}}, "clients": {"p": {}}})
    assert inst.tasks["0_0"].stateful is True
    assert inst.lag("p", "0_0") == 0  # end_offset defaults to 0: no state means a lag of end_offset


def test_missing_lag_is_the_end_offset():
    """A client that lists no lag for a stateful task has lag = the task's end offset."""
    inst = from_dict(copy.deepcopy(TASKS_SPEC_EXAMPLE))
    assert inst.lag("p1", "0_1") == 12000
    d = copy.deepcopy(TASKS_SPEC_EXAMPLE)
    del d["clients"]["p1"]["lags"]["0_1"]
    assert from_dict(d).lag("p1", "0_1") == 48000


def test_orderings_follow_kafka():
    """Clients order as Java strings, tasks as (subtopology, partition), partitions split on the last '-'."""
    assert sorted(["p2", "p10", "p1"], key=java_string_key) == ["p1", "p10", "p2"]
    assert parse_partition("my-topic-12") == ("my-topic", 12)
    assert parse_task_id("10_2") == (10, 2)
    d = copy.deepcopy(TASKS_SPEC_EXAMPLE)
    d["tasks"]["0_10"] = {"inputs": ["input-0"]}
    d["tasks"]["0_9"] = {"inputs": ["input-1"]}
    assert from_dict(d).task_ids == ("0_0", "0_1", "0_9", "0_10")


def test_load_instance_reads_a_file(tmp_path):
    """load_instance takes a path (and parses strictly)."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps(REPLICAS_SPEC_EXAMPLE))
    assert load_instance(str(path)) == from_dict(REPLICAS_SPEC_EXAMPLE)


# --------------------------------------------------------------------------- error rules


def _set(d: dict, path: tuple, value) -> dict:
    d = copy.deepcopy(d)
    node = d
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


_DELETE = object()

# (id, base family, path to change, new value, field named, words in the message)
ERROR_CASES = [
    ("unknown-family", "replicas", ("family",), "brokers", "family", "must be one of"),
    ("unknown-top-field", "replicas", ("partitons",), 8, "partitons", "unknown field"),
    ("unknown-broker-field", "replicas", ("brokers", 0, "rak"), "r1", "brokers[0].rak", "unknown field"),
    ("unknown-task-field", "tasks", ("tasks", "0_0", "offset"), 5, "tasks.0_0.offset", "unknown field"),
    ("unknown-client-field", "tasks", ("clients", "p1", "threads"), 2, "clients.p1.threads", "unknown field"),
    ("unknown-config-key", "tasks", ("config", "num_standbys"), 1, "config.num_standbys", "unknown field"),
    ("unknown-member-field", "consumers", ("members", 0, "group"), "g", "members[0].group", "unknown field"),
    ("bad-partition-string", "consumers", ("members", 0, "owned"), ["orders"], "members[0].owned[0]", "not a partition"),
    ("partition-leading-zero", "consumers", ("members", 0, "owned"), ["orders-01"], "members[0].owned[0]", "not a partition"),
    ("partition-negative", "tasks", ("tasks", "0_0", "inputs"), ["input--1"], "tasks.0_0.inputs[0]", "input-"),
    ("partition-not-in-topic", "consumers", ("members", 0, "owned"), ["orders-3"], "members[0].owned[0]", "has 3 partitions"),
    ("partition-unknown-topic", "tasks", ("tasks", "0_0", "changelogs"), ["nope-0"], "tasks.0_0.changelogs[0]", "not in topics"),
    ("changelog-beyond-topic", "tasks", ("tasks", "0_1", "changelogs"), ["app-store-changelog-2"], "tasks.0_1.changelogs[0]", "has 2 partitions"),
    ("capacity-zero", "tasks", ("clients", "p1", "capacity"), 0, "clients.p1.capacity", ">= 1"),
    ("capacity-negative", "tasks", ("clients", "p2", "capacity"), -3, "clients.p2.capacity", ">= 1"),
    ("lag-negative", "tasks", ("clients", "p1", "lags", "0_1"), -1, "clients.p1.lags.0_1", ">= 0"),
    ("lag-unknown-task", "tasks", ("clients", "p1", "lags", "0_7"), 3, "clients.p1.lags.0_7", "not in tasks"),
    ("rf-negative", "replicas", ("replication_factor",), -1, "replication_factor", ">= 1"),
    ("rf-zero", "replicas", ("replication_factor",), 0, "replication_factor", ">= 1"),
    ("partitions-zero", "replicas", ("partitions",), 0, "partitions", ">= 1"),
    ("start-index-negative", "replicas", ("start_index",), -1, "start_index", ">= 0"),
    ("end-offset-negative", "tasks", ("tasks", "0_0", "end_offset"), -5, "tasks.0_0.end_offset", ">= 0"),
    ("standby-count-negative", "tasks", ("config", "num_standby_replicas"), -1, "config.num_standby_replicas", ">= 0"),
    ("group-instance-id-empty", "consumers", ("members", 0, "group_instance_id"), "", "members[0].group_instance_id", "non-empty"),
    ("group-instance-id-number", "consumers", ("members", 1, "group_instance_id"), 7, "members[1].group_instance_id", "must be a string"),
    ("generation-below-minus-one", "consumers", ("members", 1, "generation"), -2, "members[1].generation", ">= -1"),
    ("missing-partitions", "replicas", ("partitions",), _DELETE, "partitions", "required field is missing"),
    ("missing-brokers", "replicas", ("brokers",), _DELETE, "brokers", "required field is missing"),
    ("missing-broker-id", "replicas", ("brokers", 1, "id"), _DELETE, "brokers[1].id", "required field is missing"),
    ("missing-clients", "tasks", ("clients",), _DELETE, "clients", "required field is missing"),
    ("missing-inputs", "tasks", ("tasks", "0_1", "inputs"), _DELETE, "tasks.0_1.inputs", "required field is missing"),
    ("missing-racks", "consumers", ("topics", "audit", "racks"), _DELETE, "topics.audit.racks", "required field is missing"),
    ("missing-member-topics", "consumers", ("members", 0, "topics"), _DELETE, "members[0].topics", "required field is missing"),
    ("missing-format", "tasks", ("format",), _DELETE, "format", "required field is missing"),
    ("missing-family", "tasks", ("family",), _DELETE, "family", "required field is missing"),
    ("format-2", "tasks", ("format",), 2, "format", "unsupported format"),
    ("format-bool", "tasks", ("format",), True, "format", "must be the integer 1"),
    ("format-float", "consumers", ("format",), 1.0, "format", "must be the integer 1"),
    ("partitions-string", "replicas", ("partitions",), "8", "partitions", "must be an integer"),
    ("partitions-float", "replicas", ("partitions",), 8.5, "partitions", "must be an integer"),
    ("capacity-bool", "tasks", ("clients", "p1", "capacity"), True, "clients.p1.capacity", "must be an integer"),
    ("brokers-object", "replicas", ("brokers",), {}, "brokers", "must be an array"),
    ("rack-number", "replicas", ("brokers", 0, "rack"), 5, "brokers[0].rack", "must be a string"),
    ("rack-empty", "tasks", ("clients", "p1", "rack"), "", "clients.p1.rack", "non-empty"),
    ("racks-entry-null", "consumers", ("topics", "orders", "racks", 1), [None], "topics.orders.racks[1][0]", "must be a string"),
    ("racks-entry-duplicate", "consumers", ("topics", "orders", "racks", 1), ["r2", "r2"], "topics.orders.racks[1][1]", "listed twice"),
    ("topic-no-partitions", "consumers", ("topics", "audit", "racks"), [], "topics.audit.racks", "at least one partition"),
    ("stateful-string", "tasks", ("tasks", "0_0", "stateful"), "yes", "tasks.0_0.stateful", "true or false"),
    ("stateful-without-changelog", "tasks", ("tasks", "0_0", "changelogs"), [], "tasks.0_0.changelogs", "stateful task needs"),
    ("strategy-unknown", "tasks", ("config", "rack_aware_assignment_strategy"), "min_cost", "config.rack_aware_assignment_strategy", "must be one of"),
    ("tags-not-strings", "tasks", ("clients", "p1", "tags", "zone"), 1, "clients.p1.tags.zone", "must be a string"),
    ("active-unknown-task", "tasks", ("clients", "p1", "active"), ["0_5"], "clients.p1.active[0]", "not in tasks"),
    ("active-and-standby", "tasks", ("clients", "p2", "standby"), ["0_1"], "clients.p2.standby[0]", "also active"),
    ("member-duplicate-id", "consumers", ("members", 1, "id"), "c1", "members[1].id", "listed twice"),
    ("member-unknown-topic", "consumers", ("members", 1, "topics"), ["payments"], "members[1].topics[0]", "not in topics"),
    ("broker-duplicate-id", "replicas", ("brokers", 1, "id"), 0, "brokers[1].id", "listed twice"),
    ("current-negative-broker", "replicas", ("current", "0"), [0, -1], "current.0[1]", "must be an integer >= 0"),
    ("sizes-negative", "replicas", ("sizes",), {"0": -5}, "sizes.0", "must be an integer >= 0"),
    ("sizes-out-of-range", "replicas", ("sizes",), {"8": 5}, "sizes.8", "outside 0..7"),
    ("current-bad-key", "replicas", ("current", "p0"), [0], "current.p0", "not a non-negative integer"),
    ("current-out-of-range", "replicas", ("current", "8"), [0], "current.8", "outside 0..7"),
    ("current-duplicate-broker", "replicas", ("current", "0"), [1, 1], "current.0", "listed twice"),
    ("top-level-array", "replicas", (), None, "(top level)", "must be an object"),
]


def _case_document(base: str, path: tuple, value):
    if not path:
        return [SPEC_EXAMPLES[base]]
    return _set(SPEC_EXAMPLES[base], path, value)


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_error_rules_name_the_field(case):
    """Each malformed instance raises an InstanceError whose field is the offending one."""
    _, base, path, value, field, words = case
    with pytest.raises(InstanceError) as info:
        from_dict(_case_document(base, path, value))
    assert info.value.field == field
    assert words in info.value.message
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("task_id", ["0-1", "a_1", "0_1_2", "00_1", "0_01", "_1", "1_", "0_ 1", "-1_0", "0_2147483648",
                                     "2147483648_0"])
def test_task_id_must_be_subtopology_underscore_partition(task_id):
    """A task id other than canonical <subtopology>_<partition> is rejected, naming the task; one whose parts
    pass a Java int says so (it read as no task id at all)."""
    d = copy.deepcopy(TASKS_SPEC_EXAMPLE)
    d["tasks"][task_id] = {"inputs": ["input-0"]}
    with pytest.raises(InstanceError) as info:
        from_dict(d)
    assert info.value.field == f"tasks.{task_id}"
    words = "holds each part in a Java int" if "2147483648" in task_id else "not a task id"
    assert words in info.value.message


@pytest.mark.parametrize("text,field,words", [
    ('{"format": 1, "format": 1}', "format", "appears twice"),
    ('{"format": 1, "family": "tasks", "x": NaN}', "x", "NaN"),
    ('{"format": 1, "family": "tasks", "x": Infinity}', "x", "Infinity"),
    ('{"format": 1, "family": "tasks", "x": [0, -Infinity]}', "x[1]", "Infinity"),
    ('{"a": [{"b": 1}, {"b": {"c": 1, "d": 2, "c": 3}}], "e": 1}', "a[1].b.c", "appears twice"),
    ("NaN", "input", "NaN"),
    ('{"format": 1, "family": ', "input", "not valid JSON"),
    (b'\xff\xfe{}', "input", "not"),
])
def test_strict_json(text, field, words):
    """Duplicate keys, NaN/Infinity, truncated text and non-UTF-8 bytes are errors, not silently accepted."""
    with pytest.raises(InstanceError) as info:
        parse_json(text)
    assert info.value.field == field
    assert words in info.value.message


def test_group_instance_ids_are_optional_unique_and_round_trip():
    """Static membership: absent or null is a dynamic member (and is not written back); ids are unique."""
    doc = copy.deepcopy(SPEC_EXAMPLES["consumers"])
    doc["members"][0]["group_instance_id"] = "host-1"
    doc["members"][1]["group_instance_id"] = None
    inst = from_dict(doc)
    assert [m.group_instance_id for m in inst.members] == ["host-1", None]
    written = to_dict(inst)
    assert written["members"][0]["group_instance_id"] == "host-1"
    assert "group_instance_id" not in written["members"][1]
    assert from_dict(written) == inst
    doc["members"][1]["group_instance_id"] = "host-1"
    with pytest.raises(InstanceError) as info:
        from_dict(doc)
    assert info.value.field == "members[1].group_instance_id"
    assert "listed twice" in info.value.message


def test_partition_ids_stay_java_ints():
    """Kafka's partition ids are ints: AdminUtils would wrap the last ids to negative ones, which no topic has."""
    base = {"format": 1, "family": "replicas", "brokers": [{"id": 0}], "replication_factor": 1}
    assert from_dict({**base, "partitions": 1, "start_partition_id": 2 ** 31 - 1}).start_partition_id == 2 ** 31 - 1
    with pytest.raises(InstanceError, match=r"^start_partition_id: partition ids 2,147,483,646 to 2,147,483,648"):
        from_dict({**base, "partitions": 3, "start_partition_id": 2 ** 31 - 2})


def test_at_most_five_assignment_tags():
    """Kafka Streams refuses more than five ``rack.aware.assignment.tags`` (``atMostOfSize(5)``)."""
    base = {"format": 1, "family": "tasks", "topics": {"in": {"racks": [["r1"]]}},
            "tasks": {"0_0": {"inputs": ["in-0"]}}, "clients": {"p1": {}}}
    five = [f"k{i}" for i in range(5)]
    assert from_dict({**base, "config": {"rack_aware_assignment_tags": five}}).config.rack_aware_assignment_tags == \
        tuple(five)
    with pytest.raises(InstanceError, match=r"^config.rack_aware_assignment_tags: 6 tags"):
        from_dict({**base, "config": {"rack_aware_assignment_tags": five + ["k5"]}})


def test_sizes_whose_moves_could_pass_a_64_bit_count_are_refused():
    """Bytes moved are counted in 64-bit integers: an instance whose replicas could weigh more
    (replication_factor × Σ sizes) is refused naming sizes, where an answer moving 1.4e19 bytes wrapped to
    a negative count and passed check against an optimum of 6; at the limit it is read."""
    d = {"format": 1, "family": "replicas", "partitions": 2, "replication_factor": 2,
         "brokers": [{"id": b} for b in range(3)], "sizes": {"0": 2**61, "1": 2**61}}  # 2 × 2^62 = 2^63
    with pytest.raises(InstanceError) as refused:
        from_dict(d)
    assert refused.value.field == "sizes" and "2^63 - 1" in refused.value.message
    d["sizes"]["1"] = 2**61 - 1  # 2^63 - 2
    assert from_dict(d).sizes == {0: 2**61, 1: 2**61 - 1}
