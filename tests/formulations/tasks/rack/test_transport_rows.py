"""``rack_transport.unique_rows`` is ``np.unique(axis=0, return_inverse=True)``: same rows, same order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from kipopt.formulations.tasks.rack.transport import unique_rows


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40).flatmap(lambda n: st.integers(1, 5).flatmap(
    lambda c: arrays(np.int64, (n, c), elements=st.one_of(st.integers(0, 12), st.integers(-3, 2**40))))))
def test_unique_rows_is_numpy_unique(keys):
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    mine, mine_inverse = unique_rows(keys)
    assert mine.shape == unique.shape and (mine == unique).all()
    assert (mine_inverse == inverse.reshape(-1)).all()
