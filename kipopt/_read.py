"""Small, strict readers for JSON values: every failure names its field.

These are the only places that turn untrusted JSON into Python values, so the
rules of ``instance-format.md`` (unknown fields are errors, integers are not
booleans, racks are non-empty strings) live here once.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Iterable, Iterator

from .errors import InstanceError

try:
    import orjson
except ImportError:  # optional speed-up: the strict parse below is complete on its own
    orjson = None


def orjson_usable() -> bool:
    """Whether orjson may be used here: installed, and this process's memory not capped. orjson ends the
    process with SIGSEGV when an allocation fails (a 300,000-partition group under ``ulimit -v`` 150-250 MB:
    exit 139, no message), where Python's own parser, which the same read passes at 150 MB, raises
    ``MemoryError``."""
    from .address_space import cap
    return orjson is not None and cap() is None


JAVA_LONG_MAX = 2**63 - 1
JAVA_INT_MAX = 2**31 - 1
MAX_STRING_BYTES = 32_767
"""Longest id, rack or tag in UTF-8 bytes: Kafka's protocol writes a STRING with a 16-bit length."""
TOPIC_NAME_MAX = 249
"""Kafka's ``Topic.MAX_NAME_LENGTH``."""
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_DIGITS = 100
"""An integer literal longer than this is refused where it is read, by the field that holds it: no
field of the format needs more than 19 digits, and Python will not convert one beyond 4,300."""


class HugeNumber:
    """A JSON integer literal with more than :data:`MAX_DIGITS` digits, kept as text: never a value of
    any field (every reader refuses it, naming the field), and never converted."""

    __slots__ = ("digits",)

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))

    def __repr__(self) -> str:
        return f"<a number of {self.digits:,} digits>"


def _parse_int(text: str) -> int | HugeNumber:
    return int(text) if len(text) <= MAX_DIGITS else HugeNumber(text)


def obj(value: Any, path: str, required: Iterable[str] = (), optional: Iterable[str] = ()) -> dict:
    """A JSON object with exactly the allowed keys."""
    if not isinstance(value, dict):
        raise InstanceError(path or "(top level)", f"must be an object, got {_kind(value)}")
    required = tuple(required)
    allowed = set(required) | set(optional)
    for key in value:
        if key not in allowed:
            raise InstanceError(_join(path, key), "unknown field")
    for key in required:
        if key not in value:
            raise InstanceError(_join(path, key), "required field is missing")
    return value


def mapping(value: Any, path: str) -> dict:
    """A JSON object used as a map (any keys)."""
    if not isinstance(value, dict):
        raise InstanceError(path, f"must be an object, got {_kind(value)}")
    return value


def array(value: Any, path: str) -> list:
    if not isinstance(value, list):
        raise InstanceError(path, f"must be an array, got {_kind(value)}")
    return value


