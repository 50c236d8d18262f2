"""The oracle's throughput: one ``kipopt check --batch`` process against one process per check.

Targets (issue 10), as ratios and rates measured in one run:

* 1,000 checks of small instances (24 tasks x 6 clients, rule ``rack_active``)
  through one ``check --batch`` process: at least 20x the throughput of
  separate ``kipopt check`` processes, and at least 200 checks per second;
* ``kipopt validate`` on such an instance under 0.15 s wall, ``kipopt check`` under 0.4 s
  (Python start-up included; median of ``--repeat`` runs).

Two batch workloads: *shared* (``--instances`` distinct instances, each
checked with 1000/instances assignments: the port's answer, the starting
assignment and random swaps; what a test suite of many assignments per
instance looks like, and where the batch solves each instance once) and
*distinct* (1,000 different instances, one assignment each: no reuse at all).
Lines carry the instance inline. Separate processes are timed on a sample of
``--sample`` lines and extrapolated to 1,000 (printed as such); their verdicts
are compared with the batch's on that sample.

    python benchmarks/bench_oracle.py [--checks 1000 --instances 50 --sample 40 --repeat 10]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kipopt import api
from kipopt.datasets import generate
from kipopt.instance import to_dict
from kipopt.solution import TaskRoles, assignment_to_json, current_assignment

SPEEDUP_TARGET, RATE_TARGET = 20.0, 200.0
VALIDATE_TARGET, CHECK_TARGET = 0.15, 0.4
SHAPE = {"tasks": 24, "clients": 6}
KIPOPT = [str(Path(sys.executable).with_name("kipopt"))]


def swapped(assignment: dict, rng: random.Random) -> dict:
    """Swap one active task between two clients: the per-client counts stay, so it stays feasible."""
    clients = [c for c, roles in assignment.items() if roles.active]
    a, b = rng.sample(clients, 2)
    ta, tb = rng.choice(assignment[a].active), rng.choice(assignment[b].active)
    out = dict(assignment)
    out[a] = TaskRoles(tuple(tb if t == ta else t for t in assignment[a].active), assignment[a].standby)
    out[b] = TaskRoles(tuple(ta if t == tb else t for t in assignment[b].active), assignment[b].standby)
    return out


def workload(checks: int, instances: int, seed: int) -> list[dict]:
    """``checks`` lines over ``instances`` generated instances, assignments cycling through kinds."""
    rng = random.Random(seed)
    per = -(-checks // instances)
    lines: list[dict] = []
    for s in range(seed, seed + instances):
        inst = generate("tasks", s, **SHAPE)
        data = to_dict(inst)
        kinds = [api.solve(inst, "kafka.rack_active").assignment, current_assignment(inst)]
        for k in range(per):
            j = k if per > 1 else s % 3  # with one line per instance, vary the kind across instances
            chosen = kinds[j] if j < len(kinds) else swapped(kinds[j % 2], rng)
            lines.append({"id": f"{s}-{k}", "instance": data,
                          "solution": {"assignment": assignment_to_json("tasks", chosen)}})
    return lines[:checks]


def run_batch(lines: list[dict], folder: Path, name: str) -> tuple[float, list[dict], str]:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    start = time.perf_counter()
    run = subprocess.run(KIPOPT + ["check", "--batch", str(path), "--rule", "rack_active"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode not in (0, 1):
        raise SystemExit(f"batch failed ({run.returncode}): {run.stderr[-2000:]}")
    return seconds, [json.loads(v) for v in run.stdout.splitlines()], run.stderr.strip().splitlines()[-1]


def run_separate(lines: list[dict], folder: Path) -> tuple[float, list[dict]]:
    """One ``kipopt check INSTANCE SOLUTION`` process per line (files written beforehand, not timed)."""
    jobs = []
    for i, line in enumerate(lines):
        ipath, spath = folder / f"i{i}.json", folder / f"s{i}.json"
        ipath.write_text(json.dumps(line["instance"]))
        spath.write_text(json.dumps(line["solution"]))
        jobs.append((ipath, spath))
    verdicts = []
    start = time.perf_counter()
    for ipath, spath in jobs:
        run = subprocess.run(KIPOPT + ["check", str(ipath), str(spath), "--rule", "rack_active"], capture_output=True, text=True)
        if run.returncode not in (0, 1):
            raise SystemExit(f"kipopt check failed ({run.returncode}): {run.stderr}")
        verdicts.append(json.loads(run.stdout))
    return time.perf_counter() - start, verdicts


def median_wall(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(KIPOPT + argv, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def mark(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=50, help="distinct instances of the shared workload")
    parser.add_argument("--sample", type=int, default=40, help="separate processes actually timed")
    parser.add_argument("--repeat", type=int, default=10, help="runs of validate/check for the median")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    shared = workload(args.checks, args.instances, args.seed)
    distinct = workload(args.checks, args.checks, args.seed + 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t_shared, v_shared, s_shared = run_batch(shared, folder, "shared")
        t_distinct, v_distinct, s_distinct = run_batch(distinct, folder, "distinct")
        sample = shared[:: max(1, len(shared) // args.sample)][: args.sample]
        t_sample, v_sample = run_separate(sample, folder)
        by_id = {v["id"]: v for v in v_shared}
        agree = sum(all(by_id[line["id"]][k] == v[k] for k in ("ok", "feasible", "objective", "optimum", "gap"))
                    for line, v in zip(sample, v_sample))
        first = sample[0]
        Path(folder, "i.json").write_text(json.dumps(first["instance"]))
        Path(folder, "s.json").write_text(json.dumps(first["solution"]))
        t_validate = median_wall(["validate", str(folder / "i.json")], args.repeat)
        t_check = median_wall(["check", str(folder / "i.json"), str(folder / "s.json"), "--rule", "rack_active"],
                              args.repeat)

    n = args.checks
    per_process = t_sample / len(sample)
    t_separate = per_process * n
    rate_shared, rate_distinct = n / t_shared, n / t_distinct
    speedup_shared, speedup_distinct = t_separate / t_shared, t_separate / t_distinct
    print(f"{n} checks of {SHAPE['tasks']} tasks x {SHAPE['clients']} clients, rule rack_active")
    print(f"  separate processes: {per_process:.3f} s each, measured on {len(sample)}, "
          f"extrapolated to {n}: {t_separate:.1f} s ({1 / per_process:.1f} checks/s)")
    for label, t, rate, speedup, summary in (
            (f"batch, shared ({args.instances} instances)", t_shared, rate_shared, speedup_shared, s_shared),
            ("batch, distinct (no reuse)", t_distinct, rate_distinct, speedup_distinct, s_distinct)):
        print(f"  {label}: {t:.2f} s, {rate:.0f} checks/s ({mark(rate >= RATE_TARGET)} >= {RATE_TARGET:.0f}), "
              f"{speedup:.1f}x separate processes ({mark(speedup >= SPEEDUP_TARGET)} >= {SPEEDUP_TARGET:.0f}x)")
        print(f"    {summary}")
    print(f"  verdicts of separate processes equal the batch's on {agree}/{len(sample)} sampled lines")
    print(f"kipopt validate: {t_validate:.3f} s median of {args.repeat} ({mark(t_validate < VALIDATE_TARGET)} "
          f"< {VALIDATE_TARGET})")
    print(f"kipopt check:    {t_check:.3f} s median of {args.repeat} ({mark(t_check < CHECK_TARGET)} < {CHECK_TARGET})")
    print("(timings are wall clock on a shared machine: compare the ratios of one run)")
    return 0 if agree == len(sample) and len(v_shared) == len(v_distinct) == n else 1


if __name__ == "__main__":
    sys.exit(main())
