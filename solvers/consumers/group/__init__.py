"""The KIP-848 group coordinator's assignors (``org.apache.kafka.coordinator.group.assignor``)."""
