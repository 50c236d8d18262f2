"""``benchmarks/_measure.py``, the benchmarks' one way to run and measure a ``kipopt`` child (no timing asserted)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _measure import kipopt_solve, measure, read_json  # noqa: E402


def test_a_run_gives_its_exit_output_and_usage(tmp_path):
    out = tmp_path / "out.json"
    run = measure([sys.executable, "-c", "import json, sys; print(json.dumps({'a': 1})); "
                   "print('last words', file=sys.stderr); sys.exit(3)"], out)
    assert run.exit == 3 and not run.killed and run.last_error == "last words"
    assert run.wall > 0 and run.cpu >= 0 and run.rss_gb > 0
    assert read_json(out) == {"a": 1}


def test_a_run_past_its_hard_stop_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    code = ("import os, subprocess, sys, time; "
            f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"open({str(marker)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    run = measure([sys.executable, "-c", code], tmp_path / "out", hard_stop=3.0)
    assert run.killed and run.exit == -9
    pid = int(marker.read_text())
    for _ in range(100):  # the grandchild got SIGKILL with its group (a zombie until it is reaped is dead)
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                break
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild outlived the hard stop")


def test_a_memory_cap_makes_a_large_allocation_fail(tmp_path):
    run = measure([sys.executable, "-c", "x = bytearray(2_000_000_000)"], tmp_path / "out", memory_bytes=1e9)
    assert run.exit == 1 and "MemoryError" in run.last_error


def test_the_solve_command_line_and_a_partial_answer(tmp_path):
    assert kipopt_solve("x.json", "exact.range", 5)[-4:] == ["--method", "exact.range", "--time-limit", "5"]
    assert "--time-limit" not in kipopt_solve("x.json", "exact.range")
    (tmp_path / "cut.json").write_text(json.dumps({"a": 1})[:-1])
    assert read_json(tmp_path / "cut.json") is None and read_json(tmp_path / "none.json") is None
