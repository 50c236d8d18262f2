"""The iteration order of ``java.util.HashMap`` (and so ``HashSet``): :class:`JavaHashMapOrder` and the order
helpers built on it, ``Integer`` keys, and the natural orders its tree bins break ties with."""

from __future__ import annotations

from typing import Callable, Hashable, Iterable

from kipopt.solvers.java_keys import java_string_hash, string_order, task_id_hash, task_id_order, uuid_hash, uuid_order
from kipopt.solvers.java_numbers import to_int32
from kipopt.solvers.java_tree_bin import KeyOrder, TreeBin

_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64
_MAXIMUM_CAPACITY = 1 << 30


def spread_hash(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the key's ``hashCode``.

    >>> spread_hash(java_string_hash("rack1")) & 15
    14
    """
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``cap`` (at least 1).

    >>> table_size_for(0), table_size_for(13), table_size_for(16)
    (1, 16, 16)
    """
    n = 1
    while n < cap:
        n <<= 1
    return min(n, _MAXIMUM_CAPACITY)


def copy_capacity(size: int) -> int:
    """The initial capacity ``new HashMap<>(m)`` (JDK 17 ``putMapEntries``) uses for a map of ``size``.

    ``ft = size / 0.75f + 1.0f`` in float arithmetic, then ``tableSizeFor``.

    >>> copy_capacity(12), copy_capacity(13)
    (32, 32)
    """
    import numpy as np
    ft = np.float32(size) / np.float32(0.75) + np.float32(1.0)
    return table_size_for(int(ft)) if size > 0 else 16


class JavaHashMapOrder:
    """Tracks only the keys of a ``java.util.HashMap`` and reports its iteration order.

    ``initial_capacity`` plays the role of ``new HashMap<>(initialCapacity)``
    (the table is allocated at ``tableSizeFor`` of it on first insertion).
    A bin that the JDK turns into a red-black tree (``java.util.HashMap.TreeNode``:
    9 colliding keys after ``put``, 8 after ``computeIfAbsent``, in a table of 64
    or more) becomes a :class:`~kipopt.solvers.java_tree_bin.TreeBin`, whose
    iteration order follows the JDK's exactly. Its tree orders keys of equal
    hash by ``key_order`` (a comparison key mirroring ``compareTo``; by default
    the natural order that goes with ``hash_fn``: see :func:`natural_order`);
    where Java would fall back to identity hashes it raises
    :class:`~kipopt.solvers.java_tree_bin.TreeTieError`.

    >>> m = JavaHashMapOrder(java_string_hash)
    >>> for k in ["c1", "c2", "b", "a"]: m.put(k)
    >>> m.keys()
    ['a', 'b', 'c1', 'c2']
    """

    def __init__(self, hash_fn: Callable[[Hashable], int], initial_capacity: int = 16,
                 key_order: KeyOrder | None = None):
        self._hash_fn = hash_fn
        self._key_order = key_order if key_order is not None else natural_order(hash_fn)
        self._initial = table_size_for(initial_capacity)
        self._table: list[list[tuple[int, Hashable]] | TreeBin] | None = None  # plain bins are lists
        self._threshold = 0
        self._size = 0
        self._keys: set = set()

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: Hashable) -> bool:
        return key in self._keys

    @property
    def capacity(self) -> int:
        return len(self._table) if self._table is not None else 0

    def put(self, key: Hashable) -> None:
        """``map.put(key, v)``: a new key goes to the tail of its bin; then resize past the threshold."""
        if self._table is None:
            self._resize()
        if key in self._keys:
            return
        h = spread_hash(self._hash_fn(key))
        i = h & (len(self._table) - 1)
        chain = self._table[i]
        self._keys.add(key)
        if chain.__class__ is list:
            chain.append((h, key))
            if len(chain) - 1 >= _TREEIFY_THRESHOLD:
                self._treeify_bin(i)
        else:
            chain.put(h, key)
        self._size += 1
        if self._size > self._threshold:
            self._resize()

    def compute_if_absent(self, key: Hashable) -> None:
        """``map.computeIfAbsent(key, f)`` with ``f`` non-null: resize first if over threshold, insert at the head."""
        if self._table is None or self._size > self._threshold:
            self._resize()
        if key in self._keys:
            return
        h = spread_hash(self._hash_fn(key))
        i = h & (len(self._table) - 1)
        chain = self._table[i]
        self._keys.add(key)
        if chain.__class__ is list:
            chain.insert(0, (h, key))
            if len(chain) - 1 >= _TREEIFY_THRESHOLD - 1:  # the JDK counts differently here than in put
                self._treeify_bin(i)
        else:
            chain.put(h, key)
        self._size += 1

    def keys(self) -> list:
        """Iteration order of ``keySet()`` / ``values()`` / ``entrySet()``."""
        return [k for chain in (self._table or []) for _, k in chain]

    def _treeify_bin(self, i: int) -> None:
        """``treeifyBin``: a small table grows instead; else bin ``i`` becomes a :class:`TreeBin`."""
        if len(self._table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
        else:
            self._table[i] = TreeBin(self._table[i], self._key_order)

    def _resize(self) -> None:
        if self._table is None:
            cap = self._initial
        else:
            cap = len(self._table) * 2
        new: list = [[] for _ in range(cap)]
        old = len(self._table) if self._table is not None else 0
        for j, chain in enumerate(self._table or []):
            if chain.__class__ is list:
                for h, k in chain:  # relative order within each split half is kept
                    new[h & (cap - 1)].append((h, k))
            else:
                new[j], new[j + old] = chain.split(old)
        self._table = new
        self._threshold = int(cap * 0.75)


def hashmap_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int] = java_string_hash,
                  initial_capacity: int = 16, key_order: KeyOrder | None = None) -> list:
    """Iteration order of a ``HashMap`` (or ``HashSet``) filled by ``put`` with ``keys`` in order (``key_order``
    as in :class:`JavaHashMapOrder`).

    >>> hashmap_order(["rack3", "rack1", "rack2"])
    ['rack3', 'rack1', 'rack2']
    >>> hashmap_order(["b", "a", "q"])
    ['a', 'q', 'b']
    """
    m = JavaHashMapOrder(hash_fn, initial_capacity, key_order)
    for k in keys:
        m.put(k)
    return m.keys()


