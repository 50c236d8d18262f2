"""The count coupling's search over topic sets (:mod:`kipopt.formulations.consumers.level_coupling`): when it
closes, its value is the maximum of ``min(G(H), S(H) + r)`` over every topic set (brute force on small
random couplings); on the benchmark group the tree still proves its optimum with the coupling's set scored."""

from __future__ import annotations

import itertools
import math

import numpy as np

from kipopt.formulations.consumers.level_coupling import Coupling, best_split


def test_the_search_finds_the_brute_force_maximum():
    rng = np.random.default_rng(5)
    for _ in range(40):
        T = int(rng.integers(2, 7))
        keep = rng.integers(0, 4, (int(rng.integers(1, 8)), T)).astype(float)
        sinks = (rng.random((int(rng.integers(1, 8)), T)) < 0.4).astype(float)
        c = Coupling(int(rng.integers(2, 6)), int(rng.integers(0, 2)), keep, sinks,
                     rng.integers(1, 3, len(sinks)).astype(float))
        value, chosen, closed = best_split(c, np.argsort(-keep.sum(axis=0), kind="stable"), math.inf)
        best = max(c.value(np.array(h, dtype=float)) for h in itertools.product((0, 1), repeat=T))
        assert closed and value == best == c.value(chosen)


def test_the_value_counts_gainers_and_sinks_by_hand():
    # two owners: 5 keepable partitions of topic 0 (gains at q + 1 = 4 with topic 0 high), 3 of topic 1;
    # sinks: a member of topic 1 only, two of topic 0 and 1
    c = Coupling(3, 0, np.array([[5.0, 0.0], [1.0, 3.0]]), np.array([[0.0, 1.0], [1.0, 1.0]]),
                 np.array([1.0, 2.0]))
    assert c.value(np.array([1.0, 0.0])) == 1   # G = 1 (the first owner), S = 1 (the topic-1 member)
    assert c.value(np.array([1.0, 1.0])) == 0   # no sink left
    assert c.value(np.array([0.0, 0.0])) == 0   # no gainer
