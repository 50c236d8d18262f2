"""One meaning of a missing piece (issue 21, item 4): in every family, a piece the solution leaves out
of its map (a replicas partition, a consumer member, a Streams client) is a violation named
``missing_<piece>``, and what that piece would hold is unassigned; ``evaluate`` reports it (exit 0,
``feasible: false``), ``check`` says "no" (exit 1), ``check --batch`` writes a failed verdict (not a
malformed one). Unknown ids stay bad input (exit 2)."""

from __future__ import annotations

import json

import pytest

from kipopt import api
from kipopt.batch import Oracle, Outcome
from kipopt.cli import main
from kipopt.datasets import generate
from kipopt.instance import to_dict
from kipopt.solution import MISSING_RULES, assignment_to_json, left_out, parse_solution

METHODS = {"replicas": "kafka.adminutils", "consumers": "kafka.range", "tasks": "kafka.rack_active"}


def _case(family: str, seed: int = 1):
    inst = generate(family, seed)
    solution = api.solve(inst, METHODS[family])
    data = assignment_to_json(family, solution.assignment)
    return inst, data


@pytest.mark.parametrize("family", sorted(METHODS))
def test_a_left_out_piece_is_the_same_violation_in_every_family(family):
    inst, data = _case(family)
    assert api.evaluate(inst, {"assignment": data}).feasible
    gone = next(iter(data))
    held = data.pop(gone)
    evaluation = api.evaluate(inst, {"assignment": data})
    counts = {v.rule: v.count for v in evaluation.violations}
    assert counts[MISSING_RULES[family]] == 1 and not evaluation.feasible
    examples = next(v.examples for v in evaluation.violations if v.rule == MISSING_RULES[family])
    assert examples == (f"{'partition ' if family == 'replicas' else ''}{gone} is not in the assignment",)
    lost = held if family != "tasks" else held["active"]
    unassigned = {"replicas": "unassigned_partition", "consumers": "unassigned_partition",
                  "tasks": "unassigned_active"}[family]
    assert counts.get(unassigned, 0) == (1 if family == "replicas" else len(lost))


@pytest.mark.parametrize("family", sorted(METHODS))
def test_cli_and_batch_report_a_left_out_piece_alike(family, tmp_path, capsys):
    inst, data = _case(family, seed=2)
    data.pop(next(iter(data)))
    (tmp_path / "i.json").write_text(json.dumps(to_dict(inst)))
    (tmp_path / "s.json").write_text(json.dumps({"assignment": data}))
    assert main(["evaluate", str(tmp_path / "i.json"), str(tmp_path / "s.json")]) == 1  # a broken rule: evaluate says "no"
    printed = json.loads(capsys.readouterr().out)
    assert printed["feasible"] is False
    assert MISSING_RULES[family] in [v["rule"] for v in printed["violations"]]
    rule = {"replicas": "spread", "consumers": "balanced", "tasks": "rack_active"}[family]
    assert main(["check", str(tmp_path / "i.json"), str(tmp_path / "s.json"), "--rule", rule]) == 1
    verdict, outcome = Oracle("check").answer(json.dumps({"id": 1, "instance": to_dict(inst), "rule": rule,
                                                          "solution": {"assignment": data}}))
    assert outcome is Outcome.FAILED and verdict["ok"] is False
    assert MISSING_RULES[family] in [v["rule"] for v in verdict["violations"]]


def test_left_out_fills_members_in_after_the_others():
    inst = generate("consumers", 3)
    first, *rest = [m.id for m in inst.members]
    parsed = parse_solution(inst, {"assignment": {m: [] for m in rest}})
    assert list(parsed) == rest + [first] and left_out(inst, parsed) == [first]
    assert left_out(inst, {m: () for m in rest}) == [first]  # a plain dict (the Python API) alike
