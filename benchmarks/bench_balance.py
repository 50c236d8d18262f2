"""The models of ``exact.rack_active`` under ``balance_subtopology``, side by side on one instance.

Per model: columns, rows, build and solver seconds (wall) and CPU seconds of
the whole call, and the optimum, which must be the same for all. Models:
the relaxed network over task groups and capped-pair profiles
(:mod:`kipopt.formulations.tasks.rack.balance_relaxed`, what ``exact.rack_active`` tries first at scale:
a lower bound, optimal when its read-back meets it), the priced network
(:mod:`kipopt.formulations.tasks.rack.balance_priced`, where it does not), the per-client network it replaced
(:mod:`kipopt.formulations.tasks.rack.balance`) and the rack-grouped LP
(:mod:`kipopt.formulations.tasks.rack.model`). ``--networkx`` also hands the
priced network with every candidate arc in (the whole model, no pricing) to
networkx's network simplex, the dedicated min-cost-flow code at hand (SciPy
has none; OR-Tools cannot share a process with highspy, see
solver-notes.md). Seconds on a shared machine are noisy;
compare within one run.

    python benchmarks/bench_balance.py                      # 10,000 x 1,000, 100 sub-topologies
    python benchmarks/bench_balance.py --tasks 2000 --clients 200 --subtopologies 20 --networkx
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kipopt.datasets import generate
from kipopt.formulations.tasks.rack.balance import solve_balance_grouped
from kipopt.formulations.tasks.rack.balance_priced import _PricedNetwork, feasible_counts, solve_balance_priced
from kipopt.formulations.tasks.rack.balance_relaxed import solve_balance_relaxed
from kipopt.formulations.tasks.rack.model import active_problem, solve_rack_grouped


def timed(fn, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def networkx_on_priced(p) -> tuple[int, float]:
    """networkx's network simplex on the priced network with every candidate arc: (optimum, seconds)."""
    import networkx as nx
    net = _PricedNetwork(p)
    net.in_model[:] = True
    lp = net.build()
    g = nx.MultiDiGraph()
    for i, b in enumerate(lp.row_lower):
        g.add_node(i, demand=-int(b))  # networkx: demand = inflow - outflow
    for j in range(lp.num_col):
        rows = lp.index[lp.start[j]:lp.start[j + 1]]
        vals = lp.value[lp.start[j]:lp.start[j + 1]]
        attrs = {"weight": int(lp.cost[j])}
        if np.isfinite(lp.upper[j]):
            attrs["capacity"] = int(lp.upper[j])
        g.add_edge(int(rows[vals > 0][0]), int(rows[vals < 0][0]), **attrs)
    start = time.perf_counter()
    cost, _ = nx.network_simplex(g)
    return cost + net.offset, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=1_000)
    parser.add_argument("--subtopologies", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bounds", choices=("kafka", "fair"), default="kafka")
    parser.add_argument("--networkx", action="store_true", help="also time networkx's network simplex")
    args = parser.parse_args()
    instance = generate("tasks", args.seed, tasks=args.tasks, clients=args.clients,
                        subtopologies=args.subtopologies, inputs=2, changelogs=1, replication_factor=2, racks=3,
                        stateless_share=0.0, strategy="balance_subtopology")
    p = active_problem(instance, args.bounds)
    feasible_counts(p)  # warm numpy and HiGHS once, outside the timings
    print(f"{args.tasks} tasks x {args.clients} clients, {args.subtopologies} sub-topologies, bounds {args.bounds}")
    print("| model | columns | rows | build s | solver s | wall s | CPU s | optimum | notes |")
    print("|---|---|---|---|---|---|---|---|---|")
    optima = set()
    for solve in (solve_balance_relaxed, solve_balance_priced, solve_balance_grouped, solve_rack_grouped):
        sol, wall, cpu = timed(solve, p)
        info = sol.info
        notes = (f"{info['priced_columns']} arcs priced in {info['pricing_rounds']} round(s) "
                 f"of {info['candidate_arcs']}" if "priced_columns" in info else "")
        if info["model"] == "balance-relaxed":
            notes = (f"{info['task_groups']} task groups, {info['capped_classes']} profiles of "
                     f"{info['capped_pairs']} capped pairs; read-back {info.get('read_seconds', 0):.3f} s, "
                     + ("meets the bound" if sol.status == "optimal" else f"misses it (bound {sol.bound})"))
        print(f"| {info['model']} | {info['columns']} | {info['rows']} | {info['build_seconds']:.3f} | "
              f"{info['solver_seconds']:.3f} | {wall:.3f} | {cpu:.3f} | {sol.objective} | {notes} |")
        if sol.objective is not None:
            optima.add(sol.objective)
    if args.networkx:
        cost, seconds = networkx_on_priced(p)
        print(f"| networkx network_simplex, balance-priced with every arc | | | | {seconds:.3f} | | | {cost} | |")
        optima.add(cost)
    print("optima agree" if len(optima) == 1 else f"OPTIMA DIFFER: {sorted(optima)}")


if __name__ == "__main__":
    main()
