"""Time the ``kafka.cooperative_sticky`` port (``CooperativeStickyAssignor``) on large consumer groups.

Kafka's own Java, on this kind of machine (reference §10): about 8 s warm /
14 s cold at 10,000 partitions x 1,000 members with mixed subscriptions
(general builder), 0.4-0.8 s at 2,000 x 200. On the instances of this script
(seed 7, 50 topics, 80 % owned) Kafka's Java took far longer, cold JVM on a
loaded 2-core machine: 14.5 s at 2,000 x 200 and 438 s at 10,000 x 1,000 for
two assignor calls (cooperative + target), with outputs identical to the
port's; the port's incremental balance index takes 0.6-3 s at 10,000 x 1,000.
Timings here are one run each, on a shared machine: orders of magnitude, not
assertions.

    .venv/bin/python benchmarks/cooperative_sticky_speed.py [--sizes 2000x200,10000x1000]
"""

from __future__ import annotations

import argparse
import time

from kipopt.datasets import generate
from kipopt.solvers.consumers.client.cooperative_sticky import cooperative_sticky_assign
from kipopt.solvers.consumers.client.abstract_sticky import sticky_inputs


def run(partitions: int, members: int, subscriptions: str, seed: int = 7) -> dict:
    inst = generate("consumers", seed, partitions=partitions, members=members, topics=max(3, partitions // 200),
                    subscriptions=subscriptions, owned=0.8, conflicts=0.05, rackless_members=0.1)
    start = time.perf_counter()
    result = cooperative_sticky_assign(sticky_inputs(inst))
    seconds = time.perf_counter() - start
    sizes = [len(v) for v in result.target.values()]
    return {"partitions": partitions, "members": members, "subscriptions": subscriptions,
            "builder": "constrained" if result.constrained else "general", "rack_aware": result.rack_aware,
            "seconds": round(seconds, 2), "withheld": len(result.withheld), "min": min(sizes), "max": max(sizes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000x200,10000x1000")
    args = parser.parse_args()
    for size in args.sizes.split(","):
        p, m = (int(x) for x in size.split("x"))
        for subscriptions in ("mixed", "equal"):
            print(run(p, m, subscriptions), flush=True)


if __name__ == "__main__":
    main()
