"""``kipopt bench`` interrupted: nothing outlives it, nothing is left in the temporary folder.

A real ``kipopt bench`` is started on a tiny grid and signalled while Spark starts (its JVM exists, no
session yet: the JVM ignores SIGINT and does not yet watch its stdin, so left alone it ran on for good,
holding kipopt's stderr open) and while items run (PySpark's worker daemon exists). Every process the run
starts inherits a marker variable; none may be alive a few seconds after kipopt ends, and the temporary
folder it was given must hold no Spark scratch folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kipopt.bench import pipeline as P
from processes import marked

KIPOPT = Path(sys.executable).with_name("kipopt")
MARKER = "KIPOPT_BENCH_SIGNALS_TEST"
GRID = """\
time_limit = 5
grace = 2
threads = 1
[families.replicas]
seeds = 3
methods = ["kafka.adminutils", "exact.spread"]
[[families.replicas.sizes]]
partitions = 12
brokers = 6
racks = 3
"""


def _processes(mark: str) -> list[tuple[int, str]]:
    return marked(MARKER, mark)


def _wait_for(mark: str, proc: subprocess.Popen, word: str, seconds: float = 240.0) -> None:
    end = time.monotonic() + seconds  # a Spark start alone took 64 s on the shared machine under load
    while time.monotonic() < end:
        if any(word in cmd for pid, cmd in _processes(mark) if pid != proc.pid):
            return
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.05)
    raise AssertionError(f"no process running {word!r} within {seconds:.0f} s")


@pytest.mark.parametrize("sig, code, when", [(signal.SIGINT, 130, "SparkSubmit"),
                                             (signal.SIGTERM, 143, "pyspark.daemon"),
                                             (signal.SIGINT, 130, "pyspark.daemon")],
                         ids=["SIGINT-starting", "SIGTERM-running", "SIGINT-running"])
def test_an_interrupted_bench_leaves_no_process_and_no_scratch(tmp_path, sig, code, when):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    mark = uuid.uuid4().hex
    env = {**os.environ, MARKER: mark, "TMPDIR": str(scratch)}
    proc = subprocess.Popen([str(KIPOPT), "bench", str(grid), "--out", str(tmp_path / "out"), "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for(mark, proc, when)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)  # before, an interrupted start-up kept stderr open for good
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err and "Exception" not in err, err[-2000:]
    assert err.splitlines()[-2:] == [f"kipopt bench: interrupted; finished items are saved in "
                                     f"{tmp_path / 'out'}, rerun to resume", f"kipopt: interrupted by {sig.name}"]
    end = time.monotonic() + 5.0
    while _processes(mark) and time.monotonic() < end:
        time.sleep(0.05)
    assert _processes(mark) == [], "a process outlived kipopt bench"
    left = [p.name for p in scratch.iterdir() if p.is_dir()]
    assert left == [], f"scratch folders left behind: {left}"
    for item in P.done_items(str(tmp_path / "out")):  # what was finished stays whole
        assert (tmp_path / "out" / P.RESULTS_DIR / f"{item}.parquet").stat().st_size > 0


def test_a_later_run_removes_the_scratch_of_a_run_that_was_killed(tmp_path):
    """SIGKILL leaves a run's scratch folder (nothing can answer it): the next local run removes it, and only
    it: a live run's folder and anything not named as kipopt's scratch stay."""
    from kipopt.bench.session import SCRATCH_PREFIX, sweep_dead_scratch

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = tmp_path / f"{SCRATCH_PREFIX}{dead.pid}-abc123"
    (killed / "blockmgr-1").mkdir(parents=True)
    (killed / "blockmgr-1" / "shuffle.data").write_bytes(b"x" * 10)
    running = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-def456"
    running.mkdir()
    other = tmp_path / f"{SCRATCH_PREFIX}old_random"
    other.mkdir()
    assert sweep_dead_scratch(str(tmp_path)) == [killed.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, other.name])