def integer_hash(value: int) -> int:
    """``Integer.hashCode()``: the value itself (what a ``HashSet<Integer>`` buckets by).

    >>> hashmap_order([17, 1, 16, 0], integer_hash)
    [16, 0, 17, 1]
    """
    return to_int32(value)


def small_hashmap_order(keys: Iterable[Hashable], hash_fn: Callable[[Hashable], int] = java_string_hash,
                        head_insertion: bool = False) -> list:
    """Like :func:`hashmap_order` (``put``) or, with ``head_insertion``, a map filled by ``computeIfAbsent``,
    for a default-capacity map; fast for up to 7 keys (one 16-slot table, no resize, no tree bin),
    where the order is the keys stably sorted by bucket, each bucket's chain reversed under head insertion.

    With ``head_insertion`` ``keys`` is the sequence of calls, a key once per call: ``computeIfAbsent``
    resizes at the start of any call that finds the map past its threshold, one for a key already present
    included (``groupPartitionsByTopic`` calls it once per partition), where ``put`` of a present key
    changes nothing.

    >>> small_hashmap_order(["b", "a", "q"])
    ['a', 'q', 'b']
    >>> small_hashmap_order([1, 17], integer_hash), small_hashmap_order([1, 17], integer_hash, head_insertion=True)
    ([1, 17], [17, 1])
    >>> topics = [f"topic-{c}" for c in "abcdehijlmnos"]
    >>> small_hashmap_order(topics, head_insertion=True)[:3], small_hashmap_order(topics + ["topic-a"], head_insertion=True)[:3]
    (['topic-h', 'topic-i', 'topic-j'], ['topic-n', 'topic-o', 'topic-s'])
    """
    calls = list(keys)
    unique = list(dict.fromkeys(calls))
    if len(unique) > 7:
        m = JavaHashMapOrder(hash_fn)
        for k in (calls if head_insertion else unique):
            m.compute_if_absent(k) if head_insertion else m.put(k)
        return m.keys()
    if head_insertion:
        unique.reverse()
    return sorted(unique, key=lambda k: spread_hash(hash_fn(k)) & 15)


def task_hashmap_order(tasks: Iterable[str]) -> list[str]:
    """Iteration order of a ``HashMap<TaskId, ?>`` filled in ``tasks`` order (as ``Collectors.toMap`` does).

    >>> task_hashmap_order(["0_0", "0_1", "1_0"])  # buckets 15, 14 and 0 of 16
    ['1_0', '0_1', '0_0']
    """
    return hashmap_order(tasks, task_id_hash)


_NATURAL_ORDERS: dict = {java_string_hash: string_order, integer_hash: int, task_id_hash: task_id_order,
                         uuid_hash: uuid_order}


def natural_order(hash_fn: Callable[[Hashable], int]) -> KeyOrder | None:
    """The natural order (``compareTo``) of the key type that ``hash_fn`` hashes, as a sort key:
    ``String`` for :func:`java_string_hash`, ``Integer`` for :func:`integer_hash`, ``TaskId`` for
    :func:`task_id_hash`, ``Uuid`` for :func:`uuid_hash`; ``None`` otherwise (keys of equal hash then raise in a tree bin: e.g.
    ``TopicPartition`` and ``Optional`` are not ``Comparable``, so Java itself orders them by identity hash).

    >>> natural_order(integer_hash) is int, natural_order(lambda k: 0)
    (True, None)
    """
    return _NATURAL_ORDERS.get(hash_fn)
