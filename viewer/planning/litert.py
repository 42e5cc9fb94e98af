"""``litert``: LiteRT's own arena planner, re-stated exactly.

Follows google-ai-edge/LiteRT ``tflite/arena_planner.cc`` (``ArenaPlanner::ExecuteAllocations``,
``CalculateAllocations``, ``CreateTensorAllocationVector``) and ``tflite/simple_memory_arena.cc``
(``SimpleMemoryArena::Allocate``, ``PurgeActiveAllocs``):

1. For each node range ``[first_node, last_node]`` that the runtime prepares in one go (one
   range covering every operator for a static graph), the tensors queued at those nodes
   (``nodes_to_tensors_``, a ``std::unordered_set`` per node) are listed node by node in the
   set's iteration order.
2. That list is sorted with ``std::sort`` (libstdc++ introsort, *not* stable): tensors that live
   through the whole inference (allocated at node 0, never deallocated) first, by index; then
   non-increasing size; ties by allocation node. Ties beyond that keep whatever order introsort
   leaves them in, which depends on the unordered_set's iteration order, so both are simulated
   (libstdc++'s ``_Hashtable`` with ``_Prime_rehash_policy`` and ``std::__introsort_loop``).
3. Each tensor in turn gets the best-fit gap among the already placed tensors whose usage
   interval intersects its own (``SimpleMemoryArena::Allocate``), offsets rounded up to the
   tensor alignment (64 bytes, ``kDefaultTensorAlignment``), or the aligned end of the last one.

The gap search keeps one quirk of the original on purpose: a gap is accepted when
``alloc.offset - aligned_offset < best_fit`` but ``best_fit`` is then set to the *unaligned*
``alloc.offset - current_offset``.
"""

from __future__ import annotations

import bisect
import math
from typing import Iterable, Sequence

import numpy as np

from viewer.errors import PlanCancelled, PlanningError
from viewer.planning._litert_arena import Arena, place_with_lists
from viewer.planning.greedy import _Poll
from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Buffer, Plan, PlanningProblem

#: LiteRT's ``kNodeNotAssigned`` (INT32_MAX): the dealloc node of a never-freed tensor.
NODE_NOT_ASSIGNED = 2**31 - 1

SOURCE = (
    "google-ai-edge/LiteRT tflite/arena_planner.cc (CalculateAllocations, "
    "CreateTensorAllocationVector) + tflite/simple_memory_arena.cc (Allocate)"
)

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


def _default_queue(problem: PlanningProblem) -> dict[int, list[Buffer]]:
    """``nodes_to_tensors_`` insertion order when the problem carries none (non-empty nodes).

    Node 0 queues the never-freed tensors that start there (graph inputs, variables), by id;
    every node then queues the other buffers that start there, by id.
    """
    n = max(problem.num_ops, 1)
    bufs = problem.buffers
    if not bufs:
        return {}
    ids, first, _, _ = problem.arrays()
    pinned = np.fromiter((b.pinned for b in bufs), dtype=bool, count=len(bufs))
    whole = (first == 0) & pinned
    w = np.flatnonzero(whole)
    w = w[np.argsort(ids[w], kind="stable")]
    rest = np.flatnonzero(~np.isin(ids, ids[w]))
    rest = rest[np.lexsort((ids[rest], first[rest]))]
    nodes = np.clip(first[rest], 0, n - 1)
    queue: dict[int, list[Buffer]] = {}
    if len(w):
        queue[0] = [bufs[i] for i in w.tolist()]
    cuts = (np.flatnonzero(np.diff(nodes)) + 1).tolist()
    flat = [bufs[i] for i in rest.tolist()]
    node_l = nodes.tolist()
    for lo, hi in zip([0, *cuts], [*cuts, len(flat)]):
        if hi > lo:
            q = queue.get(node_l[lo])
            if q is None:
                queue[node_l[lo]] = flat[lo:hi]
            else:
                q.extend(flat[lo:hi])
    return queue


