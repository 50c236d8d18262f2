"""A small synthetic results table, shaped like ``kipopt bench``'s Parquet rows, for the summary and plot tests.

Two families: replicas (one lexicographic rule, ``spread``) and tasks
(``rack_active``, a single-criterion rule whose exact method stops without a
proof on the last item, and ``joint``, on which ``kafka.rack_active`` is also
scored). The port's ``moves`` gap is negative where its ``replica_imbalance``
is worse: the optimum traded moves for balance.
"""

from __future__ import annotations

import json

import pandas as pd


def _row(family, rule, method, item, status, objective, optimum, bound, seconds, size, criteria=None,
         violations=0, partitions=None, method_status=None):
    gap = None if objective is None or bound is None else abs(objective - bound) / max(1.0, abs(objective))
    params = {"partitions": partitions} if partitions else {"tasks": size}
    return {"item_id": item, "instance_id": item, "family": family, "params": json.dumps(params), "seed": 0,
            "size": size, "nodes": 3, "method": method, "rule": rule, "exact_method": f"exact.{rule}",
            "status": status, "objective": objective, "bound": bound, "optimum": optimum, "gap": gap,
            "optimal": bool(gap == 0 and optimum is not None and not violations), "violations": violations,
            "beats_bound": False, "seconds": seconds, "time_limit": 30.0, "metrics": None, "error": None,
            "criteria": json.dumps(criteria) if criteria else None, "param_partitions": partitions,
            "method_status": method_status or status}


def results() -> pd.DataFrame:
    rows = []
    for k in range(8):
        item, size, parts = f"r{k}", 36 * (k % 2 + 1), 12 * (k % 2 + 1)
        best = [["replica_imbalance", 1, 1, 0.0], ["leader_imbalance", 1, 1, 0.0], ["moves", 20 + k, 20 + k, 0.0]]
        mine = [["replica_imbalance", 3 + k % 3, 1, 0.5], ["leader_imbalance", 1, 1, 0.0],
                ["moves", 10 + k, 20 + k, -0.5]]
        rows.append(_row("replicas", "spread", "exact.spread", item, "optimal", 100.0 + k, 100.0 + k, 100.0 + k,
                         0.1 * (k + 1), size, best, partitions=parts))
        rows.append(_row("replicas", "spread", "kafka.adminutils", item, "feasible", 300.0 + k, 100.0 + k,
                         100.0 + k, 0.01, size, mine, partitions=parts))
    for k in range(6):
        item, size = f"t{k}", 24 * (k % 3 + 1)
        proven = k < 5
        optimum = 40.0 + k if proven else None
        bound = 40.0 + k if proven else 38.0
        rows.append(_row("tasks", "rack_active", "exact.rack_active", item, "optimal" if proven else "feasible",
                         40.0 + k, optimum, bound, 0.05, size))
        rows.append(_row("tasks", "rack_active", "kafka.rack_active", item, "feasible", 40.0 + k + 2 * (k % 2),
                         optimum, bound, 0.02, size))
        joint_best = [["caught_up", 0, 0, 0.0], ["traffic", 30, 30, 0.0]]
        joint_mine = [["caught_up", 1, 0, 1.0], ["traffic", 28, 30, -0.07]]
        rows.append(_row("tasks", "joint", "exact.joint", item, "optimal", 30.0, 30.0, 30.0, 0.3, size, joint_best))
        rows.append(_row("tasks", "joint", "kafka.rack_active", item, "feasible", 1000.0, 30.0, 30.0, 0.02, size,
                         joint_mine, method_status="feasible"))
    return pd.DataFrame(rows)
