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

The runtime itself is quadratic (every ``Allocate`` walks every active allocation). Here step 2
sorts by numpy ranks (introsort is simulated only when ties exist, with inline comparisons) and
step 3 is :mod:`viewer.planning._litert_arena`: O(n log n + overlapping pairs), or one sweep
over time when the order is time order (:mod:`viewer.planning._sweep`), identical offsets to the
straightforward re-statement kept in tests/planning/_litert_reference.py (100k tensors: 1.1 s
instead of 6.8 s of CPU; 0.45 s for the 100k-operator chain of benchmarks/bench_scale.py). The
libstdc++ parts (the unordered_set's order, introsort) are :mod:`viewer.planning._libstdcxx`.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from viewer.errors import PlanningError
from viewer.planning._libstdcxx import UnorderedIntSet, std_sort, std_sort_ranked  # noqa: F401  (re-exported)
from viewer.planning._litert_arena import Arena, place_with_lists
from viewer.planning._overlap import Poll as _Poll
from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Buffer, Plan, PlanningProblem

#: LiteRT's ``kNodeNotAssigned`` (INT32_MAX): the dealloc node of a never-freed tensor.
NODE_NOT_ASSIGNED = 2**31 - 1

SOURCE = (
    "google-ai-edge/LiteRT tflite/arena_planner.cc (CalculateAllocations, "
    "CreateTensorAllocationVector) + tflite/simple_memory_arena.cc (Allocate)"
)

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
