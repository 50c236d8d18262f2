"""Project a benchmark grid's CPU time from one sampled item per cell (``make paper-data``'s budget).

For every cell of the grid (one ``sizes`` entry x one combination of ``params``) it runs the work item of
the cell's first seed exactly as a Spark executor would (``kipopt.bench.pipeline.run_item``: generation,
every method in a forked child under its time limit), measures the CPU seconds of this process and its
children, and projects ``cell CPU x the cell's seeds``. Biggest cells first; one JSON line per sampled cell
goes to ``--log`` as it finishes, so a run cut short by ``--budget`` still projects what it measured (and
says which cells it did not sample). CPU seconds, not wall time: the machine may be shared.

    nice python benchmarks/bench_grid_projection.py paper/grid.toml --log /tmp/projection.jsonl
    python benchmarks/bench_grid_projection.py paper/grid.toml --log /tmp/projection.jsonl --report
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

from kipopt.bench.grid import load_grid
from kipopt.bench.pipeline import ItemSettings, expand, run_item


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cells(grid):
    """(family, params, seeds, sample item), biggest cells first."""
    items = {(it.family, it.params, it.seed): it for it in expand(grid)}
    found = []
    for fam in grid.families:
        for params, seeds in fam.cells():
            found.append((fam.family, params, seeds, items[(fam.family, params, seeds[0])]))
    order = {it.item_id: i for i, it in enumerate(expand(grid))}
    return sorted(found, key=lambda c: order[c[3].item_id])


def sample(grid, log: str, budget: float) -> None:
    done = {json.loads(line)["item_id"] for line in open(log)} if os.path.exists(log) else set()
    settings = ItemSettings(None, grid.grace, grid.threads, grid.generator, grid.providers)
    start = time.perf_counter()
    for family, params, seeds, item in cells(grid):
        if item.item_id in done:
            continue
        if time.perf_counter() - start > budget:
            print("budget spent; rerun to sample the rest", file=sys.stderr)
            return
        cpu, wall = _cpu(), time.perf_counter()
        rows = run_item(item, settings)
        record = {"item_id": item.item_id, "family": family, "params": dict(params), "seeds": len(seeds),
                  "cpu_seconds": _cpu() - cpu, "wall_seconds": time.perf_counter() - wall,
                  "methods": {f"{r['method']}@{r['rule']}": [r["status"], r["seconds"]] for r in rows}}
        with open(log, "a") as handle:
            handle.write(json.dumps(record) + "\n")
        print(f"{family} {dict(params)}: {record['cpu_seconds']:.1f} CPU s x {len(seeds)} seeds", file=sys.stderr)


def report(grid, log: str, cores: int) -> None:
    """The projection: measured CPU x seeds per cell, and an upper bound that adds, for every run that hit
    its time limit, the whole limit plus grace (under load a killed run used less CPU than it would alone).
    A cell not sampled takes the mean of the sampled cells of its family and size (tasks or partitions),
    including samples in the log from another grid's cells of that size (proxies)."""
    measured = {r["item_id"]: r for r in map(json.loads, open(log))} if os.path.exists(log) else {}
    found, missing = [], []
    for family, params, seeds, item in cells(grid):
        r = measured.get(item.item_id)
        size = dict(params).get("tasks", dict(params).get("partitions"))
        if r is None:
            missing.append((family, size, params, seeds))
            continue
        limits = dict(item.methods)
        at_limit = sorted(m for m, s in r["methods"].items()
                          if (s[1] or 0) >= limits.get(m.split("@")[0], grid_limit(grid, family)))
        # a method scored on a second rule has a row per rule: one run, charged once
        extra = sum(limits.get(m, 0) + grid.grace for m in {m.split("@")[0] for m in at_limit})
        found.append((item.item_id, family, size, r["cpu_seconds"], r["cpu_seconds"] + extra))
        print(f"{family:9} {json.dumps(dict(params)):110} {r['cpu_seconds']:7.1f} CPU s x {len(seeds):2}"
              + (f"  at limit: {at_limit}" if at_limit else ""))
    total, upper, unknown = 0.0, 0.0, []
    by_size: dict = {}
    for _, family, size, cpu, bound in found:
        by_size.setdefault((family, size), []).append((cpu, bound))
    own = {item_id: (cpu, bound) for item_id, _, _, cpu, bound in found}
    sampled_ids = {item.item_id for *_, item in cells(grid)}
    for r in measured.values():  # a sample of another grid (other limits or parameters): a proxy for its size
        if r["item_id"] in sampled_ids:
            continue
        size = r["params"].get("tasks", r["params"].get("partitions"))
        limit = grid_limit(grid, r["family"])
        late = {m.split("@")[0] for m, s in r["methods"].items() if s[0] == "error" and (s[1] or 0) >= limit}
        by_size.setdefault((r["family"], size), []).append(
            (r["cpu_seconds"], r["cpu_seconds"] + len(late) * (limit + grid.grace)))
    for family, params, seeds, item in cells(grid):
        r = measured.get(item.item_id)
        size = dict(params).get("tasks", dict(params).get("partitions"))
        sampled = by_size.get((family, size))
        if not sampled:
            unknown.append(f"{family} {dict(params)}")
            continue
        if r is not None:
            cpu, bound = own[item.item_id]
        else:
            cpu = sum(c for c, _ in sampled) / len(sampled)
            bound = sum(b for _, b in sampled) / len(sampled)
        total += cpu * len(seeds)
        upper += bound * len(seeds)
    print(f"projected: {total:.0f} CPU s = {total / cores / 3600:.2f} h on {cores} cores "
          f"(upper bound {upper:.0f} CPU s = {upper / cores / 3600:.2f} h), {grid.size} items; "
          f"{len(found)} cells sampled, {len(missing) - len(unknown)} estimated from their size's samples, "
          f"{len(unknown)} with no sample of their size")
    for m in unknown:
        print("  no estimate:", m)


def grid_limit(grid, family: str) -> float:
    fam = next(f for f in grid.families if f.family == family)
    return max(fam.time_limits.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid")
    parser.add_argument("--log", required=True, help="JSON lines, one per sampled cell (appended; resumable)")
    parser.add_argument("--budget", type=float, default=float("inf"), help="stop sampling after this many s")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="only project from the log")
    args = parser.parse_args(argv)
    grid = load_grid(args.grid)
    if not args.report:
        sample(grid, args.log, args.budget)
    report(grid, args.log, args.cores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
