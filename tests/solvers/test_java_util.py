"""java.util behaviours, checked against values printed by OpenJDK 17 (the literals below).

The reference values were produced once by a throwaway Java program
(``new Random(seed).nextInt(bound)``, ``Collections.shuffle``, ``HashMap``
key iteration after ``put`` / ``computeIfAbsent`` / ``new HashMap<>(m)``);
they are data here, not re-derived by the code under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kipopt.solvers.java_util import (JavaHashMapOrder, JavaRandom, collections_shuffle, copy_capacity,
                                      hashmap_order, java_string_hash, to_int32)

# new Random(123456789L).nextInt(BOUNDS[i % 13]) for i in 0..199 (OpenJDK 17); the first 65 values.
BOUNDS = [1, 2, 3, 5, 7, 10, 16, 17, 100, 1000, 1 << 30, (1 << 30) + 1, 2147483647]
JAVA_NEXT_INTS = [
    0, 1, 2, 4, 4, 4, 14, 11, 97, 887, 385991720, 1052992961, 1020854664,
    0, 0, 0, 0, 3, 0, 10, 1, 86, 538, 438660377, 411528961, 2035485625,
    0, 1, 0, 3, 0, 3, 9, 15, 61, 964, 941941463, 264261274, 1100610280,
    0, 1, 1, 1, 3, 4, 11, 5, 5, 488, 602027489, 67259218, 657246405,
    0, 0, 1, 3, 4, 3, 11, 14, 5, 733, 952280550, 939190858, 1039036029,
]

# (mode, keys inserted in order, Java's keySet() order); p = put, c = computeIfAbsent, y = new HashMap<>(put map)
JAVA_HASHMAP_ORDERS = [
    ("c", ['x', 'z_z_', 'b09z', 'R', 'zczy9', '1zy', '1', 'y-c9ab', 'Rax90', '-1R', 'a-zxc9', '1R', 'zcaR'],
     ['1zy', '1R', 'Rax90', '1', 'zcaR', 'R', 'b09z', 'z_z_', 'zczy9', 'x', 'a-zxc9', 'y-c9ab', '-1R']),
    ("y", ['b__0', 'xzRR', 'z0x', '-_', '1_R', 'c_y', 'zyz100', 'aRc1R0', 'caz', 'zR', 'Rxx', 'c_x1', 'c', 'yR1a1'],
     ['b__0', 'z0x', 'c', '1_R', 'zyz100', 'yR1a1', 'aRc1R0', '-_', 'Rxx', 'zR', 'xzRR', 'c_x1', 'c_y', 'caz']),
    ("p", ['1x', 'aca0Rb', '_R_1-_', '9y', 'x'], ['9y', '1x', 'aca0Rb', 'x', '_R_1-_']),
    ("c", ['_bx1b1', '_1ayx', 'ycb', '9_-9-a', 'zR0cx9', 'b-y', '_y-', 'b0_y_9', '9az', '91-cc0', 'azby-', 'x_x', 'ya',
           'c_'],
     ['zR0cx9', 'ya', 'b0_y_9', 'b-y', 'x_x', 'azby-', '9az', '_y-', '9_-9-a', '_bx1b1', '91-cc0', 'ycb', 'c_', '_1ayx']),
    ("y", ['11y', 'yzR1zz', 'b', '9y', 'Rx99', '0_1', '-111', '1yax-', '9xc', '9zb-c', 'x9a', 'bxRb91'],
     ['9y', 'Rx99', 'x9a', 'b', '0_1', 'bxRb91', '1yax-', '9xc', '9zb-c', '-111', 'yzR1zz', '11y']),
    ("c", ['_1-', 'x-119', 'xRz0R1', 'a-0', 'zxzz', 'b', 'z9', '0cy', '_0', '0_za9x', '-1', '-b9cc0'],
     ['_0', 'b', '-1', 'x-119', 'a-0', '-b9cc0', '0cy', 'zxzz', '0_za9x', '_1-', 'xRz0R1', 'z9']),
    ("p", ['x', '9Rc1-', 'x1091-', '_0c', '_xa', 'xa-z', 'R', '0', '-__Rc', '9xczb', 'Rz0', 'a9yyR', '_'],
     ['xa-z', 'a9yyR', '_xa', 'Rz0', '9Rc1-', 'x1091-', '0', 'R', '_0c', '9xczb', 'x', '-__Rc', '_']),
    ("y", ['bxab1b', '9zc9', 'ayR', 'cbax', 'c_y', '9', 'zc_yyb', 'cb', 'x', '90bcxx', 'y0R', 'Ryz', 'a-yb'],
     ['zc_yyb', 'bxab1b', '9zc9', '90bcxx', 'Ryz', 'cbax', 'x', '9', 'a-yb', 'y0R', 'ayR', 'c_y', 'cb']),
    ("p", ['_1xzzc', '1y-', 'y_x-', '-R', '1'], ['1', 'y_x-', '1y-', '-R', '_1xzzc']),
]


def test_random_next_int_matches_java():
    """Bounded draws cover the power-of-two path, small bounds and the rejection loop near 2^31."""
    r = JavaRandom(123456789)
    got = [r.next_int(BOUNDS[i % len(BOUNDS)]) for i in range(len(JAVA_NEXT_INTS))]
    assert got == JAVA_NEXT_INTS


def test_random_other_draws_match_java():
    """new Random(42).nextInt(10) x5, new Random(0).nextInt(), and Random(7) long/double/boolean."""
    r = JavaRandom(42)
    assert [r.next_int(10) for _ in range(5)] == [0, 3, 8, 4, 0]
    assert JavaRandom(0).next_int() == -1155484576
    r = JavaRandom(7)
    assert r.next_long() == -4967725919621401576
    assert r.next_double() == 0.7491696031336331
    assert r.next_boolean() is False


def test_lcg_by_hand():
    """The first raw step of Random(0), computed from the definition: scramble, multiply, add, take bits."""
    seed = (0 ^ 0x5DEECE66D) & ((1 << 48) - 1)
    seed = (seed * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
    assert JavaRandom(0).next_bits(32) == to_int32(seed >> 16)


def test_next_int_rejects_non_positive_bound():
    with pytest.raises(ValueError):
        JavaRandom(1).next_int(0)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.integers(min_value=1, max_value=2**31 - 1))
def test_next_int_in_range(seed, bound):
    """Whatever the seed and bound, draws lie in [0, bound)."""
    r = JavaRandom(seed)
    assert all(0 <= r.next_int(bound) < bound for _ in range(5))


def test_shuffle_matches_java():
    xs = list(range(6))
    collections_shuffle(xs, JavaRandom(42))
    assert xs == [1, 0, 4, 5, 3, 2]


@given(st.lists(st.integers(), max_size=30), st.integers(0, 1000))
def test_shuffle_is_a_permutation(xs, seed):
    ys = list(xs)
    collections_shuffle(ys, JavaRandom(seed))
    assert sorted(ys) == sorted(xs)


def test_string_hash():
    """31-polynomial over UTF-16 code units, wrapping to int32 (Java values)."""
    assert java_string_hash("rack1") == 108269626
    assert java_string_hash("\U0001F600") == 1772899  # a surrogate pair, two code units
    assert java_string_hash("a" * 20) == to_int32(sum(97 * 31 ** i for i in range(20)))


@pytest.mark.parametrize("mode,keys,expected", JAVA_HASHMAP_ORDERS)
def test_hashmap_order_matches_java(mode, keys, expected):
    if mode == "p":
        got = hashmap_order(keys)
    elif mode == "c":
        m = JavaHashMapOrder(java_string_hash)
        for k in keys:
            m.compute_if_absent(k)
        got = m.keys()
    else:
        got = hashmap_order(hashmap_order(keys), initial_capacity=copy_capacity(len(keys)))
    assert got == expected


def test_put_resizes_at_13_but_compute_if_absent_waits():
    """13 keys: put resizes to 32 on the 13th insert; computeIfAbsent only before the 14th call."""
    keys = [f"k{i}" for i in range(13)]
    p = JavaHashMapOrder(java_string_hash)
    c = JavaHashMapOrder(java_string_hash)
    for k in keys:
        p.put(k)
        c.compute_if_absent(k)
    assert (p.capacity, c.capacity) == (32, 16)
    c.compute_if_absent("k0")  # an existing key still triggers the pending resize
    assert c.capacity == 32


def test_put_of_existing_key_keeps_position():
    assert hashmap_order(["a", "b", "a"]) == hashmap_order(["a", "b"])


@given(st.lists(st.text(min_size=0, max_size=4), max_size=40, unique=True))
def test_order_is_a_permutation_grouped_by_bucket(keys):
    """Iteration visits every key once, in non-decreasing bucket index."""
    m = JavaHashMapOrder(java_string_hash)
    for k in keys:
        m.put(k)
    order = m.keys()
    assert sorted(order) == sorted(keys)
    cap = m.capacity
    buckets = [((java_string_hash(k) & 0xFFFFFFFF) ^ ((java_string_hash(k) & 0xFFFFFFFF) >> 16)) & (cap - 1)
               for k in order]
    assert buckets == sorted(buckets)
