"""``check --batch`` on consumer groups, rule ``balanced``: throughput and where the time goes.

Target (issue 19): 1,000 lines over groups of at most 100 members with mixed
subscriptions, at least 200 checks per second through one ``kipopt check
--batch`` process (2 cores).

Workload: ``--groups`` generated groups (10 to 100 members, mixed
subscriptions, owned history with conflicts), ``--checks`` lines cycling
through them; each line's solution is, in turn, ``kafka.cooperative_sticky``'s
answer as ``solve`` writes it (partial assignment, ``target``, ``method``),
its target alone, ``kafka.range``'s answer checked on ``balanced``, and the
cooperative target with two partitions of one topic swapped between members.
Lines carry the instance inline (a test suite's usual form).

Reported, from one run: the wall time and rate of the real process (start-up
included), then an in-process profile of the same lines split into reading
lines (JSON and instance parsing, cached), the exact solves (one per group,
the share the ``exact.balanced`` rewrite addresses), and checking and writing
verdicts. Times on a shared machine are noisy; compare shares and ratios.

    nice python benchmarks/bench_oracle_balanced.py [--checks 1000 --groups 50 --seed 1]

Measured 2026-11-25 on the shared 2-core machine (load average 9 to 11, other
sessions and this session's own tests at work; one run each, default
arguments): the real process took 810 s (1.2 checks/s) with the first version
of the level search, 675 s (1.5 checks/s) with a later one and 456 s
(2.2 checks/s; load falling from 9 to 2 during the run) with the one on this
branch; the target is NOT met. The time is the 50 exact solves: without a time limit per
line, a group whose optimum neither the level search nor the member MILP
proves takes the method's whole default (60 s), and groups with 8 topics
have level boxes of 10^5 to 10^7 vectors. Every line's verdict was "not ok"
(none of the four solutions per group is at the rule's optimum) in both runs.
The profile run was stopped (it repeats the 50 solves). Per group, in
process, ``exact.balanced`` with ``time_limit=20`` on the workload's first
12 groups, with the level search and with the member MILP alone (one run,
interleaved, so that both see the same load):

=====  =======  ==============================  ==============================
group  members  member MILP alone               level search, then MILP
=====  =======  ==============================  ==============================
0      27       optimal 11, 0.61 s              optimal 11, 1.00 s
1      42       optimal 40, 0.76 s              optimal 40, 0.03 s
2      67       optimal 70, 14.86 s             optimal 70, 4.09 s
3      36       optimal 32, 1.01 s              optimal 32, 0.08 s
4      13       optimal 24, 3.85 s              optimal 24, 3.66 s (MILP)
5      65       optimal 31, 12.16 s             optimal 31, 6.46 s
6      99       feasible 92 >= 84, 18.06 s      optimal 90, 4.48 s
7      39       optimal 14, 3.15 s              optimal 14, 2.48 s
8      50       optimal 26, 3.44 s              optimal 26, 0.23 s
9      13       optimal 82, 6.91 s              optimal 82, 4.72 s (MILP)
10     11       optimal 5, 0.42 s               optimal 5, 0.25 s
11     64       optimal 32, 1.73 s              optimal 32, 3.01 s
=====  =======  ==============================  ==============================

In all 67.0 s against 30.5 s (2.2 times faster), 11 against 12 proven: still
two orders of magnitude from the target's 0.1 s per group.

Branch ``balstrong`` (2026-11-25, the machine less loaded than above; one
run each). The level search's per-vector MILPs and the member MILP only seek
answers below the best in hand (HiGHS cutoff), the member MILP orders
interchangeable members' counts, and the level search's least-cost pruning
(dropped by a shadowed name) is back. Interleaved with the previous code
(same 12 groups, ``time_limit=20``, CPU seconds): 22.2 s before, 15.9 s
after (1.4 times less), 12 of 12 proven by both. ``--per-group 12``:

=====  =======  ======  ==============  ======  ==================
group  members  topics  status, value    CPU s  answer by
=====  =======  ======  ==============  ======  ==================
0      27       6       optimal 11        0.65  level search
1      42       2       optimal 40        0.02  dec-min
2      67       5       optimal 70        1.51  level search
3      36       2       optimal 32        0.04  level search
4      13       8       optimal 24        2.71  member MILP
5      65       6       optimal 31        2.19  level search
6      99       5       optimal 90        1.63  level search
7      39       6       optimal 14        0.92  level search
8      50       2       optimal 26        0.06  level search
9      13       7       optimal 82        2.04  member MILP
10     11       5       optimal  5        0.21  level search
11     64       7       optimal 32        1.69  level search
=====  =======  ======  ==============  ======  ==================

13.7 CPU s, 14.1 s wall: 1.17 s per group, still about ten times the
target's 0.1 s. The full run (default arguments, load lighter than the
first runs' but still shared): the real process took 355 s (2.8 checks/s;
NOT met), every verdict "not ok", exact statuses optimal and feasible (some
groups with 7 or 8 topics still use the method's whole 60 s default: their
level boxes hold 10^6 to 10^7 vectors, so the member MILP alone must prove
them). The level-indexed model the issue suggested
(:mod:`~kipopt.formulations.consumers.level_index`) was measured on the
12 groups too: no stronger relaxation and 2.3 times the member MILP's CPU,
so it is a cross-check only (its docstring has the numbers).

    nice python benchmarks/bench_oracle_balanced.py --per-group 12   # the table above

After the level tree (branch and bound over topic-level boxes, tight leaf LPs warm-started from vector
to vector; :mod:`~kipopt.formulations.consumers.level_tree`), measured 2026-11-25 on the quiet machine
(load average about 1, one run, default arguments): the real process took 9.35 s, **107 checks/s**
(from 2.2; target 200: not met), every group's optimum proven. In-process profile: the 50 exact solves
63 % of the time, checking 28 %, reading lines 5 %, verdict JSON 1 %. ``--per-group 50`` in one process
(loaded machine): 10.9 CPU s with the tree against 19.7 with the flat enumeration of level vectors,
50 of 50 proven by both.


With worker processes (``--jobs``, default the usable cores, at most 4; :mod:`kipopt.batch_pool`),
measured 2026-11-28 on the quiet machine (load average about 1, one run, default arguments): the real
process took 3.98 s with its default two workers, **251 checks/s** (target 200: met), against 5.93 s
(169 checks/s) with ``--jobs 1`` in the same run, verdicts identical apart from ``exact_seconds``;
every group's optimum proven, 50 instances parsed and 50 exact models solved in both. An earlier run
that day: 219 checks/s (4.56 s) with two workers, 162 with one. With the level tree's shaving and
carried-over duals (same day, quiet machine, one run): 2.46 s, **407 checks/s** with two workers, 249
with ``--jobs 1``, verdicts identical, every group proven. With the box relaxations and box bounds free of
dense (BLAS) products (2026-11-29, quiet machine, one run): 2.94 s, **340 checks/s** with two workers
(311 at the previous stop), 270 with ``--jobs 1`` (171 then), every group
proven."""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kipopt import api
from kipopt.batch import Oracle
from kipopt.batch_pool import default_jobs
from kipopt.datasets import generate
from kipopt.formulations.consumers.balanced import run_balanced
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations
from kipopt.instance import to_dict
from kipopt.methods import SolveOptions

