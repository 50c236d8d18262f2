"""The paper's client-library case study: kafka-python's assignors checked by kipopt's oracle.

    python paper/case_kafka_python.py [--groups 50] [--out paper/data/kafka_python.json]

The same run as ``notebooks/downstream_kafka_python.ipynb`` (docs/oracle.md §5),
as a script whose result the paper's table is generated from: seeded consumer
groups (8 members, 4 topics, 24 partitions, mixed subscriptions, owned
history with conflicting claims) through each of kafka-python's assignors;
every answer checked on its rule by one ``kipopt check --batch -`` process;
each answer compared with the Java port it mirrors
(``kipopt.testing.assert_same_as_kafka``); each assignor run again under two
``PYTHONHASHSEED`` values. Needs ``pip install "kipopt[clients]"``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "paper" / "data" / "kafka_python.json"
KIPOPT = str(Path(sys.executable).with_name("kipopt"))
SHAPE = {"members": 8, "topics": 4, "partitions": 24, "subscriptions": "mixed"}


def answers(instances: list, names: list[str]) -> tuple[dict, dict]:
    """Every assignor on every group: ``(answers, crashes)`` keyed by (assignor, group index)."""
    from kipopt.clients.kafka_python import assign
    done, crashed = {}, {}
    for name in names:
        for i, inst in enumerate(instances):
            try:
                done[name, i] = assign(inst, name)
            except Exception as exc:  # the library's own error is a finding
                crashed[name, i] = type(exc).__name__
    return done, crashed


def verdicts(instances: list, done: dict) -> dict[str, dict]:
    """One ``kipopt check --batch -`` process over every answer."""
    from kipopt.clients.kafka_python import ASSIGNORS
    from kipopt.instance import to_dict
    lines = [json.dumps({"id": f"{name}/{i}", "instance": to_dict(instances[i]), "solution": solution,
                         "rule": ASSIGNORS[name].rule}) for (name, i), solution in done.items()]
    run = subprocess.run([KIPOPT, "check", "--batch", "-"], input="\n".join(lines) + "\n", capture_output=True,
                         text=True, timeout=3600)
    found = {v["id"]: v for v in map(json.loads, run.stdout.splitlines())}
    if run.returncode not in (0, 1) or len(found) != len(lines):
        raise SystemExit(f"case_kafka_python: kipopt check failed: {run.stderr.strip()[-400:]}")
    return found


def hash_seed_dependent(instances: list, name: str) -> int:
    """Groups whose answer differs between ``PYTHONHASHSEED=0`` and ``=1`` (one process each)."""
    from kipopt.instance import to_dict
    text = "".join(json.dumps(to_dict(inst)) + "\n" for inst in instances)

    def under(seed: int) -> list[dict]:
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        out = subprocess.run([sys.executable, "-m", "kipopt.clients.kafka_python", name], input=text, env=env,
                             capture_output=True, text=True, timeout=1200, check=True).stdout
        return [_sets(json.loads(line)) for line in out.splitlines()]

    return sum(a != b for a, b in zip(under(0), under(1)))


def _sets(answer: dict) -> dict:
    return {k: {m: sorted(ps) for m, ps in v.items()} for k, v in answer.items() if k in ("assignment", "target")}


def same_as_java(instances: list, done: dict, name: str) -> int | None:
    from kipopt.clients.kafka_python import ASSIGNORS, port_available
    from kipopt.testing import assert_same_as_kafka
    if not port_available(name):
        return None
    same = 0
    for i, inst in enumerate(instances):
        if (name, i) in done:
            try:
                assert_same_as_kafka(inst, done[name, i], ASSIGNORS[name].port)
                same += 1
            except AssertionError:
                pass
    return same


def study(groups: int) -> dict[str, Any]:
    from kipopt.clients.kafka_python import ASSIGNORS
    from kipopt.datasets import generate
    instances = [generate("consumers", seed, **SHAPE) for seed in range(1, groups + 1)]
    names = list(ASSIGNORS)
    done, crashed = answers(instances, names)
    found = verdicts(instances, done)
    rows = []
    for name in names:
        mine = [found[f"{name}/{i}"] for i in range(groups) if (name, i) in done]
        excess = [v["criteria_excess"]["cross_rack"] for v in mine if v.get("criteria_excess")]
        errors = sorted({e for (n, _), e in crashed.items() if n == name})
        rows.append({"assignor": name, "rule": ASSIGNORS[name].rule, "port": ASSIGNORS[name].port,
                     "groups": groups, "answered": len(mine), "crashed": groups - len(mine), "errors": errors,
                     "broken": sum(not v["feasible"] for v in mine),
                     "above_optimum": sum(e > 0 for e in excess), "worst_excess": max(excess, default=0),
                     "proven": sum(v["exact_status"] == "optimal" for v in mine),
                     "same_as_java": same_as_java(instances, done, name),
                     "hash_seed_dependent": hash_seed_dependent(instances, name)})
    return {"library": "kafka-python", "version": version("kafka-python"), "shape": SHAPE,
            "seeds": [1, groups], "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="case_kafka_python.py", description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from kipopt.clients.kafka_python import require_library
    from kipopt.errors import KipoptError
    try:
        require_library()   # before anything runs: a missing library is not 50 crashes per assignor
    except KipoptError as exc:
        print(f"case_kafka_python: {exc}", file=sys.stderr)
        return 2
    result = study(args.groups)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for r in result["rows"]:
        print(json.dumps(r), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
