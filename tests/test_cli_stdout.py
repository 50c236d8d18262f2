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
