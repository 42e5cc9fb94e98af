"""libstdc++'s ``std::unordered_set<int>`` iteration order and ``std::sort``, re-stated.

LiteRT's ``ArenaPlanner`` lists the tensors queued at each node from a ``std::unordered_set``
and sorts them with ``std::sort`` (introsort, not stable); where sizes tie, the order it places
them in is the one these leave. Sources: libstdc++ ``hashtable_policy.h`` / ``hashtable-aux.cc``
(``_Prime_rehash_policy``, ``__prime_list``) and ``bits/stl_algo.h`` (``__introsort_loop``,
``__unguarded_partition_pivot``, ``__insertion_sort``, ``__heap_select``). Used by
:mod:`viewer.planning.litert`.
"""

from __future__ import annotations

import bisect
import math


# libstdc++ hashtable-aux.cc ``__prime_list`` (the part a per-node set can reach).
_PRIMES = (
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89,
    97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293,
    313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031,
    1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209,
    3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273,
    11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267,
)
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


class UnorderedIntSet:
    """Iteration order of a libstdc++ ``std::unordered_set<int32_t>`` (identity hash).

    Only what ``ArenaPlanner`` does with ``nodes_to_tensors_`` is modelled: default
    construction, ``insert`` and iteration. libstdc++ keeps the elements in one singly linked
    list, each bucket a contiguous run of it: a key whose bucket is empty goes to the front of
    the list, any other key to the front of its bucket's run, and a rehash re-inserts the list
    in order. So the list is the buckets, newest non-empty bucket first, each bucket's keys
    newest first; that is what is stored (per bucket, keys in insertion order), which makes an
    insert O(1) and a rehash O(n).
    """

    __slots__ = ("_buckets", "_bucket_order", "_keys", "_n_bkt", "_next_resize")

    def __init__(self) -> None:
        self._buckets: dict[int, list[int]] = {}
        self._bucket_order: list[int] = []
        self._keys: set[int] = set()
        self._n_bkt = 1
        self._next_resize = 0

    def _next_bkt(self, n: int) -> int:
        if n < len(_FAST_BKT):
            if n == 0:
                return 1
            self._next_resize = _FAST_BKT[n]
            return _FAST_BKT[n]
        i = bisect.bisect_left(_PRIMES, n, lo=6)
        if i < len(_PRIMES):
            self._next_resize = _PRIMES[i]
            return _PRIMES[i]
        # Past this table a node would queue > 26k tensors; use the next prime (approximation).
        p = n
        while any(p % d == 0 for d in range(2, int(math.isqrt(p)) + 1)):
            p += 1
        self._next_resize = p
        return p

    def _need_rehash(self, n_elt: int, n_ins: int) -> int:
        if n_elt + n_ins > self._next_resize:
            min_bkts = float(max(n_elt + n_ins, 0 if self._next_resize else 11))
            if min_bkts >= self._n_bkt:
                return self._next_bkt(max(math.floor(min_bkts) + 1, self._n_bkt * 2))
            self._next_resize = self._n_bkt
        return 0

    def _place(self, key: int) -> None:
        b = key % self._n_bkt
        run = self._buckets.get(b)
        if run is None:
            self._buckets[b] = [key]  # new bucket: front of the list
            self._bucket_order.append(b)
        else:
            run.append(key)  # front of its bucket's run

    def insert(self, key: int) -> None:
        if key in self._keys:
            return
        new_n = self._need_rehash(len(self._keys), 1)
        if new_n:
            old = list(self)
            self._buckets, self._bucket_order, self._n_bkt = {}, [], new_n
            for k in old:
                self._place(k)
        self._place(key)
        self._keys.add(key)

    def __iter__(self):
        for b in reversed(self._bucket_order):
            yield from reversed(self._buckets[b])

    def __len__(self) -> int:
        return len(self._keys)


