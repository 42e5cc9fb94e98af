"""The planning problem: buffers with usage intervals and sizes.

It lives in the analysis layer because an analysis produces it; planners re-export it from
:mod:`viewer.planning.types`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Buffer:
    """One thing to place in the arena.

    Attributes
    ----------
    id : int
        Tensor index in the subgraph (kernel temporaries use the runtime's indices, which
        follow the model's tensors).
    first : int
        First operator that uses it, inclusive.
    last : int
        Last operator that uses it, inclusive.
    size : int
        Bytes (unaligned; planners round offsets, not sizes).
    pinned : bool
        Never freed during inference (graph inputs, outputs, variables): LiteRT's
        ``dealloc_node == kNodeNotAssigned``. Only the ``litert`` planner's order uses it.
    """

    id: int
    first: int
    last: int
    size: int
    pinned: bool = False


@dataclass(frozen=True)
class PlanningProblem:
    """Buffers to place, and the number of operators they span.

    Attributes
    ----------
    buffers : tuple of Buffer
        In tensor-index order.
    num_ops : int
        Operators in the subgraph; every ``last`` is < ``num_ops`` (or 0 when there are none).
    alloc_queue : tuple of tuple of Buffer
        Optional, read by the ``litert`` planner only: per operator, every tensor LiteRT queues
        for allocation there (``ArenaPlanner::nodes_to_tensors_``) in insertion order,
        including ones outside this arena (in-place aliases, persistent tensors), each as a
        Buffer (alloc node, dealloc node, bytes, never freed). It decides the ties of LiteRT's
        unstable sort. Empty: the planner derives it from ``buffers``.
    """

    buffers: tuple[Buffer, ...]
    num_ops: int
    alloc_queue: tuple[tuple[Buffer, ...], ...] = field(default=(), compare=False, hash=False)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(ids, first, last, size)`` as int64 arrays of shape (n,)."""
        cache = self.__dict__.get("_arrays")
        if cache is None:
            n = len(self.buffers)
            flat = np.fromiter(
                (v for b in self.buffers for v in (b.id, b.first, b.last, b.size)),
                dtype=np.int64, count=4 * n,
            ).reshape(n, 4).T.copy()
            for a in flat:
                a.flags.writeable = False
            cache = (flat[0], flat[1], flat[2], flat[3])
            object.__setattr__(self, "_arrays", cache)
        return cache

    def breadth(self) -> np.ndarray:
        """Bytes live at each operator, shape (num_ops,): the operator breadth."""
        _, first, last, size = self.arrays()
        m = max(self.num_ops, int(last.max()) + 1 if len(last) else 0, 1)
        diff = np.zeros(m + 1, dtype=np.int64)
        np.add.at(diff, first, size)
        np.add.at(diff, last + 1, -size)
        return np.cumsum(diff)[:m]

    def lower_bound(self) -> int:
        """The widest operator's breadth in bytes: no plan can be smaller.

        Computed by a sweep over interval end points, so a problem whose time axis is huge
        (minimalloc CSVs use times up to 2**20 and beyond) costs O(n log n), not O(time).
        """
        if not self.buffers:
            return 0
        _, first, last, size = self.arrays()
        times = np.concatenate([first, last + 1])
        deltas = np.concatenate([size, -size])
        # At equal times, ends (negative deltas) go first: [a, b] and [b+1, c] do not overlap.
        order = np.lexsort((deltas, times))
        return int(max(np.cumsum(deltas[order]).max(), 0))

    def aligned_lower_bound(self, alignment: int) -> int:
        """A lower bound for plans whose offsets are multiples of ``alignment`` bytes.

        At any operator the live buffers are disjoint byte ranges starting at aligned offsets,
        so every buffer but the topmost takes at least ``align_up(size)`` bytes:
        arena >= sum(align_up(s)) - max(align_up(s) - s) over the live set. Equals
        :meth:`lower_bound` when ``alignment`` is 1.
        """
        if not self.buffers:
            return 0
        if alignment <= 1:
            return self.lower_bound()
        cache = self.__dict__.setdefault("_aligned_bounds", {})
        if alignment not in cache:
            _, first, last, size = self.arrays()
            padded = -(-size // alignment) * alignment
            waste = padded - size
            levels = unique_sorted(waste)
            cache[alignment] = (_aligned_bound_sweep(first, last, padded, waste, levels)
                                if len(levels) <= 256 else
                                _aligned_bound_heap(first, last, padded, waste))
        return cache[alignment]


def _aligned_bound_sweep(first, last, padded, waste, levels) -> int:
    """:meth:`PlanningProblem.aligned_lower_bound` vectorised: at every time point, the padded
    bytes live minus the largest waste among the live buffers, found per distinct waste value
    (at most ``alignment`` of them) as "some buffer with at least this waste is live"."""
    points = unique_sorted(np.concatenate([first, last + 1]))
    lo = np.searchsorted(points, first)
    hi = np.searchsorted(points, last + 1)
    m = len(points)

    def live_sum(weights):
        diff = np.zeros(m + 1, dtype=np.int64)
        np.add.at(diff, lo, weights)
        np.add.at(diff, hi, -weights)
        return np.cumsum(diff)[:m]

    total = live_sum(padded)
    count = live_sum(np.ones_like(padded))
    top = np.zeros(m, dtype=np.int64)
    for w in levels.tolist():
        if w:
            top = np.where(live_sum((waste >= w).astype(np.int64)) > 0, w, top)
    live = count > 0
    return int((total - top)[live].max()) if live.any() else 0


def _aligned_bound_heap(first, last, padded, waste) -> int:
    """The same bound by one sweep over interval end points with a heap of wastes."""
    import heapq

    events = sorted(
        [(int(f), 1, i) for i, f in enumerate(first)] + [(int(l) + 1, 0, i) for i, l in enumerate(last)]
    )
    live = [False] * len(padded)
    heap: list[tuple[int, int]] = []  # (-waste, i), lazily pruned
    total = best = 0
    for k, (_, kind, i) in enumerate(events):
        if kind == 0:
            live[i] = False
            total -= int(padded[i])
        else:
            live[i] = True
            total += int(padded[i])
            heapq.heappush(heap, (-int(waste[i]), i))
        if k + 1 < len(events) and events[k + 1][0] == events[k][0]:
            continue  # evaluate once per time point, after all its events
        while heap and not live[heap[0][1]]:
            heapq.heappop(heap)
        if heap:
            best = max(best, total + heap[0][0])
    return best


def unique_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a`` (shape (n,)), ascending: ``np.unique(a)`` without its cost.

    numpy 2.x's ``np.unique`` imports ``numpy.ma`` on its first call (about 7 ms, most of a
    first plan of MobileNet v2); a sort and one comparison give the same array.
    """
    s = np.sort(np.asarray(a).ravel())
    if len(s) == 0:
        return s
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
