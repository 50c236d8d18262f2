"""Kafka Streams tasks: exact models of KIP-925 (``rack/``), KIP-441 (``lag_active``), KIP-708 (``tag_standby``)
and all of them at once (``joint``).

The rules are defined in :mod:`.rules` (``lag_active``, ``tag_standby``), :mod:`.rack.rules`
(``rack_active``, ``rack_standby``, ``balanced_subtopology``) and :mod:`.joint_stages` (``joint``);
the evaluator is :mod:`kipopt.evaluation.tasks`.
"""

PROVIDERS = ("rack.rules", "rules", "lag_active", "tag_standby", "joint_stages", "joint")
"""The modules (relative to this package) that register methods or rules, in registry order."""
