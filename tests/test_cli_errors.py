"""Bad input on the command line: exit status 2 and ONE stderr line naming the field, never a traceback.

Every error rule of the spec goes through ``kipopt validate`` (in-process
through ``kipopt.cli.main``, plus real runs of the installed script), and a
hypothesis fuzz feeds truncated and mutated instances to it.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt.cli import main
from kipopt.datasets import generate, load_scenario, scenario_names
from kipopt.instance import from_dict, to_dict

from test_instance import ERROR_CASES, SPEC_EXAMPLES, _case_document

KIPOPT = Path(sys.executable).with_name("kipopt")


def validate_text(text: str | bytes, tmp_path: Path, capsys) -> tuple[int, str, str]:
    """Run ``kipopt validate`` in-process on a document; return (exit, stdout, stderr)."""
    path = tmp_path / "instance.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    capsys.readouterr()
    code = main(["validate", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error_line(code: int, out: str, err: str, field: str | None = None) -> str:
    """Exit 2, nothing on stdout, exactly one stderr line ``kipopt: error: ...`` naming the field."""
    assert code == 2, (code, err)
    assert out == ""
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("kipopt: error: "), err
    if field is not None:
        assert err.startswith(f"kipopt: error: {field}: "), err
    return err


# --------------------------------------------------------------------------- every rule


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_validate_reports_each_rule(case, tmp_path, capsys):
    """Each error rule of the spec: exit 2 and one line that starts with the field's path."""
    _, base, path, value, field, words = case
    code, out, err = validate_text(json.dumps(_case_document(base, path, value)), tmp_path, capsys)
    assert words in assert_one_error_line(code, out, err, field)


@pytest.mark.parametrize("task_id", ["0-1", "a_1", "0_1_2", "00_1"])
def test_validate_bad_task_id(task_id, tmp_path, capsys):
    """A task id that is not <subtopology>_<partition> names the task."""
    d = copy.deepcopy(SPEC_EXAMPLES["tasks"])
    d["tasks"][task_id] = {"inputs": ["input-0"]}
    code, out, err = validate_text(json.dumps(d), tmp_path, capsys)
    assert "not a task id" in assert_one_error_line(code, out, err, f"tasks.{task_id}")


@pytest.mark.parametrize("text,field", [
    ('{"format": 1, "family": "replicas", "family": "tasks"}', "family"),
    ('{"format": 1, "family": "tasks", "topics": {}, "tasks": {}, "clients": {"p": {"capacity": NaN}}}',
     "clients.p.capacity"),
    ('{"format": 1, "family": "replicas", "partitions": Infinity}', "partitions"),
    ('{"format": 1, "family": "consumers", "members": [{"id": "a"}, {"id": "b", "id": "c"}]}', "members[1].id"),
    ("NaN", "INSTANCE"),
    ('{"format": 1, "family": "replicas", "brokers": [', "INSTANCE"),
    ("", "INSTANCE"),
    ("[]", "(top level)"),
    ("null", "(top level)"),
    ('"tasks"', "(top level)"),
    (b"\xff\xfe\x00", "INSTANCE"),
])
def test_validate_bad_json(text, field, tmp_path, capsys):
    """Duplicate keys, NaN, Infinity, truncated or non-UTF-8 text, non-object documents."""
    assert_one_error_line(*validate_text(text, tmp_path, capsys), field)


def test_validate_missing_file(tmp_path, capsys):
    """An unreadable path is a one-line error naming INSTANCE."""
    code = main(["validate", str(tmp_path / "nope.json")])
    captured = capsys.readouterr()
    assert_one_error_line(code, captured.out, captured.err, "INSTANCE")


@pytest.mark.parametrize("name", scenario_names())
def test_validate_accepts_scenarios(name, tmp_path, capsys):
    """Valid documents: exit 0 and ``{"ok": true, "family": ...}`` on stdout."""
    inst = load_scenario(name)
    code, out, err = validate_text(json.dumps(to_dict(inst)), tmp_path, capsys)
    assert code == 0 and err == ""
    assert json.loads(out) == {"ok": True, "family": inst.family}


@pytest.mark.parametrize("argv,field", [
    (["generate", "replicas", "--seed", "1", "--members", "3"], "--members"),
    (["generate", "tasks", "--seed", "1", "--racks", "0"], "--racks"),
    (["generate", "consumers", "--seed", "1", "--subscriptions", "some"], "--subscriptions"),
    (["generate", "tasks", "--seed", "1", "--caught-up", "2.5"], "--caught-up"),
    (["generate", "tasks", "--seed", "1", "--tasks", "many"], None),
    (["generate", "brokers", "--seed", "1"], None),
    (["generate", "tasks"], None),
    (["schema", "brokers"], None),
    (["validate"], None),
])
def test_usage_errors_are_one_line(argv, field, capsys):
    """Bad generator parameters and usage errors: exit 2, one line, the flag named where it is ours."""
    code = main(argv)
    captured = capsys.readouterr()
    assert_one_error_line(code, captured.out, captured.err, field)


