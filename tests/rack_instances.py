"""Seeded builders and hypothesis strategies for KIP-925 ``tasks`` instances.

``random_instance(seed, ...)`` makes one instance where every task is active
on exactly one client (what ``kafka.rack_active`` / ``exact.rack_active``
need) and every client and partition has a rack (so Kafka's rack awareness
is switched on). The hypothesis strategies draw sizes and a seed. The
reference solvers at the end (networkx network simplex, SciPy's assignment
solver) solve Kafka's active graph independently of kipopt's models.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import networkx as nx
import numpy as np
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from kipopt.costs import cross_rack_partitions
from kipopt.instance import TasksInstance, from_dict

STRATEGIES = ("min_traffic", "balance_subtopology")


def random_instance_dict(seed: int, tasks: int = 6, clients: int = 3, racks: int = 3, subtopologies: int = 2,
                         standbys: int = 0, strategy: str = "min_traffic", traffic_cost: int | None = None,
                         non_overlap_cost: int | None = None, replication: int = 2, inputs: int = 1,
                         cost_partitions: str = "kafka", tags: tuple[str, ...] = (),
                         rackless_client: bool = False, zones: int = 0, hosts: int = 3) -> dict[str, Any]:
    """One instance as a JSON-ready dict (see the module docstring).

    Every client is tagged ``zone`` (its rack, or one of ``zones`` values
    drawn independently of the rack when ``zones > 0``) and ``host`` (one of
    ``hosts`` values); ``tags`` are the configured keys.
    """
    rng = random.Random(seed)
    subtopologies = max(1, min(subtopologies, tasks))
    rack_names = [f"r{i}" for i in range(racks)]
    per_group = [0] * subtopologies
    task_ids = []
    for i in range(tasks):
        g = i % subtopologies
        task_ids.append(f"{g}_{per_group[g]}")
        per_group[g] += 1

    def replica_racks() -> list[str]:
        return sorted(rng.sample(rack_names, rng.randint(1, min(replication, racks))))

    topics: dict[str, Any] = {}
    for g, n in enumerate(per_group):
        for k in range(inputs):
            topics[f"in{g}x{k}"] = {"racks": [replica_racks() for _ in range(n)]}
        topics[f"app-store{g}-changelog"] = {"racks": [replica_racks() for _ in range(n)]}
    task_specs = {}
    for t in task_ids:
        g, p = t.split("_")
        task_specs[t] = {"inputs": [f"in{g}x{k}-{p}" for k in range(inputs)],
                         "changelogs": [f"app-store{g}-changelog-{p}"], "stateful": True,
                         "end_offset": rng.randint(0, 1000)}
    client_ids = [f"c{j}" for j in range(clients)]
    owner = {t: rng.choice(client_ids) for t in task_ids}
    specs: dict[str, Any] = {}
    for j, c in enumerate(client_ids):
        rack = rng.choice(rack_names)
        zone = f"z{rng.randrange(zones)}" if zones else rack
        specs[c] = {"rack": None if rackless_client and j == 0 else rack,
                    "tags": {"zone": zone, "host": f"h{rng.randrange(hosts)}"},
                    "capacity": rng.randint(1, 4), "active": [t for t in task_ids if owner[t] == c],
                    "standby": []}
    for t in task_ids:
        others = [c for c in client_ids if c != owner[t]]
        for c in rng.sample(others, min(standbys, len(others))):
            specs[c]["standby"].append(t)
    config: dict[str, Any] = {"num_standby_replicas": standbys, "rack_aware_assignment_strategy": strategy,
                              "rack_aware_assignment_cost_partitions": cost_partitions,
                              "rack_aware_assignment_tags": list(tags)}
    if traffic_cost is not None:
        config["rack_aware_assignment_traffic_cost"] = traffic_cost
    if non_overlap_cost is not None:
        config["rack_aware_assignment_non_overlap_cost"] = non_overlap_cost
    return {"format": 1, "family": "tasks", "topics": topics, "tasks": task_specs, "clients": specs,
            "config": config}


def random_instance(seed: int, **params: Any) -> TasksInstance:
    """:func:`random_instance_dict`, validated."""
    return from_dict(random_instance_dict(seed, **params))


@st.composite
def active_instances(draw, max_tasks: int = 14, max_clients: int = 5, strategies=STRATEGIES) -> TasksInstance:
    """Small instances for the active problem, with random costs and strategy."""
    return random_instance(
        draw(st.integers(0, 2**32 - 1)),
        tasks=draw(st.integers(1, max_tasks)), clients=draw(st.integers(1, max_clients)),
        racks=draw(st.integers(1, 3)), subtopologies=draw(st.integers(1, 3)),
        strategy=draw(st.sampled_from(strategies)),
        traffic_cost=draw(st.one_of(st.none(), st.integers(0, 12))),
        non_overlap_cost=draw(st.one_of(st.none(), st.integers(0, 3))),
        inputs=draw(st.integers(1, 2)), cost_partitions=draw(st.sampled_from(("kafka", "all"))),
    )


@st.composite
def standby_instances(draw, max_tasks: int = 8, max_clients: int = 5, tags: bool | None = None) -> TasksInstance:
    """Small instances with standbys (optionally KIP-708 tags configured)."""
    clients = draw(st.integers(2, max_clients))
    use_tags = draw(st.booleans()) if tags is None else tags
    return random_instance(
        draw(st.integers(0, 2**32 - 1)), tasks=draw(st.integers(1, max_tasks)), clients=clients,
        racks=draw(st.integers(1, 3)), standbys=draw(st.integers(1, clients - 1)),
        traffic_cost=draw(st.one_of(st.none(), st.integers(0, 12))),
        non_overlap_cost=draw(st.one_of(st.none(), st.integers(0, 3))),
        tags=draw(st.sampled_from((("zone",), ("zone", "host")))) if use_tags else (),
    )


@st.composite
def tagged_standby_instances(draw, max_tasks: int = 5, max_clients: int = 5) -> TasksInstance:
    """Small instances with tags configured and few zone/host values drawn independently of the racks,
    so the cheapest standby host often shares the active's tags (tag distinctness then binds)."""
    clients = draw(st.integers(3, max_clients))
    return random_instance(
        draw(st.integers(0, 2**32 - 1)), tasks=draw(st.integers(2, max_tasks)), clients=clients,
        racks=draw(st.integers(2, 3)), standbys=draw(st.integers(1, 2)),
        zones=draw(st.integers(2, 3)), hosts=draw(st.integers(1, 2)),
        non_overlap_cost=draw(st.one_of(st.none(), st.integers(0, 3))),
        tags=draw(st.sampled_from((("zone",), ("zone", "host")))),
    )


