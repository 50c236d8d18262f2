"""The tasks evaluator's linear metrics against brute force over every (task, client) pair.

Random assignments over generated instances, including broken ones
(duplicates, colocations, standbys of stateless tasks, tasks with no or two
actives), so every fast path and its fallback are exercised.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest

from kipopt import TaskRoles, evaluate, from_dict, to_dict
from kipopt.costs import ROLES, cross_rack_partitions
from kipopt.datasets import generate
from kipopt.evaluation.tasks import most_caught_up
from kipopt.instance import PARTITION_NUMBERS


def rank(instance, cid, t):
    lag = instance.lag(cid, t)
    return 0 if lag <= instance.config.acceptable_recovery_lag else lag


def perturbed(instance, rng: random.Random):
    """``instance`` with some end offsets within ``acceptable_recovery_lag`` (a client with no lag is then
    caught up), some lags dropped or raised, and sometimes every client reporting a task's lag."""
    d = to_dict(instance)
    stateful = [t for t, spec in d["tasks"].items() if spec["stateful"]]
    for t in stateful:
        if rng.random() < 0.4:
            d["tasks"][t]["end_offset"] = rng.choice([0, 5_000, 10_000, 10_001, 50_000])
    for c in d["clients"].values():
        for t in list(c["lags"]):
            if rng.random() < 0.3:
                del c["lags"][t]
            elif rng.random() < 0.3:
                c["lags"][t] = rng.choice([0, 10_000, 10_001, 60_000])
    if stateful and rng.random() < 0.5:
        t = rng.choice(stateful)
        for c in d["clients"].values():
            c["lags"][t] = rng.choice([0, 20_000, 30_000])
    return from_dict(d)


def random_assignment(instance, rng: random.Random, broken: bool) -> dict[str, TaskRoles]:
    clients = list(instance.client_ids)
    lists = {c: ([], [], []) for c in clients}
    for t in instance.task_ids:
        lists[rng.choice(clients)][0].append(t)
        if instance.tasks[t].stateful and rng.random() < 0.6:
            lists[rng.choice(clients)][1 + (rng.random() < 0.2)].append(t)
    if broken:
        for _ in range(rng.randint(1, 4)):
            c, t = rng.choice(clients), rng.choice(instance.task_ids)
            lists[c][rng.randrange(3)].append(t)  # may duplicate, colocate, double an active or stand by a stateless task
        if len(lists) > 1 and rng.random() < 0.3:
            del lists[rng.choice(clients)]  # a client the answer does not mention
        victim = rng.choice(list(lists))
        if lists[victim][0] and rng.random() < 0.5:
            lists[victim][0].pop()  # a task left without an active
    return {c: TaskRoles(tuple(a), tuple(s), tuple(w)) for c, (a, s, w) in lists.items()}


def reference_violations(instance, assignment) -> Counter:
    found: Counter = Counter()
    actives = Counter()
    for cid, roles in assignment.items():
        for role in (roles.active, roles.standby, roles.warmup):
            found["duplicate_in_list"] += sum(1 for n in Counter(role).values() if n > 1)
        for t in set(roles.standby) | set(roles.warmup):
            found["active_standby_colocated"] += t in roles.active
            found["standby_of_stateless"] += not instance.tasks[t].stateful
        found["duplicate_in_list"] += len(set(roles.standby) & set(roles.warmup))
        actives.update(roles.active)  # a task listed twice on one client is a duplicate active too
    found["missing_client"] = sum(c not in assignment for c in instance.clients)
    for t in instance.task_ids:
        found["unassigned_active"] += actives[t] == 0
        found["duplicate_active"] += actives[t] > 1
    return +found


def reference_metrics(instance, assignment) -> dict:
    out = {}
    for role in ROLES:
        traffic = moved = 0
        for cid, roles in assignment.items():
            client = instance.clients[cid]
            for t in getattr(roles, role):
                racks = instance.partition_racks
                traffic += client.rack is not None and sum(
                    1 for p in instance.cost_partitions(t, role) if racks[p] and client.rack not in racks[p])
                moved += t not in getattr(client, role)
        out[f"{role}_traffic_cost"] = traffic * instance.config.traffic_cost
        out[f"{role}_non_overlap_cost"] = moved * instance.config.non_overlap_cost
    wanted = instance.config.num_standby_replicas
    stateful = [t for t in instance.task_ids if instance.tasks[t].stateful]
    copies = {t: sum(t in roles.standby for roles in assignment.values()) for t in stateful}
    out["standby_shortfall"] = sum(max(0, wanted - copies[t]) for t in stateful)
    out["standby_excess"] = sum(max(0, copies[t] - wanted) for t in stateful)
    out["warmups"] = sum(len(roles.warmup) for roles in assignment.values())
    out["subtopology_spread"] = {}
    for g in instance.subtopologies:
        per_client = [sum(int(t.partition("_")[0]) == g for t in assignment.get(c, TaskRoles()).active)
                      for c in instance.clients]
        out["subtopology_spread"][str(g)] = max(per_client) - min(per_client)
    out["actives_not_caught_up"] = sum(
        rank(instance, cid, t) != min(rank(instance, c, t) for c in instance.clients)
        for cid, roles in assignment.items() for t in roles.active if instance.tasks[t].stateful)
    return out


