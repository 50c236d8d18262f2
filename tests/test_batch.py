"""``kipopt check --batch`` / ``evaluate --batch``: one verdict per line, in order, streamed.

Malformed lines get an error verdict naming the field and the batch goes on;
the exit status is the worst line (0 all passed, 1 some failed, 2 some
malformed); identical instances are parsed and solved once (counted by
wrapping the parser and the exact solver, not by the oracle's own stats
alone); a real process fed one line at a time answers each line before the
next is written.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kipopt import api, instance as instance_module
from kipopt.batch import LRU, Oracle, Outcome
from kipopt.cli import main
from kipopt.datasets import generate, load_scenario
from kipopt.instance import to_dict
from kipopt.solution import TaskRoles, assignment_to_json, current_assignment

KIPOPT = Path(sys.executable).with_name("kipopt")


@pytest.fixture(scope="module")
def small():
    """A generated 12-task instance, its optimal assignment (the port's) and a worse feasible one."""
    inst = generate("tasks", 5, tasks=12, clients=4)
    best = api.solve(inst, "kafka.rack_active")
    start = current_assignment(inst)
    assert api.check(inst, best.assignment, "rack_active").ok and not api.check(inst, start, "rack_active").ok, \
        "fixture must have a gap"
    return {"instance": to_dict(inst), "best": {"assignment": assignment_to_json("tasks", best.assignment)},
            "start": {"assignment": assignment_to_json("tasks", start)}}


def run(lines: list, mode: str = "check", **defaults) -> tuple[list[dict], Outcome, Oracle]:
    """Run an in-process oracle on lines (dicts are dumped, strings sent as they are)."""
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    if mode == "check":
        defaults.setdefault("rule", "rack_active")  # the fixture's solutions name no method
    oracle = Oracle(mode, **defaults)
    out = io.StringIO()
    worst = oracle.run(io.BytesIO(text.encode()), out)
    return [json.loads(v) for v in out.getvalue().splitlines()], worst, oracle


# --------------------------------------------------------------------------- verdicts and exit status


def test_verdicts_in_order_with_ids(small):
    """Every line gets one verdict, carrying its id, with check's fields; all optimal: outcome 0."""
    lines = [{"id": i, "instance": small["instance"], "solution": small["best"]} for i in range(5)]
    verdicts, worst, _ = run(lines)
    assert [v["id"] for v in verdicts] == list(range(5)) and worst is Outcome.PASSED
    single = api.check(instance_module.from_dict(small["instance"]),
                       api.load_assignment(instance_module.from_dict(small["instance"]), small["best"]),
                       "rack_active").to_dict()
    for v in verdicts:
        assert v["ok"] is True
        assert {k: v[k] for k in single if k != "exact_seconds"} == {k: single[k] for k in single
                                                                    if k != "exact_seconds"}


def test_mixed_pass_fail_is_outcome_1(small):
    lines = [{"id": "a", "instance": small["instance"], "solution": small["best"]},
             {"id": "b", "instance": small["instance"], "solution": small["start"]},
             {"id": "c", "instance": small["instance"], "solution": small["start"], "tolerance": 1e9}]
    verdicts, worst, oracle = run(lines)
    assert [v["ok"] for v in verdicts] == [True, False, True]
    assert verdicts[1]["gap"] > 0 and verdicts[2]["tolerance"] == 1e9
    assert worst is Outcome.FAILED and (oracle.stats.passed, oracle.stats.failed) == (2, 1)


def _malformed(small):
    inst, best = small["instance"], small["best"]
    bad_capacity = json.loads(json.dumps(inst))
    client = sorted(bad_capacity["clients"])[0]
    bad_capacity["clients"][client]["capacity"] = 0
    return [
        ("{not json", "(json)"),
        ("[1, 2]", "(top level)"),
        ('{"id": 1, "instance": {}, "instance": {}, "solution": {}}', "instance"),  # duplicate key
        ({"id": 2, "instance": inst}, "solution"),
        ({"id": 3, "solution": best}, "instance"),
        ({"id": 4, "instance": inst, "instance_path": "x.json", "solution": best}, "instance"),
        ({"id": 5, "instance": inst, "solution": best, "rules": "rack_active"}, "rules"),
        ({"id": 6, "instance": inst, "solution": best, "rule": "fastest"}, "rule"),
        ({"id": 7, "instance": inst, "solution": best, "rule": 3}, "rule"),
        ({"id": 8, "instance": inst, "solution": best, "tolerance": -0.5}, "tolerance"),
        ({"id": 9, "instance": inst, "solution": best, "tolerance": "big"}, "tolerance"),
        ({"id": 10, "instance": bad_capacity, "solution": best}, f"instance.clients.{client}.capacity"),
        ({"id": 11, "instance": {"format": 2, "family": "tasks"}, "solution": best}, "instance.format"),
        ({"id": 12, "instance": inst, "solution": {"assignment": {"nobody": {}}}}, "solution.assignment.nobody"),
        ({"id": 13, "instance": inst, "solution": {"assignment": {client: {"active": ["9_9"]}}}},
         f"solution.assignment.{client}.active[0]"),
        ({"id": 14, "instance": inst, "solution": {"assignment": {}, "colour": 1}}, "solution.colour"),
        ({"id": 15, "instance": inst, "solution": []}, "solution"),
        ({"id": 16, "instance_path": "/nonexistent/instance.json", "solution": best}, "instance_path"),
        ({"id": {"n": 1}, "instance": inst, "solution": best}, "id"),
        ({"id": 17, "instance": inst, "solution": best, "time_limit": 0}, "time_limit"),
        ({"id": 18, "instance": inst, "solution": best, "time_limit": -3}, "time_limit"),
    ]


def test_each_malformed_line_names_its_field_and_the_batch_goes_on(small):
    """Bad JSON, missing/unknown fields, unknown rule, bad instance, bad solution: an error verdict
    naming the field, then the next (good) line is still answered; the batch's outcome is 2."""
    good = {"id": "good", "instance": small["instance"], "solution": small["best"]}
    cases = _malformed(small)
    lines = [x for case, _ in cases for x in (case, good)]
    verdicts, worst, oracle = run(lines)
    assert len(verdicts) == 2 * len(cases)
    for (case, field), bad, after in zip(cases, verdicts[::2], verdicts[1::2]):
        assert bad["ok"] is False and bad["field"] == field, (case, bad)
        assert bad["error"].startswith(f"{field}: ") and "\n" not in bad["error"]
        assert after == verdicts[1] and after["ok"] is True
    assert [v["id"] for v in verdicts[::2]][3:18] == list(range(2, 17))  # ids are echoed even on errors
    assert worst is Outcome.MALFORMED and oracle.stats.malformed == len(cases)


@pytest.mark.parametrize("text, field, line_id", [
    ('{"id": 21, "id": 22, "solution": {}}', "id", 21),
    ('{"id": 23, "instance": {"format": 1, "format": 1}, "solution": {}}', "instance.format", 23),
    ('{"id": 24, "instance": {}, "solution": {"assignment": {"c": [], "c": []}}}', "solution.assignment.c", 24),
    ('{"id": 25, "instance": {"members": [{"generation": NaN}]}, "solution": {}}', "instance.members[0].generation",
     25),
])
def test_a_key_twice_or_a_constant_is_named_by_its_path_and_keeps_the_id(text, field, line_id):
    """JSON the strict parse refuses (a key twice in one object, NaN) is named by its path from the line's
    root, and the verdict still carries the line's id (the first one given, where the id is the key twice)."""
    verdict = Oracle("check").answer(text)[0]
    assert verdict["field"] == field and verdict["id"] == line_id and not verdict["ok"]


def test_malformed_wins_over_failed(small):
    lines = [{"id": 1, "instance": small["instance"], "solution": small["start"]}, "oops"]
    assert run(lines)[1] is Outcome.MALFORMED


def test_exact_model_that_cannot_start_is_an_error_verdict(small):
    """rack_active needs one current owner per task; an instance without one is reported per line."""
    inst = json.loads(json.dumps(small["instance"]))
    for c in inst["clients"].values():
        c["active"] = []
    verdicts, worst, _ = run([{"id": 1, "instance": inst, "solution": small["best"]},
                              {"id": 2, "instance": inst, "solution": small["best"]}])
    assert worst is Outcome.MALFORMED
    assert all(v["ok"] is False and v["field"] and "active" in v["error"] for v in verdicts)
    # a field of the instance, named from the line's root as every other (it lacked "instance.")
    assert all(v["field"].startswith("instance.tasks.") and v["error"].startswith(v["field"] + ": ")
               for v in verdicts)


def test_blank_lines_are_skipped(small):
    line = json.dumps({"id": 1, "instance": small["instance"], "solution": small["best"]})
    out = io.StringIO()
    Oracle().run(io.BytesIO(f"\n{line}\n   \n{line}\n".encode()), out)
    assert len(out.getvalue().splitlines()) == 2


def test_rule_and_tolerance_defaults_apply_to_lines_without_them(small):
    line = {"id": 1, "instance": small["instance"], "solution": small["start"]}
    assert run([line], tolerance=1e9)[0][0]["ok"] is True
    verdict = run([line], rule="balanced_subtopology")[0][0]
    assert verdict["rule"] == "balanced_subtopology"
    assert run([dict(line, rule="rack_active")], rule="balanced_subtopology")[0][0]["rule"] == "rack_active"


# --------------------------------------------------------------------------- evaluate --batch


def test_evaluate_batch(small):
    """evaluate verdicts: evaluate's object plus id and ok (= breaks no rule); check-only fields refused."""
    inst = instance_module.from_dict(small["instance"])
    broken = {"assignment": {c: {"active": []} for c in small["instance"]["clients"]}}
    verdicts, worst, _ = run([{"id": 1, "instance": small["instance"], "solution": small["start"]},
                              {"id": 2, "instance": small["instance"], "solution": broken},
                              {"id": 3, "instance": small["instance"], "solution": small["start"],
                               "rule": "rack_active"}], mode="evaluate")
    expected = api.evaluate(inst, small["start"]).to_dict()
    assert verdicts[0] == {"id": 1, "ok": True, **expected}
    assert verdicts[1]["ok"] is False and verdicts[1]["violations"]
    assert verdicts[2]["field"] == "rule" and "unknown field" in verdicts[2]["error"]
    assert worst is Outcome.MALFORMED
    assert run([{"id": 1, "instance": small["instance"], "solution": broken}], mode="evaluate")[1] is Outcome.FAILED


# --------------------------------------------------------------------------- dedupe


def test_identical_instances_are_parsed_and_solved_once(small, tmp_path, monkeypatch):
    """Ten lines over one instance (inline, re-serialised, and through a file) and three over another:
    the parser runs twice and the exact model twice, counted by wrapping both."""
    calls = {"parse": 0, "solve": 0}
    real_parse, real_solve = instance_module.from_dict, api.exact_optimum

    def parse(data):
        calls["parse"] += 1
        return real_parse(data)

    def solve(*a, **k):
        calls["solve"] += 1
        return real_solve(*a, **k)

    monkeypatch.setattr(instance_module, "from_dict", parse)
    monkeypatch.setattr(api, "exact_optimum", solve)
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(small["instance"], indent=3))
    other = to_dict(load_scenario("kip925_two_tasks"))
    lines = [{"id": i, "instance": small["instance"], "solution": small["start" if i % 2 else "best"]}
             for i in range(6)]
    lines += [{"id": f"f{i}", "instance_path": str(path), "solution": small["best"]} for i in range(4)]
    lines += [{"id": f"o{i}", "instance": other, "solution": {"assignment": {"c1": {"active": ["0_0"]},
                                                                             "c2": {"active": ["0_1"]}}}}
              for i in range(3)]
    verdicts, worst, oracle = run(lines)
    assert worst is Outcome.FAILED and len(verdicts) == 13
    assert calls == {"parse": 2, "solve": 2}
    assert (oracle.stats.instances_parsed, oracle.stats.exact_solved) == (2, 2)
    # a different rule on the same instance is a new exact model, not a new parse
    run_again = Oracle()
    for rule in ("rack_active", "rack_active", "balanced_subtopology"):
        run_again.answer(json.dumps({"instance": small["instance"], "solution": small["best"], "rule": rule}))
    assert (run_again.stats.instances_parsed, run_again.stats.exact_solved) == (1, 2)


