"""Ports of Kafka's replica placers (KIP-36)."""

PROVIDERS = ("placers", "proposals.sticky_partition_reassignor", "proposals.minimal_movement")
"""The modules (relative to this package) that register methods, in registry order."""
