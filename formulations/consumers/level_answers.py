"""The level tree's leaf solves read in the rule's units: bounds, answers checked by the rule, least loads.

A leaf or box model's objective leaves out the constant ``O`` (owned partitions: every revocation counted
as a keep not made) and is integral on integral points: :func:`rule_units` rounds a bound up and adds
``O``. An answer read back from a leaf model is kept only when the rule itself agrees with it
(:func:`better`): never on the solver's word.
"""

from __future__ import annotations

import math

import numpy as np

from kipopt.instance import ConsumersInstance

from kipopt.formulations.consumers.groups import Layout
from kipopt.formulations.consumers.level_local import least_levels
from kipopt.formulations.consumers.level_search import LevelSpace, read_back
from kipopt.formulations.consumers.rules import balanced_objective, balanced_violations


def least_loads_of(lay: Layout, answer: dict[str, tuple[str, ...]]) -> np.ndarray:
    """``answer``'s least loads per topic (:func:`~kipopt.formulations.consumers.level_local.least_levels`)."""
    index = {t: i for i, t in enumerate(lay.topics)}
    loads = np.array([len(answer.get(m, ())) for m in lay.members], dtype=np.int64)
    member_topics = [np.array([index[t] for t in ts if t in index], dtype=np.int64) for ts in lay.member_topics]
    return least_levels(member_topics, loads, len(lay.topics))


def better(instance: ConsumersInstance, sp: LevelSpace, model, result, found, best_value: float):
    """``(answer, value)``: ``result``'s, read back, when it beats ``best_value`` and the rule agrees (it
    meets the rule at the value the model says), else ``(found, best_value)``."""
    if result.x is None or result.objective is None:
        return found, best_value
    value = float(round(result.objective)) + sp.owned_total
    if value < best_value:
        answer = read_back(sp, model, result.x)
        if not balanced_violations(instance, answer) and balanced_objective(instance, answer) == value:
            return answer, value
    return found, best_value


def box_value(sp: LevelSpace, result) -> float | None:
    """A box relaxation's bound in rule units: ``inf`` when no vector of the box has a valid assignment
    over the tree's arcs (with least-cost arcs only, none at the least cross-rack count, where the answer
    in hand is), ``None`` when the solve did not finish."""
    if result.status == "infeasible":
        return math.inf
    if result.status == "cutoff":
        return rule_units(sp, float(result.bound))
    if result.status != "optimal" or result.objective is None:
        return None
    return rule_units(sp, result.objective)


def rule_units(sp: LevelSpace, objective: float) -> float:
    """A model objective (or a bound on it) in rule units: rounded up (objectives are integers) plus ``O``."""
    return math.ceil(objective - 1e-6) + sp.owned_total
