"""Replicas instances the tests of several folders share: a cluster builder, KIP-36's six-broker example, and a
solve past a stage that never ends."""

from __future__ import annotations

from kipopt.instance import ReplicasInstance, from_dict


def cluster(racks, partitions: int, rf: int, start_index: int = 0, start_partition_id: int = 0,
            current=None) -> ReplicasInstance:
    """``racks`` is a list of rack sizes (named r0, r1, ...; None for rack-less brokers) or a {broker: rack} map."""
    if isinstance(racks, dict):
        brokers = [{"id": b, "rack": r} for b, r in sorted(racks.items())]
    else:
        brokers, i = [], 0
        for r, n in enumerate(racks):
            for _ in range(n):
                brokers.append({"id": i, "rack": f"r{r}"})
                i += 1
    d = {"format": 1, "family": "replicas", "partitions": partitions, "replication_factor": rf,
         "start_index": start_index, "start_partition_id": start_partition_id, "brokers": brokers}
    if current is not None:
        d["current"] = {str(p): list(bs) for p, bs in current.items()}
    return from_dict(d)


KIP36_SIX_BROKERS = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack2", 4: "rack3", 5: "rack3"}

# KIP-36: brokers 0,1 in rack1, 2,3 in rack2, 4,5 in rack3; the interlaced list is 0,2,4,1,3,5 and
# round-robin over it with RF 3 gives these six partitions (leaders 0,2,4,1,3,5).
KIP36_ASSIGNMENT = {0: (0, 2, 4), 1: (2, 4, 1), 2: (4, 1, 3), 3: (1, 3, 5), 4: (3, 5, 0), 5: (5, 0, 2)}


def solved_past_a_stage_that_never_ends(monkeypatch, module, name: str, instance, method: str, limit: float = 1.0):
    """``method`` on ``instance`` with ``module.name`` replaced by a stage that sleeps two minutes: the
    answer, which came within a few seconds of ``limit`` (the stage runs in a child the deadline kills)."""
    import time

    from kipopt import solve

    def endless(*args, **kwargs):
        time.sleep(120)

    monkeypatch.setattr(module, name, endless)
    began = time.monotonic()
    answer = solve(instance, method, time_limit=limit)
    assert time.monotonic() - began < limit + 4
    return answer