@pytest.mark.parametrize("seed,twin", [("99999999999999999999", False), ("-3", True)])
def test_a_seed_out_of_range_is_told_why(seed, twin, capsys):
    """The note on negative seeds only where the seed is negative."""
    line = assert_one_error_line(main(["generate", "consumers", "--seed", seed]), *capsys.readouterr(), "--seed")
    assert ("positive twin" in line) == twin


def test_evaluate_names_only_the_argument_missing(tmp_path, capsys):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(to_dict(generate("consumers", 1, members=2, partitions=4))))
    line = assert_one_error_line(main(["evaluate", str(path)]), *capsys.readouterr())
    assert "required: solution (or --batch" in line
    line = assert_one_error_line(main(["evaluate"]), *capsys.readouterr())
    assert "required: instance, solution (or --batch" in line


# --------------------------------------------------------------------------- real processes


def test_installed_script_valid_and_invalid(tmp_path):
    """The installed ``kipopt`` script: exit 0 on a valid file, exit 2 and one line on a bad one."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps(SPEC_EXAMPLES["tasks"]))
    run = subprocess.run([str(KIPOPT), "validate", str(good)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and json.loads(run.stdout) == {"ok": True, "family": "tasks"}
    bad = copy.deepcopy(SPEC_EXAMPLES["tasks"])
    bad["clients"]["p2"]["capacity"] = 0
    run = subprocess.run([str(KIPOPT), "validate", "-"], input=json.dumps(bad), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("kipopt: error: clients.p2.capacity: ") and run.stderr.count("\n") == 1


def test_control_characters_in_a_field_stay_on_one_line(tmp_path, capsys):
    """A key like "a\\nb" must not split the error message over two lines."""
    code, out, err = validate_text('{"format": 1, "family": "replicas", "a\\nb": 1}', tmp_path, capsys)
    assert_one_error_line(code, out, err)


# --------------------------------------------------------------------------- fuzz

_SEEDS = [json.dumps(SPEC_EXAMPLES[f]) for f in sorted(SPEC_EXAMPLES)]
_SEEDS += [json.dumps(to_dict(load_scenario(n))) for n in ("kip36_six_brokers", "kip925_two_tasks")]
_SEEDS += [json.dumps(to_dict(generate(f, 3, **p))) for f, p in
           (("replicas", {"added_brokers": 2}), ("consumers", {"members": 3}), ("tasks", {"tasks": 6, "clients": 3}))]

_FUZZ = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _nodes(doc, path=()):
    """Every (path, value) below the root."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path + (k,), v
            yield from _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield path + (i,), v
            yield from _nodes(v, path + (i,))


def _replace(doc, path, value):
    doc = copy.deepcopy(doc)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def _broken(doc, kind: str, pick: int):
    """A mutation that makes any valid instance invalid, whatever node it hits."""
    nodes = list(_nodes(doc))
    if kind == "unknown_key":  # every object of the format rejects this key or this value
        objects = [()] + [p for p, v in nodes if isinstance(v, dict)]
        where = objects[pick % len(objects)]
        doc = copy.deepcopy(doc)
        node = doc
        for k in where:
            node = node[k]
        node["zz_unknown"] = 12345
        return doc
    path, value = nodes[pick % len(nodes)]
    if kind == "container_swap":  # no position takes an object where another kind is expected, and so on
        return _replace(doc, path, [1] if isinstance(value, dict) else {"zz": []})
    if kind == "negative":  # no integer of the format may be below -1
        ints = [(p, v) for p, v in nodes if isinstance(v, int) and not isinstance(v, bool)]
        return _replace(doc, ints[pick % len(ints)][0], -7)
    if kind == "empty_string":  # no string of the format may be empty
        strings = [(p, v) for p, v in nodes if isinstance(v, str)]
        return _replace(doc, strings[pick % len(strings)][0], "")
    if kind == "delete_required":
        doc = copy.deepcopy(doc)
        required = ["format", "family"] + {"replicas": ["brokers", "partitions", "replication_factor"],
                                           "consumers": ["topics", "members"],
                                           "tasks": ["topics", "tasks", "clients"]}[doc["family"]]
        del doc[required[pick % len(required)]]
        return doc
    raise AssertionError(kind)


@_FUZZ
@given(source=st.sampled_from(_SEEDS), cut=st.floats(0, 1, exclude_max=True))
def test_fuzz_truncated_documents(source, cut, tmp_path, capsys):
    """A valid instance cut anywhere short of its end: exit 2, one line, no traceback."""
    text = source[: int(cut * len(source))]
    assert_one_error_line(*validate_text(text, tmp_path, capsys))


