"""Without kafka-python (the ``[clients]`` extra) the adapter says how to install it; it is never counted
as one of the library's crashes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kipopt.datasets import generate
from kipopt.errors import KipoptError
from kipopt.instance import to_dict


@pytest.fixture
def no_library(monkeypatch):
    for name in [n for n in sys.modules if n == "kafka" or n.startswith("kafka.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kafka", None)  # import kafka fails as when it is not installed


def test_assign_without_the_library_says_how_to_install_it(no_library):
    from kipopt.clients.kafka_python import assign
    with pytest.raises(KipoptError, match=r"kafka-python is not installed: pip install 'kipopt\[clients\]'"):
        assign(generate("consumers", 1, members=3, topics=2, partitions=6), "range")


def test_the_line_tool_without_the_library_is_one_line_and_exit_2():
    """It printed {"error": "ModuleNotFoundError: ..."} for every group and exited 0: the notebook then
    reported every assignor as crashing on 50 of 50 groups."""
    probe = ("import sys; sys.modules['kafka'] = None; from kipopt.clients.kafka_python import main; "
             "sys.exit(main(['range']))")
    line = json.dumps(to_dict(generate("consumers", 1, members=3, topics=2, partitions=6)))
    done = subprocess.run([sys.executable, "-c", probe], input=line + "\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "kipopt: error: kafka-python is not installed: pip install 'kipopt[clients]'"]


def test_the_papers_case_study_without_the_library_stops_at_once(no_library, tmp_path, capsys):
    """paper/case_kafka_python.py counted every group as a crash and then ended with a traceback; it now
    stops before anything runs, with the install line, and writes nothing."""
    import importlib.util
    from pathlib import Path
    script = Path(__file__).resolve().parents[2] / "paper" / "case_kafka_python.py"
    spec = importlib.util.spec_from_file_location("case_kafka_python", script)
    case = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(case)
    out = tmp_path / "k.json"
    assert case.main(["--groups", "2", "--out", str(out)]) == 2
    assert not out.exists()
    assert capsys.readouterr().err.strip() == (
        "case_kafka_python: kafka-python is not installed: pip install 'kipopt[clients]'")
