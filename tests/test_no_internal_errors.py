"""No input of the families makes any command exit 3 (issue 21).

Hypothesis mutates valid instances and solutions of every family (one node
replaced by an unusual JSON value: a number of thousands of digits, a float
where an integer belongs, a negative, a Java overflow, a string holding
control characters or a lone surrogate, null, an array, an object, deep
nesting) and runs ``validate``, ``solve``, ``evaluate`` and ``check`` on the
result, in process: each ends with 0, 1 or 2, never 3. ``KIPOPT_FUZZ_EXAMPLES``
sets a longer run.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kipopt import api
from kipopt.cli import main
from kipopt.datasets import generate
from kipopt.instance import from_dict, to_dict
from kipopt.methods import methods
from kipopt.solution import assignment_to_json

EXAMPLES = int(os.environ.get("KIPOPT_FUZZ_EXAMPLES", "0"))
METHODS = {"replicas": ["kafka.adminutils", "exact.spread"], "consumers": ["kafka.cooperative_sticky", "exact.range"],
           "tasks": ["kafka.ha", "exact.rack_active"]}
HUGE, NEGATIVE_HUGE = "@@huge@@", "@@-huge@@"  # written as 5,000-digit literals (json.dumps cannot convert them)
ODD_VALUES = [
    HUGE, NEGATIVE_HUGE, 2 ** 31, 2 ** 63, -2 ** 63 - 1, -1, 0, 1.5, -0.0, 1e308, True, None, "", " ", "\x00",
    "a\ud800", "ü" * 20_000, "0_0", "t-0", "-1", "1e3", [], [[]], {}, {"": None}, [None], "9" * 5000,
]
odd = st.one_of(st.sampled_from(ODD_VALUES), st.recursive(st.none(), lambda inner: st.lists(inner, max_size=2),
                                                          max_leaves=4))


def _base(family: str) -> tuple[dict, dict]:
    inst = generate(family, 11, **({"tasks": 6, "clients": 3} if family == "tasks" else {}))
    solution = api.solve(inst, METHODS[family][0])
    return to_dict(inst), {"method": METHODS[family][0], "assignment": assignment_to_json(family, solution.assignment)}


BASES = {family: _base(family) for family in METHODS}


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw, document: dict) -> dict:
    doc = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 2))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        target = doc
        for key in path[:-1]:
            target = target[key]
        last = path[-1]
        if isinstance(target, dict) and draw(st.booleans()):  # rename the key instead of the value
            target[draw(st.sampled_from(["", " ", "\x00", "a\ud800", "0_0", "t-0", "-1", "x" * 300, "t\n"]))] = target.pop(last)
        else:
            target[last] = copy.deepcopy(draw(odd))  # sampled values are shared objects: never mutate them
    return doc


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code != 3, f"kipopt {' '.join(argv[:1])}: {err.getvalue()}"
    assert code == 0 or len(err.getvalue().splitlines()) >= 1
    return code, out.getvalue()


def _write(folder: Path, name: str, data) -> str:
    path = folder / name
    text = json.dumps(data, ensure_ascii=False).replace(f'"{HUGE}"', "9" * 5000)
    path.write_text(text.replace(f'"{NEGATIVE_HUGE}"', "-" + "9" * 5000), encoding="utf-8", errors="surrogatepass")
    return str(path)


def _all_commands(folder: Path, family: str, instance: dict, solution: dict) -> None:
    ipath, spath = _write(folder, "i.json", instance), _write(folder, "s.json", solution)
    _run("validate", ipath)
    for method in METHODS[family]:
        _run("solve", ipath, "--method", method, "--time-limit", "10")
    _run("evaluate", ipath, spath)
    _run("check", ipath, spath, "--time-limit", "10")


def _settings(examples: int):
    return settings(max_examples=EXAMPLES or examples, deadline=None, derandomize=not EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("family", sorted(METHODS))
def test_mutated_instances_never_exit_3(folder, family):
    instance, solution = BASES[family]

    @_settings(10)
    @given(mutated(instance))
    def run(doc):
        _all_commands(folder, family, doc, solution)

    run()


@pytest.mark.parametrize("family", sorted(METHODS))
def test_mutated_solutions_never_exit_3(folder, family):
    instance, solution = BASES[family]

    @_settings(10)
    @given(mutated(solution))
    def run(doc):
        ipath, spath = _write(folder, "i.json", instance), _write(folder, "s.json", doc)
        _run("evaluate", ipath, spath)
        _run("check", ipath, spath, "--time-limit", "10")

    run()


@pytest.mark.parametrize("text", ["", "{", "[]", "null", "1", '"x"', "\ufeff{}", '{"a": 1, "a": 2}', "NaN",
                                  '{"format": 1e999}', "[" * 100_000 + "]" * 100_000, "\xff\xfe"])
def test_unusual_documents_never_exit_3(folder, text):
    path = folder / "odd.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape") if text != "\xff\xfe" else b"\xff\xfe")
    for argv in (["validate", str(path)], ["solve", str(path), "--method", "kafka.range"],
                 ["evaluate", str(path), str(path)], ["check", str(path), str(path)]):
        code, _ = _run(*argv)
        assert code == 2


def test_batch_survives_any_single_line(tmp_path):
    """Each odd line gets an error verdict naming its field (or none, for a line that is not JSON), the
    id where one can be read, and the batch goes on to the good line after it: exit 2, never 3."""
    instance, solution = BASES["replicas"]
    good = json.dumps({"id": "good", "instance": instance, "solution": solution})
    huge = "9" * 5000
    (tmp_path / "dir").mkdir()
    odd_lines = [
        (f'{{"id": {huge}, "instance": {json.dumps(instance)}, "solution": {{"assignment": {{}}}}}}', None, "id"),
        ('{"id": 1, "instance": ' + re.sub(r'"partitions": \d+', f'"partitions": {huge}', json.dumps(instance))
         + ', "solution": {"assignment": {}}}', 1, "instance.partitions"),
        (json.dumps({"id": 2, "instance": instance, "solution": {"assignment": {"0": [huge]}}}).replace(
            f'"{huge}"', huge), 2, "solution.assignment.0[0]"),
        (json.dumps({"id": 3, "instance": instance, "solution": solution, "tolerance": huge}).replace(
            f'"{huge}"', huge), 3, "tolerance"),
        (json.dumps({"id": "\ud800", "instance_path": str(tmp_path / "dir"), "solution": solution}), "\ud800",
         "instance_path"),
        ('{"id": 5, "instance_path": "a\\u0000b", "solution": {}}', 5, "instance_path"),
        ("[" * 50_000 + "]" * 50_000, None, "(json)"),
        ('{"id": 6, "instance": {}, \xff}', None, "(json)"),
    ]
    text = "".join(line + "\n" + good + "\n" for line, _, _ in odd_lines)
    path = tmp_path / "lines.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, out = _run("check", "--batch", str(path))
    verdicts = [json.loads(line) for line in out.splitlines()]
    assert code == 2 and len(verdicts) == 2 * len(odd_lines)
    for (_, line_id, field), bad, after in zip(odd_lines, verdicts[::2], verdicts[1::2]):
        assert (bad["id"], bad["ok"]) == (line_id, False) and after["id"] == "good", bad
        assert bad["field"] == field or (field == "(json)" and bad["error"].startswith("(json)")), bad


@pytest.mark.parametrize("limit", ["1e-300", "1e308"])
@pytest.mark.parametrize("family", sorted(METHODS))
def test_extreme_time_limits_never_exit_3(folder, family, limit):
    instance, solution = BASES[family]
    ipath, spath = _write(folder, "i.json", instance), _write(folder, "s.json", solution)
    parsed = from_dict(instance)
    for name, method in methods().items():
        if method.family != family or not name.startswith("exact."):
            continue
        applies = method.requires is None or method.requires(parsed) is None  # else exit 2 naming the field
        code, _ = _run("solve", ipath, "--method", name, "--time-limit", limit)
        assert code in ((0, 1) if applies else (2,))
    code, _ = _run("check", ipath, spath, "--time-limit", limit)
    assert code in (0, 1)
