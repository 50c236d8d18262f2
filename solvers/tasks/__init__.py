"""Ports of Kafka Streams' task assignors (``org.apache.kafka.streams.processor.internals.assignment``).

KIP-925's :mod:`.rack_aware` with its :mod:`.graph` and :mod:`.rack_graphs`; KIP-441's
:mod:`.high_availability` with :mod:`.task_movement`, :mod:`.client_state` and :mod:`.priority_set`;
the standby assignors (:mod:`.default_standby`, KIP-708's :mod:`.tag_standby`); KIP-924's
:mod:`.sticky_task_assignor` with :mod:`.assignment_utils`.
"""

PROVIDERS = ("rack_aware", "high_availability", "tag_standby", "sticky_task_assignor")
"""The modules (relative to this package) that register methods, in registry order."""
