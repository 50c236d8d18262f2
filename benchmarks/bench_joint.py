"""``exact.joint`` benchmark: every task rule in one lexicographic program, end to end through the CLI.

Instances come from the project's generator (``kipopt generate tasks``): 3
racks, replication factor 2, two inputs and one changelog per stateful task,
a quarter of the sub-topologies stateless, capacities 1-4, one standby
wanted, 2 tag dimensions, 70 % of state holders caught up. Each row is the
wall time of ``kipopt solve INSTANCE --method exact.joint [--time-limit S]``
in a fresh process (start-up, reading, building, every stage, evaluating,
printing), its peak resident memory (``os.wait4``), the status, and each
stage's value and bound as the solution reports them.

Targets (issue 12): 500 tasks × 50 clients optimal in < 60 s; 2,000 × 100
returns an assignment with bound and gap within 120 s (``--time-limit 120``
bounds the whole run).

Run: ``python benchmarks/bench_joint.py [--sizes 500x50,2000x100]``. Exit
status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {(500, 50): ("optimal", 60.0), (2000, 100): ("bound", 120.0)}
KIPOPT = [sys.executable, "-m", "kipopt"]


def generate(path: Path, tasks: int, clients: int, seed: int) -> None:
    subprocess.run(KIPOPT + ["generate", "tasks", "--seed", str(seed), "--tasks", str(tasks),
                             "--clients", str(clients), "--subtopologies", str(max(3, tasks // 50)),
                             "--tags", "2", "--num-standby-replicas", "1", "--out", str(path)],
                   check=True, capture_output=True)


def solve(path: Path, time_limit: float | None) -> tuple[dict, float, float]:
    """The solution object, wall seconds and peak MB of one ``kipopt solve`` child."""
    args = KIPOPT + ["solve", str(path), "--method", "exact.joint"]
    if time_limit is not None:
        args += ["--time-limit", str(time_limit)]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(args, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kipopt solve failed on {path}: exit {os.waitstatus_to_exitcode(status)}")
    return json.loads(text), wall, usage.ru_maxrss / 1024.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500x50,2000x100")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    missed = 0
    print(f"{'size':>10}  {'status':>8}  {'wall s':>7}  {'peak MB':>7}  {'gap':>8}  stages (value/bound)  target")
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes.split(","):
            tasks, clients = map(int, size.split("x"))
            path = Path(folder) / f"{size}.json"
            generate(path, tasks, clients, args.seed)
            kind, limit = TARGETS.get((tasks, clients), ("optimal", None))
            solution, wall, peak = solve(path, limit if kind == "bound" else None)
            stages = " ".join(f"{r['stage']}={r['value']}/{r['bound']}" for r in solution["metrics"]["joint_stages"])
            if kind == "optimal":
                ok = solution["status"] == "optimal" and (limit is None or wall < limit)
            else:
                ok = solution["bound"] is not None and solution["gap"] is not None and wall < limit
            missed += not ok
            target = "-" if limit is None else f"{kind} < {limit:g} s: {'met' if ok else 'MISSED'}"
            gap = solution["gap"]
            print(f"{size:>10}  {solution['status']:>8}  {wall:7.2f}  {peak:7.0f}  "
                  f"{'-' if gap is None else f'{gap:.2e}':>8}  {stages}  {target}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
