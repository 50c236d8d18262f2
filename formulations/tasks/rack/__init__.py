"""KIP-925 rack-aware task placement: the rules, their exact network models and the readable PuLP twins.

:mod:`.rules` states ``rack_active``, ``rack_standby`` and ``balanced_subtopology`` and registers their
``exact.*`` methods; :mod:`.model` is the active problem in index form, :mod:`.transport` its uncapped
network, :mod:`.balance_relaxed` (task groups and capped-pair profiles: a bound read back to an assignment
that meets it), :mod:`.balance_priced` and :mod:`.balance` its capped networks, the ``standby_*`` modules
the standby problem.
"""
