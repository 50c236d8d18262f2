"""``kipopt schema solution|check|evaluation|vector|manifest`` describe what kipopt really prints.

Each schema is checked against real outputs of the command line: ``solve``
with every registered method, ``check`` and ``evaluate`` (single and batch,
including error verdicts), and the files ``vectors`` writes; and it rejects
documents with a wrong shape.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import jsonschema
import pytest

from kipopt import methods as registry
from kipopt.batch import Oracle
from kipopt.cli import main
from kipopt.datasets import generate
from kipopt.instance import to_dict
from kipopt.schemas import DOCUMENTS, schema

SMALL = {"tasks": {"tasks": 8, "clients": 3},
         # a reassignment on one rack: the proposals move a current assignment, the peer has no racks
         "replicas": {"brokers": 5, "partitions": 6, "racks": 1, "added_brokers": 2},
         "consumers": {"members": 3, "partitions": 8, "conflicts": 0.0},  # server ports need single owners
         # KAFKA-19048's balancer refuses fewer target racks than the replication factor, as its Java does
         "replicas-racks": {"brokers": 6, "partitions": 6, "racks": 3, "added_brokers": 2}}
ON = {"proposal.minimal_movement": "replicas-racks"}
"""The instance a method is run on when the family's own does not suit it."""


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


def cli_json(argv: list[str], capsys, status: int = 0):
    """Run the command line in-process and return its stdout JSON."""
    capsys.readouterr()
    assert main(argv) == status, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("instances")
    out = {}
    for family, params in SMALL.items():
        out[family] = folder / f"{family}.json"
        out[family].write_text(json.dumps(to_dict(generate(family.split("-")[0], 4, **params))))
    return out


@pytest.mark.parametrize("name", DOCUMENTS)
def test_document_schema_is_valid_and_printed(name, capsys):
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema" and s["description"]
    assert cli_json(["schema", name], capsys) == s


@pytest.mark.parametrize("method", sorted(registry.methods()))
def test_every_solve_output_matches_the_solution_schema(method, instances, tmp_path, capsys):
    family = registry.methods()[method].family
    solution = cli_json(["solve", str(instances[ON.get(method, family)]), "--method", method, "--time-limit", "20"],
                        capsys)
    validator("solution").validate(solution)
    bad = copy.deepcopy(solution)
    bad["status"] = "great"
    assert not validator("solution").is_valid(bad)
    if family == "tasks":
        bad = copy.deepcopy(solution)
        next(iter(bad["assignment"].values()))["active"] = ["not-a-task"]
        assert not validator("solution").is_valid(bad)
    # only a consumers solution has a target (evaluate and check refuse one elsewhere, exit 2)
    assert validator("solution").is_valid(dict(solution, target=solution["assignment"])) is (family == "consumers")


def test_check_and_evaluate_outputs_match(instances, tmp_path, capsys):
    path = str(instances["tasks"])
    port = tmp_path / "port.json"
    port.write_text(json.dumps(cli_json(["solve", path, "--method", "kafka.rack_active"], capsys)))
    verdict = cli_json(["check", path, str(port)], capsys)
    validator("check").validate(verdict)
    evaluation = cli_json(["evaluate", path, str(port)], capsys)
    validator("evaluation").validate(evaluation)
    assert not validator("check").is_valid(dict(verdict, extra=1))
    assert not validator("evaluation").is_valid({k: v for k, v in evaluation.items() if k != "metrics"})
    replicas = tmp_path / "replicas.json"
    replicas.write_text(json.dumps(cli_json(["solve", str(instances["replicas"]), "--method", "kafka.adminutils"],
                                            capsys)))
    capsys.readouterr()
    assert main(["check", str(instances["replicas"]), str(replicas)]) in (0, 1)
    validator("check").validate(json.loads(capsys.readouterr().out))


def test_batch_verdicts_match(instances):
    """Passing, failing and malformed batch lines (check and evaluate) all match their schema."""
    data = json.loads(instances["tasks"].read_text())
    lines = [{"id": 1, "instance": data, "solution": {"assignment": {c: {"active": list(x["active"])}
                                                                     for c, x in data["clients"].items()}}},
             {"id": "two", "instance": data, "solution": {"assignment": {"nobody": {}}}},
             {"id": None, "instance_path": str(instances["tasks"]), "solution": {"assignment": {
                 c: {"active": []} for c in data["clients"]}}},
             "{broken"]
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    for mode, name in (("check", "check"), ("evaluate", "evaluation")):
        out = io.StringIO()
        Oracle(mode).run(io.BytesIO(text.encode()), out)
        verdicts = [json.loads(v) for v in out.getvalue().splitlines()]
        assert len(verdicts) == 4 and verdicts[1]["field"] == "solution.assignment.nobody"
        for v in verdicts:
            validator(name).validate(v)
        assert not validator(name).is_valid(dict(verdicts[1], ok=True))


def test_vector_files_match(tmp_path, capsys):
    assert main(["vectors", "--curated", "--out", str(tmp_path / "curated")]) == 0
    assert main(["vectors", "tasks", "--method", "kafka.rack_active", "--count", "2", "--seed", "1",
                 "--out", str(tmp_path / "generated")]) == 0
    capsys.readouterr()
    files = sorted((tmp_path / "curated").glob("*.json")) + sorted((tmp_path / "generated").glob("*.json"))
    assert len(files) > 5
    for f in files:
        document = json.loads(f.read_text())
        validator("manifest" if f.name == "manifest.json" else "vector").validate(document)
        if f.name != "manifest.json":
            validator(document["instance"]["family"]).validate(document["instance"])
            bad = copy.deepcopy(document)
            bad["kafka_commit"] = "main"
            assert not validator("vector").is_valid(bad)
