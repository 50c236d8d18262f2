"""``check --batch`` and ``evaluate --batch`` on several cores: forked workers, verdicts in input order.

:class:`~kipopt.batch.Oracle` answers one line at a time; most of a rule
check's time is the exact solve of each new instance, and one process uses one
core. :func:`run_pool` keeps one :class:`~kipopt.batch.Oracle` per worker
process and routes every line by its instance (the content key of an inline
instance, the path of an ``instance_path``): all lines of one instance go to
the worker that got its first line, so each instance is still parsed once and
each (instance, rule, time limit) still solved once, exactly as in one
process. A new instance goes to the worker with the fewest lines in hand.

A collector thread writes each verdict as soon as it and every verdict before
it are known (:func:`kipopt.interrupts.write_out`, whole or not at all), so a
harness that feeds one line and waits for its answer still gets it at once.

Workers die with kipopt however it ends: they are registered children
(SIGINT and SIGTERM kill them before kipopt exits), and each asks for
``PR_SET_PDEATHSIG`` and watches a lifeline pipe whose only writer is the
parent (:func:`kipopt.interrupts.die_with_parent`). A worker that dies (the
kernel's out-of-memory killer) costs the lines it held an internal-error
verdict each (exit 3), never a lost or cut line; later lines go to the others.

>>> import io, json
>>> lines = b"".join(json.dumps({"id": i, "solution": {}}).encode() + b"\\n" for i in range(3))
>>> from kipopt.batch import Oracle, Stats
>>> out, stats = io.StringIO(), Stats()
>>> int(run_pool(lambda: Oracle("evaluate"), io.BytesIO(lines), out, 2, stats))
2
>>> [json.loads(v)["id"] for v in out.getvalue().splitlines()], stats.lines
([0, 1, 2], 3)
"""

from __future__ import annotations

import hashlib
import os
import pickle
import select
import stat
import struct
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, TextIO

from . import _read as r
from . import interrupts
from .deadline import cores, share_cores
from .batch import LRU, CACHE_SIZE, Oracle, Outcome, Stats, _compact, _content_key, _peek_id

_LINE = struct.Struct("<QI")       # sequence number, length: a line on its way to a worker
_VERDICT = struct.Struct("<QBI")   # sequence number, outcome, length: a verdict on its way back
_END = (1 << 64) - 1
"""The sequence number of a worker's last message: its parse and solve counts."""


@dataclass
class _Worker:
    pid: int
    lines_fd: int      # parent's end: lines to the worker
    verdicts_fd: int   # parent's end: verdicts from the worker
    lifeline_fd: int   # parent's end: the worker dies when it closes
    held: int = 0      # lines sent and not yet answered
    alive: bool = True
    buffer: bytearray = field(default_factory=bytearray)


MAX_DEFAULT_JOBS = 4
"""Most workers ``--jobs`` starts by default: each keeps its own caches (instances, exact solutions)."""


def default_jobs() -> int:
    """The cores this process may run on (its CPU affinity where the platform says), at most
    :data:`MAX_DEFAULT_JOBS`; 1 where ``fork`` is missing."""
    if not hasattr(os, "fork"):
        return 1
    return max(1, min(cores(), MAX_DEFAULT_JOBS))


def run_pool(make_oracle: Callable[[], Oracle], lines: BinaryIO, out: TextIO, jobs: int, stats: Stats) -> Outcome:
    """Answer every non-blank line of ``lines`` on ``out`` with ``jobs`` worker processes, each answering
    with its own ``make_oracle()``; ``stats`` gains what the whole batch did. The worst outcome."""
    workers: list[_Worker] = []
    collector: _Collector | None = None
    finished = False
    try:
        for _ in range(jobs):
            workers.append(_start(make_oracle, workers, jobs))
        collector = _Collector(workers, out, stats)
        collector.start()
        _dispatch(lines, workers, collector)
        collector.join()
        if collector.error is not None:  # e.g. the reader of ``out`` left: raised here, as without workers
            raise collector.error
        finished = True
        return collector.worst
    finally:  # after the last verdict the workers have sent their counts and ended; else they are killed
        for w in workers:
            for fd in (w.lines_fd, w.lifeline_fd):
                _close(fd)
            if finished:
                interrupts.reap_child(w.pid)
            else:
                interrupts.kill_child(w.pid)
            _close(w.verdicts_fd)
        if collector is not None:
            collector.close()


# --------------------------------------------------------------------------- the parent