@_FUZZ
@given(source=st.sampled_from(_SEEDS),
       kind=st.sampled_from(["unknown_key", "container_swap", "negative", "empty_string", "delete_required"]),
       pick=st.integers(0, 10_000))
def test_fuzz_mutated_documents(source, kind, pick, tmp_path, capsys):
    """Mutations that always break the format (keys, types, values): exit 2, one line, no traceback."""
    doc = _broken(json.loads(source), kind, pick)
    assert_one_error_line(*validate_text(json.dumps(doc), tmp_path, capsys))


@_FUZZ
@given(source=st.sampled_from(_SEEDS), data=st.data())
def test_fuzz_text_noise(source, data, tmp_path, capsys):
    """Random edits of the text may or may not stay valid: exit 0 exactly when the model accepts it, else 2;
    never a traceback, never an internal error."""
    text = list(source)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text) - 1))
        text[i] = data.draw(st.sampled_from(list('{}[]",:-0123456789 aez_') + ["NaN", "true", "null", '"x":1,']))
    mutated = "".join(text)
    code, out, err = validate_text(mutated, tmp_path, capsys)
    assert code in (0, 2) and "Traceback" not in err and "internal error" not in err
    if code == 0:
        from_dict(json.loads(mutated))
        assert json.loads(out)["ok"] is True
    else:
        assert_one_error_line(code, out, err)


def test_running_out_of_memory_outside_a_method_is_exit_2(tmp_path, capsys, monkeypatch):
    """evaluate (reading and scoring, no method) out of memory: one line naming memory, exit 2, not 3."""
    from kipopt import api

    inst = generate("tasks", 1, tasks=6, clients=2)
    path = tmp_path / "i.json"
    path.write_text(json.dumps(to_dict(inst)))
    solution = tmp_path / "s.json"
    assert main(["solve", str(path), "--method", "kafka.rack_active"]) == 0
    solution.write_text(capsys.readouterr().out)

    def starved(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(api, "evaluate_answer", starved)
    code = main(["evaluate", str(path), str(solution)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "out of memory" in err and "internal error" not in err


@pytest.mark.parametrize("argv, field", [
    (["check", "i.json", "s.json", "--tolerance", "bad"], "--tolerance"),
    (["solve", "i.json", "--method", "exact.range", "--time-limit", "-1"], "--time-limit"),
    (["generate", "consumers", "--members", "many"], "--members"),
    (["solve", "i.json"], "kipopt solve"),  # no one option at fault: the command is named
    # an empty value was read as the option left out: check chose the balanced rule, generate wrote stdout
    (["check", "i.json", "s.json", "--rule="], "--rule"),
    (["check", "i.json", "s.json", "--rule", ""], "--rule"),
    (["generate", "consumers", "--seed", "1", "--out", ""], "--out"),
    (["evaluate", "--batch", ""], "--batch"),
    # every worker is started at once: --jobs 10**20 forked thousands before SIGTERM could end it
    (["check", "--batch", "b.jsonl", "--jobs", "257"], "--jobs"),
    (["solve", "i.json", "--method", "exact.range", "--threads", "100000"], "--threads"),
    # Zipf weights overflowed (exit 3), inf was taken; 2^31 racks ran out of memory naming no option
    (["generate", "tasks", "--seed", "1", "--skew", "1000"], "--skew"),
    (["generate", "consumers", "--seed", "1", "--skew", "inf"], "--skew"),
    (["generate", "tasks", "--seed", "1", "--racks", "2147483648"], "--racks"),
    (["generate", "consumers", "--seed", "1", "--racks", "100000000"], "--racks"),
    # Random(-1) is Random(1): the same instance under another seed; vectors wrote files until killed
    (["generate", "tasks", "--seed", "-1"], "--seed"),
    (["vectors", "tasks", "--method", "kafka.rack_active", "--count", "2147483648"], "--count"),
    # sizes past any instance ran out of memory naming no option; Kafka's ints past 2^31 were refused under the
    # generated instance's field, for some seeds only
    (["generate", "replicas", "--seed", "1", "--brokers", "2147483648"], "--brokers"),
    (["generate", "consumers", "--seed", "1", "--members", "2147483648"], "--members"),
    (["generate", "tasks", "--seed", "1", "--inputs", "10000000"], "--inputs"),
    (["generate", "tasks", "--seed", "7", "--max-capacity", "4294967296"], "--max-capacity"),
    (["generate", "replicas", "--seed", "1", "--start-partition-id", "2147483647"], "--start-partition-id"),
])
def test_a_bad_option_is_named_first(argv, field, capsys):
    """An option argparse refuses is the field of the one error line, as every other field is."""
    code = main(argv)
    captured = capsys.readouterr()
    assert_one_error_line(code, captured.out, captured.err, field)


@pytest.mark.parametrize("command", ["evaluate", "check"])
def test_instance_and_solution_cannot_both_come_from_stdin(command, capsys):
    code = main([command, "-", "-"])
    captured = capsys.readouterr()
    assert "give the solution as a file" in assert_one_error_line(code, captured.out, captured.err, "SOLUTION")


@pytest.mark.parametrize("seed", ["9223372036854775808", "-9223372036854775809", "99999999999999999999999"])
def test_a_seed_past_a_java_long_is_refused(seed, tmp_path, capsys):
    """Java's ``new Random(long)`` takes nothing wider: such a seed was accepted, recorded as given and
    answered as if reduced to 48 bits, an answer Kafka could not have given with it."""
    from kipopt import api
    from kipopt.errors import InstanceError
    x = generate("replicas", 1, partitions=6, brokers=3, racks=1)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(to_dict(x)))
    assert main(["solve", str(path), "--method", "kafka.striped", "--seed", seed]) == 2
    assert "--seed: must be a Java long" in capsys.readouterr().err
    with pytest.raises(InstanceError, match="^seed: must be a Java long"):
        api.solve(x, "kafka.striped", seed=int(seed))
    assert main(["solve", str(path), "--method", "kafka.striped", "--seed", str(2**63 - 1)]) == 0


def test_a_seed_given_to_a_method_that_draws_nothing_is_said_to_change_nothing(tmp_path, capsys):
    x = generate("replicas", 1, partitions=6, brokers=3, racks=1)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(to_dict(x)))
    assert main(["solve", str(path), "--method", "kafka.adminutils", "--seed", "3"]) == 0
    assert "kafka.adminutils draws no random numbers: --seed changes nothing" in capsys.readouterr().err
    assert main(["solve", str(path), "--method", "kafka.striped", "--seed", "3"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, field", [
    (["reassign", "--current", "c.json", "--add-brokers", "4"], "--current"),
    (["vectors", "--method", "kafka.range", "--count", "1"], "--count"),
    (["evaluate", "--batch", "b.jsonl"], "--batch"),
    (["evaluate", "i.json", "s.json"], "INSTANCE"),
])
def test_running_out_of_memory_names_what_the_command_reads(argv, field, tmp_path, capsys, monkeypatch):
    """Out of memory names the command's input (reassign reads no INSTANCE: its --current), exit 2."""
    import kipopt.cli as cli

    def starved(args):
        raise MemoryError

    monkeypatch.chdir(tmp_path)
    parser_of = cli.build_parser

    def build_parser(*a, **k):
        parser = parser_of(*a, **k)
        parser.set_defaults(func=starved)
        for action in parser._subparsers._group_actions[0].choices.values():
            action.set_defaults(func=starved)
        return parser

    monkeypatch.setattr(cli, "build_parser", build_parser)
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"kipopt: error: {field}: out of memory") and err.count("\n") == 1, err



