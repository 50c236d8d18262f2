"""``kipopt bench [GRID] [--master URL] [--out DIR]``: the optimality-gap benchmark on Spark.

Progress goes to stderr, the summary table to stdout; the Parquet results,
``summary.md``, ``summary.csv`` and the PNG plots go under ``--out``. Rerunning
the same command resumes: items whose part file exists are skipped, and when
none is left Spark is not started at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from ..errors import InstanceError


def add_bench_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="the optimality-gap benchmark on Spark",
                       description="Run every method of a grid on generated instances with Spark, write "
                                   "Parquet results, plots and a summary table.")
    p.add_argument("grid", nargs="?", default=None,
                   help="grid TOML file (default: the small packaged grid, kipopt/bench/default_grid.toml)")
    p.add_argument("--master", default=None,
                   help="Spark master URL (default local[*]; under spark-submit, the master it was given)")
    p.add_argument("--out", default="bench-out", help="results folder (default bench-out/)")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                   help="skip items already in --out (default); --no-resume recomputes everything")
    p.add_argument("--dry-run", action="store_true", help="validate the grid and list its items, run nothing")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from .grid import load_grid
    from .pipeline import expand
    grid = load_grid(args.grid)
    if args.dry_run:
        for item in expand(grid):
            params = " ".join(f"{k}={v}" for k, v in item.params)
            print(f"{item.item_id}  {item.family:9s} seed={item.seed:<4d} {params}  "
                  f"methods={','.join(m for m, _ in item.methods)}")
        return 0
    return _run(grid, args)


def _run(grid: Any, args: argparse.Namespace) -> int:
    from .pipeline import expand
    from .results import scan_parts
    from .session import check_master
    if args.master is not None:
        check_master(args.master)
    try:  # before Spark starts: a folder that cannot be is bad input, not a failure an hour in
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        from .._write import unwritable
        raise InstanceError("--out", f"cannot write results to {args.out}: {unwritable(args.out, exc)}") from None
    items = expand(grid)
    done, broken = scan_parts(args.out) if args.resume else (set(), [])
    if broken:
        what = "1 part file is not a whole Parquet file" if len(broken) == 1 else \
            f"{len(broken)} part files are not whole Parquet files"
        print(f"kipopt bench: {what} (e.g. {broken[0]}): their items run again", file=sys.stderr)
    pending = sum(it.item_id not in done for it in items)
    if pending:
        _spark_run(grid, args)
    else:  # nothing left to do: answer from the Parquet without starting Spark
        print(f"kipopt bench: all {len(items)} items of {grid.source} are already in {args.out}; "
              f"nothing to run", file=sys.stderr)
    _report(grid, args, [it.item_id for it in items])
    return 0


def _spark_run(grid: Any, args: argparse.Namespace) -> None:
    from .pipeline import run_bench
    from ..interrupts import at_stop
    from .session import started_session
    master = args.master or (None if os.environ.get("PYSPARK_GATEWAY_PORT") else "local[*]")
    bar = ProgressBar(sys.stderr)
    print(f"kipopt bench: {grid.size} items from {grid.source}, master {master or '(spark-submit)'}, "
          f"results in {args.out}", file=sys.stderr)
    def note(*_: Any) -> None:
        bar.close()
        print(f"kipopt bench: interrupted; finished items are saved in {args.out}, rerun to resume",
              file=sys.stderr, flush=True)

    withdraw = at_stop(note)  # the command is the process: a signal ends it from the watcher thread
    try:
        with started_session(master) as spark:
            run = run_bench(spark, grid, args.out, resume=args.resume, progress=bar.update)
    except KeyboardInterrupt:  # called in-process (a notebook, a test): Python's own handling
        note()
        raise
    finally:
        withdraw()
        bar.close()
    print(f"kipopt bench: {run.ran} items run, {run.skipped} already done, {run.wall_seconds:.1f} s",
          file=sys.stderr)


def _report(grid: Any, args: argparse.Namespace, item_ids: list[str]) -> None:
    """The summary on stdout, ``summary.md``, ``summary.csv`` and the plots under ``--out``."""
    from .report import write_summary
    from .summary import criteria_summary, format_table, load_results, plot, staging, summarize
    rows = load_results(args.out, item_ids)
    print(format_table(summarize(rows)))
    per_criterion = criteria_summary(rows)
    if len(per_criterion):
        print("\ngap per criterion of the lexicographic rules (own gap to the exact optimum's value)")
        print(per_criterion.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    price = staging(rows)
    if len(price):
        print("\nprice of staging (joint rule): where each method first falls short of exact.joint")
        print(price.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    written = write_summary(rows, args.out, grid.source)
    if not args.no_plots:
        written += plot(rows, args.out)
    for path in written:
        print(f"kipopt bench: wrote {path}", file=sys.stderr)
    errors = int((rows["status"] == "error").sum()) if len(rows) else 0
    if errors:
        print(f"kipopt bench: {errors} method runs ended in status error (see the error column)", file=sys.stderr)


class ProgressBar:
    """``[#####.....] 12/40 items  0:42`` on stderr: redrawn in place on a terminal, a line per change otherwise."""

    def __init__(self, stream: TextIO, width: int = 30):
        self.stream = stream
        self.width = width
        self.tty = stream.isatty()
        self.last: tuple[int, int] | None = None
        self.drawn = False

    def update(self, done: int, total: int, elapsed: float) -> None:
        if not self.tty and self.last == (done, total):
            return
        self.last = (done, total)
        filled = self.width * done // total if total else self.width
        minutes, seconds = divmod(int(elapsed), 60)
        text = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} items  {minutes}:{seconds:02d} elapsed"
        self.stream.write(("\r" + text) if self.tty else (text + "\n"))
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
        self.drawn = False