def _dispatch(lines: BinaryIO, workers: list[_Worker], collector: "_Collector") -> None:
    """Read lines, send each to its instance's worker, and tell the collector how many there were."""
    home: LRU[str, int] = LRU(CACHE_SIZE * len(workers))
    files: LRU[tuple, str] = LRU(CACHE_SIZE * len(workers))
    seq = 0
    try:
        for raw in iter(lines.readline, b""):
            if collector.error is not None:
                break
            if not raw.strip():
                continue
            key, line_id = _route_key(raw, files)
            with collector.lock:
                index = _pick(workers, home, key)
                if index is None:  # every worker is gone
                    collector.give_up(seq, line_id, "no worker process is left to answer this line")
                else:
                    workers[index].held += 1
                    collector.owner[seq] = (index, line_id)
            if index is not None:
                _send(workers[index], _LINE.pack(seq, len(raw)) + raw, collector)
            seq += 1
    finally:
        for w in workers:  # end of input: each worker answers what it holds, then sends its counts
            _close(w.lines_fd)
            w.lines_fd = -1
        collector.finish(seq)


def _route_key(raw: bytes, files: LRU) -> tuple[str | None, Any]:
    """What decides the line's worker (its instance: a file by its bytes, inline JSON by its content), and its
    id for a verdict written on its behalf."""
    try:
        data = r.parse_json(raw, "(json)")
    except Exception:  # noqa: BLE001 - any worker writes the malformed line's verdict
        return None, None
    if not isinstance(data, dict):
        return None, None
    line_id = _peek_id(data)
    path = data.get("instance_path")
    if isinstance(path, str):
        return _file_key(path, files), line_id
    if "instance" in data:
        try:
            return _content_key(data["instance"]), line_id
        except Exception:  # noqa: BLE001 - the worker reports it
            return None, line_id
    return None, line_id


def _file_key(path: str, files: LRU) -> str | None:
    """A digest of an instance file's bytes, read in blocks once per (real path, modification time, size), so
    that ``x.json``, ``./x.json`` and a link to it go to one worker without this process parsing it (a large
    instance would double the memory the workers need); ``None`` where it cannot be read (any worker reports
    that). The same JSON given inline is keyed by its content and may be parsed once more by another worker."""
    try:
        st = os.stat(path)
        stamp = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block this process: any worker refuses it
        return None
    key = files.get(stamp)
    if key is None:
        digest = hashlib.blake2b(digest_size=20)
        try:
            with open(stamp[0], "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            return None
        key = "file:" + digest.hexdigest()
        files.put(stamp, key)
    return key


def _pick(workers: list[_Worker], home: LRU[str, int], key: str | None) -> int | None:
    """The instance's worker while it lives, else the living worker with the fewest lines in hand."""
    if key is not None:
        index = home.get(key)
        if index is not None and workers[index].alive:
            return index
    alive = [i for i, w in enumerate(workers) if w.alive]
    if not alive:
        return None
    index = min(alive, key=lambda i: workers[i].held)
    if key is not None:
        home.put(key, index)
    return index


def _send(worker: _Worker, data: bytes, collector: "_Collector") -> None:
    try:
        _write_all(worker.lines_fd, data)
    except OSError:  # the worker is gone: the collector answers its lines when its verdict pipe ends
        with collector.lock:
            worker.alive = False


class _Collector(threading.Thread):
    """Reads the workers' verdicts and writes them in input order."""

    def __init__(self, workers: list[_Worker], out: TextIO, stats: Stats):
        super().__init__(name="kipopt-batch-collector", daemon=True)
        self.workers, self.out, self.stats = workers, out, stats
        self.lock = threading.Lock()
        self.owner: dict[int, tuple[int, Any]] = {}     # sequence number -> (worker, line id)
        self.ready: dict[int, tuple[str, Outcome]] = {}
        self.total: int | None = None
        self.worst = Outcome.PASSED
        self.error: BaseException | None = None
        self._next = 0
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)

    def finish(self, total: int) -> None:
        with self.lock:  # woken with the lock held: the collector closes the pipe only after it sees total
            self.total = total
            self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_write, b"x")
        except BlockingIOError:  # a full pipe wakes it as well
            pass

    def give_up(self, seq: int, line_id: Any, why: str) -> None:
        """An internal-error verdict for line ``seq`` (called with the lock held)."""
        verdict = {"id": line_id, "ok": False, "error": f"internal error: {why}", "field": None}
        self.ready[seq] = (_compact(verdict), Outcome.INTERNAL)
        self._wake()

    def run(self) -> None:
        try:
            self._collect()
        except BaseException as exc:  # noqa: BLE001 - handed to the parent's thread, which raises it
            self.error = exc
            for w in self.workers:  # a parent blocked sending them a line is released (broken pipe)
                interrupts.kill_child(w.pid)

    def close(self) -> None:
        """Close the wake-up pipe (once the thread has ended: the parent's thread writes to it until then)."""
        if not self.is_alive():
            _close(self._wake_read)
            _close(self._wake_write)

    def _collect(self) -> None:
        open_fds = {w.verdicts_fd: w for w in self.workers}
        while True:
            self._write_ready()
            with self.lock:
                if self.total is not None and self._next >= self.total and not open_fds:
                    return
            readable, _, _ = select.select([*open_fds, self._wake_read], [], [])
            for fd in readable:
                if fd == self._wake_read:
                    os.read(fd, 1 << 16)
                    continue
                chunk = os.read(fd, 1 << 20)
                worker = open_fds[fd]
                if chunk:
                    worker.buffer += chunk
                    self._take(worker)
                else:
                    del open_fds[fd]
                    self._ended(worker)

    def _take(self, worker: _Worker) -> None:
        buf = worker.buffer
        while len(buf) >= _VERDICT.size:
            seq, outcome, n = _VERDICT.unpack_from(buf)
            if len(buf) < _VERDICT.size + n:
                return
            payload = bytes(buf[_VERDICT.size:_VERDICT.size + n])
            del buf[:_VERDICT.size + n]
            with self.lock:
                if seq == _END:
                    parsed, solved = pickle.loads(payload)
                    self.stats.instances_parsed += parsed
                    self.stats.exact_solved += solved
                    continue
                self.ready[seq] = (payload.decode("utf-8", "surrogatepass"), Outcome(outcome))
                self.owner.pop(seq, None)
                worker.held -= 1

    def _ended(self, worker: _Worker) -> None:
        """A worker's verdict pipe ended: every line it still held gets an internal-error verdict."""
        with self.lock:
            worker.alive = False
            index = self.workers.index(worker)
            for seq, (owner, line_id) in list(self.owner.items()):
                if owner == index:
                    del self.owner[seq]
                    self.give_up(seq, line_id, "the worker process answering this line ended without "
                                               "answering it (killed from outside, or out of memory)")

    def _write_ready(self) -> None:
        while True:
            with self.lock:
                found = self.ready.pop(self._next, None)
            if found is None:
                return
            text, outcome = found
            interrupts.write_out(self.out, text + "\n")
            self.stats.count(outcome)
            self.worst = max(self.worst, outcome)
            self._next += 1


