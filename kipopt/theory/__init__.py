"""Complexity results about kipopt's rules, stated as executable constructions.

:mod:`kipopt.theory.balanced_reduction` reduces satisfiability to the consumer
rule ``balanced`` (strong NP-hardness of both of its criteria); the proofs are
in ``paper/notes/balanced_complexity.tex`` and the tests in ``tests/theory/``
run them on random formulas.
"""
