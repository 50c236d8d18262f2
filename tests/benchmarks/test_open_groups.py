"""``benchmarks/bench_open_groups.py``'s search over topic sets: when it closes, its value is the maximum of
``min(G(H), S(H))`` over every topic set (brute force on small random couplings)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_open_groups import Coupling, best_split  # noqa: E402


def _value(c: Coupling, high: np.ndarray) -> float:
    gainers = np.count_nonzero(c.keep @ high >= c.q + 1)
    sinks = c.weight[c.sinks @ high == 0].sum()
    return float(min(gainers, sinks))


def test_the_search_finds_the_brute_force_maximum():
    rng = np.random.default_rng(5)
    for _ in range(40):
        T = int(rng.integers(2, 7))
        q = int(rng.integers(2, 6))
        keep = rng.integers(0, 4, (int(rng.integers(1, 8)), T)).astype(float)
        sinks = (rng.random((int(rng.integers(1, 8)), T)) < 0.4).astype(float)
        c = Coupling(q, keep, sinks, rng.integers(1, 3, len(sinks)).astype(float))
        value, chosen, closed = best_split(c, np.argsort(-keep.sum(axis=0), kind="stable"), 30.0)
        best = max(_value(c, np.array(h, dtype=float)) for h in itertools.product((0, 1), repeat=T))
        assert closed and value == best == _value(c, chosen)
