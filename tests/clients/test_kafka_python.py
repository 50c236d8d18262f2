"""kafka-python's assignors through the adapter (skipped without ``kipopt[clients]``).

The adapter's answers are solution objects that the oracle reads: range is
feasible for ``range`` and equals Java's ``RangeAssignor`` where Kafka is not
rack-aware; the cooperative assignor's partial answer plus its target is
scored on the target; round-robin's crash on mixed subscriptions is the
library's own exception.
"""

from __future__ import annotations

import pytest

pytest.importorskip("kafka.coordinator.assignors.range", reason="kafka-python absent: pip install kipopt[clients]")

from kipopt import api  # noqa: E402
from kipopt.clients.kafka_python import ASSIGNORS, assign, port_available  # noqa: E402
from kipopt.datasets import generate  # noqa: E402
from kipopt.testing import assert_feasible, assert_same_as_kafka  # noqa: E402


def _equal_group(seed: int, **params):
    return generate("consumers", seed, members=4, topics=2, partitions=10, subscriptions="equal", **params)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_assignor_answers_a_solution_the_oracle_reads(seed):
    inst = _equal_group(seed)
    for name, a in ASSIGNORS.items():
        answer = assign(inst, name)
        assert_feasible(inst, answer, rule=a.rule)
        assert ("target" in answer) is (name == "cooperative-sticky")


def test_cooperative_partial_withholds_and_the_target_is_scored():
    withheld = []
    for seed in range(1, 6):
        inst = _equal_group(seed)
        answer = assign(inst, "cooperative-sticky")
        evaluation = api.evaluate(inst, answer)
        assert evaluation.feasible
        withheld.append(evaluation.metrics["withheld"])
        partial = api.evaluate(inst, {"assignment": answer["assignment"]})
        assert partial.feasible is (evaluation.metrics["withheld"] == 0)
    assert any(withheld), "some group must move a partition"


def test_range_equals_java_without_racks():
    """With no member racks Java's RangeAssignor is not rack-aware, and kafka-python's range matches it."""
    inst = _equal_group(4, rackless_members=1.0)
    assert port_available("range")
    assert_same_as_kafka(inst, assign(inst, "range"), ASSIGNORS["range"].port)


def test_round_robin_crash_on_mixed_subscriptions_is_the_librarys():
    inst = generate("consumers", 2, subscriptions="mixed")
    with pytest.raises(KeyError):
        assign(inst, "roundrobin")
