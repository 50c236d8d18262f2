"""KIP-881 consumer groups: the rules ``range`` and ``balanced`` (:mod:`.rules`) and their exact models.

:mod:`.groups` is what every model groups (partitions by topic and replica-rack set, members by rack),
:mod:`.range` and :mod:`.balanced` the exact methods (the latter with :mod:`.level_tree` (+ :mod:`.level_warm`),
:mod:`.member_milp` and the fallback :mod:`.greedy`; :mod:`.level_search`, :mod:`.levels` and :mod:`.level_index` are exact
cross-checks), :mod:`.level_certificate` a proof of the count coupling's bound over every level vector
(:mod:`.level_coupling`'s search first), :mod:`.level_hot` the two-level bound with one overloaded topic's
flow counted, :mod:`.pulp_models` the member-level PuLP twins;
the evaluator is :mod:`kipopt.evaluation.consumers`.
"""

PROVIDERS = ("rules", "range", "balanced")
"""The modules (relative to this package) that register methods or rules, in registry order."""