RATE_TARGET = 200.0
KIPOPT = str(Path(sys.executable).with_name("kipopt"))


def _swap(assignment: dict, rng: random.Random) -> dict:
    """Two partitions of one topic swapped between two members subscribed to it (counts unchanged)."""
    by_topic: dict[str, list[tuple[str, str]]] = {}
    for member, parts in assignment.items():
        for p in parts:
            by_topic.setdefault(p.rpartition("-")[0], []).append((member, p))
    pairs = [v for v in by_topic.values() if len({m for m, _ in v}) > 1]
    if not pairs:
        return assignment
    (ma, pa), (mb, pb) = rng.sample([x for x in rng.choice(pairs)], 2)
    out = {m: list(ps) for m, ps in assignment.items()}
    if ma != mb:
        out[ma][out[ma].index(pa)], out[mb][out[mb].index(pb)] = pb, pa
    return out


def workload(checks: int, groups: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    cases = []
    for g in range(groups):
        members = rng.randint(10, 100)
        inst = generate("consumers", seed * 1000 + g, members=members, topics=rng.randint(2, 8),
                        partitions=members * rng.randint(2, 6), subscriptions="mixed")
        coop = api.solve(inst, "kafka.cooperative_sticky").to_dict()
        ranged = api.solve(inst, "kafka.range").to_dict()
        data = to_dict(inst)
        solutions = [coop, {"assignment": coop["target"]}, {"assignment": ranged["assignment"]},
                     {"assignment": _swap(coop["target"], rng)}]
        cases.append((data, solutions))
    lines = []
    for i in range(checks):
        data, solutions = cases[i % groups]
        lines.append(json.dumps({"id": i, "instance": data, "solution": solutions[(i // groups) % len(solutions)],
                                 "rule": "balanced"}))
    return lines


def _untimed(verdict: dict) -> dict:
    return {k: v for k, v in verdict.items() if k != "exact_seconds"}


def real_process(lines: list[str], jobs: int | None = None) -> tuple[float, str, list[dict]]:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
    start = time.perf_counter()
    extra = [] if jobs is None else ["--jobs", str(jobs)]
    run = subprocess.run([KIPOPT, "check", "--batch", handle.name, *extra], capture_output=True, text=True,
                         timeout=3600)
    wall = time.perf_counter() - start
    Path(handle.name).unlink()
    return wall, run.stderr.strip().splitlines()[-1], [json.loads(v) for v in run.stdout.splitlines()]


def profile(lines: list[str]) -> dict[str, float]:
    """Cumulative seconds of the batch's parts, from one profiled in-process run."""
    oracle = Oracle("check")
    data = ("\n".join(lines) + "\n").encode()
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    oracle.run(io.BytesIO(data), io.StringIO())
    profiler.disable()
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    cumulative = {(Path(f).name, name): s[3] for (f, _, name), s in stats.stats.items()}  # type: ignore[attr-defined]

    def seconds(file: str, name: str) -> float:
        return cumulative.get((file, name), 0.0)

    solve = seconds("batch.py", "_solve")
    parse = seconds("_read.py", "parse_json") + seconds("batch.py", "_content_key") + seconds("batch.py", "_parse")
    check = seconds("api.py", "check") + seconds("api.py", "parse_answer")
    write = seconds("batch.py", "_compact")
    return {"total (profiled)": total, "exact solves": solve, "reading lines": parse, "checking": check,
            "verdict JSON": write, "other": max(0.0, total - solve - parse - check - write)}


def per_group(groups: int, seed: int, time_limit: float) -> None:
    """``exact.balanced`` on the workload's first ``groups`` groups, in process: status, value, bound,
    CPU and wall seconds, and which stage gave the answer; every answer re-checked by the evaluator."""
    rng = random.Random(seed)
    cpu_total = wall_total = 0.0
    proven = 0
    print(f"{'group':>5} {'members':>7} {'topics':>6}  status    value  bound   cpu s  wall s  answer by")
    for g in range(groups):
        members = rng.randint(10, 100)
        inst = generate("consumers", seed * 1000 + g, members=members, topics=rng.randint(2, 8),
                        partitions=members * rng.randint(2, 6), subscriptions="mixed")
        cpu, wall = time.process_time(), time.perf_counter()
        result = run_balanced(inst, SolveOptions(time_limit=time_limit))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if balanced_violations(inst, result.assignment) or balanced_objective(inst, result.assignment) != result.objective:
            raise AssertionError(f"group {g}: the evaluator disagrees with exact.balanced")
        cpu_total, wall_total = cpu_total + cpu, wall_total + wall
        proven += result.status.value == "optimal"
        by = result.info.get("answer", "dec-min").split(" (")[0]
        print(f"{g:>5} {members:>7} {len(inst.topics):>6}  {result.status.value:8} {result.objective:6.0f} "
              f"{result.bound:6.0f} {cpu:7.2f} {wall:7.2f}  {by}")
    print(f"{proven}/{groups} proven; {cpu_total:.1f} CPU s, {wall_total:.1f} wall s "
          f"({wall_total / groups:.2f} s per group; target about 0.1)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checks", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-group", type=int, default=0, metavar="N",
                        help="only the per-group table of exact.balanced on the first N groups")
    parser.add_argument("--time-limit", type=float, default=20.0, help="per group, with --per-group")
    args = parser.parse_args(argv)
    if args.per_group:
        per_group(args.per_group, args.seed, args.time_limit)
        return 0
    t0 = time.perf_counter()
    lines = workload(args.checks, args.groups, args.seed)
    print(f"workload: {len(lines)} lines over {args.groups} groups of 10-100 members "
          f"({sum(map(len, lines)) / 1e6:.1f} MB, made in {time.perf_counter() - t0:.1f} s)")
    wall, summary, verdicts = real_process(lines)
    rate = len(verdicts) / wall
    print(f"kipopt check --batch (default workers: {default_jobs()}; start-up included): {wall:.2f} s, "
          f"{rate:.0f} checks/s (target >= {RATE_TARGET:.0f}: {'met' if rate >= RATE_TARGET else 'NOT met'})")
    print(f"  {summary}")
    wall_one, _, alone = real_process(lines, jobs=1)
    same = [_untimed(v) for v in alone] == [_untimed(v) for v in verdicts]
    print(f"kipopt check --batch --jobs 1: {wall_one:.2f} s, {len(alone) / wall_one:.0f} checks/s "
          f"({wall_one / wall:.2f}x the default's time; verdicts {'identical' if same else 'DIFFERENT'} "
          f"apart from exact_seconds)")
    exact = {v["exact_status"] for v in verdicts if "exact_status" in v}
    print(f"  verdicts ok {sum(v['ok'] for v in verdicts)}, exact statuses {sorted(exact)}")
    parts = profile(lines)
    total = parts["total (profiled)"]
    print("in-process profile (cProfile inflates Python-heavy parts):")
    for name, s in parts.items():
        print(f"  {name:18} {s:8.2f} s  {s / total:6.1%}")
    without = total - parts["exact solves"]
    print(f"  without the exact solves: {len(lines) / max(without, 1e-9):.0f} checks/s (profiled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
