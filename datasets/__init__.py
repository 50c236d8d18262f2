"""Seeded instance generators and the KIP scenario files.

Contract used by the command line (the datasets work fills it in):
``generate(family, seed, **params) -> Instance`` and
``generator_params() -> {name: (type, help)}``.
"""

from __future__ import annotations


def generator_params() -> dict:
    return {}


def generate(family: str, seed: int, **params):
    raise NotImplementedError("generators land with the datasets work")
