"""The shipped JSON Schemas (kipopt/schemas/*.json) agree with the validator.

Every generated instance and every scenario file validates against its
family's schema; the schema rejects the structural errors (unknown fields,
bad task ids and partition strings, out-of-range numbers, wrong types);
``kipopt schema FAMILY`` prints exactly the shipped schema.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.cli import main
from kipopt.datasets import generate, load_scenario, scenario_names
from kipopt.errors import InstanceError
from kipopt.instance import FAMILIES, from_dict, to_dict
from kipopt.schemas import schema

from test_instance import ERROR_CASES, SPEC_EXAMPLES, _case_document


def validator(family: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(family))


@pytest.mark.parametrize("family", FAMILIES)
def test_schema_is_valid_draft_2020_12(family):
    """Each schema is itself a valid draft 2020-12 schema, closed to unknown top-level fields."""
    s = schema(family)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["additionalProperties"] is False
    assert "cross reference" in s["description"]


@pytest.mark.parametrize("family", FAMILIES)
def test_cli_prints_the_schema(family, capsys):
    """``kipopt schema FAMILY`` prints the shipped schema as JSON."""
    assert main(["schema", family]) == 0
    assert json.loads(capsys.readouterr().out) == schema(family)


def test_unknown_family_has_no_schema(capsys):
    """Asking for a schema of an unknown family is a one-line usage error."""
    with pytest.raises(InstanceError):
        schema("brokers")
    assert main(["schema", "brokers"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kipopt: error:")


@pytest.mark.parametrize("family", FAMILIES)
def test_spec_examples_validate(family):
    """The spec's own examples satisfy the schemas, before and after canonicalisation."""
    validator(family).validate(SPEC_EXAMPLES[family])
    validator(family).validate(to_dict(from_dict(copy.deepcopy(SPEC_EXAMPLES[family]))))


@pytest.mark.parametrize("name", scenario_names())
def test_scenarios_validate(name):
    """Every KIP scenario file (as written, and canonicalised) satisfies its schema."""
    inst = load_scenario(name)
    from kipopt.datasets.scenarios import _folder
    raw = json.loads(_folder().joinpath(f"{name}.json").read_text("utf-8"))
    validator(inst.family).validate(raw)
    validator(inst.family).validate(to_dict(inst))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 2**31 - 1))
def test_generated_instances_validate(family, seed):
    """Generated instances of every family satisfy their schema."""
    validator(family).validate(to_dict(generate(family, seed)))


# The structural errors a schema can see (cross references it cannot: the description says so).
_CROSS_REFERENCES = {
    "partition-not-in-topic", "partition-unknown-topic", "changelog-beyond-topic", "lag-unknown-task",
    "stateful-without-changelog", "active-unknown-task", "active-and-standby", "member-duplicate-id",
    "member-unknown-topic", "broker-duplicate-id", "current-out-of-range", "sizes-out-of-range",
    "partition-negative",  # "input--1" is a well-formed partition of a topic named "input-"
}
_SAME_NUMBER = {"format-float"}  # JSON Schema takes 1.0 as the integer 1; kipopt, like Kafka's readers, does not
STRUCTURAL = [c for c in ERROR_CASES if c[0] not in _CROSS_REFERENCES | _SAME_NUMBER]


@pytest.mark.parametrize("case", STRUCTURAL, ids=[c[0] for c in STRUCTURAL])
def test_schema_rejects_structural_errors(case):
    """What the validator rejects on structure alone, the schema rejects too."""
    _, base, path, value, _field, _words = case
    document = _case_document(base, path, value)
    with pytest.raises(InstanceError):
        from_dict(copy.deepcopy(document))
    assert not validator(base).is_valid(document)


@pytest.mark.parametrize("task_id", ["0-1", "a_1", "0_1_2", "00_1", "0_01", "_1"])
def test_schema_task_id_pattern(task_id):
    """Task ids (in tasks, active, standby and lags) must match <subtopology>_<partition>."""
    s = validator("tasks")
    d = copy.deepcopy(SPEC_EXAMPLES["tasks"])
    d["tasks"][task_id] = {"inputs": ["input-0"]}
    assert not s.is_valid(d)
    d = copy.deepcopy(SPEC_EXAMPLES["tasks"])
    d["clients"]["p1"]["lags"][task_id] = 1
    assert not s.is_valid(d)


@pytest.mark.parametrize("partition", ["orders", "orders-", "-1", "orders-01", "orders-x", "orders-1.0"])
def test_schema_partition_pattern(partition):
    """Partition strings must be <topic>-<non-negative integer>."""
    d = copy.deepcopy(SPEC_EXAMPLES["consumers"])
    d["members"][0]["owned"] = [partition]
    assert not validator("consumers").is_valid(d)


@pytest.mark.parametrize("family", ["consumers", "tasks"])
@pytest.mark.parametrize("name", [".", "..", "a b", "orders/1", "é", "x" * 250])
def test_schema_topic_name_as_kafka_allows(family, name):
    """A topic name ``validate`` refuses (Kafka's ``Topic.validate``) the schema refuses too; 249 characters
    of the allowed ones pass both."""
    d = copy.deepcopy(SPEC_EXAMPLES[family])
    d["topics"][name] = d["topics"][next(iter(d["topics"]))]
    with pytest.raises(InstanceError):
        from_dict(copy.deepcopy(d))
    assert not validator(family).is_valid(d)
    d["topics"]["a._-" + "x" * 245] = d["topics"].pop(name)
    from_dict(copy.deepcopy(d))
    assert validator(family).is_valid(d)