# --------------------------------------------------------------------------- independent reference solvers


def edge_cost(instance, task: str, client: str) -> int:
    """KIP-925 cost of ``task`` active on ``client``, straight from the definition."""
    c = instance.clients[client]
    traffic = cross_rack_partitions(instance, task, c.rack, "active") * instance.config.traffic_cost
    return traffic + instance.config.non_overlap_cost * (task not in c.active)


def kafka_caps(instance) -> dict[tuple[str, int], int]:
    """Kafka's BalanceSubtopology caps, computed here in doubles in Kafka's order."""
    total = len(instance.tasks)
    sizes = Counter(t.subtopology for t in instance.tasks.values())
    return {(c, g): math.ceil(((len(cl.active) * 1.0) / total) * n)
            for c, cl in instance.clients.items() for g, n in sizes.items()}


def networkx_optimum(instance, caps: dict | None) -> int:
    """Kafka's graph as a networkx min-cost flow: task -> (client, group) -> client -> sink."""
    g = nx.DiGraph()
    total = len(instance.tasks)
    g.add_node("source", demand=-total)
    g.add_node("sink", demand=total)
    for t, task in instance.tasks.items():
        g.add_edge("source", ("t", t), capacity=1, weight=0)
        for c in instance.clients:
            node = ("cg", c, task.subtopology) if caps is not None else ("c", c)
            g.add_edge(("t", t), node, capacity=1, weight=edge_cost(instance, t, c))
    for c, client in instance.clients.items():
        g.add_edge(("c", c), "sink", capacity=len(client.active), weight=0)
        if caps is not None:
            for (cc, sub), cap in caps.items():
                if cc == c:
                    g.add_edge(("cg", c, sub), ("c", c), capacity=cap, weight=0)
    return nx.min_cost_flow_cost(g)


def assignment_optimum(instance) -> int:
    """SciPy's linear_sum_assignment with every client expanded to one column per task it holds."""
    tasks = list(instance.tasks)
    slots = [c for c, cl in instance.clients.items() for _ in cl.active]
    cost = np.array([[edge_cost(instance, t, c) for c in slots] for t in tasks])
    rows, cols = linear_sum_assignment(cost)
    return int(cost[rows, cols].sum())
