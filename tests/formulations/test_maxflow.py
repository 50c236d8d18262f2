"""Dinic's maximum flow (:mod:`kipopt.formulations.maxflow`) against scipy's on random networks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from kipopt.formulations.maxflow import max_flow


@st.composite
def networks(draw):
    nodes = draw(st.integers(2, 9))
    arcs = draw(st.lists(st.tuples(st.integers(0, nodes - 1), st.integers(0, nodes - 1), st.integers(0, 20)),
                         max_size=30))
    return nodes, [(u, v, c) for u, v, c in arcs if u != v]


@settings(max_examples=300, deadline=None)
@given(networks())
def test_the_value_is_scipys(network):
    nodes, arcs = network
    tail, head, cap = (list(x) for x in zip(*arcs)) if arcs else ([], [], [])
    graph = csr_array((np.array(cap, dtype=np.int32), (np.array(tail, dtype=np.int32), np.array(head, dtype=np.int32))),
                      shape=(nodes, nodes))   # parallel arcs are summed, as their flows add
    assert max_flow(nodes, tail, head, cap, 0, nodes - 1) == maximum_flow(graph, 0, nodes - 1).flow_value


def test_a_layered_network_needs_more_than_one_phase():
    # the first phase takes only the path of two arcs (0-2-4); the two paths of three through 1 need a second
    assert max_flow(5, [0, 0, 1, 1, 2, 3], [1, 2, 3, 2, 4, 4], [2, 1, 1, 2, 3, 1], 0, 4) == 3
