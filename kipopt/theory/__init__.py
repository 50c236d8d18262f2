"""Complexity results about kipopt's rules, stated as executable constructions.

:mod:`kipopt.theory.balanced_reduction` reduces satisfiability to the consumer
rule ``balanced`` (strong NP-hardness of each of its criteria; proof in
``paper/notes/balanced_complexity.tex``), and :mod:`kipopt.theory.tag_reduction`
reduces 3-dimensional matching to the KIP-708 tag rules (``tag_standby``,
``joint``, tagged ``rack_standby``) and :mod:`kipopt.theory.lag_reduction` set
cover to KIP-441's ``lag_active`` (``paper/notes/complexity.tex``). The tests
in ``tests/theory/`` run each on random small instances against the exact
methods (and a brute force for ``balanced``).
"""
