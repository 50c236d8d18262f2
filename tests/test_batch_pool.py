"""``check --batch --jobs N``: worker processes answer exactly what one process answers, in input order.

Lines are routed by instance (each instance still parsed and solved once);
a worker that dies costs the lines it held an internal-error verdict each and
nothing else; a real process fed one line at a time answers each before the
next is written.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kipopt import api
from kipopt.batch import Oracle, Outcome, Stats
from kipopt.batch_pool import default_jobs, run_pool
from kipopt.datasets import generate
from kipopt.instance import to_dict

KIPOPT = Path(sys.executable).with_name("kipopt")
TIMING = ("exact_seconds", "seconds")


@pytest.fixture(scope="module")
def lines(tmp_path_factory) -> list[str]:
    """Mixed lines: four consumer groups inline (two solutions each, interleaved), a tasks instance through
    a file, a malformed line, a non-object, an unknown rule."""
    folder = tmp_path_factory.mktemp("pool")
    out = []
    groups = [generate("consumers", seed, members=8 + seed, topics=3, partitions=30, subscriptions="mixed")
              for seed in range(4)]
    answers = [(to_dict(g), api.solve(g, "kafka.cooperative_sticky").to_dict(),
                api.solve(g, "kafka.range").to_dict()) for g in groups]
    tasks = generate("tasks", 5, tasks=12, clients=4)
    path = folder / "tasks.json"
    path.write_text(json.dumps(to_dict(tasks)))
    port = api.solve(tasks, "kafka.rack_active").to_dict()
    for round_ in range(2):
        for k, (data, coop, ranged) in enumerate(answers):
            solution = coop if round_ == 0 else {"assignment": ranged["assignment"]}
            out.append(json.dumps({"id": f"g{k}-{round_}", "instance": data, "solution": solution, "rule": "balanced"}))
        out.append(json.dumps({"id": f"t-{round_}", "instance_path": str(path), "solution": port}))
    out[3:3] = ['{"id": "broken", "instance": ', "[1, 2]", "",
                json.dumps({"id": "rule", "instance": answers[0][0], "solution": answers[0][1], "rule": "nope"})]
    return out


def _run(lines: list[str], jobs: int, make=lambda: Oracle("check")) -> tuple[list[dict], Outcome, Stats]:
    data = io.BytesIO("".join(line + "\n" for line in lines).encode())
    out = io.StringIO()
    if jobs == 1:
        oracle = make()
        worst = oracle.run(data, out)
        stats = oracle.stats
    else:
        stats = Stats()
        worst = run_pool(make, data, out, jobs, stats)
    return [json.loads(v) for v in out.getvalue().splitlines()], worst, stats


def _untimed(verdict: dict) -> dict:
    return {k: v for k, v in verdict.items() if k not in TIMING}


@pytest.mark.parametrize("jobs", [2, 3])
def test_workers_answer_what_one_process_answers(lines, jobs):
    one, worst_one, stats_one = _run(lines, 1)
    many, worst_many, stats_many = _run(lines, jobs)
    assert [_untimed(v) for v in many] == [_untimed(v) for v in one]
    assert worst_many == worst_one == Outcome.MALFORMED
    assert stats_many == stats_one  # every instance parsed once, every exact model solved once
    assert stats_one.exact_solved == 5 and stats_one.lines == len([x for x in lines if x.strip()])


@pytest.mark.parametrize("jobs", [2, 3])
def test_one_instance_however_spelled_goes_to_one_worker(tmp_path, jobs):
    """A file named two ways and through a link: one instance, parsed and solved once with any number of
    workers, as with one (the same JSON inline is keyed by content: with the files on one worker it may
    be parsed once more)."""
    group = generate("consumers", 3, members=6, topics=2, partitions=12, subscriptions="mixed")
    data, solution = to_dict(group), api.solve(group, "exact.range").to_dict()
    (tmp_path / "g.json").write_text(json.dumps(data))
    (tmp_path / "link.json").symlink_to(tmp_path / "g.json")
    sources = [{"instance_path": str(tmp_path / "g.json")}, {"instance_path": f"{tmp_path}/./g.json"},
               {"instance_path": str(tmp_path / "link.json")}]
    lines = [json.dumps(dict(source, id=k, solution=solution)) for k in range(3) for source in sources]
    verdicts, _, stats = _run(lines, jobs)
    assert [v["id"] for v in verdicts] == [k for k in range(3) for _ in sources]
    assert all(v["ok"] for v in verdicts)
    assert stats.instances_parsed == 1 and stats.exact_solved == 1


class _Dying(Oracle):
    """Ends its own process (as the out-of-memory killer would) on the line whose id is "die"."""

    def answer_line(self, raw):
        if b'"die"' in raw:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().answer_line(raw)


def test_a_dead_worker_costs_only_the_lines_it_held():
    small = to_dict(generate("tasks", 5, tasks=12, clients=4))
    other = to_dict(generate("tasks", 6, tasks=10, clients=3))

    def line(line_id, inst):
        return json.dumps({"id": line_id, "instance": inst, "solution": {"assignment": {c: {} for c in inst["clients"]}}})

    batch = [line(0, small), line("die", small), *(line(i, other if i % 2 else small) for i in range(1, 9))]
    verdicts, worst, stats = _run(batch, 2, lambda: _Dying("evaluate"))
    assert [v["id"] for v in verdicts] == [0, "die", *range(1, 9)]
    assert "error" not in verdicts[0], "answered before the death"
    for v in verdicts[1:]:
        if v["id"] == "die" or v["id"] % 2 == 0:  # held by the worker that died (sent before it was seen dead)
            assert v["ok"] is False and v["error"].startswith("internal error: the worker process"), v
        else:  # the other instance's worker lives on
            assert "error" not in v and v["family"] == "tasks", v
    assert worst == Outcome.INTERNAL and stats.internal == 5 and stats.lines == 10


def test_no_worker_left_answers_every_line_with_an_error():
    batch = [json.dumps({"id": i, "solution": {}}).replace('"solution"', '"die": 1, "solution"') for i in range(5)]
    verdicts, worst, _ = _run(batch, 2, lambda: _Dying("evaluate"))
    assert [v["id"] for v in verdicts] == list(range(5))
    assert all(v["error"].startswith("internal error:") for v in verdicts) and worst == Outcome.INTERNAL


def test_one_line_at_a_time_with_workers(lines):
    """A harness writes a line and waits for its verdict before writing the next."""
    proc = subprocess.Popen([str(KIPOPT), "check", "--batch", "-", "--jobs", "2"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for line in lines[:3]:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            verdict = json.loads(proc.stdout.readline())
            assert verdict["id"] == json.loads(line)["id"]
        proc.stdin.close()
        assert proc.wait(60) == 1
        assert "3 lines" in proc.stderr.read().decode()
    finally:
        proc.kill()


@pytest.mark.parametrize("cores, jobs", [(1, 1), (2, 2), (3, 3), (8, 4), (64, 4)])
def test_default_jobs_follow_the_usable_cores(monkeypatch, cores, jobs):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert default_jobs() == jobs


def test_no_fork_no_workers(monkeypatch):
    monkeypatch.delattr(os, "fork")
    assert default_jobs() == 1


def test_a_reader_that_leaves_ends_the_batch_quietly(tmp_path):
    """The verdicts' reader closes its end after one line: kipopt ends (exit 1, as without workers) with no
    traceback, and its workers with it."""
    inst = to_dict(generate("tasks", 5, tasks=12, clients=4))
    line = json.dumps({"id": 0, "instance": inst, "solution": {"assignment": {c: {} for c in inst["clients"]}}})
    batch = tmp_path / "many.jsonl"
    batch.write_text((line + "\n") * 3000)  # verdicts far beyond a pipe's buffer
    proc = subprocess.Popen([str(KIPOPT), "evaluate", "--batch", str(batch), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdout.close()
    assert proc.wait(60) == 1
    assert proc.stderr.read() == b""


class _CoresOracle(Oracle):
    """Answers every line with the cores its process may keep busy (:func:`kipopt.deadline.cores`)."""

    def answer_line(self, raw):
        from kipopt import deadline
        return json.dumps({"cores": deadline.cores(), "pid": os.getpid()}), Outcome.PASSED


def test_batch_workers_share_the_cores_for_their_childrens_sake(monkeypatch):
    """A ``--batch`` worker is given its share of the cores (:func:`kipopt.deadline.share_cores`), so that the
    level tree in it pairs large leaf LPs only where its share has room for two."""
    from kipopt import deadline
    from kipopt.formulations.consumers.level_policy import leaf_workers
    monkeypatch.setattr(deadline, "_CORES", None)
    whole = deadline.cores()
    assert leaf_workers(None) == min(2, whole) and leaf_workers(1) == 1 and leaf_workers(8) == 2
    verdicts, _, _ = _run(["{}"] * 8, 2, make=lambda: _CoresOracle("check"))
    assert len({v["pid"] for v in verdicts}) >= 1 and {v["cores"] for v in verdicts} == {max(1, whole // 2)}
    assert deadline.cores() == whole  # this process keeps all of them
