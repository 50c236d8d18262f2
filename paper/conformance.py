"""Port conformance for the paper: every committed Java vector replayed on its port, counted.

    python paper/conformance.py [--out paper/data/conformance.json]

The vectors under ``tests/**/data/`` were printed by Kafka's own classes
(compiled with javac outside the repository); the test suite asserts that
each port reproduces them. This script runs the same comparisons without
stopping at the first difference and writes one record per (vector file,
port): the Java class, how the outputs are compared, how many groups or
clusters the file holds and on how many the port's answer is identical.
``make_paper.py tables`` turns that JSON into ``generated/conformance.tex``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "paper" / "data" / "conformance.json"
CLIENT = "tests/solvers/consumers/client/data/kafka_client_vectors.json"
COLLISIONS = "tests/solvers/consumers/client/data/kafka_client_collisions.json"
CLIENT_LARGE = "tests/solvers/consumers/client/data/kafka_client_vectors_large.json"
SERVER = "tests/solvers/consumers/group/data/kafka_consumer_vectors.json"
SERVER_STATIC = "tests/solvers/consumers/group/data/kafka_server_static_vectors.json"
STREAMS = "tests/solvers/tasks/data/sticky_kafka_outputs.json"
REASSIGN = "tests/solvers/replicas/data/sticky_partition_reassignor_java.json"
BALANCER = "tests/solvers/replicas/data/minimal_movement_java.json"


@dataclass(frozen=True)
class Conformance:
    """One port against one vector file."""

    port: str
    java_class: str
    source: str
    compared: str
    cases: int
    identical: int


def _load(path: str) -> dict:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def _count(cases: Iterable[Any], same: Callable[[Any], bool]) -> tuple[int, int]:
    cases = list(cases)
    return len(cases), sum(1 for case in cases if same(case))


def _lists(instance: Any, assignment: Any) -> dict[str, list[str]]:
    return {m.id: [p if isinstance(p, str) else f"{p[0]}-{p[1]}" for p in assignment.get(m.id, ())]
            for m in instance.members}


def _sets(assignment: Any) -> dict[str, set[str]]:
    return {m: set(ps) for m, ps in assignment.items()}


def _generated(source: str) -> list[tuple[Any, dict]]:
    """A vector file's groups, each regenerated from its seed and parameters, with Kafka's outputs."""
    from kipopt.datasets import generate
    return [(generate("consumers", v["seed"], **v["params"]), v["outputs"]) for v in _load(source)["vectors"]]


def client_assignors() -> list[Conformance]:
    """Kafka's client assignors: every list, in Kafka's order."""
    from kipopt.instance import from_dict
    from kipopt.solvers.consumers.client.abstract_sticky import sticky_inputs
    from kipopt.solvers.consumers.client.cooperative_sticky import cooperative_sticky_assign
    from kipopt.solvers.consumers.client.range import range_assign
    from kipopt.solvers.consumers.client.round_robin import round_robin_assign
    from kipopt.solvers.consumers.client.sticky import eager_sticky_assign
    ports = {
        "kafka.range": ("RangeAssignor", lambda x: range_assign(x).assignment),
        "kafka.round_robin": ("RoundRobinAssignor", round_robin_assign),
        "kafka.cooperative_sticky": ("CooperativeStickyAssignor",
                                     lambda x: cooperative_sticky_assign(sticky_inputs(x)).partial),
        "kafka.eager_sticky": ("StickyAssignor", lambda x: eager_sticky_assign(x).assignment),
    }
    collisions = [(from_dict(c["instance"]), c["outputs"]) for c in _load(COLLISIONS)["cases"]]
    out = []
    for source, instances in ((CLIENT, _generated(CLIENT)), (CLIENT_LARGE, _generated(CLIENT_LARGE)),
                              (COLLISIONS, collisions)):
        for port, (cls, run) in ports.items():
            cases, same = _count(((x, {m.id: o[port].get(m.id, []) for m in x.members}) for x, o in instances
                                  if port in o), lambda c: _lists(c[0], run(c[0])) == c[1])
            out.append(Conformance(port, cls, source, "lists, in order", cases, same))
    return out


def server_assignors() -> list[Conformance]:
    """The group coordinator's assignors (KIP-848): sets per member (Kafka's lists come from hash sets)."""
    from kipopt.solvers.consumers.client.range import range_assign
    from kipopt.solvers.consumers.group.range import server_range
    from kipopt.solvers.consumers.group.spec import group_spec
    from kipopt.solvers.consumers.group.uniform import uniform_assign
    out = []
    for source in (SERVER, SERVER_STATIC):  # the second: every group with static members
        instances = _generated(source)
        if any("kafka.range" in o for _, o in instances):
            cases, same = _count(((x, o["kafka.range"]) for x, o in instances if "kafka.range" in o),
                                 lambda c: _lists(c[0], range_assign(c[0]).assignment) == c[1])
            out.append(Conformance("kafka.range", "RangeAssignor", source, "lists, in order", cases, same))
        for port, cls, run in (("kafka.server_uniform", "UniformAssignor", lambda x: uniform_assign(group_spec(x))),
                               ("kafka.server_range", "RangeAssignor (coordinator)",
                                lambda x: server_range(group_spec(x)))):
            cases, same = _count(((x, o[port]) for x, o in instances if port in o),
                                 lambda c: _sets(run(c[0])) == _sets(c[1]))
            out.append(Conformance(port, cls, source, "sets per member", cases, same))
    return out


def streams_sticky() -> list[Conformance]:
    """KIP-924's ``StickyTaskAssignor``: actives and standbys per client, in order."""
    from kipopt.instance import from_dict
    from kipopt.solvers.tasks.sticky_task_assignor import StickyTaskAssignor

    def same(case: dict) -> bool:
        x = from_dict(case["instance"])
        r = StickyTaskAssignor(x).assign()
        got = {c: {"active": list(r.active[c]), "standby": list(r.standby[c])} for c in x.client_ids}
        return got == case["kafka"]

    cases, identical = _count(_load(STREAMS)["cases"], same)
    return [Conformance("kafka.sticky", "StickyTaskAssignor", STREAMS, "lists, in order", cases, identical)]


