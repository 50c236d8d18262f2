"""``json.dumps(obj, indent=2, allow_nan=False, default=...)``, character for character, faster.

With ``indent`` the standard library encodes in pure Python, one generator
step per value; a 100,000-task answer took a third of a second, a
1,000,000-partition replicas answer 9 s. Here a list of strings or ints is
joined at C speed, and a table (an object whose keys are strings and whose
values are all lists of ints or all lists of strings: every family's
assignment but tasks', whose lists take the list path) is written in one pass
of C-level ``map`` calls over its flattened items; every other value follows
the standard encoder's rules in the same order of checks.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from dataclasses import dataclass
from itertools import chain
from json.encoder import encode_basestring_ascii as _string
from typing import Any, Callable, Collection, Iterable, Iterator, Sequence

INDENT = "  "
TABLE_MIN = 8
"""Objects with fewer entries take the general path (the table's set-up costs more than it saves)."""


@dataclass(frozen=True)
class Table:
    """An object given as its keys and values apart, written without building it: ``keys`` are strings or
    plain ints (written as their decimal strings), ``rows`` lists or tuples (written as arrays). Built by
    :meth:`kipopt.solution.Solution.to_document` for a replicas assignment (partition id -> brokers)."""

    keys: Sequence[Any]
    rows: Sequence[Sequence[Any]]

    def as_dict(self) -> dict:
        """The object ``json.dumps`` would be given: ``{str(key): list(row)}``."""
        return dict(zip(map(str, self.keys), map(list, self.rows)))


def json_default(value: Any) -> Any:
    """``json.dumps``' ``default`` for kipopt's documents: numpy scalars and sets become JSON."""
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


@contextlib.contextmanager
def collector_paused() -> Any:
    """The cyclic collector off while a document is built or written: a million-partition answer makes a
    million lists and strings, none in a cycle, and collections walking them cost a second."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def dumps_indented(obj: Any, default: Callable[[Any], Any]) -> str:
    """``json.dumps(obj, indent=2, allow_nan=False, default=default)``."""
    out: list[str] = []
    with collector_paused():
        _value(obj, "\n", out, default)
        return "".join(out)


def _value(o: Any, newline: str, out: list[str], default: Callable[[Any], Any]) -> None:
    if isinstance(o, str):
        out.append(_string(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, int):
        out.append(int.__repr__(o))
    elif isinstance(o, float):
        out.append(_float(o))
    elif isinstance(o, (list, tuple)):
        _array(o, newline, out, default)
    elif isinstance(o, dict):
        _object(o, newline, out, default)
    elif type(o) is Table:
        text = _table(o.keys, o.rows, newline) if len(o.keys) else "{}"
        if text is None:
            _object(o.as_dict(), newline, out, default)
        else:
            out.append(text)
    else:
        _value(default(o), newline, out, default)


def _array(items: list | tuple, newline: str, out: list[str], default: Callable[[Any], Any]) -> None:
    if not items:
        out.append("[]")
        return
    inner = newline + INDENT
    out.append("[" + inner)
    encode = _item_encoder(set(map(type, items)))
    if encode is not None:  # every item a plain int or every item a string: C speed
        out.append(("," + inner).join(map(encode, items)))
    else:
        for i, item in enumerate(items):
            if i:
                out.append("," + inner)
            _value(item, inner, out, default)
    out.append(newline + "]")


def _object(d: dict, newline: str, out: list[str], default: Callable[[Any], Any]) -> None:
    if not d:
        out.append("{}")
        return
    if len(d) >= TABLE_MIN:
        text = _table(d.keys(), d.values(), newline)
        if text is not None:
            out.append(text)
            return
    inner = newline + INDENT
    out.append("{")
    separator = inner
    for key, value in d.items():
        head = separator + (_string(key) if type(key) is str else _key(key)) + ": "
        separator = "," + inner
        kind = type(value)  # the common scalars inline: a metrics table holds ten thousand rows of them
        if kind is int:
            out.append(head + int.__repr__(value))
        elif kind is str:
            out.append(head + _string(value))
        elif kind is float:
            out.append(head + _float(value))
        else:
            out.append(head)
            _value(value, inner, out, default)
    out.append(newline + "}")


def _item_encoder(kinds: set[type]) -> Callable[[Any], str] | None:
    """How every item of a list whose item types are ``kinds`` is written, when that is one C function."""
    if kinds == {str}:
        return _string
    if kinds == {int}:  # exactly int: a bool is "true", a subclass may not print as an int
        return int.__repr__
    return None


def _table(keys: Iterable[Any], rows: Collection[Sequence[Any]], newline: str) -> str | None:
    """The object of ``keys`` (strings, or plain ints written as their decimal strings) to ``rows`` at
    ``newline``'s depth when every row is a list (or tuple) and their items are all plain ints or all
    strings; None for any other object."""
    key_kinds = set(map(type, keys))
    if not (key_kinds == {str} or key_kinds == {int}) or not set(map(type, rows)) <= {list, tuple}:
        return None
    kinds = set(map(type, chain.from_iterable(rows)))
    encode = _item_encoder(kinds) if kinds else _string
    if encode is None:
        return None
    inner = newline + INDENT
    deeper = inner + INDENT
    lengths = set(map(len, rows))
    head = inner + ('"{}"' if key_kinds == {int} else "{}") + ": "  # "{}".format(n) is int.__repr__(n)
    names = iter(keys) if key_kinds == {int} else map(_string, keys)
    if len(lengths) == 1 and (k := lengths.pop()) > 0:  # one template, fed k items at a time from one iterator
        template = head + "[" + deeper + ("," + deeper).join(["{}"] * k) + inner + "]"
        items = chain.from_iterable(rows) if encode is int.__repr__ else map(encode, chain.from_iterable(rows))
        body = ",".join(map(template.format, names, *([items] * k)))
    else:
        between = "," + deeper
        body = ",".join(head.format(name) + ("[" + deeper + between.join(map(encode, row)) + inner + "]"
                                             if row else "[]")
                        for name, row in zip(names, rows))
    return "{" + body + newline + "}"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _string(key)
    if isinstance(key, float):
        return _string(_float(key))
    if key is True or key is False or key is None:
        return _string(json.dumps(key))
    if isinstance(key, int):
        return _string(int.__repr__(key))
    return _string(json.dumps({key: 0})[2:])  # the standard library's own TypeError


def _float(o: float) -> str:
    if o != o or o in (float("inf"), float("-inf")):
        raise ValueError("Out of range float values are not JSON compliant: " + repr(o))  # as json's encoder
    return float.__repr__(o)


def unwritable(folder: str, exc: OSError) -> str:
    """Why an output folder (``--out``) could not be made or written: a file in its place is named as such."""
    return f"{folder} is a file, not a folder" if os.path.isfile(folder) else exc.strerror or str(exc)


@contextlib.contextmanager
def json_only_stdout() -> Iterator[None]:
    """Keep the process's stdout for kipopt's JSON: native code writing to file descriptor 1
    (HiGHS prints a banner the first time it is used) goes to stderr instead.

    Applies only to a real process stdout (not to a test's captured ``sys.stdout``), and is undone on exit.
    """
    real = sys.__stdout__
    try:
        usable = sys.stdout is real and real is not None and real.fileno() == 1
    except (OSError, ValueError, AttributeError):
        usable = False
    if not usable:
        yield
        return
    real.flush()
    saved = os.dup(1)
    out = open(saved, "w", encoding=real.encoding, errors=real.errors, closefd=False)
    os.dup2(2, 1)
    sys.stdout = out
    try:
        yield
    finally:
        try:
            out.flush()
        finally:
            sys.stdout = real
            os.dup2(saved, 1)
            os.close(saved)