# --------------------------------------------------------------------------- the workers


def _start(make_oracle: Callable[[], Oracle], others: list[_Worker], jobs: int = 1) -> _Worker:
    """Fork one worker; it keeps none of the parent's ends of the other workers' pipes."""
    parent = os.getpid()
    interrupts.flush_streams()
    lines_read, lines_write = os.pipe()
    verdicts_read, verdicts_write = os.pipe()
    lifeline_read, lifeline_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for fd in (lines_write, verdicts_read, lifeline_write,
                       *(fd for w in others for fd in (w.lines_fd, w.verdicts_fd, w.lifeline_fd))):
                _close(fd)
            interrupts.die_with_parent(parent, lifeline_read)
            share_cores(cores() // max(1, jobs))  # the workers share the cores: no more children each
            _fresh_solver_threads()
            _serve(make_oracle(), lines_read, verdicts_write)
        except BaseException:  # noqa: BLE001 - the parent answers this worker's lines
            code = 1
        finally:
            os._exit(code)
    interrupts.child_started(pid)
    for fd in (lines_read, verdicts_write, lifeline_read):
        os.close(fd)
    return _Worker(pid, lines_write, verdicts_read, lifeline_write)


def _fresh_solver_threads() -> None:
    """A forked child inherits the forking thread's HiGHS thread pool without its threads (a MIP would wait for
    them forever: :func:`kipopt.formulations.highs.call_highs_before`), so a worker restarts it when the
    parent had HiGHS loaded."""
    if "highspy" in sys.modules:
        from kipopt.formulations.highs import restart_thread_pool
        restart_thread_pool()


def _serve(oracle: Oracle, lines_fd: int, verdicts_fd: int) -> None:
    """The worker's loop: answer lines until the parent closes their pipe, then send the counts."""
    with os.fdopen(lines_fd, "rb", buffering=1 << 16) as source:
        while True:
            head = source.read(_LINE.size)
            if len(head) < _LINE.size:
                break
            seq, n = _LINE.unpack(head)
            text, outcome = oracle.answer_line(source.read(n))
            data = text.encode("utf-8", "surrogatepass")
            _write_all(verdicts_fd, _VERDICT.pack(seq, int(outcome), len(data)) + data)
    counts = pickle.dumps((oracle.stats.instances_parsed, oracle.stats.exact_solved))
    _write_all(verdicts_fd, _VERDICT.pack(_END, 0, len(counts)) + counts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _close(fd: int) -> None:
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass

