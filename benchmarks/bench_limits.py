"""Time limits at every size (issue 21): every exact method through ``kipopt solve --time-limit L``.

Each case is generated once (cached in ``--workdir``), then solved in a fresh
``kipopt solve`` subprocess per limit under a 6 GB address-space cap
(``benchmarks/_measure.py``): the wall clock is measured here, outside
kipopt, CPU seconds (user + system, the guarded solver child included) and
peak RSS by ``wait4``. Printed per run: limit, wall (CPU),
the solution's ``seconds_reading`` and ``seconds`` (the method), status and
model, objective, gap, whether an assignment came back, peak RSS, and flags:

* ``OVER``   the method (the solution's ``seconds``: from after reading to its answer, before
  evaluation) took more than L + 1 s, or the wall clock exceeded L + reading + evaluation + 1 s with
  evaluation estimated as long as reading;
* ``EVAL``   the rest of the run (start-up, evaluating and printing: wall − reading − method) took longer
  than reading + 1 s, so the wall clock says little about the limit;
* ``NONE``   no assignment (no answer, an exit other than 0, or an empty assignment);
* ``WORSE``  an objective worse than the same case at a longer limit.

The machine these numbers come from is shared: wall seconds are noisy, compare runs of one table.
Run it with ``nice`` and a memory cap::

    nice python benchmarks/bench_limits.py --workdir /tmp/limits-bench --only range-2m joint-5k
    nice python benchmarks/bench_limits.py --list

The latest run (2026-11-28, the quiet machine, after issue 21's third round: 24 runs, none over its
limit, none worse than at the longer limit, 22 optimal) is the README's table under "Time limits at
every size"; earlier runs are in the git history of this file and of the README. The 2026-11-29 run of
``--only balanced-mixed-50-topics balanced-500k --limits 2 5 10 20`` (a new case: the paper grid's largest
consumer cell; exact.balanced's owner- and rack-aware fallback, its tree's shave stopped at the deadline)
is the table after it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _measure import kipopt_solve, measure, read_json  # noqa: E402

TASKS_SHAPE = dict(subtopologies=100, inputs=2, changelogs=1, replication_factor=2, racks=3, stateless_share=0.0)
LIMITS = (5.0, 20.0)
MEMORY_CAP = 6_000_000_000
"""Address-space cap of every ``kipopt solve`` run (bytes): a run that needs more fails as it would on a
small machine, instead of starving the colleagues sharing this one."""


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    fast: bool = True   # consumers: bench_kip881's generator (partitions, members, topics only), else the package's


CASES = (
    Case("spread-one-rack", "replicas", "exact.spread",
         dict(partitions=10_000, replication_factor=3, brokers=48, added_brokers=12, racks=1),
         "10,000 x 60 brokers (48 + 12 added), one rack"),
    Case("rack-active-300k", "tasks", "exact.rack_active",
         dict(TASKS_SHAPE, tasks=300_000, clients=10_000, subtopologies=1_000, strategy="min_traffic"),
         "min_traffic, 300,000 x 10,000"),
    Case("rack-balance-100k", "tasks", "exact.rack_active",
         dict(TASKS_SHAPE, tasks=100_000, clients=5_000, subtopologies=1_000, strategy="balance_subtopology"),
         "balance_subtopology, 100,000 x 5,000"),
    Case("balanced-sub-100k", "tasks", "exact.balanced_subtopology",
         dict(TASKS_SHAPE, tasks=100_000, clients=5_000, subtopologies=1_000), "100,000 x 5,000"),
    Case("lag-active-50k", "tasks", "exact.lag_active",
         dict(TASKS_SHAPE, tasks=50_000, clients=2_500, subtopologies=500), "50,000 x 2,500"),
    Case("tag-standby-100k", "tasks", "exact.tag_standby",
         dict(TASKS_SHAPE, tasks=100_000, clients=5_000, subtopologies=1_000), "100,000 x 5,000, 2 tags"),
    Case("joint-5k", "tasks", "exact.joint", dict(TASKS_SHAPE, tasks=5_000, clients=250), "5,000 x 250"),
    Case("rack-standby-100k", "tasks", "exact.rack_standby",
         dict(TASKS_SHAPE, tasks=100_000, clients=5_000, subtopologies=1_000, num_standby_replicas=2),
         "100,000 x 5,000, two standbys"),
    Case("balanced-500k", "consumers", "exact.balanced", dict(partitions=500_000, members=5_000, topics=100),
         "500,000 partitions x 5,000 members"),
    Case("balanced-mixed-50-topics", "consumers", "exact.balanced",
         dict(partitions=100_000, members=1_000, topics=50, subscriptions="mixed", racks=3, replication_factor=3,
              owner_draw="direct", static_members=0.5, conflicts=0.05),
         "100,000 x 1,000, 50 topics, mixed (the paper grid's largest consumer cell)", fast=False),
    Case("range-2m", "consumers", "exact.range", dict(partitions=2_000_000, members=10_000, topics=100),
         "2,000,000 partitions x 10,000 members"),
    Case("spread-fresh-2m", "replicas", "exact.spread",
         dict(partitions=2_000_000, replication_factor=3, brokers=300, racks=6, rack_sizes="20,30,40,50,70,90"),
         "fresh, 2,000,000 x RF 3, 300 brokers"),
    Case("spread-add-rack-100k", "replicas", "exact.spread",
         dict(partitions=100_000, replication_factor=3, brokers=250, added_brokers=50, racks=5, added_racks=1),
         "100,000 x 300 after adding a 6th rack"),
)


def instance_path(case: Case, workdir: Path, seed: int) -> Path:
    path = workdir / f"{case.name}.json"
    if path.exists():
        return path
    if case.family == "consumers" and case.fast:  # the package generator is O(subscribers) per partition: hours at 2M
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_kip881 import instance_dict
        data = instance_dict(case.params["partitions"], case.params["members"], case.params["topics"], seed, 0.1)
    else:
        from kipopt import to_dict
        from kipopt.datasets import generate
        data = to_dict(generate(case.family, seed, **case.params))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(path)
    return path


def run(case: Case, path: Path, limit: float, workdir: Path, hard_stop: float) -> dict[str, Any]:
    out = workdir / f"{case.name}.{limit:g}.out.json"
    m = measure(kipopt_solve(path, case.method, limit), out, memory_bytes=MEMORY_CAP, hard_stop=hard_stop)
    row: dict[str, Any] = {"case": case.name, "name": case.method, "what": case.note, "limit": limit,
                           "wall": m.wall, "cpu": m.cpu, "exit": m.exit, "rss_gb": m.rss_gb}
    sol = read_json(out)
    if sol is None:
        return dict(row, status="no answer", reading=None, method=None, model=None, objective=None, gap=None,
                    assignment=False, message=m.last_error)
    return dict(row, status=sol["status"], reading=sol.get("seconds_reading"), method=sol.get("seconds"),
                model=sol["metrics"].get("model"), objective=sol.get("objective"),
                gap=sol.get("gap"), assignment=bool(sol.get("assignment")), message=(sol.get("message") or "")[:120])


def flag(rows: list[dict[str, Any]]) -> None:
    """Mark runs over their limit, without an assignment, or worse than the same case at a longer limit."""
    for r in rows:
        reading = r["reading"] or 0.0
        r["rest"] = None if r["method"] is None else r["wall"] - reading - r["method"]
        r["flags"] = []
        if (r["method"] is not None and r["method"] > r["limit"] + 1.0) or (
                r["wall"] > r["limit"] + 2 * reading + 1.0 and (r["rest"] is None or r["rest"] <= reading + 1.0)):
            r["flags"].append("OVER")
        if r["rest"] is not None and r["rest"] > reading + 1.0:
            r["flags"].append("EVAL")
        if not r["assignment"] or r["exit"] != 0:
            r["flags"].append("NONE")
        longer = [o for o in rows if o["case"] == r["case"] and o["limit"] > r["limit"] and o["objective"] is not None]
        if r["objective"] is not None and any(r["objective"] > o["objective"] + 1e-9 for o in longer):
            r["flags"].append("WORSE")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| method, instance | limit s | wall s (CPU s) | reading s | method s | rest s | status (model) | objective "
             "| gap | assignment | peak RSS GB | flags |", "|" + "---|" * 12]
    for r in rows:
        num = (lambda v, f: "" if v is None else format(v, f))
        model = f" ({r['model']})" if r["model"] else ""
        lines.append(f"| `{r['name']}` {r['what']} | {r['limit']:g} | {r['wall']:.1f} ({r['cpu']:.1f}) | {num(r['reading'], '.1f')} "
                     f"| {num(r['method'], '.1f')} | {num(r['rest'], '.1f')} | {r['status']}{model} "
                     f"| {num(r['objective'], 'g')} "
                     f"| {num(r['gap'], '.3g')} "
                     f"| {'yes' if r['assignment'] else 'no'} | {num(r['rss_gb'], '.2f')} "
                     f"| {' '.join(r['flags']) or 'ok'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="case names (see --list)")
    parser.add_argument("--limits", nargs="*", type=float, default=list(LIMITS))
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default="/tmp/kipopt-bench-limits", help="generated instances are kept here")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    if args.list:
        for c in CASES:
            print(f"{c.name:22} {c.method:28} {c.note}")
        return 0
    unknown = set(args.only or ()) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in (c for c in CASES if not args.only or c.name in args.only):
        path = instance_path(case, workdir, args.seed)
        for limit in sorted(args.limits):
            rows.append(run(case, path, limit, workdir, hard_stop=10 * limit + 300))
            r = rows[-1]
            print(f"{case.name} L={limit:g}: {r['wall']:.1f} s, reading {r['reading']}, {r['status']}, "
                  f"objective {r['objective']}", file=sys.stderr, flush=True)
    flag(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (shared machine)")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
