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

Both are pure functions of the problem. Both poll ``cancelled()`` every few ms of work (raising
:class:`viewer.errors.PlanCancelled`) and report ``progress(fraction, message)``.
``greedy_by_size`` visits each overlapping pair of buffers once (lists built with numpy), not
every placed buffer per buffer, so 100,000 tensors take about a second.
"""

from __future__ import annotations

import bisect

import numpy as np

from viewer.planning import _sweep
from viewer.planning._overlap import Poll as _Poll, check_alignment as _check_alignment, overlap_lists as _overlap_lists
from viewer.planning._overlap import problem_arrays as _problem_arrays
from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, align_up, unique_sorted

_PAPER = "Pisarchyk & Lee, arXiv:2001.03288"
#: Candidate lists up to this long are searched in plain Python; longer ones with numpy.
_SMALL = 48
_TFLITE_GPU = "tensorflow/lite/delegates/gpu/common/memory_management/"


def _best_gap(pairs: list[tuple[int, int]], size: int) -> int:
    """The reference's gap search over ``(offset, aligned end)`` of the overlapping buffers.

    Walked in offset order: a gap runs from the highest aligned end so far up to the next
    offset; the first smallest gap that holds ``size`` bytes wins, else the highest aligned
    end (0 with no buffers). Equal offsets may come in any order: sizes are > 0, so only the
    first of them can open a gap, and that gap does not depend on which one it is.
    """
    pairs.sort()
    return _best_gap_sorted([o for o, _ in pairs], [e for _, e in pairs], size)


def _best_gap_sorted(offs: list[int], ends: list[int], size: int) -> int:
    """:func:`_best_gap` over offsets already ascending and their aligned ends."""
    best_gap = -1
    best = -1
    prev = 0
    for off, end in zip(offs, ends):
        if off >= prev:
            gap = off - prev
            if gap >= size and (best_gap < 0 or gap < best_gap):
                best_gap, best = gap, prev
        if end > prev:
            prev = end
    return prev if best < 0 else best


def _best_gap_numpy(off: np.ndarray, end: np.ndarray, size: int) -> int:
    """:func:`_best_gap` on int64 arrays of offsets and aligned ends (at least one buffer)."""
    srt = np.argsort(off, kind="stable")
    off, end = off[srt], end[srt]
    top = np.maximum.accumulate(end)
    prev = np.empty_like(top)
    prev[0] = 0
    prev[1:] = top[:-1]
    gap = off - prev
    ok = gap >= size
    if not ok.any():
        return int(top[-1])
    return int(prev[int(np.argmin(np.where(ok, gap, np.iinfo(np.int64).max)))])


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

    The reference walks every placed buffer for every buffer (quadratic). Here the overlapping
    pairs are listed once with numpy (sort by first operator, ``searchsorted`` for the last),
    so each buffer walks only the placed buffers it overlaps: about O(n log n + pairs). When
    the size order is also time order (equal sizes), one sweep over time keeps the live buffers
    and their gaps sorted instead (:mod:`viewer.planning._sweep`): O(n log n). The offsets are
    the reference's exactly.

    Parameters
    ----------
    problem : PlanningProblem
        Buffers with usage intervals ``[first, last]`` (operator indices, inclusive) and sizes
        in bytes.
    alignment : int
        Every offset is a multiple of this many bytes (64 for LiteRT, 1 for CSV problems).
    progress : callable, optional
        ``progress(fraction, message)``, fraction in [0, 1]; called every few ms and with 1.0
        at the end.
    cancelled : callable, optional
        Polled every few ms of work; when it returns true the planner stops.
    time_limit
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
    viewer.errors.PlanCancelled
        When ``cancelled()`` returned true.
    """
    alignment = _check_alignment(alignment)
    poll = _Poll(cancelled, progress, "greedy by size")
    poll.check(0.0)
    ids, first, last, size = _problem_arrays(problem, poll)
    order = np.argsort(-size, kind="stable")  # the reference's size order, ties by position
    active = order[size[order] > 0]  # zero-size buffers occupy nothing: offset 0
    m = len(active)
    f_act, l_act = first[active], last[active]
    sizes = size[active].tolist()
    if _sweep.in_time_order(f_act):  # equal sizes in time order: one sweep, no pair lists
        # Ends are aligned, so the gap search is plain best fit (the sweep's gap index).
        off_py = _sweep.sweep_place(f_act.tolist(), l_act.tolist(), sizes,
                                    lambda o, s: align_up(o + s, alignment), poll)
    else:
        off_py = _place_by_lists(f_act, l_act, sizes, alignment, poll)
    total = max((o + s for o, s in zip(off_py, sizes)), default=0)
    off_all = np.zeros(len(ids), dtype=np.int64)
    off_all[active] = off_py
    # Same key order as the reference: size order, zero-size buffers included.
    offsets = dict(zip(ids[order].tolist(), off_all[order].tolist()))
    poll.done()
    return Plan("greedy_by_size", offsets, total, alignment)


