"""The level tree with and without the shave by duals, on the paper grid's hardest mixed consumer groups.

A box whose relaxation raised its bound is shaved by that relaxation's row duals before it is split
(:mod:`~kipopt.formulations.consumers.level_duals`, switched by
:data:`~kipopt.formulations.consumers.level_policy.DUAL_SHAVE`). This script solves the paper grid's four
slowest mixed groups of 10,000 partitions over 100 members and 20 topics (the grid's seeds and
parameters, regenerated) with ``exact.balanced`` in process, one thread, both ways, one after the
other, and reports status, answer, bound, boxes, box relaxations and seconds, and each group's time
ratio (without / with): the measure to trust on a shared machine.

Run: ``nice python benchmarks/bench_dual_shave.py [--time-limit 150]``. Exit status 1 when a group is
not proven with the shave, or the shave does not take fewer box relaxations.

Measured 2026-11-29 on the quiet 2-core machine (one run, 150 s limit; both ways carry the cutoffs'
duals of :meth:`~kipopt.formulations.highs.WarmLP.solve`)::

    seed confl  shave    status  answer   bound   boxes box LPs       s
      13  0.05    off  feasible    1678    1677   46300   35716   142.5
      13  0.05     on   optimal    1678    1678    6514    4997    36.0    4.0x
      19  0.05    off   optimal    1368    1368   13085   10223    41.2
      19  0.05     on   optimal    1368    1368    4575    3570    21.3    1.9x
      19   0.0    off   optimal    1515    1515   12728    9685    38.2
      19   0.0     on   optimal    1515    1515    3715    2923    25.2    1.5x
      13   0.0    off   optimal    1800    1800   32803   25621   115.3
      13   0.0     on   optimal    1800    1800    3532    2874    21.3    5.4x

The two seed-13 groups are those no 60 s limit proved before the shave.
"""

from __future__ import annotations

import argparse
import sys
import time

import kipopt.formulations.consumers.level_policy as level_policy
from kipopt.datasets import generate
from kipopt.formulations.consumers.balanced import run_balanced
from kipopt.methods import SolveOptions

PARAMS = {"members": 100, "partitions": 10_000, "topics": 20, "racks": 3, "replication_factor": 3,
          "static_members": 0.5, "subscriptions": "mixed", "owner_draw": "direct"}
GROUPS = [(13, 0.05), (19, 0.05), (19, 0.0), (13, 0.0)]
"""(seed, conflicts) of the paper grid's four slowest mixed 10,000-partition groups (items 88d5, 367b,
5667 and ef21 of paper/data/results.parquet)."""


def solve(inst, shave: bool, limit: float) -> dict:
    level_policy.DUAL_SHAVE = shave
    t0 = time.perf_counter()
    result = run_balanced(inst, SolveOptions(time_limit=limit, threads=1))
    return {"status": result.status.value, "objective": result.objective, "bound": result.bound,
            "boxes": result.info.get("level_boxes"), "box_lps": result.info.get("level_box_lps"),
            "seconds": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=150.0)
    args = parser.parse_args(argv)
    print(f"{'seed':>4} {'confl':>5}  {'shave':>5} {'status':>9} {'answer':>7} {'bound':>7} {'boxes':>7} "
          f"{'box LPs':>7} {'s':>7}")
    failed = False
    for seed, conflicts in GROUPS:
        inst = generate("consumers", seed, conflicts=conflicts, **PARAMS)
        runs = {shave: solve(inst, shave, args.time_limit) for shave in (False, True)}
        for shave, r in runs.items():
            print(f"{seed:>4} {conflicts:>5}  {'on' if shave else 'off':>5} {r['status']:>9} {r['objective']:>7.0f} "
                  f"{r['bound']:>7.0f} {r['boxes']:>7} {r['box_lps']:>7} {r['seconds']:>7.1f}", flush=True)
        print(f"{'':>11} time without / with: {runs[False]['seconds'] / runs[True]['seconds']:.1f}x")
        failed |= runs[True]["status"] != "optimal" or runs[True]["box_lps"] >= runs[False]["box_lps"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
