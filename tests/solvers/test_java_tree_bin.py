"""``java.util.HashMap`` tree bins (:mod:`kipopt.solvers.java_tree_bin`), checked against OpenJDK 17.

``data/jdk17_tree_bin_orders.json`` (JDK collection orders, not a Kafka port's vectors: the paper's conformance
run does not replay it) was produced once, on OpenJDK 17.0.15, by a
throwaway differential harness (kept outside the repository): a Java program
read random operation sequences, applied them to a real ``HashMap`` (``put``,
``computeIfAbsent``, ``remove``) or ``HashSet`` (``add``, ``remove``), made with
``new HashMap<>()`` / ``new HashMap<>(n)`` / ``new HashSet<>(n)``, and printed
the key iteration order after every 16th operation and after the last. Keys
were chosen to collide: ``Integer`` s sharing their low bits, ``String`` s of
equal ``hashCode`` (concatenated "Aa"/"BB"-style blocks, so the tree orders
them by ``compareTo``) mixed with strings of the same bucket, and ``TaskId`` s
(a small ``Comparable`` class with Kafka's ``TaskId`` ``hashCode`` and
``compareTo``) of one bucket, plus other keys that make the table resize.
Thousands of such sequences matched the emulation; the file keeps 40 of them
in which a bin became a tree (some with tree removals, some with resize
splits). The orders are data here, not re-derived by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kipopt.solvers.java_tree_bin import TreeBin, TreeTieError
from kipopt.solvers.java_util import (JavaHashMapOrder, JavaHashSet, integer_hash, java_string_hash, spread_hash,
                                      table_size_for, task_id_hash, task_hashmap_order)

VECTORS = json.loads((Path(__file__).parent / "data" / "jdk17_tree_bin_orders.json").read_text(encoding="utf-8"))
HASHES = {"I": integer_hash, "S": java_string_hash, "T": task_id_hash}


def replay(case: dict) -> list[list[str]]:
    """The emulation's checkpoints for one vector: the same operations on a :class:`JavaHashSet`."""
    kt, cap = case["key_type"], case["initial_capacity"]
    s = JavaHashSet(HASHES[kt], initial_capacity=16 if cap < 0 else cap)
    out = []
    ops = case["ops"]
    for i, (op, k) in enumerate(ops):
        key = int(k) if kt == "I" else k
        {"P": s.put, "C": s.compute_if_absent, "R": s.remove}[op](key)
        if (i + 1) % 16 == 0 or i == len(ops) - 1:
            out.append([str(x) for x in s])
    return out


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: f"{c['mode']}{c['key_type']}{c['initial_capacity']}")
def test_matches_openjdk17(case):
    assert replay(case) == case["java"]


def test_vectors_build_trees():
    """Every vector makes a tree bin (else it would not test this module)."""
    made = 0
    original = TreeBin.__init__

    def counting(self, *a):
        nonlocal made
        made += 1
        original(self, *a)

    TreeBin.__init__ = counting
    try:
        for case in VECTORS["cases"]:
            before = made
            replay(case)
            assert made > before
    finally:
        TreeBin.__init__ = original


# ---------------------------------------------------------------------------- the old plain-bin model, as reference


class PlainBins:
    """The plain-bin model java_util had before tree bins: it raises where the JDK would make a tree."""

    def __init__(self, hash_fn, cap=16):
        self.hash_fn, self.initial, self.table, self.size, self.threshold = hash_fn, table_size_for(cap), None, 0, 0

    def _resize(self):
        cap = self.initial if self.table is None else 2 * len(self.table)
        new = [[] for _ in range(cap)]
        for chain in self.table or []:
            for h, k in chain:
                new[h & (cap - 1)].append((h, k))
        self.table, self.threshold = new, int(cap * 0.75)

    def _treeify(self):
        if len(self.table) < 64:
            self._resize()
        else:
            raise NotImplementedError

    def put(self, key, head=False):
        if self.table is None or (head and self.size > self.threshold):
            self._resize()
        if key in self.keys():
            return
        h = spread_hash(self.hash_fn(key))
        chain = self.table[h & (len(self.table) - 1)]
        chain.insert(0, (h, key)) if head else chain.append((h, key))
        if len(chain) - 1 >= (7 if head else 8):
            self._treeify()
        self.size += 1
        if not head and self.size > self.threshold:
            self._resize()

    def remove(self, key):
        for chain in self.table or []:
            for i, (_, k) in enumerate(chain):
                if k == key:
                    del chain[i]
                    self.size -= 1
                    return

    def keys(self):
        return [k for chain in self.table or [] for _, k in chain]


