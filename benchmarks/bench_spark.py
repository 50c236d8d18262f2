"""Spark's share of ``kipopt bench``: throughput on local[1] vs local[2], and its own overhead.

Runs the default grid (or ``--grid FILE``) once per master, each from scratch
(``--no-resume`` into a temporary folder, a fresh SparkSession), and prints:

* items per second of the job (session startup excluded; Python worker
  startup and imports included, since every job pays them), and the
  local[2] / local[1] ratio (target >= 1.7 on 2 cores);
* Spark's overhead: the job's core-seconds (wall time × slots) minus the
  summed solve seconds of every method run, as a share of the core-seconds
  (target < 1/3). With one slot this is exactly "wall time minus summed
  solve time, over wall time".

Usage: ``python benchmarks/bench_spark.py [--grid FILE] [--masters local[1] local[2]]``.
On a shared 2-core machine the ratio is noisy: other processes take cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from kipopt.bench.grid import load_grid
from kipopt.bench.pipeline import run_bench, spark_session
from kipopt.bench.summary import load_results


def measure(grid, master: str) -> dict:
    start = time.perf_counter()
    spark = spark_session(master, f"kipopt bench_spark {master}")
    startup = time.perf_counter() - start
    slots = spark.sparkContext.defaultParallelism
    try:
        with tempfile.TemporaryDirectory(prefix="kipopt-bench-spark-") as out:
            run = run_bench(spark, grid, out, resume=False)
            rows = load_results(out)
    finally:
        spark.stop()
    solve = float(rows["seconds"].sum())
    items = rows.drop_duplicates("item_id")
    busy = solve + float(items["generate_seconds"].fillna(0).sum())
    core_seconds = run.wall_seconds * slots
    return {"master": master, "slots": slots, "items": run.ran, "startup": startup, "wall": run.wall_seconds,
            "rate": run.ran / run.wall_seconds, "solve": solve, "busy": busy,
            "overhead": 1 - solve / core_seconds, "errors": int((rows["status"] == "error").sum())}


def _spin(seconds: float) -> int:
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        n += 1
    return n


def available_parallelism(seconds: float = 1.5) -> float:
    """How many cores' worth of work two busy processes get right now, relative to one (2.0 when idle)."""
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(2) as pool:
        [f.result() for f in [pool.submit(_spin, 0.3) for _ in range(2)]]  # start both workers first
        one = pool.submit(_spin, seconds).result()
        two = sum(f.result() for f in [pool.submit(_spin, seconds) for _ in range(2)])
    return two / one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default=None, help="grid TOML (default: the packaged default grid)")
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    args = parser.parse_args()
    grid = load_grid(args.grid)
    print(f"grid {grid.source}: {grid.size} items; {os.cpu_count()} cores; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} before the runs")
    print(f"two busy processes get {available_parallelism():.2f}x the work of one right now (2.00 on an idle machine)")
    results = [measure(grid, master) for master in args.masters]
    header = f"{'master':18s} {'slots':>5s} {'items':>5s} {'startup s':>9s} {'job wall s':>10s} {'items/s':>8s} " \
             f"{'sum solve s':>11s} {'overhead':>8s} {'errors':>6s}"
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['master']:18s} {r['slots']:5d} {r['items']:5d} {r['startup']:9.1f} {r['wall']:10.1f} "
              f"{r['rate']:8.3f} {r['solve']:11.1f} {r['overhead']:8.1%} {r['errors']:6d}")
    by_slots = {r["slots"]: r for r in results}
    if 1 in by_slots and 2 in by_slots:
        ratio = by_slots[2]["rate"] / by_slots[1]["rate"]
        print(f"throughput local[2] / local[1]: {ratio:.2f}x  (target >= 1.7x)")
    for r in results:
        verdict = "meets" if r["overhead"] < 1 / 3 else "misses"
        print(f"Spark overhead on {r['master']}: {r['overhead']:.1%} of {r['wall'] * r['slots']:.1f} core-seconds "
              f"({verdict} the < 33.3% target)")
    print(f"load average after the runs: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"two busy processes now get {available_parallelism():.2f}x the work of one "
          "(other work on this machine makes the throughput ratio noisy)")


if __name__ == "__main__":
    main()