def std_sort(a: list, less) -> None:
    """Sort ``a`` in place exactly as libstdc++'s ``std::sort`` does (introsort, unstable).

    ``less(x, y)`` is the strict weak ordering. Equal elements end up in the order libstdc++
    leaves them: median-of-three pivot, unguarded partition, ranges of <= 16 left to a final
    insertion sort, heapsort below depth ``2 * floor(log2(n))``.
    """
    n = len(a)
    if n < 2:
        return
    _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), less)
    if n > 16:
        _insertion_sort(a, 0, 16, less)
        for i in range(16, n):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, 0, n, less)


def std_sort_ranked(a: list[int], shift: int) -> None:
    """:func:`std_sort` of ints compared by ``v >> shift`` (the rank), with inline comparisons.

    The same element moves as ``std_sort(a, lambda x, y: x >> shift < y >> shift)`` makes,
    without a Python call per comparison: about 5x faster, for lists of 10^5 elements.
    The low ``shift`` bits carry a payload (e.g. the element's position) that never decides.
    """
    n = len(a)
    if n < 2:
        return
    s = shift
    # Introsort loop, iterative on the left part exactly as libstdc++ recurses on the right.
    stack = [(0, n, 2 * (n.bit_length() - 1))]
    while stack:
        first, last, depth = stack.pop()
        while last - first > 16:
            if depth == 0:
                _heap_sort(a, first, last, lambda x, y: x >> s < y >> s)
                break
            depth -= 1
            mid = first + (last - first) // 2
            x, y, z = a[first + 1] >> s, a[mid] >> s, a[last - 1] >> s
            if x < y:
                k = mid if y < z else (last - 1 if x < z else first + 1)
            elif x < z:
                k = first + 1
            elif y < z:
                k = last - 1
            else:
                k = mid
            a[first], a[k] = a[k], a[first]
            pk = a[first] >> s
            lo, hi = first + 1, last
            while True:
                while a[lo] >> s < pk:
                    lo += 1
                hi -= 1
                while pk < a[hi] >> s:
                    hi -= 1
                if not lo < hi:
                    break
                a[lo], a[hi] = a[hi], a[lo]
                lo += 1
            # libstdc++ recurses on [cut, last) first, then loops on [first, cut): the
            # recursion finishes before the loop goes on, so push the loop's part below it.
            stack.append((first, lo, depth))
            stack.append((lo, last, depth))
            break
    # Final insertion sort: guarded over the first 16, unguarded after.
    lim = min(n, 16)
    for i in range(1, lim):
        v = a[i]
        kv = v >> s
        if kv < a[0] >> s:
            a[1:i + 1] = a[0:i]
            a[0] = v
        else:
            j = i - 1
            while kv < a[j] >> s:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = v
    for i in range(16, n):
        v = a[i]
        kv = v >> s
        j = i - 1
        while kv < a[j] >> s:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


def _introsort_loop(a: list, first: int, last: int, depth: int, less) -> None:
    while last - first > 16:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(a, first, first + 1, mid, last - 1, less)
        cut = _unguarded_partition(a, first + 1, last, first, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _move_median_to_first(a, result, x, y, z, less) -> None:
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            k = y
        elif less(a[x], a[z]):
            k = z
        else:
            k = x
    elif less(a[x], a[z]):
        k = x
    elif less(a[y], a[z]):
        k = z
    else:
        k = y
    a[result], a[k] = a[k], a[result]


def _unguarded_partition(a, first, last, pivot, less) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _insertion_sort(a, first, last, less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            v = a[i]
            a[first + 1 : i + 1] = a[first:i]
            a[first] = v
        else:
            _unguarded_linear_insert(a, i, less)


def _unguarded_linear_insert(a, last, less) -> None:
    v = a[last]
    nxt = last - 1
    while less(v, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = v


def _adjust_heap(a, first, hole, length, value, less) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _heap_sort(a, first, last, less) -> None:
    length = last - first
    if length >= 2:  # make_heap
        parent = (length - 2) // 2
        while True:
            _adjust_heap(a, first, parent, length, a[first + parent], less)
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:  # sort_heap
        last -= 1
        v = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, v, less)
