"""Start-up: ``validate`` and ``check`` import only what they use (no Spark, pandas or matplotlib;
``validate`` not even a solver). Wall-clock targets live in ``benchmarks/bench_oracle.py``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kipopt.datasets import generate
from kipopt.instance import to_dict

HEAVY = ("pyspark", "pandas", "matplotlib", "pyarrow")
SOLVERS = ("numpy", "highspy", "pulp", "scipy", "networkx")

_PROBE = """
import json, sys
from kipopt.cli import main
status = main(sys.argv[1:])
roots = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"status": status, "roots": roots}), file=sys.stderr)
"""


def loaded(argv: list[str]) -> set[str]:
    run = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120)
    report = json.loads(run.stderr.strip().splitlines()[-1])
    assert report["status"] in (0, 1), run.stderr
    return set(report["roots"])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("startup")
    inst = generate("tasks", 1, tasks=24, clients=6)
    (folder / "i.json").write_text(json.dumps(to_dict(inst)))
    solution = {"assignment": {c: {"active": list(x.active)} for c, x in inst.clients.items()}}
    (folder / "s.json").write_text(json.dumps(solution))
    return str(folder / "i.json"), str(folder / "s.json")


def test_validate_imports_no_solver_and_no_spark(files):
    roots = loaded(["validate", files[0]])
    assert not roots & set(HEAVY + SOLVERS), roots & set(HEAVY + SOLVERS)
    assert "kipopt" in roots


def test_check_imports_no_spark_pandas_or_matplotlib(files):
    roots = loaded(["check", files[0], files[1], "--rule", "rack_active"])
    assert not roots & set(HEAVY), roots & set(HEAVY)
    assert "highspy" in roots  # it did solve


def test_batch_imports_no_spark_pandas_or_matplotlib(files, tmp_path):
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"id": 1, "instance_path": files[0], "solution": json.load(open(files[1])),
                                 "rule": "rack_active"}) + "\n")
    assert not loaded(["check", "--batch", str(lines)]) & set(HEAVY)


def test_check_stdout_is_one_json_object(files):
    """A real ``kipopt check`` process: stdout is exactly the verdict (HiGHS's banner, printed by native
    code on file descriptor 1, is sent to stderr)."""
    kipopt = str(__import__("pathlib").Path(sys.executable).with_name("kipopt"))
    run = subprocess.run([kipopt, "check", *files, "--rule", "rack_active"], capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stderr
    assert json.loads(run.stdout)["rule"] == "rack_active"
