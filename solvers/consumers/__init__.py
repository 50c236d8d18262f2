"""Ports of Kafka's consumer-group assignors: client-side (:mod:`.client`) and the group coordinator's (:mod:`.group`)."""

PROVIDERS = ("client.range", "group.range", "group.uniform", "client.cooperative_sticky", "client.round_robin",
             "client.sticky", "group.proposal_uniform_homogeneous")
"""The modules (relative to this package) that register methods, in registry order."""
