"""The benchmark pipeline: grid → work items → Spark → one Parquet part file per item.

A *work item* is one generated instance (family, size parameters, seed)
with the methods to run on it. Its id is a hash of its canonical
description, so the same grid always yields the same ids and a rerun with
the same ``--out`` skips every item whose part file exists.

On the executors an item is rebuilt from its seed (generation is
deterministic, so a retried task sees exactly the same instance), then each
method runs in a forked child process with a hard deadline (its time limit
plus the grid's ``grace``): a method that ignores its limit is killed and
recorded as ``status: error`` with ``time limit`` in its message. A method
whose ``requires`` rules the instance out is recorded as
``status: not_applicable`` with the reason (in ``error``), not as an error.
The exact method of every rule involved runs once per item first; every
method's gap is measured against that exact optimum (or its best bound).

The executor writes the item's rows to ``results/<item_id>.parquet``
through a temporary file and a rename, so a part file is either complete
or absent; the driver also receives the rows and writes any part file it
cannot see (an executor whose filesystem is not the driver's).

The stages live in their own modules: :mod:`.items` (the work items and their ids),
:mod:`.method_run` (one method in a forked child), :mod:`.executor` (one item on an executor, its
rows), :mod:`.results` (the part files and their schema) and :mod:`.session` (the Spark session and
the processes it starts). This module is the driver side (the Spark job over the pending items) and
re-exports the others' names, so other code imports them all from here.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from .executor import ItemSettings, run_item
from .executor import OPTIMAL_TOLERANCE, _row, _scored_row  # noqa: F401 (re-exported; tests use _row)
from .grid import Grid
from .items import WorkItem, expand, stable_hash  # noqa: F401 (re-exported)
from .method_run import NOT_APPLICABLE, TIME_LIMIT_PREFIX, MethodRun, run_method  # noqa: F401 (re-exported)
from .results import RESULTS_DIR, done_items, part_path, remove_orphan_temporaries, write_part  # noqa: F401
from .results import killed_at_limit, result_schema  # noqa: F401 (re-exported)
from .session import spark_session  # noqa: F401 (re-exported)


# --------------------------------------------------------------------------- the Spark job (driver side)


@dataclass
class BenchRun:
    """What one ``kipopt bench`` run did."""

    total: int
    skipped: int
    ran: int
    wall_seconds: float
    rows: list[dict]


def run_bench(spark: Any, grid: Grid, out: str, resume: bool = True,
              progress: Callable[[int, int, float], None] | None = None) -> BenchRun:
    """Run every item of ``grid`` not already in ``out`` (when ``resume``) on ``spark``."""
    items = expand(grid)
    done = done_items(out) if resume else set()
    pending = [it for it in items if it.item_id not in done]
    skipped = len(items) - len(pending)
    os.makedirs(os.path.join(out, RESULTS_DIR), exist_ok=True)
    remove_orphan_temporaries(out)
    settings = ItemSettings(os.path.abspath(out), grid.grace, grid.threads, grid.generator, grid.providers)
    start = time.perf_counter()
    rows: list[dict] = []
    if pending:
        rows = _run_job(spark, pending, settings, lambda n: progress and progress(skipped + n, len(items),
                                                                                   time.perf_counter() - start))
        _write_missing(out, rows)
    if progress:
        progress(len(items), len(items), time.perf_counter() - start)
    return BenchRun(len(items), skipped, len(pending), time.perf_counter() - start, rows)


def items_frame(spark: Any, items: list[WorkItem]) -> Any:
    """The work items as a DataFrame (one row per item, with its position)."""
    from pyspark.sql import types as T
    schema = T.StructType([T.StructField("idx", T.IntegerType(), False)] +
                          [T.StructField(name, T.LongType() if name == "seed" else T.StringType(), False)
                           for name in ("item_id", "instance_id", "family", "params", "seed", "methods",
                                        "score_rules")])
    return spark.createDataFrame([dict(it.to_row(), idx=i) for i, it in enumerate(items)], schema)


def _run_job(spark: Any, items: list[WorkItem], settings: ItemSettings,
             on_progress: Callable[[int], Any]) -> list[dict]:
    """One Spark task per item (so items spread evenly over free cores); rows come back as JSON."""
    n = len(items)
    frame = items_frame(spark, items)
    rdd = (frame.rdd.map(lambda r: (r["idx"], r.asDict()))
           .partitionBy(n, lambda idx: idx)
           .values()
           .flatMap(lambda row: [json.dumps(x) for x in run_item(WorkItem.from_row(row), settings)]))
    result: dict[str, Any] = {}
    group = f"kipopt-bench-{os.getpid()}-{time.time_ns()}"

    def job() -> None:
        spark.sparkContext.setJobGroup(group, f"kipopt bench: {n} items", interruptOnCancel=True)
        try:
            result["rows"] = rdd.collect()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the driver's thread
            result["error"] = exc

    worker = threading.Thread(target=job, name="kipopt-bench-job", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
            on_progress(_completed_items(spark, group))
    except KeyboardInterrupt:
        spark.sparkContext.cancelJobGroup(group)
        raise
    if "error" in result:
        raise result["error"]
    return [json.loads(x) for x in result["rows"]]


def _completed_items(spark: Any, group: str) -> int:
    """Finished tasks of the job's last stage (one task per item)."""
    tracker = spark.sparkContext.statusTracker()
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is None or not info.stageIds:
            continue
        stage = tracker.getStageInfo(max(info.stageIds))
        if stage is not None:
            done = max(done, stage.numCompletedTasks)
    return done


def _write_missing(out: str, rows: list[dict]) -> None:
    by_item: dict[str, list[dict]] = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    done = done_items(out)
    for item_id, item_rows in by_item.items():
        if item_id not in done:
            write_part(out, item_id, item_rows)