def integer(value: Any, path: str, minimum: int | None = None, maximum: int = JAVA_LONG_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InstanceError(path, f"must be an integer, got {_kind(value)}")
    if minimum is not None and value < minimum:
        raise InstanceError(path, f"must be an integer >= {minimum}, got {value}")
    if value > maximum:
        raise InstanceError(path, f"must be an integer <= {maximum}, got {value}")
    return value


def string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise InstanceError(path, f"must be a string, got {_kind(value)}")
    if value == "":
        raise InstanceError(path, "must be a non-empty string")
    return value


def identifier(value: Any, path: str) -> str:
    """A member id, client id, rack or tag (``instance-format.md``, "Identifiers and numbers"): a
    non-empty string of Unicode text (no lone UTF-16 surrogate: Kafka sends ids as UTF-8) of at most
    :data:`MAX_STRING_BYTES` bytes in UTF-8."""
    text = string(value, path)
    if not plain_identifier(text):
        identifier_text(text, path)
    return text


def identifier_text(text: str, path: str) -> None:
    """The checks of :func:`identifier` beyond being a non-empty string."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InstanceError(path, f"holds a lone UTF-16 surrogate at character {exc.start} (not Unicode text)"
                            ) from None
    if size > MAX_STRING_BYTES:
        raise InstanceError(path, f"is {size:,} bytes in UTF-8; Kafka's strings hold at most {MAX_STRING_BYTES:,}")


def identifiers(values: Iterable[str], path: str) -> None:
    """:func:`identifier_text` over strings already known to be non-empty (cheap for ASCII ids); a
    failure names ``path[i]``."""
    for i, text in enumerate(values):
        if not plain_identifier(text):
            identifier_text(text, f"{path}[{i}]")


def plain_identifier(text: str) -> bool:
    """True for an ASCII string short enough to be an identifier whatever it holds (the fast path)."""
    return len(text) * 3 <= MAX_STRING_BYTES and text.isascii()


def topic_name(value: Any, path: str) -> str:
    """A topic name as Kafka's ``Topic.validate`` allows it: ``[a-zA-Z0-9._-]``, 1 to 249 characters,
    neither ``.`` nor ``..``."""
    text = string(value, path)
    if len(text) > TOPIC_NAME_MAX:
        raise InstanceError(path, f"topic name is {len(text):,} characters; Kafka allows at most {TOPIC_NAME_MAX}")
    if text in (".", ".."):
        raise InstanceError(path, f"topic name cannot be {text!r}")
    if _TOPIC_NAME.fullmatch(text) is None:
        bad = next(c for c in text if _TOPIC_NAME.fullmatch(c) is None)
        raise InstanceError(path, f"topic name holds {bad!r}; Kafka allows only ASCII letters, digits, '.', '_' and '-'")
    return text


def rack(value: Any, path: str) -> str | None:
    """A rack: an :func:`identifier`, or null for "no rack configured"."""
    return None if value is None else identifier(value, path)


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise InstanceError(path, f"must be true or false, got {_kind(value)}")
    return value


def choice(value: Any, path: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InstanceError(path, f"must be one of {', '.join(allowed)}, got {json.dumps(value, default=repr)[:80]}")
    return value


def distinct_strings(value: Any) -> tuple[str, ...] | None:
    """``value`` as a tuple if it is an array of distinct non-empty strings, else None (no message:
    the fast path of :func:`unique_strings`, checked at C speed, for the common valid case)."""
    if type(value) is not list:
        return None
    try:
        distinct = set(value)
    except TypeError:  # an unhashable item (an array or object)
        return None
    if len(distinct) != len(value) or "" in distinct or not set(map(type, value)) <= {str}:
        return None
    return tuple(value)


def unique_strings(value: Any, path: str) -> tuple[str, ...]:
    fast = distinct_strings(value)
    if fast is not None:
        return fast
    items = tuple(string(v, f"{path}[{i}]") for i, v in enumerate(array(value, path)))
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item in seen:
            raise InstanceError(f"{path}[{i}]", f"{item!r} is listed twice")
        seen.add(item)
    return items


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, HugeNumber):
        return f"a number of {value.digits:,} digits"
    if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS:
        return f"a number of {len(str(abs(value))):,} digits"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)[:60]}"
    if isinstance(value, list):
        return "an array"
    return "an object"


class StrictJsonError(InstanceError):
    """JSON the strict parse refuses though it reads (a key twice in one object, NaN, Infinity), named by
    the path in the document (``members[1].id``); ``document`` is the parse (each key's first value), so a
    caller can still read what it needs from it (a batch line's id)."""

    def __init__(self, field: str, message: str, document: Any):
        super().__init__(field, message)
        self.document = document


class _Twice(dict):
    """An object that had a key twice (its first value kept): the hook marks it, :func:`_first_mark` finds it."""

    twice: str


@dataclass(frozen=True)
class _Constant:
    """Where ``NaN``, ``Infinity`` or ``-Infinity`` stood."""

    name: str


def _no_duplicate_keys(pairs: list[tuple[str, Any]], marks: list) -> dict:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    marked = _Twice()
    marks.append(marked)
    for key, value in pairs:
        if key in marked:
            marked.twice = getattr(marked, "twice", key)
            continue
        marked[key] = value
    return marked


def _no_constants(name: str, marks: list) -> Any:
    marks.append(_Constant(name))
    return marks[-1]


def _first_mark(document: Any) -> tuple[str, str]:
    """``(path, message)`` of the first thing the strict parse refuses (an object holding a key twice, a
    constant), in document order of where it starts (iterative: any depth json accepts)."""
    stack: list[tuple[Any, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Twice):
            return _join(path, value.twice), "field appears twice in one JSON object"
        if isinstance(value, _Constant):
            return path, f"{value.name} is not valid JSON"
        if isinstance(value, dict):
            stack.extend((v, _join(path, k)) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(value))))
    raise AssertionError("a marked value is in the document")


def parse_json(text: str | bytes, what: str = "input") -> Any:
    """Parse JSON strictly: duplicate keys, NaN and Infinity are errors."""
    fast = _parse_fast(text)
    return parse_strict(text, what) if fast is _UNPROVEN else fast


def parse_strict(text: str | bytes, what: str = "input") -> Any:
    """:func:`parse_json` by the standard library alone (the reference its fast path must equal)."""
    try:
        marks: list = []
        document = json.loads(text, object_pairs_hook=partial(_no_duplicate_keys, marks=marks),
                              parse_constant=partial(_no_constants, marks=marks), parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise InstanceError(what, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError:
        raise InstanceError(what, "not valid UTF-8 text") from None
    except RecursionError:
        raise InstanceError(what, "JSON nested too deeply") from None
    if marks:
        path, message = _first_mark(document)
        raise StrictJsonError(path or what, message, document)
    return document


_UNPROVEN = object()
_DIGITS_ONLY = bytes(0x39 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # every digit a 9, all else a space
_LONG_DIGITS = b"9" * 19  # |n| >= 10**18: orjson turns integers beyond 64 bits into floats


def _parse_fast(text: str | bytes) -> Any:
    """orjson's parse when it provably equals the strict one, else ``_UNPROVEN`` (the caller then runs
    the strict parse, which also words every error).

    orjson keeps the last of duplicate keys silently, so they are detected by counting colons: outside
    strings a colon appears once per key, and inside strings the decoded text (which orjson writes back
    literally) has exactly the colons of the source when the source has no ``\\u003X`` escape. So the
    source and orjson's re-serialisation have as many colons iff no key was dropped: a dropped key
    takes its own colon with it.
    """
    if not orjson_usable():
        return _UNPROVEN
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        value = orjson.loads(data)
        again = orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _UNPROVEN
    if (b"\\u003" in data or data.count(b":") != again.count(b":")
            or _LONG_DIGITS in data.translate(_DIGITS_ONLY)):
        return _UNPROVEN
    return value


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection off while a large, acyclic document is read and validated: every
    collection would walk all the objects already built (measured: a third of reading 100,000 tasks)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_json_file(source: str, what: str = "input", regular_only: bool = False) -> Any:
    """Read and parse a JSON file, or standard input for ``-``.

    ``regular_only`` refuses anything but a regular file without waiting on it (a FIFO would block a
    batch forever; the command line's own arguments may be pipes, as ``<(...)`` is).
    """
    return parse_json(read_json_file_bytes(source, what, regular_only), what)


def read_json_file_bytes(source: str, what: str = "input", regular_only: bool = False) -> bytes:
    """The bytes :func:`read_json_file` parses; an unreadable source is an error naming ``what``."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        return _read_file(source, regular_only)
    except OSError as exc:
        raise InstanceError(what, f"cannot read {source}: {exc.strerror or exc}") from None


def _read_file(source: str, regular_only: bool) -> bytes:
    if not regular_only:
        with open(source, "rb") as handle:
            return handle.read()
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO must not wait for a writer
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return handle.read()


def finite_number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InstanceError(path, f"must be a finite number, got {_kind(value)}")
    if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS:   # a literal too long; any finite float is fine
        raise InstanceError(path, f"must be a number below 10^{MAX_DIGITS} in size, got {_kind(value)}")
    if not math.isfinite(value):
        raise InstanceError(path, f"must be a finite number, got {_kind(value)}")
    return value