OPS = st.lists(st.tuples(st.sampled_from("PCR"), st.integers(0, 40)), max_size=150)


def _check_tree(b: TreeBin) -> None:
    """Red-black and search-tree invariants, and the list holding exactly the tree's nodes, root first."""
    assert b.first is b.root and b.root.parent is None and not b.root.red

    def walk(n, lo, hi):
        if n is None:
            return 1, []
        assert (lo is None or (lo.sh, lo.ck) < (n.sh, n.ck)) and (hi is None or (n.sh, n.ck) < (hi.sh, hi.ck))
        for c in (n.left, n.right):
            assert c is None or c.parent is n
            assert not (n.red and c is not None and c.red)
        bl, left = walk(n.left, lo, n)
        br, right = walk(n.right, n, hi)
        assert bl == br
        return bl + (not n.red), left + [n.key] + right

    _, in_order = walk(b.root, None, None)
    assert sorted(k for _, k in b) == sorted(in_order) and len(in_order) == len(b)


@settings(max_examples=300, deadline=None)
@given(OPS, st.sampled_from([1, 16, 64, 256]), st.sampled_from([64, 128, 1024, 1 << 16]))
def test_key_set_and_tree_invariants(ops, cap, stride):
    """Colliding Integer keys (sharing their low bits): the keys are a Python set's, grouped by bucket, and every
    tree bin is a valid red-black tree whose list holds its nodes."""
    s, ref = JavaHashSet(integer_hash, initial_capacity=cap), set()
    for op, j in ops:
        k = 5 + stride * j
        if op == "R":
            s.remove(k)
            ref.discard(k)
        else:
            (s.put if op == "P" else s.compute_if_absent)(k)
            ref.add(k)
        order = list(s)
        assert len(order) == len(s) == len(ref) and set(order) == ref
        buckets = [spread_hash(k) & (s.capacity - 1) for k in order]
        assert buckets == sorted(buckets)
        for chain in s._table or []:
            if isinstance(chain, TreeBin):
                _check_tree(chain)


@settings(max_examples=300, deadline=None)
@given(OPS, st.sampled_from([1, 16, 64]), st.sampled_from([16, 32, 64, 128]))
def test_same_as_plain_bins_while_no_tree(ops, cap, stride):
    """Wherever the old plain-bin model answered (no bin would become a tree), the order is the same."""
    s, ref = JavaHashSet(integer_hash, initial_capacity=cap), PlainBins(integer_hash, cap)
    for op, j in ops:
        k = 3 + stride * j
        try:
            if op == "R":
                ref.remove(k)
            else:
                ref.put(k, head=op == "C")
        except NotImplementedError:
            return
        if op == "R":
            s.remove(k)
        else:
            (s.put if op == "P" else s.compute_if_absent)(k)
        assert list(s) == ref.keys()


def test_tie_without_natural_order_raises():
    """Equal hashes of keys that are not Comparable: Java orders them by identity hash, so we refuse."""
    m = JavaHashMapOrder(lambda k: 7)
    with pytest.raises(TreeTieError, match="identityHashCode"):
        for k in range(100):
            m.put(("tp", k))
    assert isinstance(TreeTieError(), NotImplementedError)  # callers that catch NotImplementedError still do


def test_equal_task_hashes_are_ordered_by_task_id():
    """Nine tasks of one hash ((s, p), (s+1, p-31), ...) in a ``new HashMap<>(64)``: a tree ordered by TaskId.
    Expected orders printed by OpenJDK 17 (with put, the 4th task becomes the root and moves to the front)."""
    tasks = [f"{s}_{300 - 31 * s}" for s in range(9)]
    assert len({task_id_hash(t) for t in tasks}) == 1
    m = JavaHashMapOrder(task_id_hash, 64)
    for t in tasks:
        m.put(t)
    assert m.keys() == ["3_207", "0_300", "1_269", "2_238", "4_176", "5_145", "6_114", "7_83", "8_52"]
    s = JavaHashSet(task_id_hash, initial_capacity=64)
    for t in tasks:
        s.compute_if_absent(t)  # head insertion; the 8th makes the tree, the 9th goes into it
    s.remove("3_207")
    s.remove("0_300")
    assert list(s) == ["4_176", "7_83", "8_52", "6_114", "5_145", "2_238", "1_269"]