def _place_by_lists(f_act: np.ndarray, l_act: np.ndarray, sizes: list[int], alignment: int,
                    poll: _Poll) -> list[int]:
    """greedy_by_size's offsets (bytes, in placing order): each buffer's gap search walks the
    placed buffers its overlap list names (Python for short lists, numpy for long ones), or
    every placed buffer past :data:`viewer.planning._overlap._MAX_PAIRS` pairs."""
    m = len(sizes)
    lists = _overlap_lists(f_act, l_act, poll) if m else None
    if lists is not None:
        ptr_np, earlier_np = lists
        ptr = ptr_np.tolist()
    off_np = np.zeros(m, dtype=np.int64)
    end_np = np.zeros(m, dtype=np.int64)
    off_py = [0] * m
    end_py = [0] * m
    for k in range(m):
        s = sizes[k]
        if lists is not None:
            p0, p1 = ptr[k], ptr[k + 1]
            if p1 == p0:
                best, work = 0, 2
            elif p1 - p0 == 1:
                j = int(earlier_np[p0])
                best = 0 if off_py[j] >= s else end_py[j]
                work = 3
            elif p1 - p0 <= _SMALL:
                best = _best_gap([(off_py[j], end_py[j]) for j in earlier_np[p0:p1].tolist()], s)
                work = 4 + (p1 - p0)
            else:
                cand = earlier_np[p0:p1]
                best = _best_gap_numpy(off_np[cand], end_np[cand], s)
                work = 40 + ((p1 - p0) >> 5)
        else:
            # Too many overlapping pairs to list: scan every placed buffer.
            cand = np.flatnonzero((f_act[:k] <= l_act[k]) & (l_act[:k] >= f_act[k]))
            best = _best_gap_numpy(off_np[cand], end_np[cand], s) if len(cand) else 0
            work = 40 + (k >> 5)
        end = align_up(best + s, alignment)
        off_py[k] = best
        end_py[k] = end
        off_np[k] = best
        end_np[k] = end
        poll.tick(work, k / m)
    return off_py


