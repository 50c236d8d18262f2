"""``balanced_subtopology``'s share check by arrays reports what the pair-by-pair loop it replaces reports."""

from __future__ import annotations

import random

import pytest

from kipopt.datasets import generate
from kipopt.formulations.tasks.rack import rules
from kipopt.formulations.tasks.rack.model import fair_bounds
from kipopt.solution import TaskRoles


def reference(instance, assignment) -> list[str]:
    total, sizes, counts = len(instance.tasks), rules._group_sizes(instance), rules._group_counts(instance, assignment)
    off = []
    for cid in sorted(instance.clients):
        orig = len(instance.clients[cid].active)
        for g in sorted(sizes):
            lo, hi = fair_bounds(orig, total, sizes[g])
            n = counts.get((cid, g), 0)
            if not lo <= n <= hi:
                off.append(f"{cid}: {n} active tasks of sub-topology {g}, fair share allows {lo}..{hi}")
    return off


def shuffled(instance, rng: random.Random) -> dict[str, TaskRoles]:
    """The instance's actives dealt again at random (counts per client kept or not)."""
    tasks = list(instance.task_ids)
    rng.shuffle(tasks)
    clients = list(instance.clients)
    out = {c: [] for c in clients}
    for t in tasks:
        out[rng.choice(clients)].append(t)
    return {c: TaskRoles(tuple(ts)) for c, ts in out.items()}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("chunk", [1, 7, 4_000_000])
def test_array_share_check_equals_the_loop(seed, chunk, monkeypatch):
    monkeypatch.setattr(rules, "SHARE_CHUNK", chunk)
    rng = random.Random(seed)
    x = generate("tasks", seed, tasks=rng.randint(5, 80), clients=rng.randint(1, 9), subtopologies=rng.randint(1, 6))
    for assignment in (rules.current_assignment(x), shuffled(x, rng), {}):
        total, sizes = len(x.tasks), rules._group_sizes(x)
        found = rules._off_share(x, total, sizes, rules._group_counts(x, assignment))
        assert found == reference(x, assignment)
