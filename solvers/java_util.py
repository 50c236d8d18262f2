"""Bit-exact Python versions of the few JDK behaviours Kafka's assignors depend on.

* :class:`JavaRandom` is ``java.util.Random`` (JDK 17): a 48-bit linear
  congruential generator with multiplier ``0x5DEECE66D``, seed scrambling, and
  ``nextInt(bound)`` with its power-of-two path and its rejection loop.
* :func:`collections_shuffle` is ``Collections.shuffle(list, rnd)``.
* :func:`java_string_hash` is ``String.hashCode`` over UTF-16 code units.
* :class:`JavaHashMapOrder` / :func:`hashmap_order` reproduce the iteration
  order of ``java.util.HashMap`` (and so ``HashSet``): buckets by the spread
  hash, chains in insertion order for ``put``, at the head for
  ``computeIfAbsent``, resizing (and bucket splitting) exactly when the JDK does,
  and tree bins (:mod:`kipopt.solvers.java_tree_bin`) where the JDK makes them.

They live in modules beside this one, and other code imports them all from here:
:mod:`kipopt.solvers.java_numbers` (``int``/``long`` arithmetic, ``Random``, ``Collections.shuffle``),
:mod:`kipopt.solvers.java_keys` (the key types' ``hashCode`` and ``compareTo``),
:mod:`kipopt.solvers.java_hashmap` (``HashMap`` order, ``Integer`` keys, the tree bins' natural orders),
:mod:`kipopt.solvers.java_hashset` (``HashSet`` with removal, ``HashSet`` copies) and
:mod:`kipopt.solvers.java_priority_queue` (``PriorityQueue``).

Reference values in the examples below were produced by OpenJDK 17.

>>> r = JavaRandom(42)
>>> [r.next_int(10) for _ in range(5)]
[0, 3, 8, 4, 0]
>>> java_string_hash("rack1")
108269626
"""

from __future__ import annotations

from kipopt.solvers.java_hashmap import (JavaHashMapOrder, copy_capacity, hashmap_order,  # noqa: F401 (re-exported)
                                         integer_hash, natural_order, small_hashmap_order, spread_hash,
                                         table_size_for, task_hashmap_order)
from kipopt.solvers.java_hashset import (JavaHashSet, hashset_copy_capacity,  # noqa: F401 (re-exported)
                                         hashset_copy_order)
from kipopt.solvers.java_keys import (java_string_hash, string_order, task_id_hash,  # noqa: F401 (re-exported)
                                      task_id_order, topic_partition_hash, topic_uuid, uuid_from_string, uuid_hash,
                                      uuid_order)
from kipopt.solvers.java_numbers import (JavaRandom, collections_shuffle, java_rem,  # noqa: F401 (re-exported)
                                         to_int16, to_int32, to_int64)
from kipopt.solvers.java_priority_queue import JavaPriorityQueue  # noqa: F401 (re-exported)
from kipopt.solvers.java_tree_bin import KeyOrder, TreeBin, TreeTieError  # noqa: F401 (re-exported)
