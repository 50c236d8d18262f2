"""A bounded sample of ``benchmarks/bench_balanced_crosscheck.py``: the whole ``exact.balanced`` method against
the rule's member MILP on generated groups drawn from the same parameter space (static members, conflicting
claims and owned history included)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from kipopt.datasets import generate

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from bench_balanced_crosscheck import Outcome, compare, draw_group  # noqa: E402

SAMPLE = [draw_group(random.Random(seed)) for seed in range(12)]


@pytest.mark.parametrize("seed,params,threads", SAMPLE, ids=[f"group{i}" for i in range(len(SAMPLE))])
def test_method_agrees_with_the_member_milp(seed, params, threads):
    """Both prove the group's optimum (each of these twelve takes the MILP under 3 s) and agree on it."""
    assert compare(generate("consumers", seed, **params), threads, limit=30, milp_seconds=20) == Outcome(True, "")
