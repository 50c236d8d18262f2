"""The curated conformance set: KIP scenarios and edge cases, each paired with the ports it exercises.

Each case is an instance (a file in this folder, or a KIP scenario of
:mod:`kipopt.datasets.scenarios`) and the ``kafka.*`` methods whose answer on
it is a conformance vector. Expectations are not stored: ``kipopt vectors
--curated --out DIR`` runs the ports of this kipopt to write them, so they
can never go stale. A declared method that is not registered in this kipopt
(a port still being built) is skipped with a note, and appears by itself
once it is registered.

The instance format needs at least one member, client and broker, so an
*empty group* is represented by its closest valid forms: one fresh member
with no history (``consumers_one_member``), one client
(``tasks_one_client``) and one broker (``replicas_one_broker``).

>>> [c.name for c in CASES if c.family == "replicas"][:2]
['kip36_six_brokers', 'replicas_no_racks']
>>> load_case(case("tasks_one_client")).client_ids
('only',)
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from .._read import parse_json
from ..errors import InstanceError
from ..instance import Instance, from_dict

RANGE, COOPERATIVE, SERVER_UNIFORM, SERVER_RANGE = ("kafka.range", "kafka.cooperative_sticky",
                                                    "kafka.server_uniform", "kafka.server_range")
ROUND_ROBIN, EAGER_STICKY = "kafka.round_robin", "kafka.eager_sticky"
CLIENT_PORTS = (RANGE, COOPERATIVE, ROUND_ROBIN, EAGER_STICKY)
CONSUMER_PORTS = CLIENT_PORTS + (SERVER_UNIFORM, SERVER_RANGE)
RACK_ACTIVE, RACK_STANDBY, HA, TAG_STANDBY, STICKY = ("kafka.rack_active", "kafka.rack_standby", "kafka.ha",
                                                      "kafka.tag_standby", "kafka.sticky")
TASK_PORTS = (RACK_ACTIVE, RACK_STANDBY, HA, TAG_STANDBY, STICKY)
REPLICA_PORTS = ("kafka.adminutils", "kafka.striped")


@dataclass(frozen=True)
class Case:
    """One curated instance and the ports to run on it; ``source`` is ``file.json`` here or ``scenario:NAME``."""

    name: str
    family: str
    source: str
    methods: tuple[str, ...]
    shows: str


def _file(name: str, methods: tuple[str, ...], shows: str) -> Case:
    return Case(name, name.split("_", 1)[0], f"{name}.json", methods, shows)


def _scenario(name: str, family: str, methods: tuple[str, ...], shows: str) -> Case:
    return Case(name, family, f"scenario:{name}", methods, shows)


CASES: tuple[Case, ...] = (
    # ---------------------------------------------------------------- consumers (KIP-881, KIP-848)
    _file("consumers_no_racks", CONSUMER_PORTS,
          "No member and no partition has a rack: every assignor runs its rack-unaware path."),
    _file("consumers_one_rack", CONSUMER_PORTS,
          "Everything in one rack r1: rack-aware, but every member matches every partition."),
    _file("consumers_members_without_racks", CONSUMER_PORTS,
          "Two racked and two rack-less members over partitions replicated on two of three racks."),
    _file("consumers_partitions_missing_from_rack", CONSUMER_PORTS,
          "Members on r1, r2, r3; some partitions have no replica on a member's rack, one has no rack at all."),
    _file("consumers_one_member", CONSUMER_PORTS,
          "The closest valid form of an empty group: one new member (generation -1, nothing owned)."),
    # double claims: the KIP-848 server-side assignors do not apply (Method.requires), client ports only
    _file("consumers_generation_conflicts", CLIENT_PORTS,
          "Conflicting ownership claims: one partition claimed at a stale and a current generation, one "
          "claimed twice at the same generation, a member two generations behind."),
    _file("consumers_mixed_subscriptions", CONSUMER_PORTS,
          "Members subscribe to different topic sets, with some ownership history."),
    _file("consumers_static_members", CONSUMER_PORTS,
          "Static members (group_instance_id) interleaved with dynamic ones, instance ids ordered against the "
          "member ids: range, round robin and server range put the static members first by instance id."),
    # ---------------------------------------------------------------- tasks (KIP-441, KIP-708, KIP-925)
    _scenario("kip925_two_tasks", "tasks", (RACK_ACTIVE, HA, STICKY),
              "KIP-925's min-cost-flow example: two tasks placed across racks, one negative cycle to cancel."),
    _scenario("kip441_scale_out", "tasks", (HA, STICKY, TAG_STANDBY),
              "KIP-441 scaling out: a new client with no state joins; warm-ups before moving actives."),
    _scenario("kip441_scale_in_a", "tasks", (HA, STICKY),
              "KIP-441 scaling in with standbys in sync: the standbys take over at once."),
    _scenario("kip441_scale_in_b", "tasks", (HA, STICKY),
              "KIP-441 scaling in with lagging standbys: actives go to the most caught-up client."),
    _scenario("kip708_nine_clients", "tasks", (HA, TAG_STANDBY),
              "KIP-708's ideal distribution: two standbys over zone and cluster tags."),
    _scenario("kip708_six_nodes", "tasks", (HA, TAG_STANDBY),
              "KIP-708's rejected alternative: the standby must differ in both zone and cluster."),
    _file("tasks_no_racks", TASK_PORTS,
          "No client and no partition has a rack: Kafka switches rack awareness off."),
    _file("tasks_one_rack", TASK_PORTS, "Every client and partition in rack r1: all traffic costs are zero."),
    _file("tasks_clients_without_racks", TASK_PORTS,
          "One of three clients has no rack: Kafka disables rack-aware assignment for every client."),
    _file("tasks_partitions_missing_from_rack", TASK_PORTS,
          "Clients on r1, r2, r3 with zone tags; partitions live on r1 and r2 only, so r3 always pays."),
    _file("tasks_one_client", TASK_PORTS,
          "The closest valid form of an empty group: one client owning every task; no standby can be placed."),
    _file("tasks_balance_subtopology", (RACK_ACTIVE, HA, STICKY),
          "Strategy balance_subtopology over a stateful and a stateless sub-topology, unequal capacities."),
    _file("tasks_stateless", (RACK_ACTIVE, HA, STICKY),
          "Stateless tasks only: no changelogs, no standbys, no lags."),
    # ---------------------------------------------------------------- replicas (KIP-36)
    _scenario("kip36_six_brokers", "replicas", REPLICA_PORTS,
              "KIP-36's example: six brokers, two per rack, replication factor 3."),
    _file("replicas_no_racks", REPLICA_PORTS, "No broker has a rack: rack-unaware placement."),
    _file("replicas_one_rack", REPLICA_PORTS, "All brokers in one rack, start index 1."),
    _file("replicas_brokers_without_racks", REPLICA_PORTS,
          "Some brokers have a rack and one has none: AdminUtils refuses rack-aware placement."),
    _file("replicas_unequal_racks", REPLICA_PORTS,
          "Racks of 1, 2 and 3 brokers with non-contiguous ids, start index 2, first partition id 5."),
    _file("replicas_factor_above_racks", REPLICA_PORTS,
          "Replication factor 3 over two racks: some rack must hold two replicas."),
    _file("replicas_one_broker", REPLICA_PORTS, "The smallest cluster: one broker, replication factor 1."),
)

_BY_NAME = {c.name: c for c in CASES}


def case(name: str) -> Case:
    """The curated case called ``name``."""
    if name not in _BY_NAME:
        raise InstanceError("vector", f"unknown curated vector {name!r}; one of {', '.join(_BY_NAME)}")
    return _BY_NAME[name]


def load_case(c: Case) -> Instance:
    """The validated instance of a curated case."""
    if c.source.startswith("scenario:"):
        from ..datasets import load_scenario
        return load_scenario(c.source.removeprefix("scenario:"))
    text = resources.files(__package__).joinpath(c.source).read_bytes()
    return from_dict(parse_json(text, f"curated {c.name}"))