def _compress_time(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
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
    points = unique_sorted(np.concatenate([first, last + 1]))
    cfirst = np.searchsorted(points, first)
    clast = np.searchsorted(points, last + 1) - 1
    return cfirst.astype(np.int64), clast.astype(np.int64), max(len(points) - 1, 0)


def _range_min(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``min(values[lo[i]:hi[i] + 1])`` for every i (a sparse table; ``lo <= hi``).

    Parameters
    ----------
    values : numpy.ndarray
        Shape (m,), int64.
    lo, hi : numpy.ndarray
        Shape (n,), int64: inclusive index ranges into ``values``.
    """
    levels = [values]
    width = 1
    while 2 * width <= len(values):
        prev = levels[-1]
        levels.append(np.minimum(prev[:-width], prev[width:]))
        width *= 2
    span = hi - lo + 1
    k = np.zeros(len(lo), dtype=np.int64)
    while True:
        more = (2 << k) <= span
        if not more.any():
            break
        k += more
    out = np.empty(len(lo), dtype=values.dtype)
    for level in range(len(levels)):
        sel = k == level
        if sel.any():
            table = levels[level]
            out[sel] = np.minimum(table[lo[sel]], table[hi[sel] - (1 << level) + 1])
    return out


#: Objects tried one by one per tensor before the busy ones are looked up (overlap lists or numpy).
_TRIES = 8


def _adjacency(first: np.ndarray, last: np.ndarray, poll: _Poll):
    """For every tensor, the tensors whose intervals overlap its own, as two CSR lists (those
    before it and those after it in index order); None past :data:`viewer.planning._overlap._MAX_PAIRS` pairs."""
    lists = _overlap_lists(first, last, poll)
    if lists is None:
        return None
    ptr, earlier = lists
    n = len(first)
    later = np.repeat(np.arange(n), np.diff(ptr))
    srt = np.argsort(earlier, kind="stable")
    rptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(earlier, minlength=n), out=rptr[1:])
    poll.check()
    return ptr, earlier, rptr, later[srt]


def _first_free_in_order(by_size: list[tuple[int, int]], k0: int, busy: set[int]) -> int:
    """The first object not in ``busy`` in greedy_by_breadth's order of preference: sizes from
    ``by_size[k0]`` up, then the runs of equal smaller sizes downwards, each run from its
    first created object; -1 when all are busy. Visits at most ``len(busy) + 1`` objects."""
    for k in range(k0, len(by_size)):
        if by_size[k][1] not in busy:
            return by_size[k][1]
    j = k0 - 1
    while j >= 0:
        g0 = bisect.bisect_left(by_size, (by_size[j][0], -1), 0, j + 1)
        for k in range(g0, j + 1):
            if by_size[k][1] not in busy:
                return by_size[k][1]
        j = g0 - 1
    return -1


def _first_free_object(assigned, first, last, f: int, l: int, obj_size: np.ndarray, s: int) -> int:
    """The shared object greedy_by_breadth takes for a tensor of ``s`` bytes live ``[f, l]``.

    Objects used by an assigned tensor whose interval overlaps ``[f, l]`` are busy; of the
    others, the smallest at least ``s`` bytes (first created on ties), else the largest
    smaller one (first created on ties); -1 when every object is busy.
    """
    busy = np.zeros(len(obj_size), dtype=bool)
    busy[assigned[(assigned >= 0) & (first <= l) & (last >= f)]] = True
    free = ~busy
    big = np.flatnonzero(free & (obj_size >= s))
    if len(big):
        sz = obj_size[big]
        return int(big[np.argmax(sz == sz.min())])
    small = np.flatnonzero(free & (obj_size < s))
    if len(small):
        sz = obj_size[small]
        return int(small[np.argmax(sz == sz.max())])
    return -1


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
    progress : callable, optional
        ``progress(fraction, message)``, fraction in [0, 1]; called every few ms and with 1.0
        at the end.
    cancelled : callable, optional
        Polled every few ms of work; when it returns true the planner stops.
    time_limit
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
    viewer.errors.PlanCancelled
        When ``cancelled()`` returned true.

    Notes
    -----
    The reference walks every operator's profile and tries every object per tensor. Here each
    tensor's turn comes from a range minimum of task positions over its interval (a sparse
    table), and objects are tried in the order of preference (size from the tensor's up, then
    down), so the first free one is taken: O(n log n) plus the objects tried. After 8 busy
    objects, the busy ones are the objects of the assigned tensors that overlap this one, from
    overlap lists built once (O(n log n + overlapping pairs)); past ten million pairs (16k
    graph outputs all live together) one vectorised pass over the assigned tensors per tensor
    instead of a Python loop over every object.
    """
    alignment = _check_alignment(alignment)
    poll = _Poll(cancelled, progress, "greedy by breadth")
    poll.check(0.0)
    bufs = problem.buffers
    n = len(bufs)
    if n == 0:
        poll.done()
        return Plan("greedy_by_breadth", {}, 0, alignment, stats={"objects": 0})
    ids, first, last, size = _problem_arrays(problem, poll)
    first, last, m = _compress_time(first, last)
    poll.check()
    # Operator (segment) breadth, and the reference's task order: non-increasing breadth,
    # ties by operator index. breadth[t] = bytes with first <= t minus bytes with last < t.
    seg = np.arange(m)
    by_f, by_l = np.argsort(first, kind="stable"), np.argsort(last, kind="stable")
    started = np.concatenate(([0], np.cumsum(size[by_f])))
    ended = np.concatenate(([0], np.cumsum(size[by_l])))
    breadth = (started[np.searchsorted(first[by_f], seg, side="right")]
               - ended[np.searchsorted(last[by_l], seg, side="left")])
    poll.check()
    task_pos = np.empty(m, dtype=np.int64)
    task_pos[np.argsort(-breadth, kind="stable")] = np.arange(m)
    poll.check()
    # The reference walks each task's profile, largest first, skipping tensors that already
    # have an object; every other tensor gets one there. So a tensor is assigned at the first
    # task (in task order) of its interval, and tensors go in order of that task, then size
    # rank. The first task of each interval is a range minimum (sparse table).
    size_rank = np.empty(n, dtype=np.int64)
    size_rank[np.argsort(-size, kind="stable")] = np.arange(n)
    order = np.lexsort((size_rank, _range_min(task_pos, first, last))).tolist()
    poll.check()
    first_l, last_l, size_l = first.tolist(), last.tolist(), size.tolist()

    obj_of = [-1] * n
    obj_size: list[int] = []
    # Per object: usage intervals sorted by first (the reference's std::set by first_task).
    obj_firsts: list[list[int]] = []
    obj_lasts: list[list[int]] = []
    # (size, object) ascending: the reference takes, among objects no overlapping tensor uses,
    # the smallest one >= the tensor (first created on ties), else the largest smaller one
    # (first created on ties). Trying objects in that preference order, the first free one
    # is the reference's choice.
    by_size: list[tuple[int, int]] = []

    def free(o: int, f: int, l: int) -> bool:
        fs = obj_firsts[o]
        k = bisect.bisect_left(fs, f)
        if k < len(fs) and fs[k] <= l:
            return False
        return not (k > 0 and obj_lasts[o][k - 1] >= f)

    adjacency = None  # overlapping tensors of each tensor, built at the first dense search
    assigned = np.full(n, -1, dtype=np.int64)  # object of each tensor, for the dense search
    sizes_np = np.zeros(max(n, 1), dtype=np.int64)  # object sizes, for the dense search
    for done, i in enumerate(order):
        f, l, s = first_l[i], last_l[i], size_l[i]
        best = -1
        k0 = bisect.bisect_left(by_size, (s, -1))
        tried = 0
        for k in range(k0, min(len(by_size), k0 + _TRIES)):
            tried += 1
            if free(by_size[k][1], f, l):
                best = by_size[k][1]
                break
        if best == -1 and tried == len(by_size) - k0:
            j = k0 - 1
            while j >= 0 and best == -1 and tried < _TRIES:
                # Equal sizes: the first created wins, so try a run of equal sizes upwards.
                g0 = bisect.bisect_left(by_size, (by_size[j][0], -1), 0, j + 1)
                if tried + (j + 1 - g0) > _TRIES:
                    tried = _TRIES
                    break
                for k in range(g0, j + 1):
                    tried += 1
                    if free(by_size[k][1], f, l):
                        best = by_size[k][1]
                        break
                j = g0 - 1
        if best == -1 and tried >= _TRIES:
            # Many objects are taken at this interval: the busy ones are those of the assigned
            # tensors overlapping it (listed once for all tensors, or one numpy pass when there
            # are too many pairs to list); take the reference's choice among the others.
            if adjacency is None:
                adjacency = _adjacency(first, last, poll) or False
            if adjacency:
                ptr_a, nb_a, rptr_a, rnb_a = adjacency
                nb = np.concatenate((nb_a[ptr_a[i]:ptr_a[i + 1]], rnb_a[rptr_a[i]:rptr_a[i + 1]]))
                busy = set(assigned[nb].tolist())
                best = _first_free_in_order(by_size, k0, busy)
                tried += 8 + (len(nb) >> 2)
            else:
                best = _first_free_object(assigned, first, last, f, l, sizes_np[:len(obj_size)], s)
                tried += 40 + (n >> 5)
        if best == -1:
            best = len(obj_size)
            obj_size.append(s)
            obj_firsts.append([f])
            obj_lasts.append([l])
            bisect.insort(by_size, (s, best))
            sizes_np[best] = s
        else:
            k = bisect.bisect_left(obj_firsts[best], f)
            obj_firsts[best].insert(k, f)
            obj_lasts[best].insert(k, l)
            if s > obj_size[best]:
                by_size.remove((obj_size[best], best))
                obj_size[best] = s
                sizes_np[best] = s
                bisect.insort(by_size, (s, best))
        obj_of[i] = best
        assigned[i] = best
        poll.tick(4 + tried, done / n)
    obj_offset = []
    top = 0
    for s in obj_size:
        top = align_up(top, alignment)
        obj_offset.append(top)
        top += s
    poll.check()
    off = np.where(size > 0, np.array(obj_offset, dtype=np.int64)[obj_of], 0)
    offsets = dict(zip(ids.tolist(), off.tolist()))
    arena = int((off + size).max())
    poll.done()
    return Plan("greedy_by_breadth", offsets, arena, alignment, stats={"objects": len(obj_size)})