def test_cache_is_bounded(small):
    """With room for one instance, alternating two instances re-parses each time (and stays correct)."""
    other = to_dict(generate("tasks", 6, tasks=12, clients=4))
    oracle = Oracle(cache_size=1)
    for data in (small["instance"], other, small["instance"]):
        oracle.answer(json.dumps({"instance": data, "solution": {"assignment": {}}}))
    assert oracle.stats.instances_parsed == 3
    assert len(list(oracle._instances)) == 1


def test_lru():
    cache = LRU(2)
    cache.put("a", 1), cache.put("b", 2), cache.get("a"), cache.put("c", 3)
    assert list(cache) == ["a", "c"]
    with pytest.raises(ValueError):
        LRU(0)


# --------------------------------------------------------------------------- the command line


def test_cli_batch_file_and_exit_status(small, tmp_path, capsys):
    path = tmp_path / "lines.jsonl"
    good = {"id": 1, "instance": small["instance"], "solution": small["best"]}
    bad = {"id": 2, "instance": small["instance"], "solution": small["start"]}
    for lines, status in (([good, good], 0), ([good, bad], 1), ([bad, "nope", good], 2)):
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
        capsys.readouterr()
        assert main(["check", "--batch", str(path), "--rule", "rack_active"]) == status
        captured = capsys.readouterr()
        assert len(captured.out.splitlines()) == len(lines)
        assert f"{len(lines)} lines" in captured.err
    assert main(["evaluate", "--batch", str(path)]) == 2  # "nope" is still malformed


