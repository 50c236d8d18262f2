"""Standard output of the command line is exactly one JSON document, for every family's exact method.

Another project's test parses it; HiGHS prints a banner to the process's
standard output when its first solver object is made, which must not reach it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kipopt.datasets import generate
from kipopt.instance import to_dict

CASES = [("tasks", "exact.rack_standby", {"tasks": 12, "clients": 4}),
         ("tasks", "exact.rack_active", {"tasks": 12, "clients": 4}),
         ("replicas", "exact.spread", {"partitions": 8, "brokers": 4, "racks": 2})]


@pytest.mark.parametrize("family, method, params", CASES)
def test_solve_prints_one_json_document_in_a_fresh_process(tmp_path, family, method, params):
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(to_dict(generate(family, 1, **params))))
    done = subprocess.run([sys.executable, "-m", "kipopt", "solve", str(path), "--method", method],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["method"] == method


_FINALIZED = """
import atexit, sys
atexit.register(lambda: print("finalized", file=sys.stderr))
from kipopt.cli import main
"""
"""An exit handler that says whether Python's finalization ran, then kipopt's ``main``."""


def _console(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    """The command line as the console script runs it (``main()`` owning the process)."""
    return subprocess.run([sys.executable, "-c", _FINALIZED + "sys.exit(main())\n", *argv], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def test_the_process_ends_once_its_output_is_out(tmp_path):
    """The console script ends without Python's finalization (0.04 s of a second-long solve): the whole
    document is out and the exit status is the command's."""
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(to_dict(generate("consumers", 1, partitions=400, members=8, topics=3,
                                                subscriptions="mixed"))))
    done = _console(tmp_path, "solve", str(path), "--method", "exact.balanced", "--time-limit", "30")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["method"] == "exact.balanced"
    assert "finalized" not in done.stderr
    failed = _console(tmp_path, "solve", str(tmp_path / "missing.json"), "--method", "exact.balanced")
    assert failed.returncode == 2 and "missing.json" in failed.stderr and "finalized" not in failed.stderr


def test_a_process_inside_another_keeps_python_s_exit(tmp_path):
    """``main([...])`` called by a longer-lived process (a test, a notebook) returns its status, and ``bench``
    (Spark's own exit handlers) keeps Python's exit: only ``main()`` owning a non-bench command ends early."""
    probe = _FINALIZED + "print('status', main(['generate', 'consumers', '--seed', '1']), file=sys.stderr)\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "status 0" in done.stderr and "finalized" in done.stderr
    bench = _console(tmp_path, "bench", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "out"))
    assert bench.returncode != 0 and "finalized" in bench.stderr
