"""The batch oracle: ``kipopt check --batch`` and ``kipopt evaluate --batch``.

One process answers many questions. Each input line is a JSON object::

    {"id": 7, "instance": {...} | "instance_path": "x.json", "solution": {...},
     "rule": "rack_active", "tolerance": 0.01, "time_limit": 5}

and gets exactly one verdict line, in input order, written and flushed as
soon as it is known (a test harness may feed lines one at a time and read
each answer before sending the next). A verdict is the object the single
command prints, plus ``id`` (and ``ok`` for ``evaluate``: the assignment
breaks no rule); a line that cannot be answered gets an error verdict
``{"id", "ok": false, "error": "FIELD: message", "field": "FIELD"}`` and the
batch goes on.

A solution's ``target`` is scored as ``solve`` scores it (``metrics.withheld``
counts what the partial assignment withholds); a line without ``rule`` (and
no ``--rule``) is checked on the rule of its solution's ``method``.
``tolerance`` is a number or per criterion (``"cross_rack=0,revoked=2"`` or
``{"revoked": 2}``, :mod:`kipopt.tolerance`).

Identical instances (the same JSON, inline or through a file) are parsed
once and each (instance, rule, time limit) is solved exactly once; the
caches are bounded LRU maps, so a long batch runs in bounded memory.

>>> oracle = Oracle("evaluate")
>>> oracle.answer(b'{"id": 1, "solution": {}}')
({'id': 1, 'ok': False, 'error': 'instance: one of "instance" or "instance_path" is required', 'field': 'instance'}, <Outcome.MALFORMED: 2>)
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import stat
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, BinaryIO, Generic, Hashable, Iterator, TextIO, TypeVar

from . import _read as r
from . import api
from .errors import InstanceError, KipoptError
from .tolerance import Tolerance, parse_tolerance

CACHE_SIZE = 256
"""Instances (and as many exact solutions) kept per batch process."""

MODES = ("check", "evaluate")
_FIELDS = {"check": ("id", "instance", "instance_path", "solution", "rule", "tolerance", "time_limit"),
           "evaluate": ("id", "instance", "instance_path", "solution")}

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A dict that forgets its least recently used entry beyond ``size`` entries.

    >>> cache = LRU(2)
    >>> for k in "abca":
    ...     _ = cache.get(k) or cache.put(k, k.upper())
    >>> list(cache), cache.get("b")
    (['c', 'a'], None)
    """

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"cache size must be >= 1, got {size}")
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return value

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def clear(self) -> None:
        self._data.clear()


class Outcome(enum.IntEnum):
    """How one line ended; the batch's exit status is the worst of them (0, 1, 2 or 3)."""

    PASSED = 0
    FAILED = 1
    MALFORMED = 2
    INTERNAL = 3


@dataclass
class Stats:
    """What a batch did: the observable proof that identical instances are parsed and solved once."""

    lines: int = 0
    passed: int = 0
    failed: int = 0
    malformed: int = 0
    internal: int = 0
    instances_parsed: int = 0
    exact_solved: int = 0

    def count(self, outcome: Outcome) -> None:
        self.lines += 1
        name = outcome.name.lower()
        setattr(self, name, getattr(self, name) + 1)

    def summary(self, mode: str) -> str:
        return (f"kipopt {mode} --batch: {self.lines} lines: {self.passed} passed, {self.failed} failed, "
                f"{self.malformed} malformed, {self.internal} internal errors; "
                f"{self.instances_parsed} instances parsed, {self.exact_solved} exact models solved")


class _Failed(Exception):
    """A line's cached failure (a bad instance, an exact model that cannot run), replayed on reuse."""

    def __init__(self, error: KipoptError):
        self.error = error


@dataclass(frozen=True)
class _Line:
    """A decoded input line."""

    id: Any
    key: str
    instance: Any
    solution: Any
    rule: str | None
    tolerance: Tolerance
    time_limit: float | None


