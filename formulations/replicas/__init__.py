"""KIP-36 replica placement: the rule ``spread`` and ``exact.spread`` (:mod:`.spread`).

:mod:`.model` holds the cluster's shape and array models, :mod:`.placement` fresh placement,
:mod:`.moves` reassignment with fewest moves; :mod:`.peer` the public PuLP reassigner's model
(``exact.peer_reassign``, a benchmark peer); the evaluator is :mod:`kipopt.evaluation.replicas`.
"""

PROVIDERS = ("spread", "moves_first", "peer")
"""The modules (relative to this package) that register methods or rules, in registry order."""
