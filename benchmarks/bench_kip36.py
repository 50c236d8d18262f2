"""KIP-36 replica placement benchmark: Kafka's two placers against exact.spread, on unequal racks.

Cluster: 300 brokers over 6 racks of 20, 30, 40, 50, 70 and 90 brokers,
10,000 partitions, replication factor 3 (a smaller 1,000 × 30 cluster with
racks of 2..9 brokers is run first). Two scenarios:

* ``create``: place the topic from scratch;
* ``add rack``: a seventh rack of 40 brokers (4 at the small size) joins,
  and ``current`` is the placement ``kafka.adminutils`` made before it
  joined (``current from adminutils``) or the one ``exact.spread`` made
  (``current from exact``). Kafka's placers ignore ``current``, so their
  moves are what re-running them would cost.

Every row runs in a fresh child process: "seconds" is the method's time as
``kipopt.api.solve`` measures it (one run, HiGHS on 2 threads), "peak MB"
the child's peak resident set (interpreter, instance, HiGHS included).
Targets (issue 4): at 10,000 × 300, exact.spread optimal (or within 0.1 %
of its bound) in under 30 s for ``create`` and under 60 s for ``add rack``.

Run: ``python benchmarks/bench_kip36.py [--sizes small,large]``. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

SIZES = {
    "small": {"partitions": 1_000, "racks": [2, 3, 4, 5, 7, 9], "new_rack": 4},
    "large": {"partitions": 10_000, "racks": [20, 30, 40, 50, 70, 90], "new_rack": 40},
}
RF = 3
TARGETS = {"create": 30.0, "add rack": 60.0}  # seconds, exact.spread at the large size
GAP_TARGET = 0.001
METHODS = ("kafka.adminutils", "kafka.striped", "exact.spread")


def cluster_dict(racks: list[int], partitions: int, current: dict | None = None) -> dict:
    brokers, i = [], 0
    for r, n in enumerate(racks):
        for _ in range(n):
            brokers.append({"id": i, "rack": f"rack{r}"})
            i += 1
    d = {"format": 1, "family": "replicas", "partitions": partitions, "replication_factor": RF, "brokers": brokers}
    if current is not None:
        d["current"] = current
    return d


def child(spec: dict) -> dict:
    """One measurement (runs inside the child process)."""
    from kipopt import from_dict, solve
    size = SIZES[spec["size"]]
    racks, partitions = size["racks"], size["partitions"]
    current = None
    if spec["scenario"] != "create":
        before = solve(from_dict(cluster_dict(racks, partitions)), spec["current_from"], threads=2, seed=0)
        current = {str(p): list(bs) for p, bs in before.assignment.items()}
        racks = racks + [size["new_rack"]]
    s = solve(from_dict(cluster_dict(racks, partitions, current)), spec["method"], threads=2, seed=0)
    m = s.metrics
    return {"seconds": s.seconds, "status": s.status.value, "gap": s.gap,
            "replica_imbalance": m.get("replica_imbalance"), "leader_imbalance": m.get("leader_imbalance"),
            "replicas_min": m.get("replicas_min"), "replicas_max": m.get("replicas_max"),
            "leaders_min": m.get("leaders_min"), "leaders_max": m.get("leaders_max"),
            "moves": m.get("moves"), "model": m.get("model", ""),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(spec: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True,
                         timeout=900)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def rows(sizes: list[str]):
    for size in sizes:
        for method in METHODS:
            yield {"size": size, "scenario": "create", "method": method}
        for current_from in ("kafka.adminutils", "exact.spread"):
            for method in METHODS:
                yield {"size": size, "scenario": "add rack", "current_from": current_from, "method": method}


def label(spec: dict) -> str:
    size = SIZES[spec["size"]]
    brokers = sum(size["racks"]) + (size["new_rack"] if spec["scenario"] != "create" else 0)
    return f"{size['partitions']:,}×{brokers}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    header = (f"{'size':>11} {'scenario':<44} {'method':<17} {'seconds':>8} {'peak MB':>8} {'status':<9} "
              f"{'gap':>7} {'repl imb (min-max)':>19} {'lead imb (min-max)':>19} {'moves':>6}  model")
    print(header)
    print("-" * len(header))
    missed = []
    for spec in rows([s.strip() for s in args.sizes.split(",")]):
        r = measure(spec)
        scenario = spec["scenario"] + (f", current: {spec['current_from']}" if spec["scenario"] != "create" else "")
        if "error" in r:
            print(f"{label(spec):>11} {scenario:<44} {spec['method']:<17} error: {r['error']}")
            continue
        gap = "—" if r["gap"] is None else f"{100 * r['gap']:.3f}%"
        repl = f"{r['replica_imbalance']} ({r['replicas_min']}-{r['replicas_max']})"
        lead = f"{r['leader_imbalance']} ({r['leaders_min']}-{r['leaders_max']})"
        moves = "—" if r["moves"] is None else r["moves"]
        print(f"{label(spec):>11} {scenario:<44} {spec['method']:<17} {r['seconds']:>8.3f} {r['peak_mb']:>8.0f} "
              f"{r['status']:<9} {gap:>7} {repl:>19} {lead:>19} {moves:>6}  {r['model']}", flush=True)
        if spec["method"] == "exact.spread" and spec["size"] == "large":
            limit = TARGETS[spec["scenario"]]
            if r["seconds"] > limit or (r["gap"] or 0) > GAP_TARGET or r["status"] not in ("optimal", "feasible"):
                missed.append(f"{scenario}: {r['seconds']:.1f} s (target {limit} s), gap {gap}")
    print()
    print("targets missed: " + ("; ".join(missed) if missed else "none"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
