"""``docs/oracle.md``'s examples: the shell script runs for real; the Go and JUnit examples are
compile-checked when a toolchain (and, for Java, JUnit 5 and Jackson in ~/.m2) is present, and
skipped otherwise: the suite does not depend on Go or Java."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
BIN = Path(sys.executable).parent


def test_oracle_doc_names_every_example():
    text = (ROOT / "docs" / "oracle.md").read_text()
    for example in ("examples/oracle.sh", "examples/go/oracle_test.go", "examples/java/KipoptOracleTest.java"):
        assert example in text and (ROOT / "docs" / example).is_file()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_shell_example_runs(tmp_path):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", TMPDIR=str(tmp_path))
    run = subprocess.run(["bash", str(EXAMPLES / "oracle.sh")], capture_output=True, text=True, timeout=600,
                         env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "1. kafka.rack_active is optimal for rack_active: 1 verdict ok" in out
    assert "the unoptimised assignment fails the check (exit status 1)" in out
    assert "2. batch exit status 2" in out
    assert out.count("read before the next question was written") == 2
    assert "4. 3 generated vectors" in out and out.rstrip().endswith("done")
    assert "Traceback" not in run.stderr


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain: the Go example is documentation")
def test_go_example_compiles(tmp_path):
    shutil.copytree(EXAMPLES / "go", tmp_path / "go")
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOCACHE=str(tmp_path / "cache"))
    run = subprocess.run(["go", "vet", "./..."], cwd=tmp_path / "go", capture_output=True, text=True, timeout=600,
                         env=env)
    assert run.returncode == 0, run.stderr


def _newest(pattern: str) -> Path | None:
    repo = Path.home() / ".m2" / "repository"
    found = sorted(repo.glob(pattern), key=lambda p: [int(x) if x.isdigit() else 0
                                                      for x in p.parent.name.split(".")])
    return found[-1] if found else None


def _java_classpath() -> list[Path] | None:
    api = _newest("org/junit/jupiter/junit-jupiter-api/5.*/junit-jupiter-api-5.*.jar")
    databind = _newest("com/fasterxml/jackson/core/jackson-databind/2.*/jackson-databind-2.*.jar")
    if api is None or databind is None:
        return None
    version = databind.parent.name
    core = Path(str(databind).replace("jackson-databind", "jackson-core"))
    extras = [_newest("org/apiguardian/apiguardian-api/*/apiguardian-api-*.jar"),
              _newest("org/opentest4j/opentest4j/*/opentest4j-*.jar")]
    if not core.is_file():
        return None
    assert version in core.name
    return [api, databind, core] + [e for e in extras if e is not None]


@pytest.mark.skipif(shutil.which("javac") is None or _java_classpath() is None,
                    reason="no javac, or JUnit 5 and Jackson not in ~/.m2: the JUnit example is documentation")
def test_junit_example_compiles(tmp_path):
    classpath = os.pathsep.join(str(p) for p in _java_classpath())
    run = subprocess.run(["javac", "-d", str(tmp_path), "-cp", classpath,
                          str(EXAMPLES / "java" / "KipoptOracleTest.java")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "KipoptOracleTest.class").is_file()
