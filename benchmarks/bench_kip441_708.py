"""KIP-441/KIP-708 benchmark: ``exact.lag_active`` and ``exact.tag_standby`` end to end through ``kipopt solve``.

Instances: ``kipopt generate tasks`` with 2 tag dimensions (``zone`` = the
client's rack, ``cluster`` with 3 values), 3 racks, 3 sub-topologies (a
quarter of them stateless by default: none here, since 3 × 0.25 rounds to
1, one stateless sub-topology), ``num.standby.replicas`` 1 (and 2 in the
``σ=2`` rows), 70% of state holders caught up, capacities 1-4, seeds 1-3.

Each row is the wall time of one ``kipopt solve INSTANCE --method M`` child
process on a written file: interpreter start-up, reading and validating,
solving, evaluating and printing, all included; the best of ``--repeats``
runs (3) is reported beside the median, because the machine is shared. The
method's own time (``seconds`` in the solution) and the model size follow.
With ``--ports``, the registered ports of the same rules (``kafka.ha``,
``kafka.sticky``, ``kafka.tag_standby``) run on the same file and their
objective is printed beside the exact one (the gap in the lexicographic
encoding); a port still running after ``--port-timeout`` seconds (Kafka's
cycle canceling under ``min_traffic``, the generator's default strategy, is
slow at this size) is shown as ``timeout``.

Target (issue 11): both methods optimal at 2,000 tasks × 100 clients with 2
tag dimensions in under 5 s end to end. Exit status 1 when missed.

Run: ``python benchmarks/bench_kip441_708.py [--sizes 500x50,2000x100] [--repeats 3] [--ports]
[--port-timeout 120]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SIZES = "500x50,2000x100"
TARGET_SECONDS = 5.0
TARGET_SIZE = (2000, 100)
METHODS = ("exact.lag_active", "exact.tag_standby")
PORTS = {"exact.lag_active": ("kafka.ha", "kafka.sticky"), "exact.tag_standby": ("kafka.tag_standby",)}


def kipopt_exe() -> list[str]:
    exe = Path(sys.executable).with_name("kipopt")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "kipopt"]


def run(args: list[str], timeout: float = 600.0) -> tuple[dict, float]:
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {out.returncode}: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout), wall


def generate(path: Path, tasks: int, clients: int, seed: int, standbys: int) -> None:
    data, _ = run(kipopt_exe() + ["generate", "tasks", "--seed", str(seed), "--tasks", str(tasks),
                                  "--clients", str(clients), "--tags", "2",
                                  "--num-standby-replicas", str(standbys)])
    path.write_text(json.dumps(data, separators=(",", ":")))


def registered() -> set[str]:
    from kipopt.methods import methods
    return set(methods())


def measure(sizes: list[tuple[int, int]], repeats: int, ports: bool = False,
            port_timeout: float = 120.0) -> tuple[list[dict], list[str]]:
    rows, misses = [], []
    known = registered() if ports else set()
    with tempfile.TemporaryDirectory() as tmp:
        for tasks, clients in sizes:
            for seed in (1, 2, 3):
                for standbys in (1, 2):
                    path = Path(tmp) / f"tasks_{tasks}x{clients}_{seed}_{standbys}.json"
                    generate(path, tasks, clients, seed, standbys)
                    for method in METHODS:
                        row = solve_row(path, method, repeats)
                        row.update(size=f"{tasks}x{clients}", seed=seed, sigma=standbys)
                        row["ports"] = {p: port_objective(path, p, port_timeout) for p in PORTS[method] if p in known}
                        rows.append(row)
                        if (tasks, clients) == TARGET_SIZE:
                            if row["status"] != "optimal":
                                misses.append(f"{row['size']} seed {seed} σ={standbys} {method}: {row['status']}")
                            if row["best"] > TARGET_SECONDS:
                                misses.append(f"{row['size']} seed {seed} σ={standbys} {method}: "
                                              f"{row['best']:.2f} s > {TARGET_SECONDS} s")
    return rows, misses


def solve_row(path: Path, method: str, repeats: int) -> dict:
    walls, data = [], {}
    for _ in range(repeats):
        data, wall = run(kipopt_exe() + ["solve", str(path), "--method", method])
        walls.append(wall)
    m = data["metrics"]
    return dict(method=method, status=data["status"], objective=data["objective"], gap=data["gap"],
                best=min(walls), median=statistics.median(walls), method_seconds=data["seconds"],
                model=m.get("model"), columns=m.get("columns"), rows=m.get("rows"),
                stages=m.get("stage_values"))


def port_objective(path: Path, method: str, timeout: float):
    try:
        data, _ = run(kipopt_exe() + ["solve", str(path), "--method", method], timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return data["objective"]


def print_table(rows: list[dict]) -> None:
    head = (f"{'size':>9} {'seed':>4} {'σ':>2} {'method':<18} {'status':<8} {'best s':>7} {'median':>7} "
            f"{'solve s':>7} {'cols':>6} {'rows':>6}  stages / ports")
    print(head)
    for r in rows:
        extra = f"{r['stages']}" + (f"  ports {r['ports']}" if r["ports"] else "")
        print(f"{r['size']:>9} {r['seed']:>4} {r['sigma']:>2} {r['method']:<18} {r['status']:<8} "
              f"{r['best']:7.2f} {r['median']:7.2f} {r['method_seconds']:7.2f} {r['columns'] or '-':>6} "
              f"{r['rows'] or '-':>6}  {extra}")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in part.split("x")) for part in text.split(",") if part]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ports", action="store_true", help="also run the registered ports of the two rules")
    ap.add_argument("--port-timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    rows, misses = measure(parse_sizes(args.sizes), args.repeats, args.ports, args.port_timeout)
    print_table(rows)
    for miss in misses:
        print("MISSED:", miss)
    if not misses:
        print(f"target met: every {TARGET_SIZE[0]}x{TARGET_SIZE[1]} solve optimal in < {TARGET_SECONDS} s end to end")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
