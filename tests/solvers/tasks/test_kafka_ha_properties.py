"""Property tests of ``kafka.ha`` and ``kafka.tag_standby`` on generated instances (hypothesis).

Instances mix caught-up, lagging and stateless tasks, new clients without
state, one to three tag dimensions and every rack strategy. What must hold
for Kafka's assignors (each checked through :func:`kipopt.api.solve`, which
also recomputes the rules ``lag_active`` / ``tag_standby`` and their hard
constraints): every task active exactly once; never two roles of one task
on a client; ``min(num_standby_replicas, clients - 1)`` standbys per
stateful task (warm-ups apart); at most ``max_warmup_replicas`` warm-ups; a
probing rebalance exactly when a movement was scheduled, and none while a
stateful active sits on a client less caught up than the best one.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipopt import api
from kipopt.datasets import generate
from kipopt.solvers.tasks.client_state import StreamsClientStates
from kipopt.solvers.tasks.default_standby import DefaultStandbyTaskAssignor
from kipopt.solvers.tasks.tag_standby import ClientTagAwareStandbyTaskAssignor


@st.composite
def instances(draw, strategies=("none", "min_traffic", "balance_subtopology"), min_standby=0):
    clients = draw(st.integers(2, 7))
    subtopologies = draw(st.integers(1, 3))
    params = dict(
        tasks=draw(st.integers(subtopologies, 24)), clients=clients, subtopologies=subtopologies,
        stateless_share=draw(st.sampled_from([0.0, 0.34, 0.67])), tags=draw(st.integers(1, 3)),
        tag_values=draw(st.integers(1, 3)), caught_up=draw(st.sampled_from([0.0, 0.3, 0.7, 1.0])),
        new_clients=draw(st.integers(0, clients - 1)), num_standby_replicas=draw(st.integers(min_standby, 3)),
        current_standbys=draw(st.integers(0, 1)), racks=draw(st.integers(1, 3)),
        rackless_clients=draw(st.sampled_from([0.0, 0.0, 0.3])), strategy=draw(st.sampled_from(strategies)))
    x = generate("tasks", draw(st.integers(0, 10_000)), **params)
    config = dataclasses.replace(x.config, max_warmup_replicas=draw(st.integers(1, 3)),
                                 acceptable_recovery_lag=draw(st.sampled_from([0, 10_000, 2**63 - 1])))
    return dataclasses.replace(x, config=config)


def _holders(solution, role: str) -> Counter:
    return Counter(t for roles in solution.assignment.values() for t in getattr(roles, role))


PROPERTIES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTIES
@given(instances())
def test_kafka_ha_keeps_every_hard_rule(x):
    s = api.solve(x, "kafka.ha")
    assert s.status.value == "feasible" and s.metrics["violations"] == []
    actives = _holders(s, "active")
    assert all(actives[t] == 1 for t in x.task_ids)
    for roles in s.assignment.values():
        assert len(set(roles.active) | set(roles.standby) | set(roles.warmup)) == \
            len(roles.active) + len(roles.standby) + len(roles.warmup)
    stateful = [t for t in x.task_ids if x.tasks[t].stateful]
    sigma = min(x.config.num_standby_replicas, len(x.clients) - 1)
    standbys = _holders(s, "standby")
    assert all(standbys[t] == sigma for t in stateful)
    assert not any(standbys[t] for t in x.task_ids if not x.tasks[t].stateful)
    warmups = sum(_holders(s, "warmup").values())
    assert warmups <= x.config.max_warmup_replicas


@PROPERTIES
@given(instances(strategies=("none",)))
def test_kafka_ha_probes_exactly_when_it_moves(x):
    s = api.solve(x, "kafka.ha")
    m = s.metrics
    assert m["probing_rebalance_needed"] == (m["active_task_movements"] + m["standby_task_movements"] > 0)
    if _holders(s, "warmup"):
        assert m["probing_rebalance_needed"]
    if not m["probing_rebalance_needed"]:
        acceptable = x.config.acceptable_recovery_lag
        for c, roles in s.assignment.items():
            for t in roles.active:
                if x.tasks[t].stateful:
                    lag = x.lag(c, t)
                    best = min(x.lag(o, t) for o in x.clients)
                    assert lag <= acceptable or acceptable == 2**63 - 1 or lag <= best


@PROPERTIES
@given(instances(min_standby=1))
def test_kafka_tag_standby_keeps_actives_and_fills_every_standby(x):
    s = api.solve(x, "kafka.tag_standby")
    assert s.status.value == "feasible" and s.metrics["violations"] == []
    assert all(set(s.assignment[c].active) == set(x.clients[c].active) for c in x.clients)
    sigma = min(x.config.num_standby_replicas, len(x.clients) - 1)
    standbys = _holders(s, "standby")
    assert all(standbys[t] == sigma for t in x.task_ids if x.tasks[t].stateful)
    assert not any(set(r.active) & set(r.standby) for r in s.assignment.values())


@PROPERTIES
@given(instances(min_standby=1))
def test_without_configured_tags_the_tag_aware_class_is_the_default_assignor(x):
    """Every generated task has an active, so the pending pass never runs: both classes agree."""
    x = dataclasses.replace(x, config=dataclasses.replace(x.config, rack_aware_assignment_tags=()))
    stateful = [t for t in x.task_ids if x.tasks[t].stateful]
    tag_aware, default = StreamsClientStates.with_actives(x), StreamsClientStates.with_actives(x)
    ClientTagAwareStandbyTaskAssignor(x).assign(tag_aware, stateful)
    DefaultStandbyTaskAssignor(x.config.num_standby_replicas).assign(default, stateful)
    assert tag_aware.standby == default.standby
