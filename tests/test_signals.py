"""Interrupts leave nothing behind (issue 21, item 2).

Real ``kipopt`` processes are started on an instance whose ``exact.rack_standby``
solve runs its ILP in a forked HiGHS child (600 tasks, two tag dimensions,
three standbys), then signalled once that child exists: SIGINT ends them with
130 and SIGTERM with 143, each within a second and with one line on stderr;
after any of SIGINT, SIGTERM and SIGKILL no process carrying the test's marker
variable is left (every process kipopt starts inherits its environment), and
every line ``check --batch`` wrote is whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kipopt.datasets import generate
from kipopt.deadline import Deadline, call_before
from kipopt.instance import to_dict
from processes import marked

KIPOPT = Path(sys.executable).with_name("kipopt")
MARKER = "KIPOPT_SIGNALS_TEST"
SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGKILL, -signal.SIGKILL)]


@pytest.fixture(scope="module")
def standby_instance(tmp_path_factory) -> Path:
    # a solve that lasts: since rack_standby's task classes, 600 x 40 is settled in a third of a second
    # (before the signal could arrive); 12,000 x 800 takes its model minutes
    inst = generate("tasks", 3, tasks=12_000, clients=800, tags=2, num_standby_replicas=3, strategy="min_traffic")
    path = tmp_path_factory.mktemp("signals") / "standby.json"
    path.write_text(json.dumps(to_dict(inst)))
    return path


def _marked(mark: str) -> list[int]:
    """Live processes whose environment carries ``MARKER=mark`` (zombies have none and do not count)."""
    return [pid for pid, _ in marked(MARKER, mark)]


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                kids += [int(k) for k in handle.read().split()]
    except OSError:
        pass
    return kids


def _default_dispositions() -> None:
    """In the child before exec: SIGINT and SIGHUP as a terminal's foreground command has them (a suite run
    as a background job, or under nohup, would pass their ignoring on, which kipopt keeps)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _start(args: list[str], stdin=subprocess.DEVNULL, ignoring: signal.Signals | None = None
           ) -> tuple[subprocess.Popen, str]:
    mark = uuid.uuid4().hex
    env = {**os.environ, MARKER: mark}

    def dispositions() -> None:
        _default_dispositions()
        if ignoring is not None:
            signal.signal(ignoring, signal.SIG_IGN)

    proc = subprocess.Popen([str(KIPOPT), *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, preexec_fn=dispositions)
    return proc, mark


def _wait_for_child(proc: subprocess.Popen, depth: int = 1, seconds: float = 60.0) -> int:
    """A process ``depth`` generations below kipopt: its HiGHS child (1), or a batch worker's (2)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        kids = [proc.pid]
        for _ in range(depth):
            kids = [k for pid in kids for k in _children(pid)]
        if kids:
            return kids[0]
        assert proc.poll() is None, f"kipopt ended before forking a HiGHS child: {proc.stderr.read()!r}"
        time.sleep(0.05)
    raise AssertionError("no HiGHS child within a minute")


def _interrupt(proc: subprocess.Popen, mark: str, sig: signal.Signals, code: int,
               depth: int = 1) -> tuple[bytes, bytes]:
    child = _wait_for_child(proc, depth)
    assert os.getpgid(child) == os.getpgid(proc.pid), "the child stays in kipopt's process group"
    time.sleep(0.3)
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    took = time.monotonic() - sent
    assert proc.returncode == code, err
    if sig != signal.SIGKILL:
        assert took < 1.0, f"{sig.name} took {took:.2f} s"
        lines = err.decode().splitlines()
        assert lines == [f"kipopt: interrupted by {sig.name}"], err
    end = time.monotonic() + 3.0  # a death signal is delivered at once; the check allows for a loaded machine
    while _marked(mark) and time.monotonic() < end:
        time.sleep(0.05)
    assert _marked(mark) == [], "a process outlived kipopt"
    return out, err


@pytest.mark.parametrize("sig, code", SIGNALS, ids=lambda v: getattr(v, "name", str(v)))
def test_solve_interrupted_mid_solve_leaves_nothing(standby_instance, sig, code):
    proc, mark = _start(["solve", str(standby_instance), "--method", "exact.rack_standby", "--time-limit", "60"])
    out, _ = _interrupt(proc, mark, sig, code)
    assert out == b"", "an interrupted solve prints no (partial) solution"


@pytest.mark.parametrize("ignored", [signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_started_ignored_stays_ignored(standby_instance, ignored):
    """``nohup`` (SIGHUP) and a shell's background job (SIGINT) start kipopt ignoring a signal: it must not
    end it; SIGTERM still does."""
    proc, mark = _start(["solve", str(standby_instance), "--method", "exact.rack_standby", "--time-limit", "60"],
                        ignoring=ignored)
    _wait_for_child(proc)
    proc.send_signal(ignored)
    time.sleep(1.0)
    assert proc.poll() is None, proc.communicate()[1]
    out, _ = _interrupt(proc, mark, signal.SIGTERM, 143)
    assert out == b""


@pytest.mark.parametrize("jobs", [1, 2], ids=lambda j: f"jobs{j}")
@pytest.mark.parametrize("sig, code", SIGNALS, ids=lambda v: getattr(v, "name", str(v)))
def test_check_batch_interrupted_mid_solve_leaves_whole_lines(standby_instance, sig, code, jobs, tmp_path):
    inst = json.loads(standby_instance.read_text())
    current = {c: {"active": s.get("active", []), "standby": s.get("standby", [])} for c, s in inst["clients"].items()}
    small = to_dict(generate("tasks", 5, tasks=12, clients=4))
    first = {"id": "small", "instance": small, "solution": {"assignment": {c: {} for c in small["clients"]}}}
    heavy = {"id": "heavy", "instance_path": str(standby_instance), "solution": {"assignment": current},
             "rule": "rack_standby", "time_limit": 60}
    batch = tmp_path / "lines.jsonl"
    batch.write_text(json.dumps(first) + "\n" + json.dumps(heavy) + "\n")
    proc, mark = _start(["check", "--batch", str(batch), "--jobs", str(jobs)])
    # the small line's verdict is in before the signal: in one loaded full run (two workers) the signal,
    # sent 0.3 s after a worker's child appeared, came before that verdict was written
    first = proc.stdout.readline()
    out, _ = _interrupt(proc, mark, sig, code, depth=1 if jobs == 1 else 2)  # with workers: a worker's child
    out = first + out
    assert out.endswith(b"\n")
    assert [json.loads(line)["id"] for line in out.decode().splitlines()] == ["small"]


def _big_verdict_batch(tmp_path: Path, copies: int) -> Path:
    """Evaluate lines whose verdicts are about 300 kB each (a count per broker of 20,000 brokers)."""
    brokers = 20_000
    instance = {"format": 1, "family": "replicas", "partitions": brokers // 2, "replication_factor": 2,
                "brokers": [{"id": b, "rack": f"r{b % 3}"} for b in range(brokers)]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(instance))
    assignment = {str(p): [2 * p, 2 * p + 1] for p in range(brokers // 2)}
    line = json.dumps({"id": 0, "instance_path": str(path), "solution": {"assignment": assignment}})
    batch = tmp_path / "big.jsonl"
    batch.write_text("".join(line.replace('"id": 0', f'"id": {i}', 1) + "\n" for i in range(copies)))
    return batch


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_kill_while_large_verdicts_are_written_leaves_no_partial_line(tmp_path, sig):
    batch = _big_verdict_batch(tmp_path, 400)
    proc, mark = _start(["evaluate", "--batch", str(batch)])
    chunks: list[bytes] = []
    started = time.monotonic()
    while sum(map(len, chunks)) < 2_000_000 and time.monotonic() - started < 60:  # some verdicts are out
        chunks.append(os.read(proc.stdout.fileno(), 1 << 16))
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    text = b"".join(chunks) + out
    expected = {signal.SIGKILL: -signal.SIGKILL, signal.SIGTERM: 143, signal.SIGINT: 130}[sig]
    assert proc.returncode in (expected, 0), proc.returncode  # 0: the batch was done before the signal
    assert text.endswith(b"\n")
    ids = [json.loads(line)["id"] for line in text.decode().splitlines()]
    assert ids == list(range(len(ids))) and len(ids) >= 1
    assert not _marked(mark)


def test_fifo_instance_path_does_not_block(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    lines = [{"id": 1, "instance_path": str(fifo), "solution": {"assignment": {}}},
             {"id": 2, "instance_path": str(tmp_path), "solution": {"assignment": {}}}]
    done = subprocess.run([str(KIPOPT), "check", "--batch", "-"], input="".join(json.dumps(x) + "\n" for x in lines),
                          capture_output=True, text=True, timeout=30)
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 2, done.stderr
    assert [(v["id"], v["field"]) for v in verdicts] == [(1, "instance_path"), (2, "instance_path")]


def _kill_and_find_nothing_left(proc: subprocess.Popen, mark: str) -> None:
    """SIGKILL ``proc``; within 3 s no process carrying ``mark`` is left."""
    proc.kill()
    proc.wait(10)
    end = time.monotonic() + 3.0
    while _marked(mark) and time.monotonic() < end:
        time.sleep(0.05)
    assert _marked(mark) == []


def test_child_dies_with_a_killed_parent_by_its_pipe_alone(tmp_path):
    """The portable fallback (SIGIO when the parent's end of the lifeline closes), with the Linux death
    signal switched off: a parent killed by SIGKILL still leaves no child."""
    mark = uuid.uuid4().hex
    script = ("import time\n"
              "from kipopt import interrupts\n"
              "interrupts._pdeathsig = lambda: None\n"
              "from kipopt.deadline import Deadline, call_before\n"
              "call_before(Deadline.after(120), lambda: time.sleep(120))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, MARKER: mark})
    _wait_for_child(proc, seconds=30)
    _kill_and_find_nothing_left(proc, mark)


def test_call_before_kills_its_child_when_the_caller_raises(monkeypatch):
    import kipopt.deadline as deadline_module
    seen: list[int] = []
    before = set(_children(os.getpid()))  # the suite's own children (a Spark gateway) are not call_before's

    def boom(deadline, fd):
        seen.extend(p for p in _children(os.getpid()) if p not in before)
        raise KeyboardInterrupt

    monkeypatch.setattr(deadline_module, "_read_until", boom)
    with pytest.raises(KeyboardInterrupt):
        call_before(Deadline.after(60), lambda: time.sleep(60))
    assert seen and all(not os.path.exists(f"/proc/{pid}") for pid in seen)


def test_a_fork_waits_for_the_threads_working_beside():
    """A thread :func:`beside` started (the level tree's start, HiGHS solving in it) has ended before
    a child is forked: the child sees its whole work, and no lock it held."""
    from kipopt.deadline import beside
    done: list[int] = []
    beside(lambda: time.sleep(0.5) or done.append(1), "test-beside")
    assert call_before(Deadline.after(30), lambda: len(done)) == 1


def test_why_a_child_failed_is_the_calling_threads_own():
    """:func:`child_failure` says why this thread's last child gave no result, whatever children another
    thread ran since (one reason for the process was overwritten by the other thread's success)."""
    import threading

    from kipopt.deadline import child_failure
    assert call_before(Deadline.after(30), lambda: 1 // 0) is None
    other: list = []
    thread = threading.Thread(target=lambda: other.append((call_before(Deadline.after(30), lambda: 7),
                                                           child_failure())))
    thread.start()
    thread.join(60)
    assert other == [(7, None)]
    assert child_failure() == "ZeroDivisionError: integer division or modulo by zero"


def test_a_deadline_centuries_away_is_waited_for():
    """``--time-limit 1e308``: the wait on the child is cut into steps ``select`` accepts (was exit 3)."""
    assert call_before(Deadline.after(1e308), lambda: 6 * 7) == 42


def test_a_result_sent_before_the_deadline_counts_when_the_caller_worked_past_it():
    """Two children at once (the level tree's leaves): the parent waits for the second past the deadline
    while the first has sent its whole result; that result is read, not lost. A child still silent at
    the deadline gives ``None``."""
    from kipopt.deadline import call_before_with
    done, mine = call_before_with(Deadline.after(0.5), lambda: 6 * 7, lambda: time.sleep(1.0) or "late")
    assert (done, mine) == (42, "late")
    done, _ = call_before_with(Deadline.after(0.5), lambda: time.sleep(30), lambda: time.sleep(1.0))
    assert done is None


@pytest.mark.parametrize("pipe_only", [False, True], ids=["death-signal", "pipe-alone"])
def test_two_children_at_once_die_with_a_killed_parent(pipe_only):
    """The level tree's two leaf LPs at once (:func:`call_highs_each_before`): the second child is forked
    while the first runs and holds a copy of the first's lifeline; a parent killed by SIGKILL still leaves
    neither, with the Linux death signal and with the lifeline pipes alone."""
    mark = uuid.uuid4().hex
    script = ("import time\n"
              "from kipopt import interrupts\n"
              + ("interrupts._pdeathsig = lambda: None\n" if pipe_only else "")
              + "from kipopt.formulations.highs import Deadline, call_highs_each_before\n"
              "call_highs_each_before(Deadline.after(120), [lambda: time.sleep(120), lambda: time.sleep(120)])\n")
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, MARKER: mark})
    end = time.monotonic() + 30
    while len(_children(proc.pid)) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    assert len(_children(proc.pid)) == 2
    _kill_and_find_nothing_left(proc, mark)


def test_threads_started_beside_from_several_threads_are_all_waited_for():
    """Methods running in several threads at once each start threads beside: every one is listed, so a fork
    waits for it (a list rebuilt by two threads at once dropped some)."""
    import sys
    import threading

    from kipopt import deadline

    release = threading.Event()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        starters = [threading.Thread(target=lambda: [deadline.beside(lambda: release.wait(60), "test") for _ in range(100)])
                    for _ in range(4)]
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        listed = sum(1 for t in deadline._BESIDE if t.is_alive() and t.name == "test")
    finally:
        sys.setswitchinterval(interval)
        release.set()
    assert listed == 400
    assert call_before(Deadline.after(30), lambda: 7) == 7  # the fork waits for all 400 to end


def test_a_child_killed_at_its_deadline_takes_the_programs_it_started_with_it(tmp_path):
    """PuLP's CBC is a program of its own under the forked child: killing the child alone left it running."""
    marker = tmp_path / "grandchild.pid"

    def starts_a_program() -> None:
        proc = subprocess.Popen(["sleep", "120"])
        marker.write_text(str(proc.pid))
        proc.wait()

    assert call_before(Deadline.after(1.0), starts_a_program) is None
    pid = int(marker.read_text())
    end = time.monotonic() + 3
    while time.monotonic() < end and Path(f"/proc/{pid}").exists() and \
            Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.05)
    alive = Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    assert not alive, "the child's own child outlived it"
