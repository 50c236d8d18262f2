"""Validate and evaluate a tasks instance of 10,000 tasks x 1,000 clients (target: under 2 s).

Measures, in one run: generating and writing the instance, then
``load_instance`` (read + strict JSON parse + validation) and ``evaluate`` of
its starting assignment in-process, and the same two steps end to end through
the command line (``kipopt validate`` and ``kipopt evaluate`` as
subprocesses, interpreter start-up included).

    python benchmarks/bench_validate_evaluate.py [--tasks 10000 --clients 1000 --repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kipopt import evaluate, load_instance, to_dict
from kipopt.datasets import generate
from kipopt.solution import assignment_to_json, current_assignment

TARGET_SECONDS = 2.0


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def child_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    instance = generate("tasks", 1, tasks=args.tasks, clients=args.clients, num_standby_replicas=1,
                        current_standbys=1)
    with tempfile.TemporaryDirectory() as tmp:
        ipath, spath = Path(tmp, "instance.json"), Path(tmp, "solution.json")
        ipath.write_text(json.dumps(to_dict(instance)))
        spath.write_text(json.dumps({"assignment": assignment_to_json("tasks", current_assignment(instance))}))
        loaded = load_instance(str(ipath))
        t_load = best_of(args.repeat, lambda: load_instance(str(ipath)))
        t_eval = best_of(args.repeat, lambda: evaluate(loaded, str(spath)))
        kipopt = [sys.executable, "-m", "kipopt"]
        t_cli_validate = best_of(args.repeat, lambda: subprocess.run(kipopt + ["validate", str(ipath)], check=True,
                                                                     capture_output=True))
        t_cli_evaluate = best_of(args.repeat, lambda: subprocess.run(kipopt + ["evaluate", str(ipath), str(spath)],
                                                                     check=True, capture_output=True))
        size_mb = ipath.stat().st_size / 2**20

    rows = [
        ("load_instance (read, parse, validate)", t_load),
        ("evaluate (parse solution, all metrics)", t_eval),
        ("in-process total", t_load + t_eval),
        ("kipopt validate (subprocess)", t_cli_validate),
        ("kipopt evaluate (subprocess, loads both)", t_cli_evaluate),
    ]
    print(f"tasks instance {args.tasks} tasks x {args.clients} clients, {size_mb:.1f} MB JSON, best of {args.repeat}")
    print(f"{'step':45s} {'seconds':>8s} {'ratio to 2 s target':>20s}")
    for name, seconds in rows:
        print(f"{name:45s} {seconds:8.3f} {seconds / TARGET_SECONDS:20.2f}")
    print(f"peak RSS of the CLI children: {child_peak_mb():.0f} MB")
    ok = t_load + t_eval < TARGET_SECONDS
    print("target met" if ok else "TARGET MISSED", "(validate + evaluate in-process under 2 s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
