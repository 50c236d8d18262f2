"""``kipopt._write.dumps_indented`` writes exactly what ``json.dumps(..., indent=2)`` writes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kipopt._write import dumps_indented
from kipopt._write import json_default


def reference(obj):
    return json.dumps(obj, indent=2, allow_nan=False, default=json_default)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=5))
keys = st.one_of(st.text(max_size=4), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                 st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple), st.lists(st.text(max_size=3), max_size=5),
    st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(values)
def test_same_text_as_json_dumps(obj):
    assert dumps_indented(obj, json_default) == reference(obj)


@pytest.mark.parametrize("obj", [
    {"a": np.int64(3), "b": np.float64(0.5), "c": {1, 2}, "d": frozenset(), "e": (1, "x")},
    [["x", "é", "\u2028", "\"\\"], [], {}, [[]]],
    {"assignment": {"c1": {"active": ["0_1", "0_2"], "standby": [], "warmup": []}}},
    -0.0, 1e300, "plain", None,
])
def test_kipopt_documents(obj):
    assert dumps_indented(obj, json_default) == reference(obj)


@pytest.mark.parametrize("obj", [float("nan"), [1, float("inf")], {"x": float("-inf")}, {(1, 2): 3}, object()])
def test_same_errors(obj):
    with pytest.raises(Exception) as expected:
        reference(obj)
    with pytest.raises(type(expected.value)) as mine:
        dumps_indented(obj, json_default)
    assert str(mine.value) == str(expected.value)
