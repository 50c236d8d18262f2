"""KIP-925 rack-aware task placement: the rules, their exact network models and the readable PuLP twins.

:mod:`.rules` states ``rack_active``, ``rack_standby`` and ``balanced_subtopology`` and registers their
``exact.*`` methods; :mod:`.model` is the active problem in index form, :mod:`.transport`, :mod:`.balance`
and :mod:`.balance_priced` its capped and uncapped networks, the ``standby_*`` modules the standby problem.
"""
