"""The fast JSON path of ``kipopt._read.parse_json`` (orjson plus a colon count) against the strict parse.

Every document must give what Python's ``json`` with the duplicate-key hook
gives: the same value (ints stay ints, however long) or the same error naming
the same field. The fast path must be the one taken on ordinary instances.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from kipopt import _read as r
from kipopt.errors import InstanceError

pytestmark = pytest.mark.skipif(r.orjson is None, reason="orjson is not installed")


def strict(text: str | bytes):
    """The reference: the standard library's parse with the duplicate-key hook (the slow path)."""
    return r.parse_strict(text)


def same(a, b) -> bool:
    """Equal values of equal JSON types (1 is not 1.0, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def outcome(parse, text):
    try:
        return "value", parse(text)
    except InstanceError as exc:
        return "error", exc.field


def assert_agrees(text: str | bytes) -> None:
    mine, ref = outcome(r.parse_json, text), outcome(strict, text)
    assert mine[0] == ref[0], (text, mine, ref)
    if mine[0] == "error":
        assert mine[1] == ref[1] or ref[1] == "input"
    else:
        assert same(mine[1], ref[1])


# --------------------------------------------------------------------------- duplicate keys


@pytest.mark.parametrize("text,key", [
    ('{"a": 1, "a": 1}', "a"),
    ('{"a": {"b": 1, "c": 2, "b": 3}}', "a.b"),
    ('[{"x": 1}, {"y": [{"z": 1, "z": 2}]}]', "[1].y[0].z"),
    ('{"a\\u0062": 1, "ab": 2}', "ab"),  # an escape spelling the same key
    ('{"\\u0061": 1, "a": 2}', "a"),
    ('{"k:v": 1, "k:v": 2}', "k:v"),  # colons inside the key
    ('{"a": "x:y", "b": {"c": 1, "c": 1}}', "b.c"),
    ('{"a": {"b": {"c": 1, "c": 2}}, "a": 1}', "a"),  # the first object holding a key twice, in document order
    ('{"a": {"b": {"c": 1, "c": 2}}, "d": {"e": 1, "e": 2}}', "a.b.c"),
    ('{"a": {"deep": {"er": 1}}, "a": {}}', "a"),  # the dropped value holds colons of its own
    ('{"\\u003a": 1, ":": 2}', ":"),  # an escaped colon: the count cannot decide, the strict parse does
])
def test_duplicate_keys_are_named(text, key):
    with pytest.raises(InstanceError) as info:
        r.parse_json(text)
    assert info.value.field == key
    assert "appears twice" in info.value.message


@pytest.mark.parametrize("text", [
    '{"a:b": "c:d", "e": [":", {"f": ":::"}]}',  # colons in strings, no duplicates
    '{"ab": 1, "a\\u0063": 2}',
    '{"a": {"a": {"a": 1}}}',  # one key in separate objects is not a duplicate
    '[{"x": 1}, {"x": 2}]',
])
def test_no_false_duplicates(text):
    assert same(r.parse_json(text), json.loads(text))


# --------------------------------------------------------------------------- values equal the strict parse


@pytest.mark.parametrize("text", [
    "18446744073709551616",  # beyond 64 bits: orjson would give a float
    "-9223372036854775809",
    "[123456789012345678901234567890, 1]",
    '{"end_offset": 99999999999999999999}',
    "9223372036854775807", "18446744073709551615", "-0", "-0.0", "1e22", "[1.0, 1, 0.5]",
    '"\\ud800"',  # a lone surrogate: orjson refuses, the standard library accepts
    "1E400",  # infinity after parsing: the standard library's float
    b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark
    '{"x": NaN}', '{"a": 1,}', b"\xff\xfe{}", '"\\u00e9:"',
])
def test_edge_values_agree(text):
    assert_agrees(text)


def test_fast_path_taken_on_an_instance():
    """An ordinary generated instance takes the fast path (and gives the strict parse's value)."""
    from kipopt import to_dict
    from kipopt.datasets import generate
    text = json.dumps(to_dict(generate("tasks", 3, tasks=40, clients=5))).encode()
    fast = r._parse_fast(text)
    assert fast is not r._UNPROVEN
    assert same(fast, strict(text))


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(alphabet=st.sampled_from("ab:\"\\é\n0_-"), max_size=4))
keys = st.text(alphabet=st.sampled_from("ab:\\é"), max_size=3)


@st.composite
def documents(draw, depth=3):
    """JSON text with objects written pair by pair (so keys may repeat), keys sometimes \\u-escaped."""
    if depth == 0 or draw(st.booleans()):
        return json.dumps(draw(json_scalars), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        return "[" + ", ".join(draw(st.lists(documents(depth - 1), max_size=3))) + "]"
    pairs = draw(st.lists(st.tuples(keys, documents(depth - 1)), max_size=4))
    written = []
    for k, v in pairs:
        key = json.dumps(k, ensure_ascii=draw(st.booleans()))
        if draw(st.booleans()) and len(k) == 1 and k not in '"\\':
            key = '"\\u%04x"' % ord(k)
        written.append(f"{key}: {v}")
    return "{" + ", ".join(written) + "}"


@settings(max_examples=300, deadline=None)
@given(documents())
def test_fast_parse_agrees_with_strict(text):
    assert_agrees(text)
    assert_agrees(text.encode())