def allocation_order(
    problem: PlanningProblem, first_node: int = 0, last_node: int | None = None
) -> list[Buffer]:
    """The order LiteRT computes offsets in for the tensors queued at ``first_node..last_node``.

    Parameters
    ----------
    problem : PlanningProblem
        Its ``alloc_queue`` (LiteRT's ``nodes_to_tensors_`` insertion order, every queued tensor
        including those outside this arena) is used when present.
    first_node, last_node : int
        Operator range, inclusive; ``last_node`` defaults to the last operator.

    Returns
    -------
    list of Buffer
        Every queued entry with ``size > 0`` (those are the ones ``CalculateAllocations`` sorts),
        in ``CreateTensorAllocationVector`` order. Entries not in ``problem.buffers`` (in-place
        aliases, persistent tensors) are included: they influence the unstable sort.
    """
    if problem.alloc_queue:
        queue = {k: q for k, q in enumerate(problem.alloc_queue) if q}  # copied on write
        n_nodes = len(problem.alloc_queue)
        # The buffers are the truth for what they hold (a what-if may have resized them after
        # the queue was made); a buffer the queue lacks is queued at its first operator.
        placed = {b.id: b for b in problem.buffers}
        queued: set[int] = set()
        for node, q in queue.items():
            for k, e in enumerate(q):
                queued.add(e.id)
                b = placed.get(e.id)
                if b is not None and (b.size, b.first, b.pinned or e.pinned) != (e.size, e.first, e.pinned):
                    if isinstance(q, tuple):
                        q = queue[node] = list(q)
                    q[k] = Buffer(e.id, b.first, b.last, b.size, b.pinned or e.pinned)
        for b in problem.buffers:
            if b.id not in queued:
                node = min(max(b.first, 0), n_nodes - 1)
                q = queue.get(node, [])
                if isinstance(q, tuple):
                    q = list(q)
                q.append(b)
                queue[node] = q
    else:
        queue = _default_queue(problem)
        n_nodes = max(problem.num_ops, 1)
    if last_node is None:
        last_node = n_nodes - 1
    entries: list[Buffer] = []
    for node in sorted(k for k in queue if first_node <= k <= last_node):
        q = queue[node]
        if len(q) == 1:
            entries.append(q[0])
            continue
        by_id: dict[int, Buffer] = {}
        s = UnorderedIntSet()
        for b in q:
            by_id.setdefault(b.id, b)
            s.insert(b.id)
        entries.extend(by_id[t] for t in s)
    entries = [b for b in entries if b.size > 0]
    return _sort_allocations(entries)


def _sort_allocations(entries: list[Buffer]) -> list[Buffer]:
    """``std::sort`` with ``CreateTensorAllocationVector``'s ``tensor_compare``.

    Tensors that live through the whole inference (allocated at node 0, never freed) first, by
    index; then non-increasing size; then allocation node. Each entry gets its rank under that
    order (equal ranks are the ties); with no ties every sort agrees and numpy's is used,
    otherwise :func:`std_sort_ranked` leaves the ties where libstdc++ does.
    """
    n = len(entries)
    if n < 2:
        return list(entries)
    flat = np.fromiter(
        (v for b in entries for v in (b.first == 0 and b.pinned, b.id, b.size, b.first)),
        dtype=np.int64, count=4 * n,
    ).reshape(n, 4)
    whole, ids, size, first = flat[:, 0].astype(bool), flat[:, 1], flat[:, 2], flat[:, 3]
    k1 = np.where(whole, 0, 1)
    k2 = np.where(whole, ids, -size)
    k3 = np.where(whole, 0, first)
    order = np.lexsort((k3, k2, k1))
    k1, k2, k3 = k1[order], k2[order], k3[order]
    new_rank = np.ones(n, dtype=bool)
    new_rank[1:] = (k1[1:] != k1[:-1]) | (k2[1:] != k2[:-1]) | (k3[1:] != k3[:-1])
    if new_rank.all():
        return [entries[i] for i in order.tolist()]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.cumsum(new_rank) - 1
    shift = max(n.bit_length(), 1)
    a = ((rank << shift) | np.arange(n)).tolist()
    std_sort_ranked(a, shift)
    mask = (1 << shift) - 1
    return [entries[v & mask] for v in a]


