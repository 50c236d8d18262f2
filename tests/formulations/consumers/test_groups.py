"""The layout's per-group arrays and the owners' map, against their definitions: the vectorized forms
(one pass over the subscriptions, one sorted lookup) must give what the per-group and per-topic loops give."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kipopt import from_dict
from kipopt.formulations.consumers.groups import layout, owner_of, owners_in_order
from kipopt.formulations.consumers.rules import is_cross_rack, owners

RACKS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=2, unique=True)


@st.composite
def groups(draw):
    """Up to four topics and six members on racks or none; members own partitions of topics they no longer
    subscribe to, and claims collide."""
    names = ["t", "u", "v", "w"][:draw(st.integers(1, 4))]
    topics = {t: {"racks": draw(st.lists(RACKS, min_size=1, max_size=4))} for t in names}
    members = []
    for i in range(draw(st.integers(1, 6))):
        subs = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
        owned = [f"{t}-{p}" for t in names for p in range(len(topics[t]["racks"])) if draw(st.integers(0, 3)) == 0]
        members.append({"id": f"m{i}", "rack": draw(st.sampled_from(["a", "b", "c", None])), "topics": subs,
                        "owned": owned, "generation": draw(st.integers(1, 2))})
    return from_dict({"format": 1, "family": "consumers", "topics": topics, "members": members})


@settings(max_examples=150, deadline=None)
@given(groups())
def test_layout_arrays_and_owners_match_their_definitions(inst):
    lay = layout(inst)
    for g, group in enumerate(lay.groups):
        assert lay.cross[g].tolist() == [int(is_cross_rack(r, group.racks)) for r in lay.racks]
        readers = lay.subscribers[group.topic]
        assert lay.least_cost[g] == min(int(lay.cross[g, lay.member_rack[m]]) for m in readers)
    for t in lay.topics:
        assert lay.subscribers[t].tolist() == [m for m, ts in enumerate(lay.member_topics) if t in ts]
        assert not lay.subscribers[t].flags.writeable
    member, topic = lay.subscription_pairs
    assert sorted(zip(member.tolist(), topic.tolist())) == sorted(
        (m, lay.topics.index(t)) for m, ts in enumerate(lay.member_topics) for t in ts)
    claims = owners(inst)
    mine = owner_of(inst, lay)
    for t in lay.topics:
        expected = []
        for p in range(inst.topics[t].partitions):
            who = claims.get(f"{t}-{p}")
            m = -1 if who is None else lay.member_index[who]
            expected.append(m if m >= 0 and t in lay.member_topics[m] else -1)
        assert mine[t].tolist() == expected
    flat = owners_in_order(inst, lay)
    assert flat.tolist() == [m for t in lay.topics for m in mine[t].tolist()]
    assert not flat.flags.writeable
