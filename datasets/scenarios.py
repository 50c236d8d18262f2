"""The worked examples of the KIP texts, as instances (and, where the KIP gives one, assignments).

Each scenario is ``scenario_files/<name>.json``; an assignment the KIP states is
``scenario_files/<name>.<label>.solution.json`` (``{"assignment": ...}``), or
``<name>.solution.json`` for a single unlabelled one (label ``"solution"``).
Instances cannot carry comments (unknown fields are errors), so what each
file shows, where in the KIP it comes from, and the numbers the KIP states
are recorded here, in :data:`SCENARIOS`.

>>> scenario_names()[0]
'kip36_six_brokers'
>>> load_scenario("kip925_two_tasks").config.rack_aware_assignment_strategy
'min_traffic'
>>> sorted(scenario_solutions("kip708_six_nodes"))
['node_5', 'node_6']
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from kipopt._read import parse_json
from kipopt.errors import InstanceError
from kipopt.instance import Instance, from_dict


@dataclass(frozen=True)
class Scenario:
    """Where a scenario comes from and what the KIP says about it."""

    name: str
    kip: str
    section: str
    shows: str
    expected: str


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "kip36_six_brokers", "KIP-36", "Proposed Changes, implementation detail",
        "Six brokers, two per rack: 0,1 -> rack1, 2,3 -> rack2, 4,5 -> rack3. Six partitions with "
        "replication factor 3 and fixedStartIndex 0, so every partition can have one replica per rack.",
        "The KIP's rack-alternated broker list is (0, 2, 4, 1, 3, 5). Label 'adminutils' is the "
        "round-robin placement on that list that AdminUtils.assignReplicasToBrokers makes with "
        "fixedStartIndex 0: p0 [0,2,4], p1 [2,4,1], p2 [4,1,3], p3 [1,3,5], p4 [3,5,0], p5 [5,0,2]; "
        "every partition on 3 distinct racks, 3 replicas and 1 leader per broker.",
    ),
    Scenario(
        "kip441_scale_out", "KIP-441", "Example Scenarios: Scaling Out",
        "Stateful tasks T1, T2, T3 (task ids 0_0, 0_1, 0_2), one standby each. I1 ran T1, T3 with "
        "standby T2; I2 ran T2 with standbys T1, T3 (all caught up); I3 joins with no state "
        "(its lag on every task is the end offset 100000).",
        "Label 'first_rebalance' (catching up): actives unchanged (I1: T1, T3; I2: T2), standbys "
        "unchanged, I3 warms up T1 and T3 (listed as warm-ups: they are beyond num.standby.replicas=1). "
        "Label 'second_rebalance' (stable, once I3 has caught up): I1 active T1 standby T2; I2 active "
        "T2 standby T3; I3 active T3 standby T1. Active T3 moves from I1 to I3.",
    ),
    Scenario(
        "kip441_scale_in_a", "KIP-441", "Example Scenarios: Scaling In (Pt. 1 - standbys in sync)",
        "Tasks T1..T4 (0_0..0_3), one standby each. Before: I1 active T1, T4 standby T3; I2 active T2 "
        "standby T1, T4; I3 active T3 standby T2. I1 is brought down, so the instance has I2 and I3; "
        "standby lags (800, 2500, 1200) are within acceptable_recovery_lag=10000.",
        "Label 'first_rebalance': I2 active T1, T4 standby T2, T3; I3 active T2, T3 standby T1, T4. "
        "Balanced at once (2 actives each), no further rebalance needed.",
    ),
    Scenario(
        "kip441_scale_in_b", "KIP-441", "Example Scenarios: Scaling In (Pt. 2 - standbys lag nontrivially)",
        "Same start as scale_in_a, but the standbys lag by more than acceptable_recovery_lag: I2 lags "
        "60000 on T1 and 45000 on T4, I3 lags 52000 on T2 (end offsets 100000).",
        "Label 'first_rebalance' (catching up): I2 active T1, T2, T4 standby T3; I3 active T3 standby "
        "T1, T2, T4 (I2 is the most caught-up client for T1, T2, T4, so the result is unbalanced, 3 vs 1). "
        "Label 'second_rebalance' (stable, after I3 restored T4): I2 active T1, T2 standby T3, T4; "
        "I3 active T3, T4 standby T1, T2.",
    ),
    Scenario(
        "kip708_nine_clients", "KIP-708", "Proposed Changes: Example of the ideal task distribution",
        "Nine clients Node-1..Node-9 over three Kubernetes clusters x three zones (Node-1..3 in "
        "K8s_Cluster1 zones eu-central-1a..c, Node-4..6 in K8s_Cluster2, Node-7..9 in K8s_Cluster3); "
        "rack.aware.assignment.tags = zone,cluster; num.standby.replicas = 2; active 0_0 on Node-1.",
        "The ideal distribution gives the active and its two standbys pairwise distinct values in both "
        "tags. The KIP lists two such choices: label 'option_1' = standbys on Node-5 and Node-9, label "
        "'option_2' = Node-6 and Node-8. Either reaches the maximum tag distinctness (3 distinct zones "
        "and 3 distinct clusters among the 3 hosts).",
    ),
    Scenario(
        "kip708_six_nodes", "KIP-708", "Rejected Alternatives (appending tags into a single rack)",
        "Six clients: Node-1..3 in K8s_Cluster1 zones eu-central-1a..c, Node-4..6 in K8s_Cluster2; "
        "num.standby.replicas = 1; active 0_0 on Node-1; tags zone and cluster kept separate.",
        "Wanted: the standby in a different cluster and a different zone, i.e. Node-5 (label 'node_5') "
        "or Node-6 (label 'node_6'). Node-2, Node-3 (same cluster) and Node-4 (same zone) are what a "
        "single concatenated rack could produce and are worse.",
    ),
    Scenario(
        "kip925_two_tasks", "KIP-925", "4.A Min-cost flow problem (example) with the cost function of 4.B.III",
        "Two tasks t1=0_0, t2=0_1 and two clients c1 (rack r1), c2 (rack r2), capacity 1 each; t1's "
        "partitions live only in r2, t2's only in r1; the current assignment is t1->c1, t2->c2. "
        "traffic_cost 10 and non_overlap_cost 1 are the KIP's weights. The KIP's figure is not in the "
        "stored text; this instance realises its stated result (a min cost of 2 for t1, t2 on c1, c2) "
        "under the KIP's getCost function.",
        "Label 'initial' (t1->c1, t2->c2): traffic 20 (one cross-rack input partition per task, x10), "
        "non-overlap 0, total 20 (40 with rack_aware_assignment_cost_partitions='all', which adds the "
        "changelogs). Label 'min_cost' (t1->c2, t2->c1, reached by cancelling one negative cycle): "
        "traffic 0, non-overlap 2, total 2 under both conventions. Both are balanced (one task per client).",
    ),
)

_BY_NAME = {s.name: s for s in SCENARIOS}


def scenario_names() -> list[str]:
    """Names of the shipped scenarios, in KIP order."""
    return [s.name for s in SCENARIOS]


def describe(name: str) -> Scenario:
    """Source and expected numbers of one scenario."""
    return _BY_NAME[_known(name)]


def _known(name: str) -> str:
    if name not in _BY_NAME:
        raise InstanceError("scenario", f"unknown scenario {name!r}; one of {', '.join(_BY_NAME)}")
    return name


def _folder():
    return resources.files(__package__).joinpath("scenario_files")


def load_scenario(name: str) -> Instance:
    """The validated instance of a scenario."""
    text = _folder().joinpath(f"{_known(name)}.json").read_bytes()
    return from_dict(parse_json(text, f"scenario {name}"))


def scenario_solutions(name: str) -> dict[str, dict]:
    """``{label: {"assignment": ...}}`` for every assignment the KIP states for this scenario."""
    prefix = _known(name) + "."
    out = {}
    for entry in sorted(_folder().iterdir(), key=lambda e: e.name):
        file = entry.name
        if file == f"{name}.solution.json":
            label = "solution"
        elif file.startswith(prefix) and file.endswith(".solution.json"):
            label = file[len(prefix):-len(".solution.json")]
        else:
            continue
        out[label] = parse_json(entry.read_bytes(), file)
    return out


def scenario_files() -> list[str]:
    """Every ``.json`` file in the scenarios folder (instances and solutions)."""
    return sorted(e.name for e in _folder().iterdir() if e.name.endswith(".json"))



def _catalogue() -> str:
    lines = ["", "Scenarios", "---------", ""]
    for s in SCENARIOS:
        lines += [f"``{s.name}`` ({s.kip}, {s.section})", f"    Shows: {s.shows}", f"    Expected: {s.expected}", ""]
    return "\n".join(lines)


__doc__ = (__doc__ or "") + _catalogue()
