"""The paper's data: where it lives, which columns it keeps, the families it scales and the Java times it
quotes; the ``data`` step (``kipopt bench`` on the paper grid, its rows compacted into one Parquet) and
:func:`load`, which reads that Parquet back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PAPER = Path(__file__).resolve().parent
ROOT = PAPER.parent
GRID = PAPER / "grid.toml"
DATA = PAPER / "data" / "results.parquet"
GENERATED = PAPER / "generated"
BENCH_OUT = ROOT / "paper-bench-out"

COLUMNS = ("item_id", "family", "params", "seed", "size", "nodes", "method", "rule", "exact_method", "status",
           "objective", "bound", "optimum", "gap", "optimal", "violations", "beats_bound", "seconds",
           "time_limit", "criteria", "metrics", "error")
"""The result columns the paper reads; ``metrics`` keeps only :data:`METRIC_KEYS`, ``error`` its first line
(what tells a run killed at its time limit from one that failed)."""
METRIC_KEYS = ("first_shortfall", "shortfall")

SCALING_FAMILIES = ("tasks", "consumers", "replicas")

JAVA_REFERENCE = ((120, 30, 0.58), (300, 30, 6.2), (500, 50, 51.5), (1000, 100, 2053.0))
"""Kafka's Java cycle canceling on the KIP-925 active problem: (tasks, clients, seconds), quoted from
../shared/reference/solver-notes.md (measured there, not by this benchmark); the paper cites it as such.
The scaling figure draws it only at the shapes (tasks, clients) the grid has too: never on other shapes."""


def run_data(grid: Path, out: Path, data: Path, kipopt: str, run: bool = True) -> int:
    """``kipopt bench`` on the paper grid (resumes from ``out``), then compact its rows into ``data``.

    With ``run=False`` only the compaction runs, over whatever part files ``out`` holds (after a
    bench that could not finish); the items still missing are named on stderr.
    """
    if run:
        _note_commit(out)
        command = [kipopt, "bench", str(grid), "--out", str(out), "--no-plots"]
        print("make_paper: " + " ".join(command), file=sys.stderr)
        done = subprocess.run(command)
        if done.returncode != 0:
            print(f"make_paper: kipopt bench failed (exit {done.returncode}); rerun to resume, or compact "
                  f"what finished with `{Path(sys.argv[0]).name} data --no-run`", file=sys.stderr)
            return done.returncode
    found = grid_rows(grid, out)
    missing = _missing_items(grid, set(found["item_id"]))
    if missing:
        print(f"make_paper: {len(missing)} items of {grid} have no results in {out}: "
              + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""), file=sys.stderr)
    if not len(found):
        return 1
    rows = compact(found)
    data.parent.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(data, compression="zstd", index=False)
    print(f"make_paper: {len(rows)} rows of {rows['item_id'].nunique()} items -> {data}", file=sys.stderr)
    return 0


def grid_rows(grid: Path, out: Path) -> Any:
    """The result rows of ``grid``'s items under ``out`` (other grids' items there are ignored)."""
    from kipopt.bench.grid import load_grid
    from kipopt.bench.pipeline import expand
    from kipopt.bench.summary import load_results
    return load_results(str(out), [item.item_id for item in expand(load_grid(str(grid)))])


def _note_commit(out: Path) -> None:
    """Warn when ``out`` holds results of other code: resuming reuses items by id, whatever code made them."""
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    head = found.stdout.strip() or "unknown"
    stamp = out / "COMMIT"
    before = stamp.read_text().strip() if stamp.exists() else None
    if before is not None and before != head:
        print(f"make_paper: warning: {out} holds results of commit {before[:12]}, HEAD is {head[:12]}; finished "
              f"items are reused as they are. For data of this code, remove {out} (or pass a new --out).",
              file=sys.stderr)
    elif before is None:
        out.mkdir(parents=True, exist_ok=True)
        stamp.write_text(head + "\n")


def _missing_items(grid: Path, present: set[str]) -> list[str]:
    from kipopt.bench.grid import load_grid
    from kipopt.bench.pipeline import expand
    return [item.item_id for item in expand(load_grid(str(grid))) if item.item_id not in present]


def compact(rows: Any) -> Any:
    """Only the paper's columns, ``metrics`` cut to the staging keys, rows in a canonical order."""
    frame = rows[list(COLUMNS)].copy()
    frame["metrics"] = [_slim_metrics(m) for m in frame["metrics"]]
    frame["error"] = [e.splitlines()[0][:160] if isinstance(e, str) and e else None for e in frame["error"]]
    return frame.sort_values(["family", "item_id", "rule", "method"], kind="stable").reset_index(drop=True)


def _slim_metrics(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    found = json.loads(text)
    kept = {k: found[k] for k in METRIC_KEYS if k in found}
    return json.dumps(kept, sort_keys=True) if kept else None


def load(data: Path = DATA) -> Any:
    import pandas as pd
    rows = pd.read_parquet(data)
    params = pd.DataFrame([json.loads(p) for p in rows["params"]], index=rows.index)
    return pd.concat([rows, params.add_prefix("param_")], axis=1)
