"""``kafka.sticky`` (KIP-924 ``StickyTaskAssignor`` port): where its time goes, stage by stage.

Instances: ``kipopt.datasets.generate("tasks", seed, tasks=T, clients=C,
subtopologies=10, strategy=S)`` (3 racks, 25 % stateless tasks, one standby,
the generator's costs 10 / 1). Each size and strategy runs once in this
process; the four stages of ``assign`` are timed apart: the sticky active
passes, the two active rack optimisations (stateful, then stateless), the
standby pass and the pairwise standby optimisation. The machine is shared:
read the seconds as rough, the ratios between stages as the finding.

No target (issue 11 asks for the time at 1,000 tasks x 100 clients). Run:
``python benchmarks/bench_sticky.py [--sizes 1000x100] [--strategies none,min_traffic]``.
"""

from __future__ import annotations

import argparse
import time

from kipopt.datasets import generate
from kipopt.solvers.tasks.sticky_task_assignor import StickyTaskAssignor


def run(tasks: int, clients: int, strategy: str, seed: int) -> dict:
    x = generate("tasks", seed, tasks=tasks, clients=clients, subtopologies=10, strategy=strategy)
    a = StickyTaskAssignor(x)
    stages: dict = {}
    row = {}
    for name, step in (("assign_active", a.assign_active), ("optimize_active", lambda: a.optimize_active(stages)),
                       ("assign_standby", a.assign_standby), ("optimize_standby", lambda: a.optimize_standby(stages))):
        start = time.perf_counter()
        step()
        row[name] = time.perf_counter() - start
    row["cycles"] = sum(o.cycles_canceled for o in stages.values())
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000x100")
    parser.add_argument("--strategies", default="none,min_traffic")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    columns = ("assign_active", "optimize_active", "assign_standby", "optimize_standby")
    print(f"{'size':>10} {'strategy':>20} " + " ".join(f"{c:>16}" for c in columns) + f" {'total':>8} {'cycles':>7}")
    for size in args.sizes.split(","):
        tasks, clients = map(int, size.split("x"))
        for strategy in args.strategies.split(","):
            row = run(tasks, clients, strategy, args.seed)
            total = sum(row[c] for c in columns)
            print(f"{size:>10} {strategy:>20} " + " ".join(f"{row[c]:16.2f}" for c in columns)
                  + f" {total:8.2f} {row['cycles']:7d}")


if __name__ == "__main__":
    main()
