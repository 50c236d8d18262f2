"""``AbstractPartitionAssignor.MemberInfo`` order (Kafka ``1eb7644``): static members first, by ``group.instance.id``.

``MemberInfo.compareTo`` puts members that carry a ``group.instance.id`` before
those that do not, orders the static ones by instance id and the dynamic ones
by member id (``String.compareTo`` both). The client ``RangeAssignor`` and
``RoundRobinAssignor`` sort their members this way; the sticky assignors do not
use ``MemberInfo`` and order members by member id alone.

>>> from kipopt.instance import Member
>>> members = [Member("a", None, ()), Member("b", None, (), group_instance_id="y"),
...            Member("c", None, (), group_instance_id="x")]
>>> [m.id for m in sorted(members, key=member_info_key)]
['c', 'b', 'a']
"""

from __future__ import annotations

from kipopt.instance import Member, java_string_key


def member_info_key(member: Member) -> tuple[int, bytes]:
    """Sort key equal to ``MemberInfo.compareTo`` (instance ids are unique within a group)."""
    if member.group_instance_id is not None:
        return 0, java_string_key(member.group_instance_id)
    return 1, java_string_key(member.id)
