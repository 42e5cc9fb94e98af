"""Greedy planners of Pisarchyk & Lee: ``greedy_by_size`` and ``greedy_by_breadth``.

Source: Y. Pisarchyk and J. Lee, "Efficient Memory Management for Deep Neural Net Inference",
arXiv:2001.03288 (2020). The reference implementation is TensorFlow Lite's GPU delegate,
``tensorflow/lite/delegates/gpu/common/memory_management/``:

- ``greedy_by_size_assignment.cc`` (``GreedyBySizeAssignment``): *Greedy by Size for offset
  calculation*. Buffers in non-increasing size order; each goes into the smallest gap between
  already placed buffers whose usage intervals overlap its own, or above the highest of them.
- ``greedy_by_breadth_assignment.cc`` (``GreedyByBreadthAssignment``) with ``internal.cc``
  (``CalculateTaskProfiles``): *Greedy by Breadth* for shared objects. Operators in
  non-increasing breadth order; the tensors of each operator's profile, largest first, go into
  the best-fitting shared object that no overlapping tensor uses, or a new one. The shared
  objects are then laid one after another in the tensor arena, so the arena is the sum of the
  object sizes (each object starting at an aligned offset).

Both are pure functions of the problem; neither is cancellable (they take milliseconds).
"""

from __future__ import annotations

import bisect

import numpy as np

from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, align_up

_PAPER = "Pisarchyk & Lee, arXiv:2001.03288"
_TFLITE_GPU = "tensorflow/lite/delegates/gpu/common/memory_management/"


def _check_alignment(alignment: int) -> int:
    from viewer.errors import PlanningError

    if not isinstance(alignment, (int, np.integer)) or alignment < 1:
        raise PlanningError(f"alignment must be a positive integer, not {alignment!r}")
    return int(alignment)


def _size_order(problem: PlanningProblem) -> list[int]:
    """Buffer positions in non-increasing size order; ties keep problem (tensor-index) order.

    The reference sorts with ``CompareBySize`` (size only) and an unstable ``std::sort``; a
    stable sort makes our result deterministic.
    """
    bufs = problem.buffers
    return sorted(range(len(bufs)), key=lambda i: -bufs[i].size)


@register(
    "greedy_by_size",
    "Greedy by size (offsets)",
    source=f"{_PAPER}, Greedy by Size for offset calculation; {_TFLITE_GPU}greedy_by_size_assignment.cc",
)
def plan_greedy_by_size(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit=None,
) -> Plan:
    """Greedy by Size for offset calculation (Pisarchyk & Lee 2020, section 5).

    Buffers are taken in non-increasing size. For each, the already placed buffers whose usage
    intervals (inclusive operator indices) overlap its own are walked in offset order; the
    buffer goes into the smallest gap between them that holds it, or, when none does, just
    above the highest of them. Follows ``GreedyBySizeAssignment`` in TFLite's
    ``greedy_by_size_assignment.cc``: a gap starts at the aligned end of the buffer below it
    (``AlignByN(offset + size, alignment)``), so every offset is a multiple of ``alignment``.

    Parameters
    ----------
    problem : PlanningProblem
        Buffers with usage intervals ``[first, last]`` (operator indices, inclusive) and sizes
        in bytes.
    alignment : int
        Every offset is a multiple of this many bytes (64 for LiteRT, 1 for CSV problems).
    progress, cancelled, time_limit
        Accepted for the common planner signature and ignored.

    Returns
    -------
    Plan
        ``offsets`` in bytes per buffer id; ``arena_bytes`` = max(offset + size). Zero-size
        buffers are put at offset 0 (they occupy nothing).

    Raises
    ------
    viewer.errors.PlanningError
        When ``alignment`` is not a positive integer.
    """
    alignment = _check_alignment(alignment)
    bufs = problem.buffers
    offsets: dict[int, int] = {}
    # Placed buffers as parallel lists kept sorted by offset (the reference's ordered_allocs).
    placed_off: list[int] = []
    placed_idx: list[int] = []
    total = 0
    for i in _size_order(problem):
        b = bufs[i]
        if b.size == 0:
            offsets[b.id] = 0
            continue
        best_gap = None
        best_offset = None
        prev = 0
        for off, j in zip(placed_off, placed_idx):
            o = bufs[j]
            if o.last < b.first or o.first > b.last:
                continue  # usage intervals do not overlap
            if off >= prev:
                gap = off - prev
                if gap >= b.size and (best_gap is None or gap < best_gap):
                    best_gap, best_offset = gap, prev
            prev = max(prev, align_up(off + o.size, alignment))
        if best_offset is None:
            best_offset = prev
        # Insert after every placed buffer whose offset is <= best_offset, as the reference does.
        k = bisect.bisect_right(placed_off, best_offset)
        placed_off.insert(k, best_offset)
        placed_idx.insert(k, i)
        offsets[b.id] = best_offset
        total = max(total, best_offset + b.size)
    return Plan("greedy_by_size", offsets, total, alignment)


