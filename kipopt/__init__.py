"""kipopt: Kafka's assignment rules as exact LP/ILP models, with ports of Kafka's algorithms.

>>> import kipopt
>>> kipopt.__version__
'0.1.0'
"""

from .api import CheckResult, check, evaluate, load_assignment, solve
from .errors import InstanceError, KipoptError
from .evaluation import Evaluation
from .instance import (ConsumersInstance, ReplicasInstance, TasksInstance, from_dict, load_instance, to_dict)
from .solution import Solution, Status, TaskRoles

__version__ = "0.1.0"

__all__ = ["CheckResult", "ConsumersInstance", "Evaluation", "InstanceError", "KipoptError", "ReplicasInstance",
           "Solution", "Status", "TaskRoles", "TasksInstance", "check", "evaluate", "from_dict",
           "load_assignment", "load_instance", "solve", "to_dict"]