def sticky_reassignor() -> list[Conformance]:
    """KAFKA-1792's proposed ``StickyPartitionReassignor`` (pull request, not released): replica lists."""
    from kipopt.solvers.replicas.proposals.sticky_partition_reassignor import sticky_reassign

    def same(case: dict) -> bool:
        current = {(t, int(p)): v for t, parts in case["current"].items() for p, v in parts.items()}
        java = {(t, int(p)): v for t, parts in case["java"].items() for p, v in parts.items()}
        return sticky_reassign(current, [tuple(b) for b in case["brokers"]]) == java

    cases, identical = _count(_load(REASSIGN)["cases"], same)
    return [Conformance("proposal.sticky_reassign", "StickyPartitionReassignor (KAFKA-1792 PR)", REASSIGN,
                        "replica lists, in order", cases, identical)]


def minimal_movement_balancer() -> list[Conformance]:
    """KAFKA-19048's proposed ``MinimalMovementReplicaBalancer`` (pull request, not released): replica lists."""
    from kipopt.solvers.replicas.proposals.minimal_movement import minimal_movement

    def same(case: dict) -> bool:
        current = dict(enumerate(case["assignment"]))
        got = minimal_movement(current, case["targets"], [tuple(b) for b in case["brokers"]])
        return [got[p] for p in range(len(current))] == case["java"]

    cases, identical = _count(_load(BALANCER), same)
    return [Conformance("proposal.minimal_movement", "MinimalMovementReplicaBalancer (KAFKA-19048 PR)", BALANCER,
                        "replica lists, in order", cases, identical)]


def run_all() -> list[Conformance]:
    return (client_assignors() + server_assignors() + streams_sticky() + sticky_reassignor()
            + minimal_movement_balancer())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="conformance.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    records = [asdict(r) for r in run_all()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"records": records}, indent=1) + "\n", encoding="utf-8")
    for r in records:
        print(f"{r['port']:26} {r['identical']:4d}/{r['cases']:<4d} {r['java_class']}", file=sys.stderr)
    return 0 if all(r["identical"] == r["cases"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