class Oracle:
    """Answers batch lines; keeps the parsed instances and exact solutions of recent lines.

    ``rule``, ``tolerance`` and ``time_limit`` are the defaults for lines that omit them.
    """

    def __init__(self, mode: str = "check", rule: str | None = None, tolerance: Any = 0.0,
                 time_limit: float | None = None, cache_size: int = CACHE_SIZE):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.defaults = (rule, parse_tolerance(tolerance), time_limit)
        self.stats = Stats()
        self._line_id: Any = None  # the id of the line being answered, once read
        self._instances: LRU[str, Any] = LRU(cache_size)
        self._files: LRU[tuple, str] = LRU(cache_size)
        self._exact: LRU[tuple, Any] = LRU(cache_size)

    # ------------------------------------------------------------------ one line

    def answer(self, raw: bytes | str) -> tuple[dict, Outcome]:
        """The verdict of one input line and how it ended."""
        text, outcome = self.answer_line(raw)
        return json.loads(text), outcome

    def answer_line(self, raw: bytes | str) -> tuple[str, Outcome]:
        """The verdict of one input line as one line of JSON (no newline), and how it ended.

        A :class:`MemoryError`, wherever it comes (also in a handler: the verdict itself had no room, and under
        ``ulimit -v`` a 7-line batch ended after 5 verdicts), makes the oracle forget the instances and exact
        answers it keeps, then answer the line as memory; the next lines go on."""
        self._line_id = None
        try:
            text, outcome = self._answer_line(raw)
        except MemoryError:
            self._forget()
            text, outcome = _memory_verdict(self._line_id)
        self.stats.count(outcome)
        return text, outcome

    def _answer_line(self, raw: bytes | str) -> tuple[str, Outcome]:
        try:
            try:
                data = r.parse_json(raw, "(json)")
            except r.StrictJsonError as refused:  # named from the line's root; its id still read
                self._line_id = _peek_id(refused.document)
                raise
            self._line_id = _peek_id(data)
            line = self._decode(data)
            self._line_id = line.id
            verdict, outcome = self._judge(line)
            return _compact(verdict), outcome
        except _Failed as failed:
            return _compact(_error(self._line_id, failed.error)), Outcome.MALFORMED
        except KipoptError as exc:
            return _compact(_error(self._line_id, exc)), Outcome.MALFORMED
        except MemoryError:  # answered by answer_line, once the caches are dropped
            raise
        except Exception as exc:  # noqa: BLE001 - one bad line must not end the batch
            return _failure(self._line_id, exc)

    def _forget(self) -> None:
        """Drop the cached instances, files and exact answers (what holds memory between lines)."""
        import gc
        for cache in (self._instances, self._files, self._exact):
            cache.clear()
        gc.collect()

    def _decode(self, data: Any) -> _Line:
        d = r.obj(data, "", required=("solution",), optional=_FIELDS[self.mode])
        line_id = _id(d.get("id"))
        has_inline, has_path = "instance" in d, "instance_path" in d
        if has_inline == has_path:
            raise InstanceError("instance", 'give one of "instance" or "instance_path", not both' if has_inline
                                else 'one of "instance" or "instance_path" is required')
        key, instance = self._instance(d["instance"]) if has_inline else self._instance_file(d["instance_path"])
        rule, tolerance, time_limit = self.defaults
        if "rule" in d:
            rule = r.string(d["rule"], "rule")
        if "tolerance" in d:
            tolerance = parse_tolerance(d["tolerance"], "tolerance")
        if d.get("time_limit") is not None:  # null: none given, as the field left out
            time_limit = _positive(d["time_limit"], "time_limit")
        return _Line(line_id, key, instance, d["solution"], rule, tolerance, time_limit)

    def _judge(self, line: _Line) -> tuple[dict, Outcome]:
        try:
            answer = api.parse_answer(line.instance, line.solution)
        except InstanceError as exc:
            raise InstanceError(_join("solution", exc.field), exc.message) from None
        if self.mode == "evaluate":
            evaluation = api.evaluate_solution(line.instance, answer)
            verdict = {"id": line.id, "ok": evaluation.feasible, **evaluation.to_dict()}
            return verdict, Outcome.PASSED if evaluation.feasible else Outcome.FAILED
        rule = api.resolve_rule(line.instance, line.rule, answer.method, field="rule").name
        instance, key = line.instance, line.key
        if answer.priorities is not None:  # scored in the joint order the solution records, as check does
            instance = api.with_priorities(instance, answer.priorities)
            key = f"{key} {','.join(answer.priorities)}"
        exact = self._exact_solution(key, instance, rule, line.time_limit)
        result = api.check(instance, answer, rule=rule, tolerance=line.tolerance, exact=exact)
        return {"id": line.id, **result.to_dict()}, Outcome.PASSED if result.ok else Outcome.FAILED

    # ------------------------------------------------------------------ caches

    def _instance(self, data: Any, path: str | None = None) -> tuple[str, Any]:
        """``(content key, typed instance)``; identical JSON is parsed once while it stays cached."""
        key = _content_key(data)
        found = self._instances.get(key)
        if found is None:
            found = self._instances.put(key, self._parse(data, path))
        if isinstance(found, _Failed):
            raise found
        return key, found

    def _parse(self, data: Any, path: str | None) -> Any:
        from .instance import from_dict
        self.stats.instances_parsed += 1
        try:
            return from_dict(data)
        except InstanceError as exc:
            where = f" (in {path})" if path else ""
            return _Failed(InstanceError(_join("instance", exc.field), exc.message + where))

    def _instance_file(self, value: Any) -> tuple[str, Any]:
        """An ``instance_path``: an unchanged file (same size and mtime) is not even read again."""
        path = r.string(value, "instance_path")
        try:
            st = os.stat(path)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            raise InstanceError("instance_path", f"cannot read {path!r}: {getattr(exc, 'strerror', None) or exc}"
                                ) from None
        if not stat.S_ISREG(st.st_mode):
            raise InstanceError("instance_path", f"cannot read {path!r}: not a regular file")
        stamp = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
        key = self._files.get(stamp)
        if key is not None:
            found = self._instances.get(key)
            if isinstance(found, _Failed):
                raise found
            if found is not None:
                return key, found
        try:
            data = r.read_json_file(path, "instance_path", regular_only=True)
        except r.StrictJsonError as exc:  # a field of the instance, named as its other errors are
            if exc.field == "instance_path":
                raise
            raise InstanceError(_join("instance", exc.field), f"{exc.message} (in {path})") from None
        key, instance = self._instance(data, path)
        self._files.put(stamp, key)
        return key, instance

    def _exact_solution(self, key: str, instance: Any, rule: str, time_limit: float | None) -> Any:
        """The exact optimum of ``rule`` on the instance with content ``key``, solved once."""
        found = self._exact.get((key, rule, time_limit))
        if found is None:
            found = self._exact.put((key, rule, time_limit), self._solve(instance, rule, time_limit))
        if isinstance(found, _Failed):
            raise found
        return found

    def _solve(self, instance: Any, rule: str, time_limit: float | None) -> Any:
        self.stats.exact_solved += 1
        try:
            return api.exact_optimum(instance, rule, time_limit)
        except InstanceError as exc:  # what in the instance keeps the model from starting: named from the line
            field = "instance" if exc.field in ("", "INSTANCE") else _join("instance", exc.field)
            return _Failed(InstanceError(field, exc.message))
        except KipoptError as exc:  # the exact model cannot start from this instance (e.g. no unique owner)
            return _Failed(InstanceError("instance", str(exc)))

    # ------------------------------------------------------------------ a stream

    def run(self, lines: BinaryIO, out: TextIO) -> Outcome:
        """Answer every non-blank line of ``lines`` on ``out`` (flushed per line, each whole or not at all:
        :func:`kipopt.interrupts.write_out`); the worst outcome."""
        from .interrupts import write_out
        worst = Outcome.PASSED
        for raw in iter(lines.readline, b""):
            if not raw.strip():
                continue
            text, outcome = self.answer_line(raw)
            write_out(out, text + "\n")
            worst = max(worst, outcome)
        return worst