def _compress_time(problem: PlanningProblem) -> tuple[np.ndarray, np.ndarray, int]:
    """Map usage intervals onto elementary time segments.

    Two buffers overlap exactly when their compressed intervals do, and every operator inside
    one elementary segment has the same profile, so the breadth order over segments (ties by
    first operator) is the reference's order over operators with the repeats dropped. This
    keeps CSV problems whose times run to millions cheap.

    Returns
    -------
    first, last : numpy.ndarray
        Shape (n,), int64: inclusive segment indices.
    num_segments : int
    """
    _, first, last, _ = problem.arrays()
    points = np.unique(np.concatenate([first, last + 1]))
    cfirst = np.searchsorted(points, first)
    clast = np.searchsorted(points, last + 1) - 1
    return cfirst.astype(np.int64), clast.astype(np.int64), max(len(points) - 1, 0)


@register(
    "greedy_by_breadth",
    "Greedy by breadth (shared objects)",
    source=f"{_PAPER}, Greedy by Breadth; {_TFLITE_GPU}greedy_by_breadth_assignment.cc",
)
def plan_greedy_by_breadth(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit=None,
) -> Plan:
    """Greedy by Breadth (Pisarchyk & Lee 2020, section 4), laid out as one tensor arena.

    Operators are taken in non-increasing operator breadth (ties: lower operator index first).
    The tensors of each operator's profile that have no shared object yet, largest first, each
    go into a shared object that no tensor with an overlapping usage interval uses: the
    smallest such object at least as large as the tensor, or else the largest smaller one
    (which grows); with none, a new object. Follows ``GreedyByBreadthAssignment`` in TFLite's
    ``greedy_by_breadth_assignment.cc``. The shared objects are then placed one after another
    in creation order, each at an ``alignment``-aligned offset; every tensor gets its object's
    offset.

    Parameters
    ----------
    problem : PlanningProblem
        Buffers with usage intervals ``[first, last]`` (operator indices, inclusive) and sizes
        in bytes.
    alignment : int
        Every offset is a multiple of this many bytes.
    progress, cancelled, time_limit
        Accepted for the common planner signature and ignored.

    Returns
    -------
    Plan
        ``arena_bytes`` is the sum of the shared objects' sizes plus alignment padding;
        ``stats["objects"]`` the number of shared objects. Zero-size buffers are put at
        offset 0.

    Raises
    ------
    viewer.errors.PlanningError
        When ``alignment`` is not a positive integer.
    """
    alignment = _check_alignment(alignment)
    bufs = problem.buffers
    n = len(bufs)
    if n == 0:
        return Plan("greedy_by_breadth", {}, 0, alignment, stats={"objects": 0})
    first, last, m = _compress_time(problem)
    size = np.array([b.size for b in bufs], dtype=np.int64)
    # Operator (segment) profiles: positions of the buffers live there, largest first.
    size_rank = _size_order(problem)
    profiles: list[list[int]] = [[] for _ in range(m)]
    for i in size_rank:
        for t in range(int(first[i]), int(last[i]) + 1):
            profiles[t].append(i)
    breadth = [int(size[p].sum()) if p else 0 for p in profiles]
    task_order = sorted(range(m), key=lambda t: -breadth[t])

    obj_of = [-1] * n
    obj_size: list[int] = []
    # Per object: usage intervals sorted by first (the reference's std::set by first_task).
    obj_firsts: list[list[int]] = []
    obj_lasts: list[list[int]] = []
    for t in task_order:
        for i in profiles[t]:
            if obj_of[i] != -1:
                continue
            f, l, s = int(first[i]), int(last[i]), int(size[i])
            best = -1
            for o in range(len(obj_size)):
                if best != -1:
                    best_size, cur = obj_size[best], obj_size[o]
                    if best_size < s:
                        if cur <= best_size:
                            continue
                    elif cur < s or cur >= best_size:
                        continue
                fs = obj_firsts[o]
                k = bisect.bisect_left(fs, f)
                if k < len(fs) and fs[k] <= l:
                    continue
                if k > 0 and obj_lasts[o][k - 1] >= f:
                    continue
                best = o
            if best == -1:
                obj_size.append(s)
                obj_firsts.append([f])
                obj_lasts.append([l])
                best = len(obj_size) - 1
            else:
                k = bisect.bisect_left(obj_firsts[best], f)
                obj_firsts[best].insert(k, f)
                obj_lasts[best].insert(k, l)
                obj_size[best] = max(obj_size[best], s)
            obj_of[i] = best
    obj_offset = []
    top = 0
    for s in obj_size:
        top = align_up(top, alignment)
        obj_offset.append(top)
        top += s
    offsets = {b.id: (obj_offset[obj_of[i]] if b.size else 0) for i, b in enumerate(bufs)}
    arena = max((offsets[b.id] + b.size for b in bufs), default=0)
    return Plan("greedy_by_breadth", offsets, arena, alignment, stats={"objects": len(obj_size)})
