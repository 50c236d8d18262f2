"""Speed of the consumer-assignor ports (kafka.range, kafka.server_range, kafka.server_uniform, kafka.round_robin,
kafka.eager_sticky).

Instances (issue 8): 10,000 partitions × 1,000 members over 3 racks, RF 2,
20 skewed topics with mixed subscriptions and an owned history (no double
claims, so the server methods apply); and the co-partitioned case, every
member subscribed to 10 topics of 1,000 partitions each. Each method runs
``--repeat`` times through ``kipopt.api.solve`` (the reported seconds are the
method's own, as ``solve`` measures them; the best and the median are shown),
with the cross-rack share of its answer.

Kafka's own Java at this commit (reference digest §10, warm, 2 cores):
mixed: range 0.095 s, server uniform 0.053 s, server range 0.024 s;
co-partitioned: range 0.37-0.61 s, server uniform 0.019 s, server range 0.028 s.
RoundRobinAssignor and the eager StickyAssignor on these same two instances
(issue 19, javac 17, warm minimum of 5 calls in one JVM, on a loaded machine
where range took 0.24 s and 2.7 s instead of the figures above): round robin
0.089 s and 0.104 s; eager sticky 63 s (mixed, the general builder) and
0.79 s (co-partitioned, the constrained builder).
The ratio column divides the port's best time by that figure. The machine is
shared: timings are noisy, use them for orders of magnitude.

Run: ``python benchmarks/bench_consumer_ports.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics

from kipopt import solve
from kipopt.datasets import generate

METHODS = ("kafka.range", "kafka.server_range", "kafka.server_uniform", "kafka.round_robin", "kafka.eager_sticky")
CASES = {
    "mixed": dict(members=1000, partitions=10_000, topics=20, racks=3, replication_factor=2,
                  subscriptions="mixed", conflicts=0.0),
    "co-partitioned": dict(members=1000, partitions=10_000, topics=10, skew=0.0, racks=3, replication_factor=2,
                           subscriptions="equal", conflicts=0.0),
}
JAVA_SECONDS = {
    ("mixed", "kafka.range"): 0.095, ("mixed", "kafka.server_range"): 0.024,
    ("mixed", "kafka.server_uniform"): 0.053, ("co-partitioned", "kafka.range"): 0.37,
    ("co-partitioned", "kafka.server_range"): 0.028, ("co-partitioned", "kafka.server_uniform"): 0.019,
    ("mixed", "kafka.round_robin"): 0.089, ("co-partitioned", "kafka.round_robin"): 0.104,
    ("mixed", "kafka.eager_sticky"): 63.1, ("co-partitioned", "kafka.eager_sticky"): 0.79,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':15} {'method':22} {'best s':>8} {'median s':>9} {'x Java':>7} {'cross-rack':>11} {'rack-aware':>10}")
    for case, params in CASES.items():
        instance = generate("consumers", 1, **params)
        for method in METHODS:
            runs = [solve(instance, method) for _ in range(args.repeat)]
            seconds = [r.seconds for r in runs]
            metrics = runs[0].metrics
            share = metrics["cross_rack"] / max(1, metrics["assigned"])
            ratio = min(seconds) / JAVA_SECONDS[(case, method)]
            aware = metrics.get("rack_aware", "-")
            print(f"{case:15} {method:22} {min(seconds):8.3f} {statistics.median(seconds):9.3f} {ratio:7.1f} "
                  f"{share:11.1%} {str(aware):>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