def _failure(line_id: Any, exc: Exception) -> tuple[str, Outcome]:
    """The verdict of a line whose check raised ``exc``: memory in another guise (a library that cannot be
    mapped under a cap was an internal error) is the memory verdict, anything else an internal error."""
    from .address_space import memory_failure
    if memory_failure(exc):
        return _memory_verdict(line_id)
    message = _one_line(f"internal error: {type(exc).__name__}: {exc}")
    return _compact({"id": line_id, "ok": False, "error": message, "field": None}), Outcome.INTERNAL


def _memory_verdict(line_id: Any) -> tuple[str, Outcome]:
    from .api import out_of_memory
    return _compact(_error(line_id, out_of_memory("checking this line"))), Outcome.MALFORMED


def _content_key(data: Any) -> str:
    """A digest of the exact JSON (key order kept: Kafka's answers may depend on it); orjson's bytes where
    it can write them (5x faster on a 100-member group), the standard library's otherwise."""
    if r.orjson_usable():
        try:
            return "o" + hashlib.blake2b(r.orjson.dumps(data), digest_size=20).hexdigest()
        except (TypeError, r.orjson.JSONEncodeError):
            pass
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=repr)  # repr: a HugeNumber
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def _peek_id(data: Any) -> Any:
    """The line's id where one can be read, so that even a malformed line's verdict carries it."""
    if isinstance(data, dict):
        try:
            return _id(data.get("id"))
        except InstanceError:
            return None
    return None


def _id(value: Any) -> Any:
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise InstanceError("id", f"must be a string, an integer or null, got {r._kind(value)}")


def _positive(value: Any, field: str) -> float:
    """A number > 0: any finite float (``1e300`` seconds as on the command line), an integer below 10^100."""
    number = r.finite_number(value, field)
    if not number > 0:
        raise InstanceError(field, f"must be a number > 0, got {number:g}")
    return float(number)


def _join(prefix: str, field: str) -> str:
    return prefix if field in ("", "(top level)") else f"{prefix}.{field}"


def _error(line_id: Any, exc: KipoptError) -> dict:
    field = exc.field if isinstance(exc, InstanceError) else None
    return {"id": line_id, "ok": False, "error": _one_line(str(exc)), "field": field}


def _one_line(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _compact(verdict: dict) -> str:
    """One verdict as one line of strict JSON (no spaces, no NaN)."""
    from ._write import json_default
    return json.dumps(verdict, separators=(",", ":"), allow_nan=False, default=json_default)
