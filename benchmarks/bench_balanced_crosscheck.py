"""``exact.balanced`` as a whole against the rule's member MILP on random generated groups: a long cross-check.

Each group is drawn from a wide parameter space (3-30 members, 20-300 partitions, 2-8 topics, 1-3 racks,
mixed or equal subscriptions, none or half the members static, 0-20 % conflicting claims, 0-100 % owned)
with its own seed; ``exact.balanced`` runs through :func:`kipopt.solve` (one or two threads, the time limit
its users give it) and the member MILP of :mod:`~kipopt.formulations.consumers.member_milp` (an independent
exact model, proven with HiGHS' branch and bound) on the same group. A contradiction is any of:

* both proven optimal with different objectives;
* ``exact.balanced`` proven with an objective below the MILP's bound, or reporting a bound above the
  MILP's proven optimum;
* an answer that breaks the rule (the façade checks every answer; a violation would show in its metrics).

The MILP proves fewer groups than the method (its bound is weak on owned groups with many members: one
30-member group took its whole 120 s and ended ``feasible`` at 133 against the method's 2,398, proven in
0.6 s), so the count of groups compared is reported beside the contradictions. Exit status 1 on any
contradiction. ``tests/formulations/consumers/test_balanced_crosscheck.py`` runs a bounded sample of the
same comparison in the suite.

Run: ``nice python benchmarks/bench_balanced_crosscheck.py [--groups 500] [--seed 11] [--milp-seconds 20]``

Measured 2026-11-30 (2-core machine), default arguments: 500 groups in 193 s, 499 proven by both and equal
(the MILP left one unproven in its 20 s), no contradiction. The ad-hoc runs this script was made from (the
same comparison, another draw order; a one-hour solve beside them) met 1,291 groups with a 120-second MILP
and 600 with a 20-second one, 597 of those proven by both: no contradiction either.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass

from kipopt import solve
from kipopt.datasets import generate
from kipopt.formulations.consumers.groups import layout
from kipopt.formulations.consumers.member_milp import solve_members
from kipopt.instance import ConsumersInstance


@dataclass(frozen=True)
class Outcome:
    """One group's comparison: whether both proved it, and what contradicts (empty: nothing)."""

    compared: bool
    contradiction: str


def draw_group(rnd: random.Random) -> tuple[int, dict, int]:
    """A group's seed, :func:`kipopt.datasets.generate` parameters and thread count."""
    racks = rnd.choice([1, 2, 3])
    params = {"partitions": rnd.choice([20, 40, 80, 150, 300]), "members": rnd.choice([3, 5, 8, 12, 20, 30]),
              "topics": rnd.choice([2, 3, 4, 6, 8]), "racks": racks,
              "replication_factor": min(racks, rnd.choice([1, 2])),
              "subscriptions": rnd.choice(["mixed", "equal", "mixed"]), "static_members": rnd.choice([0.0, 0.5]),
              "conflicts": rnd.choice([0.0, 0.05, 0.2]), "owned": rnd.choice([0.0, 0.5, 0.8, 1.0])}
    return rnd.randrange(10 ** 9), params, rnd.choice([1, 2])


def compare(inst: ConsumersInstance, threads: int, limit: float, milp_seconds: float) -> Outcome:
    """The method against the member MILP on ``inst``."""
    sol = solve(inst, "exact.balanced", time_limit=limit, threads=threads)
    _, status, bound, _ = solve_members(inst, layout(inst), milp_seconds)
    proven = sol.status.value == "optimal"
    if sol.metrics.get("violations"):
        return Outcome(False, f"the answer breaks the rule: {sol.metrics['violations'][:2]}")
    if proven and status == "optimal" and abs(sol.objective - bound) > 1e-6:
        return Outcome(True, f"both proven: {sol.objective} against the MILP's {bound}")
    if proven and bound is not None and sol.objective < bound - 1e-6:
        return Outcome(False, f"proven {sol.objective} below the MILP's bound {bound}")
    if status == "optimal" and sol.bound is not None and sol.bound > bound + 1e-6:
        return Outcome(False, f"bound {sol.bound} above the MILP's optimum {bound}")
    return Outcome(proven and status == "optimal", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--time-limit", type=float, default=60.0, help="exact.balanced's limit per group")
    parser.add_argument("--milp-seconds", type=float, default=20.0)
    args = parser.parse_args(argv)
    rnd, compared, bad, t0 = random.Random(args.seed), 0, 0, time.perf_counter()
    for i in range(args.groups):
        seed, params, threads = draw_group(rnd)
        outcome = compare(generate("consumers", seed, **params), threads, args.time_limit, args.milp_seconds)
        compared += outcome.compared
        if outcome.contradiction:
            bad += 1
            print(f"CONTRADICTION group {i} (seed {seed}, {params}, threads {threads}): {outcome.contradiction}",
                  flush=True)
    print(f"{args.groups} groups in {time.perf_counter() - t0:.0f} s: {compared} proven by both and equal, "
          f"{bad} contradictions")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
