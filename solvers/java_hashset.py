"""``java.util.HashSet`` with removal (:class:`JavaHashSet`, for ``AbstractStickyAssignor.PartitionMovements``)
and the order of a ``HashSet`` copied from a collection (for the KIP-924 ``StickyTaskAssignor`` port)."""

from __future__ import annotations

from typing import Callable, Hashable, Iterable

from kipopt.solvers.java_hashmap import JavaHashMapOrder, hashmap_order, spread_hash, table_size_for
from kipopt.solvers.java_tree_bin import KeyOrder


class JavaHashSet(JavaHashMapOrder):
    """A ``java.util.HashSet`` (``new HashSet<>(initialCapacity)``, 16 by default): a :class:`JavaHashMapOrder`
    with ``add``, ``remove`` and iteration (``remove`` is ``HashMap.remove`` as well).

    Removal unlinks a key from its bin (a tree bin may turn back into a list)
    and never shrinks the table, as in the JDK.

    >>> s = JavaHashSet(lambda k: k)
    >>> for k in (17, 1, 33): s.add(k)
    >>> s.remove(1); list(s), s.first()
    ([17, 33], 17)
    """

    def __init__(self, hash_fn: Callable[[Hashable], int], key_order: KeyOrder | None = None,
                 initial_capacity: int = 16):
        super().__init__(hash_fn, initial_capacity, key_order)

    def __iter__(self):
        return (k for chain in (self._table or []) for _, k in chain)

    def add(self, key: Hashable) -> None:
        self.put(key)

    def remove(self, key: Hashable) -> None:
        if key not in self._keys:
            return
        self._keys.discard(key)
        self._size -= 1
        h = spread_hash(self._hash_fn(key))
        i = h & (len(self._table) - 1)
        chain = self._table[i]
        if chain.__class__ is not list:
            self._table[i] = chain.remove(key)
            return
        for j, (_, k) in enumerate(chain):
            if k == key:
                del chain[j]
                return

    def first(self) -> Hashable:
        """``set.iterator().next()``."""
        return next(iter(self))


def hashset_copy_capacity(size: int) -> int:
    """The table size of ``new HashSet<>(collection)``: ``tableSizeFor(max((int) (size / .75f) + 1, 16))``.

    Unlike :func:`copy_capacity` (``new HashMap<>(map)``) it never goes below 16:

    >>> hashset_copy_capacity(3), hashset_copy_capacity(12), hashset_copy_capacity(13)
    (16, 32, 32)
    """
    import numpy as np
    return table_size_for(max(int(np.float32(size) / np.float32(0.75)) + 1, 16))


def hashset_copy_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int]) -> list:
    """Iteration order of ``new HashSet<>(c)`` where ``c`` iterates ``keys`` in the given order.

    >>> hashset_copy_order([17, 1, 2], lambda k: k)  # table of 16: buckets 1, 1, 2
    [17, 1, 2]
    """
    keys = list(keys)
    return hashmap_order(keys, hash_fn, hashset_copy_capacity(len(keys)))
