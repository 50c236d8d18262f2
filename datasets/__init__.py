"""Seeded instance generators and the KIP scenario files.

``generate(family, seed, **params)`` returns a validated instance (the same
for the same arguments on any machine); ``generator_params()`` lists every
parameter the command line offers (``kipopt generate FAMILY --seed S``).
The hand-written instances of the KIP texts are in :mod:`.scenarios`.

>>> generate("consumers", 3, members=2, topics=1, partitions=2).family
'consumers'
>>> sorted(scenario_names())[:2]
['kip36_six_brokers', 'kip441_scale_in_a']
"""

from __future__ import annotations

from .generators import (ConsumersParams, ReplicasParams, TasksParams, generate, generate_consumers,
                         generate_replicas, generate_tasks, generator_params)
from .scenarios import load_scenario, scenario_names, scenario_solutions

__all__ = [
    "ConsumersParams", "ReplicasParams", "TasksParams", "generate", "generate_consumers", "generate_replicas",
    "generate_tasks", "generator_params", "load_scenario", "scenario_names", "scenario_solutions",
]