@pytest.mark.parametrize("argv", [["check", "--batch", "a.jsonl", "extra"], ["check", "only-one.json"],
                                  ["evaluate"], ["check", "--batch", "/nonexistent/lines.jsonl"]])
def test_cli_batch_usage_errors(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kipopt: error: ")


def test_real_process_stdout_is_json_lines_only(small):
    """Through a real process, stdout holds the verdicts only (HiGHS's banner goes to stderr)."""
    lines = [{"id": i, "instance": small["instance"], "solution": small["best"]} for i in range(3)]
    proc = subprocess.run([str(KIPOPT), "check", "--batch", "-", "--rule", "rack_active"], input="".join(json.dumps(x) + "\n" for x in lines),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(v)["id"] for v in proc.stdout.splitlines()] == [0, 1, 2]
    assert "1 instances parsed, 1 exact models solved" in proc.stderr


def test_streaming_through_a_slow_pipe(small):
    """A process fed one line at a time answers each line before the next is written: the first
    verdict is read while the writer still holds the last line back (no timing assumptions: the
    writer waits for each verdict, so a buffering oracle would deadlock and hit the timeout)."""
    proc = subprocess.Popen([str(KIPOPT), "check", "--batch", "--rule", "rack_active"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    got: list[dict] = []
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        for i, solution in enumerate((small["best"], small["start"], small["best"])):
            proc.stdin.write(json.dumps({"id": i, "instance": small["instance"], "solution": solution}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            assert line, f"no verdict for line {i} before the next was sent ({proc.stderr.read()})"
            got.append(json.loads(line))
        proc.stdin.close()
        assert proc.stdout.read() == ""
        assert proc.wait() == 1
    finally:
        watchdog.cancel()
        proc.kill()
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    assert [(v["id"], v["ok"]) for v in got] == [(0, True), (1, False), (2, True)]


def test_instance_path_relative_to_working_directory(small, tmp_path, monkeypatch):
    (tmp_path / "x.json").write_text(json.dumps(small["instance"]))
    monkeypatch.chdir(tmp_path)
    verdicts, worst, _ = run([{"id": 1, "instance_path": "x.json", "solution": small["best"]}])
    assert worst is Outcome.PASSED, verdicts
    assert os.path.exists("x.json")


def test_internal_error_is_a_verdict_and_the_batch_goes_on(small, monkeypatch):
    """An unexpected exception costs one line (one-line message, field null); the batch exits 3."""
    real, calls = api.check, {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom\non two lines")
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "check", flaky)
    verdicts, worst, oracle = run([{"id": 1, "instance": small["instance"], "solution": small["best"]},
                                   {"id": 2, "instance": small["instance"], "solution": small["best"]}])
    assert verdicts[0] == {"id": 1, "ok": False, "error": "internal error: RuntimeError: boom\\non two lines",
                           "field": None}
    assert verdicts[1]["ok"] is True and worst is Outcome.INTERNAL and oracle.stats.internal == 1


def test_every_verdict_is_one_compact_line(small):
    text = "".join(json.dumps(x) + "\n" for x in (
        {"id": 1, "instance": small["instance"], "solution": small["best"]},
        {"id": 2, "instance": small["instance"], "solution": {"asignment": {}}}))
    out = io.StringIO()
    Oracle().run(io.BytesIO(text.encode()), out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(", " not in x[:40] and '": ' not in x for x in lines)
    assert '"field":"solution.asignment"' in lines[1]


def test_a_line_that_runs_out_of_memory_gets_a_memory_verdict_and_the_batch_goes_on(small, monkeypatch):
    """Memory exhaustion while judging one line is that line's error verdict, never an internal error."""
    judge = Oracle._judge

    def starved(self, line):
        if line.id == "big":
            raise MemoryError
        return judge(self, line)

    monkeypatch.setattr(Oracle, "_judge", starved)
    line = {"instance": small["instance"], "solution": small["best"]}
    verdicts, worst, _ = run([{**line, "id": "big"}, {**line, "id": "next"}])
    assert [v["id"] for v in verdicts] == ["big", "next"]
    assert verdicts[0]["ok"] is False and "out of memory" in verdicts[0]["error"]
    assert verdicts[1]["ok"] is True and worst == Outcome.MALFORMED


@pytest.mark.parametrize("value, ok", [(0, False), (-3, False), (None, True), (5, True), (1e100, True), (1e300, True)])
def test_a_lines_time_limit_is_positive_or_null(small, value, ok):
    """``time_limit`` is optional: null is none given (it was refused); 0 and negatives say the same thing; any
    finite float is a limit, as on the command line (1e100 was \"not a finite number\")."""
    verdict = run([{"id": 1, "instance": small["instance"], "solution": small["best"], "time_limit": value}])[0][0]
    assert ("error" not in verdict) is ok
    if not ok:
        assert verdict["field"] == "time_limit" and verdict["error"] == f"time_limit: must be a number > 0, got {value}"


def test_memory_in_any_guise_is_the_memory_verdict_not_an_internal_error(monkeypatch):
    """Under ``ulimit -v`` a library that cannot be mapped (highspy, scipy) was an internal error per line,
    and a MemoryError where no handler could answer ended the batch; both are the memory verdict now, with
    the line's id, and the oracle forgets its cached instances and exact answers."""
    from kipopt import api
    from kipopt.batch import Oracle, Outcome
    from kipopt.datasets import generate
    from kipopt.instance import to_dict
    x = to_dict(generate("consumers", 1, partitions=12, members=3, topics=2))
    line = json.dumps({"id": "a", "instance": x, "solution": {"assignment": {m["id"]: [] for m in x["members"]}},
                       "rule": "range"})

    def unmappable(*args, **kwargs):
        raise ImportError("/x/highspy/_core.so: failed to map segment from shared object")

    monkeypatch.setattr(api, "exact_optimum", unmappable)
    oracle = Oracle("check")
    verdict, outcome = oracle.answer(line)
    assert outcome is Outcome.MALFORMED and verdict["id"] == "a"
    assert verdict["error"].startswith("INSTANCE: out of memory"), verdict

    def no_room(self, raw):
        self._line_id = "b"
        raise MemoryError

    monkeypatch.setattr(Oracle, "_answer_line", no_room)
    oracle._instances.put("k", object())
    verdict, outcome = oracle.answer(line)
    assert outcome is Outcome.MALFORMED and verdict["id"] == "b" and "out of memory" in verdict["error"]
    assert list(oracle._instances) == []


def test_a_tolerance_of_thousands_of_digits_is_named_as_such():
    """The verdict said "got HugeNumber", the reader's internal name."""
    from kipopt.tolerance import parse_tolerance
    from kipopt._read import HugeNumber
    from kipopt.errors import InstanceError
    with pytest.raises(InstanceError, match=r"^tolerance: .*got a number of 5,000 digits$"):
        parse_tolerance(HugeNumber("9" * 5000), "tolerance")
