"""kipopt: Kafka's assignment rules as exact LP/ILP models, with ports of Kafka's algorithms.

The public names below are imported on first use (PEP 562), so that
``kipopt validate`` loads the instance reader only, never a solver.

>>> import kipopt
>>> kipopt.__version__
'0.1.0'
>>> kipopt.check.__module__
'kipopt.api'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_HOMES = {
    "CheckResult": "api", "check": "api", "evaluate": "api", "load_assignment": "api", "solve": "api",
    "InputTypeError": "errors", "InstanceError": "errors", "KipoptError": "errors",
    "Evaluation": "evaluation",
    "ConsumersInstance": "instance", "ReplicasInstance": "instance", "TasksInstance": "instance",
    "from_dict": "instance", "load_instance": "instance", "to_dict": "instance",
    "Solution": "solution", "Status": "solution", "TaskRoles": "solution",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kipopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
