"""Port of the KIP-848 server-side default ``org.apache.kafka.coordinator.group.assignor.UniformAssignor``.

Follows Kafka at commit 1eb7644: an empty group gets nothing; a homogeneous
group (every member subscribes to the same topics) goes to
:func:`~kipopt.solvers.consumers.group.uniform_homogeneous.uniform_homogeneous`, any
other to :func:`~kipopt.solvers.consumers.group.uniform_heterogeneous.uniform_heterogeneous`.
Both are sticky to the members' current assignment (``owned``) and ignore
racks and ``group_instance_id`` (neither builder reads
``MemberSubscription.instanceId``). The inputs are built as §7 says (:mod:`kipopt.solvers.consumers.group.spec`);
the method does not apply when two members claim one partition.

>>> from kipopt.instance import from_dict
>>> x = from_dict({"format": 1, "family": "consumers", "topics": {"t": {"racks": [[], [], [], []]}},
...     "members": [{"id": "a", "topics": ["t"], "owned": ["t-0", "t-1", "t-2"]}, {"id": "b", "topics": ["t"]}]})
>>> uniform_assign(group_spec(x))
{'a': ('t-0', 't-1'), 'b': ('t-2', 't-3')}
"""

from __future__ import annotations

from kipopt.instance import ConsumersInstance
from kipopt.methods import Method, MethodResult, SolveOptions
from kipopt.solvers.consumers.group.spec import GroupSpec, group_spec, in_instance_order, single_owner, to_assignment
from kipopt.solvers.consumers.group.uniform_heterogeneous import uniform_heterogeneous
from kipopt.solvers.consumers.group.uniform_homogeneous import uniform_homogeneous


def uniform_assign(spec: GroupSpec) -> dict[str, tuple[str, ...]]:
    """``UniformAssignor.assign(groupSpec, describer)``, as member -> sorted partitions (every member listed)."""
    if not spec.members:
        return {}
    build = uniform_homogeneous if spec.homogeneous else uniform_heterogeneous
    return to_assignment(spec, build(spec))


def _run(instance: ConsumersInstance, options: SolveOptions) -> MethodResult:
    spec = group_spec(instance)
    return MethodResult(in_instance_order(instance, uniform_assign(spec)), info={"homogeneous": spec.homogeneous})


METHODS = [
    Method("kafka.server_uniform", "consumers", "balanced", _run,
           "KIP-848 server-side UniformAssignor (homogeneous and heterogeneous builders; sticky, no racks)",
           kafka_class="org.apache.kafka.coordinator.group.assignor.UniformAssignor",
           requires=single_owner),
]
RULES: list = []
