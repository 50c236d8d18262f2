"""Kafka's open proposals and the public ILP peer against kipopt's exact optima (issue 20, items 4 and 5).

Replicas (one topic, RF 3), on generated clusters:

* ``add``: the current placement is Kafka's released ``--generate`` (``kafka.adminutils``) on the
  original brokers, then a quarter more brokers join (spread over the racks);
* ``skewed``: the current placement favours the first third of the brokers three to one (one replica
  per rack while racks allow), no broker joins;
* each with 3 equal racks or with no racks at all; 1,000, 3,000 and 10,000 partitions on 24 + 6,
  24 + 6 and 48 + 12 brokers (skewed: the same broker counts, all present from the start).

Methods: ``exact.spread`` (the reference: racks hard, then replica balance, leader balance, moves),
``proposal.sticky_reassign`` (KAFKA-1792), ``proposal.minimal_movement`` (KAFKA-19048's balancer),
the peer's model (:mod:`kipopt.formulations.replicas.peer`, PuLP + CBC as the peer runs it, also where
racks exist: it ignores them), and ``kafka.adminutils`` (the released ``--generate``, which ignores the
current placement); ``--methods`` picks some of them (``exact.spread`` always runs: it is the reference).

Consumers: ``proposal.server_uniform_rack`` (KAFKA-19909) against ``kafka.server_uniform``,
``exact.balanced`` and ``exact.range`` on homogeneous groups over 3 racks (RF 1 and 2), a fresh group
and one where 80 % of the partitions are owned.

Every row runs in a child process (``timeout`` seconds at most, the exact models and the peer get
``--limit`` seconds); the per-criterion columns Δ are the method's value minus ``exact.spread``'s on the
same instance (consumers: minus ``exact.balanced``'s, whose rule ranks balance, then cross-rack
partitions, then revocations). One run on a shared 2-core machine: times are
indicative, compare them within a row group.

Run: ``nice python benchmarks/bench_proposals.py [--sizes 1000,3000,10000] [--limit 120] [--part replicas,consumers]
[--scenarios add,skewed] [--racks 3,none] [--methods proposal.minimal_movement,peer]``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time

SIZES = {200: (8, 2), 1_000: (24, 6), 3_000: (24, 6), 10_000: (48, 12)}  # partitions: (brokers, added)
RF = 3
REPLICA_METHODS = ("exact.spread", "proposal.sticky_reassign", "proposal.minimal_movement", "peer", "kafka.adminutils")
CONSUMER_METHODS = ("exact.balanced", "exact.range", "proposal.server_uniform_rack", "kafka.server_uniform")
CONSUMER_SIZES = ((1_000, 50, 10), (10_000, 200, 20))  # partitions, members, topics


# --------------------------------------------------------------------------- replicas instances


def _brokers(count: int, racks: int, first: int = 0) -> list[dict]:
    return [{"id": first + i, **({"rack": f"r{(first + i) % racks}"} if racks else {})} for i in range(count)]


def _skewed_current(rng: random.Random, brokers: list[dict], partitions: int) -> dict[str, list[int]]:
    heavy = {b["id"] for b in brokers[: len(brokers) // 3]}
    weights = [3.0 if b["id"] in heavy else 1.0 for b in brokers]
    current = {}
    for p in range(partitions):
        chosen: list[int] = []
        racks: set = set()
        while len(chosen) < RF:
            b = rng.choices(brokers, weights)[0]
            distinct_racks = len({x.get("rack") for x in brokers})
            if b["id"] in chosen or (b.get("rack") in racks and len(racks) < min(RF, distinct_racks)):
                continue
            chosen.append(b["id"])
            racks.add(b.get("rack"))
        current[str(p)] = chosen
    return current


def replicas_instance(spec: dict):
    from kipopt import from_dict, solve
    base, added = SIZES[spec["partitions"]]
    racks = 3 if spec["racks"] else 0
    topic = {"format": 1, "family": "replicas", "partitions": spec["partitions"], "replication_factor": RF}
    if spec["scenario"] == "add":
        before = _brokers(base, racks)
        placed = solve(from_dict(dict(topic, brokers=before)), "kafka.adminutils").assignment
        current = {str(p): list(bs) for p, bs in placed.items()}
        brokers = before + _brokers(added, racks, first=base)
    else:
        brokers = _brokers(base + added, racks)
        current = _skewed_current(random.Random(spec["partitions"]), brokers, spec["partitions"])
    return from_dict(dict(topic, brokers=brokers, current=current))


def replicas_child(spec: dict) -> dict:
    from kipopt import solve
    from kipopt.evaluation.replicas import evaluate_replicas
    from kipopt.formulations.replicas.peer import solve_peer
    inst = replicas_instance(spec)
    method = spec["method"]
    start = time.perf_counter()
    if method == "peer":
        solved = solve_peer(inst, time_limit=spec["limit"], threads=2)
        status, assignment = solved.status, solved.assignment
    else:
        limit = spec["limit"] if method.startswith("exact.") else None
        s = solve(inst, method, time_limit=limit, threads=2)
        status, assignment = s.status.value, s.assignment
    seconds = time.perf_counter() - start
    row = {"status": status, "seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if assignment:
        m = evaluate_replicas(inst, assignment).metrics
        row.update({"rack_short": m["partitions_short_of_racks"], "replica_imbalance": m["replica_imbalance"],
                    "leader_imbalance": m["leader_imbalance"], "moves": m["moves"]})
    return row


# --------------------------------------------------------------------------- consumers


def consumers_child(spec: dict) -> dict:
    from kipopt import solve
    from kipopt.datasets import generate
    partitions, members, topics = spec["size"]
    inst = generate("consumers", 7, partitions=partitions, members=members, topics=topics, racks=3,
                    replication_factor=spec["rf"], subscriptions="equal", conflicts=0.0,
                    owned=spec["owned"])
    limit = spec["limit"] if spec["method"].startswith("exact.") else None
    s = solve(inst, spec["method"], time_limit=limit, threads=2)
    m = s.metrics
    return {"status": s.status.value, "seconds": s.seconds, "cross_rack": m["cross_rack"],
            "imbalance": m["imbalance"], "worst_topic_imbalance": m["worst_topic_imbalance"], "revoked": m["claims_revoked"]}


# --------------------------------------------------------------------------- driver


def measure(spec: dict, timeout: float) -> dict:
    try:
        out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"killed at {timeout:.0f} s"}
    if out.returncode != 0:
        return {"status": "error: " + (out.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _delta(row: dict, ref: dict, key: str) -> str:
    if key not in row or key not in ref:
        return "–"
    return f"{row[key] - ref[key]:+d}"


def replicas_table(sizes: list[int], limit: float, timeout: float, scenarios=("add", "skewed"),
                   racks_options=(True, False), methods: tuple[str, ...] = REPLICA_METHODS) -> None:
    head = ("| partitions | scenario | racks | method | status | s | rack short | replica imb | leader imb | moves "
            "| Δ replica | Δ leader | Δ moves |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for partitions in sizes:
        for scenario in scenarios:
            for racks in racks_options:
                rows = {}
                for method in ("exact.spread",) + tuple(m for m in methods if m != "exact.spread"):
                    spec = {"part": "replicas", "partitions": partitions, "scenario": scenario, "racks": racks,
                            "method": method, "limit": limit}
                    rows[method] = measure(spec, timeout)
                ref = rows["exact.spread"]
                for method, row in rows.items():
                    cells = [f"{partitions:,}", scenario, "3" if racks else "none", method, row["status"],
                             f"{row['seconds']:.1f}" if "seconds" in row else "–",
                             *(str(row.get(k, "–")) for k in ("rack_short", "replica_imbalance",
                                                                "leader_imbalance", "moves")),
                             *(_delta(row, ref, k) if method != "exact.spread" else ""
                               for k in ("replica_imbalance", "leader_imbalance", "moves"))]
                    print("| " + " | ".join(cells) + " |", flush=True)


def consumers_table(limit: float, timeout: float) -> None:
    head = ("| partitions × members | RF | owned | method | status | s | cross-rack | imbalance | claims revoked "
            "| Δ cross-rack | Δ claims revoked |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for size in CONSUMER_SIZES:
        for rf in (1, 2):
            for owned in (0.0, 0.8):
                rows = {m: measure({"part": "consumers", "size": size, "rf": rf, "owned": owned, "method": m,
                                    "limit": limit}, timeout) for m in CONSUMER_METHODS}
                ref = rows["exact.balanced"]
                for method, row in rows.items():
                    cells = [f"{size[0]:,} × {size[1]}", str(rf), f"{owned:.0%}", method, row["status"],
                             f"{row['seconds']:.1f}" if "seconds" in row else "–",
                             *(str(row.get(k, "–")) for k in ("cross_rack", "imbalance", "revoked")),
                             *(_delta(row, ref, k) if method != "exact.balanced" else ""
                               for k in ("cross_rack", "revoked"))]
                    print("| " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,10000")
    parser.add_argument("--limit", type=float, default=120.0, help="time limit of exact.* and the peer (s)")
    parser.add_argument("--timeout", type=float, default=900.0, help="a row's child is killed after this (s)")
    parser.add_argument("--part", default="replicas,consumers")
    parser.add_argument("--scenarios", default="add,skewed")
    parser.add_argument("--racks", default="3,none", help="replicas: 3 (three equal racks) and/or none")
    parser.add_argument("--methods", default=",".join(REPLICA_METHODS), help="replicas: the methods to run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(replicas_child(spec) if spec["part"] == "replicas" else consumers_child(spec)))
        return 0
    parts = args.part.split(",")
    if "replicas" in parts:
        replicas_table([int(s) for s in args.sizes.split(",")], args.limit, args.timeout,
                       tuple(args.scenarios.split(",")), tuple(r == "3" for r in args.racks.split(",")),
                       tuple(args.methods.split(",")))
    if "consumers" in parts:
        print()
        consumers_table(args.limit, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