def plan_litert_ranges(
    problem: PlanningProblem,
    node_ranges: Iterable[tuple[int, int]],
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    cancelled=None,
    progress=None,
) -> Plan:
    """Run LiteRT's allocation over successive node ranges, as ``ExecuteAllocations`` is called.

    A static graph is prepared in one range ``(0, num_ops - 1)``; the runtime splits it where an
    operator's outputs turn dynamic, and ``arena_planner_test.cc``'s
    ``LargerGraphAndStepwiseAllocation`` calls it node by node. Tensors placed by an earlier
    range stay where they are; a later range fits around those still live.

    Each tensor's gap search visits only the active allocations whose usage interval
    intersects its own (listed once for all tensors with numpy: O(n log n + overlapping
    pairs)); when there are more than ten million overlapping pairs it falls back to one
    vectorised mask over the active allocations per tensor. The offsets are those of the
    straightforward re-statement, which walks every active allocation per tensor as
    ``SimpleMemoryArena::Allocate`` does (tests/planning/_litert_reference.py).

    Parameters
    ----------
    problem : PlanningProblem
    node_ranges : iterable of (int, int)
        ``(first_node, last_node)`` operator indices, inclusive, in call order.
    alignment : int
        Bytes; every offset is a multiple of it (LiteRT: 64).

    Returns
    -------
    Plan
        ``offsets`` for every buffer of ``problem`` (0 for zero-byte ones);
        ``arena_bytes`` = the arena's high-water mark; ``stats["order"]`` = buffer ids in the
        order offsets were computed.

    Raises
    ------
    viewer.errors.PlanningError
        Bad alignment or a buffer no range reaches.
    viewer.errors.PlanCancelled
        When ``cancelled()`` turns true.
    """
    if alignment <= 0:
        raise PlanningError(f"litert: alignment must be positive, got {alignment}")
    poll = _Poll(cancelled, progress, "litert")
    placed_ids = {b.id: b for b in problem.buffers}
    arena = Arena()
    offsets: dict[int, int] = {}
    order: list[int] = []
    high_water_mark = 0
    last_active_node = NODE_NOT_ASSIGNED
    for first_node, last_node in node_ranges:
        poll.check()
        todo = [
            placed_ids[b.id] for b in allocation_order(problem, first_node, last_node)
            if b.id in placed_ids and b.id not in offsets
        ]
        if not todo:
            last_active_node = last_node
            continue
        if first_node < last_active_node:
            arena.clear()  # ResetAllocs
        else:
            arena.purge_before(first_node)  # PurgeActiveAllocs
        todo_nz = [b for b in todo if b.size > 0]
        m = len(todo_nz)
        flat = np.fromiter(
            (v for b in todo_nz for v in (b.first, NODE_NOT_ASSIGNED if b.pinned else b.last, b.size)),
            dtype=np.int64, count=3 * m,
        ).reshape(m, 3)
        f_t, l_t, s_t = flat[:, 0].copy(), flat[:, 1].copy(), flat[:, 2].copy()
        placed = place_with_lists(arena, f_t, l_t, s_t, alignment, poll) if m else []
        if placed is None:
            placed = []
            for t in range(m):
                placed.append(arena.allocate(alignment, int(s_t[t]), int(f_t[t]), int(l_t[t])))
                poll.tick(8 + (arena.n >> 6), t / m)
        it = iter(placed)
        for b in todo:
            offsets[b.id] = next(it) if b.size > 0 else 0
            order.append(b.id)
            if b.size > 0:
                high_water_mark = max(high_water_mark, offsets[b.id] + b.size)
        last_active_node = last_node
    for b in problem.buffers:
        if b.id not in offsets:
            if b.size == 0:
                offsets[b.id] = 0
            else:
                raise PlanningError(
                    f"litert: buffer {b.id} (operators {b.first}..{b.last}) is not queued at "
                    "any operator of the node ranges planned"
                )
    arena_bytes = max((offsets[b.id] + b.size for b in problem.buffers), default=0)
    poll.done()
    return Plan(
        "litert",
        offsets,
        arena_bytes,
        alignment,
        stats={"order": tuple(order), "high_water_mark": high_water_mark},
    )


@register("litert", "LiteRT ArenaPlanner", source=SOURCE)
def plan_litert(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit=None,
    node_ranges: Sequence[tuple[int, int]] | None = None,
) -> Plan:
    """Place buffers as LiteRT's ``ArenaPlanner`` does for a statically allocated subgraph.

    Parameters
    ----------
    problem : PlanningProblem
        Usage intervals are operator indices, inclusive; ``Buffer.pinned`` marks tensors LiteRT
        never deallocates (``dealloc_node == kNodeNotAssigned``); sizes in bytes.
        ``problem.alloc_queue``, when present, gives LiteRT's ``nodes_to_tensors_`` insertion
        order, which decides ties (see :func:`allocation_order`).
    alignment : int
        Offset alignment in bytes (LiteRT's ``kDefaultTensorAlignment`` = 64).
    node_ranges : sequence of (int, int), optional
        The ``ExecuteAllocations(first, last)`` calls; default one call over every operator.

    Returns
    -------
    Plan
        Offsets in bytes; ``arena_bytes`` is the high-water mark LiteRT commits.

    Raises
    ------
    viewer.errors.PlanningError, viewer.errors.PlanCancelled
        See :func:`plan_litert_ranges`.
    """
    if node_ranges is None:
        node_ranges = [(0, max(problem.num_ops, 1) - 1)]
    return plan_litert_ranges(problem, node_ranges, alignment, cancelled=cancelled, progress=progress)