@pytest.mark.parametrize("method, words", [
    ("kafka.roundrobin", "did you mean kafka.round_robin?"),   # a typo dropped the method's rule: exit 0
    ("", "must be a non-empty string"),
])
def test_a_method_name_in_kipopts_namespace_that_is_no_method_is_refused(method, words, tmp_path, capsys):
    inst = generate("consumers", 1, members=4, topics=2, partitions=8)
    path = tmp_path / "i.json"
    path.write_text(json.dumps(to_dict(inst)))
    solution = tmp_path / "s.json"
    assert main(["solve", str(path), "--method", "kafka.range"]) == 0
    solution.write_text(json.dumps(dict(json.loads(capsys.readouterr().out), method=method)))
    code = main(["evaluate", str(path), str(solution)])
    captured = capsys.readouterr()
    assert words in assert_one_error_line(code, captured.out, captured.err, "SOLUTION method")


def test_a_replicas_key_with_a_leading_zero_is_refused(tmp_path, capsys):
    """"00" was read as partition 0 (and would have overwritten "0" silently)."""
    inst = generate("replicas", 1, partitions=3, brokers=4, racks=2, replication_factor=2)
    path = tmp_path / "i.json"
    path.write_text(json.dumps(to_dict(inst)))
    assert main(["solve", str(path), "--method", "kafka.adminutils"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc["assignment"]["00"] = doc["assignment"].pop("0")
    solution = tmp_path / "s.json"
    solution.write_text(json.dumps(doc))
    code = main(["evaluate", str(path), str(solution)])
    captured = capsys.readouterr()
    assert "leading zeros" in assert_one_error_line(code, captured.out, captured.err, "SOLUTION assignment.00")
