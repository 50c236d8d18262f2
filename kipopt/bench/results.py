"""The results on disk: one Parquet part file per item under ``<out>/results/``, written
atomically; the rows' schema; which items are done; and which rows were killed at their time limit.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from .method_run import TIME_LIMIT_PREFIX

RESULTS_DIR = "results"


def part_path(out: str, item_id: str) -> str:
    return os.path.join(out, RESULTS_DIR, f"{item_id}.parquet")


def done_items(out: str) -> set[str]:
    """Ids of the items whose part file is complete (temporary files are ignored; see :func:`scan_parts`)."""
    return scan_parts(out)[0]


def scan_parts(out: str) -> tuple[set[str], list[str]]:
    """The ids of the items whose part file is whole, and the part files that are not whole Parquet files
    (empty, cut short, overwritten): their items are not done, and run again on resume (which replaces them)."""
    folder = os.path.join(out, RESULTS_DIR)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".parquet") and not n.startswith(".")) \
        if os.path.isdir(folder) else []
    done, broken = set(), []
    for name in names:
        if _whole_parquet(os.path.join(folder, name)):
            done.add(name[:-len(".parquet")])
        else:
            broken.append(os.path.join(folder, name))
    return done, broken


PARQUET_MAGIC = b"PAR1"


def remove_orphan_temporaries(out: str) -> int:
    """Remove the temporary part files of writers that are gone (a process killed while writing; see
    :func:`write_part`): how many."""
    folder = os.path.join(out, RESULTS_DIR)
    removed = 0
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        parts = name.split(".")
        if not (name.startswith(".") and name.endswith(".tmp") and len(parts) >= 5 and parts[-3].isdigit()):
            continue
        if _alive(int(parts[-3])):
            continue
        try:
            os.remove(os.path.join(folder, name))
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _whole_parquet(path: str) -> bool:
    """Whether ``path`` begins and ends with Parquet's magic bytes (a file cut anywhere loses its footer)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
            if size < 12 or head != PARQUET_MAGIC:
                return False
            handle.seek(size - 4)
            return handle.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def write_part(out: str, item_id: str, rows: list[dict]) -> str:
    """Write one item's rows atomically: a hidden temporary file, then a rename."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = part_path(out, item_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{item_id}.{os.getpid()}.{threading.get_ident()}.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=result_schema()), tmp)
    os.replace(tmp, path)
    return path


def result_schema() -> Any:
    import pyarrow as pa
    return pa.schema([
        ("item_id", pa.string()), ("instance_id", pa.string()), ("family", pa.string()),
        ("params", pa.string()), ("seed", pa.int64()), ("size", pa.int64()), ("nodes", pa.int64()),
        ("instance_sha", pa.string()), ("method", pa.string()), ("rule", pa.string()),
        ("exact_method", pa.string()), ("status", pa.string()), ("objective", pa.float64()),
        ("bound", pa.float64()), ("optimum", pa.float64()), ("gap", pa.float64()), ("optimal", pa.bool_()),
        ("violations", pa.int64()), ("beats_bound", pa.bool_()),
        ("seconds", pa.float64()), ("time_limit", pa.float64()), ("peak_memory_mb", pa.float64()),
        ("memory_growth_mb", pa.float64()), ("generate_seconds", pa.float64()), ("metrics", pa.string()),
        ("error", pa.string()), ("host", pa.string()), ("pid", pa.int64()), ("finished_at", pa.float64()),
        ("criteria", pa.string()), ("method_status", pa.string()),
    ])


def killed_at_limit(rows: Any) -> Any:
    """Per row, whether the run was killed at its time limit: an ``error`` whose text says so, or, in rows
    without the text (an older compacted Parquet), an ``error`` at or past the run's limit. The one test the
    summary's ``timed_out``, the scaling tables and the time plots share."""
    import pandas as pd
    error = rows["status"] == "error"
    if "error" in rows:
        return error & rows["error"].fillna("").str.startswith(TIME_LIMIT_PREFIX)
    if {"seconds", "time_limit"} <= set(rows.columns):
        return error & (rows["seconds"] >= rows["time_limit"])
    return pd.Series(False, index=rows.index)