@pytest.mark.parametrize("seed", range(18))
def test_evaluator_agrees_with_brute_force(seed):
    rng = random.Random(seed)
    instance = generate("tasks", seed, tasks=rng.randint(4, 40), clients=rng.randint(1, 7),
                        stateless_share=rng.choice([0.0, 0.3]), caught_up=rng.choice([0.2, 0.7, 1.0]),
                        num_standby_replicas=rng.randint(0, 2))
    instance = perturbed(instance, rng) if seed % 3 else instance
    for broken in (False, True, True):
        assignment = random_assignment(instance, rng, broken)
        evaluation = evaluate(instance, assignment)
        assert {k: evaluation.metrics[k] for k in reference_metrics(instance, assignment)} == \
            reference_metrics(instance, assignment)
        assert {v.rule: v.count for v in evaluation.violations} == reference_violations(instance, assignment)


@pytest.mark.parametrize("seed", range(8))
def test_most_caught_up_is_the_least_rank(seed):
    rng = random.Random(seed)
    instance = perturbed(generate("tasks", seed, tasks=30, clients=rng.randint(1, 6),
                                  caught_up=rng.choice([0.3, 1.0])), rng)
    best = most_caught_up(instance)
    assert set(best) == {t for t in instance.task_ids if instance.tasks[t].stateful}
    for t, b in best.items():
        low = min(rank(instance, c, t) for c in instance.clients)
        for cid, client in instance.clients.items():
            assert b.holds(cid, t in client.lags) == (rank(instance, cid, t) == low), (t, cid)


@pytest.mark.parametrize("seed", range(8))
def test_cross_rack_table_is_a_count(seed):
    """Every cell of both roles' tables, and a rack no client has, against a direct count; built from the
    partition numbers the reader leaves (instances read by from_dict) and without them."""
    rng = random.Random(seed)
    d = to_dict(generate("tasks", seed, tasks=25, clients=rng.randint(1, 6), racks=rng.randint(1, 4),
                         rackless_clients=rng.choice([0.0, 0.4])))
    d["config"]["rack_aware_assignment_cost_partitions"] = "all" if seed % 2 else "kafka"
    read = from_dict(d)
    assert PARTITION_NUMBERS in read.__dict__
    built = dataclasses.replace(read)  # no reader's cache
    assert PARTITION_NUMBERS not in built.__dict__
    for instance in (read, built):
        racks = instance.partition_racks
        for role in ROLES:
            for t in instance.task_ids:
                for rack in sorted({c.rack for c in instance.clients.values() if c.rack}) + ["elsewhere"]:
                    expected = sum(1 for p in instance.cost_partitions(t, role) if racks[p] and rack not in racks[p])
                    assert cross_rack_partitions(instance, t, rack, role) == expected


SINGLE_BREAKS = ("repeat_active", "two_owners", "no_owner", "colocated", "stateless_standby", "standby_and_warmup",
                 "repeat_standby", "stateless_warmup")


@pytest.mark.parametrize("brk", SINGLE_BREAKS)
@pytest.mark.parametrize("seed", range(3))
def test_each_broken_rule_alone_is_found(seed, brk):
    """One rule broken in an otherwise clean answer is reported (no other break can mask it)."""
    rng = random.Random(seed)
    instance = generate("tasks", seed, tasks=20, clients=4, stateless_share=0.3)
    clients = list(instance.client_ids)
    lists = {c: [[], [], []] for c in clients}
    owner = {}
    for task in instance.task_ids:  # a clean answer: one active each, standbys and warm-ups elsewhere
        owner[task] = rng.choice(clients)
        lists[owner[task]][0].append(task)
        if instance.tasks[task].stateful and rng.random() < 0.7:
            lists[rng.choice([c for c in clients if c != owner[task]])][1 + (rng.random() < 0.3)].append(task)
    clean = {c: TaskRoles(tuple(a), tuple(s), tuple(w)) for c, (a, s, w) in lists.items()}
    stateful = [t for t in instance.task_ids if instance.tasks[t].stateful]
    stateless = [t for t in instance.task_ids if not instance.tasks[t].stateful]
    if brk in ("stateless_standby", "stateless_warmup") and not stateless:
        pytest.skip("no stateless task")
    t = rng.choice(stateful)
    other = next(c for c in lists if c != owner[t])
    if brk == "repeat_active":
        lists[owner[t]][0].append(t)
    elif brk == "two_owners":
        lists[other][0].append(t)
    elif brk == "no_owner":
        lists[owner[t]][0].remove(t)
    elif brk == "colocated":
        for roles in lists.values():
            for role in (1, 2):
                if t in roles[role]:
                    roles[role].remove(t)
        lists[owner[t]][1].append(t)
    elif brk in ("stateless_standby", "stateless_warmup"):
        s = rng.choice(stateless)
        lists[next(c for c in lists if c != owner[s])][1 if brk == "stateless_standby" else 2].append(s)
    else:
        for roles in lists.values():
            for role in (1, 2):
                if t in roles[role]:
                    roles[role].remove(t)
        lists[other][1].append(t)
        lists[other][1 if brk == "repeat_standby" else 2].append(t)
    assignment = {c: TaskRoles(tuple(a), tuple(s), tuple(w)) for c, (a, s, w) in lists.items()}
    assert reference_violations(instance, clean) == Counter()
    found = {v.rule: v.count for v in evaluate(instance, assignment).violations}
    assert found == reference_violations(instance, assignment) != Counter()
