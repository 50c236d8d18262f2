"""Kafka's reassignment files in and out (``kipopt reassign``): :mod:`.kafka_files` reads and writes
them by Kafka's rules, :mod:`.plan` turns an operator scenario into one exact solve per topic."""

from kipopt.reassign.kafka_files import (PartitionReplicas, kafka_parse_errors, read_assignment,  # noqa: F401
                                         read_log_dirs, read_rack_map, reassignment_json)
from kipopt.reassign.plan import Plan, Scenario, make_plan  # noqa: F401
