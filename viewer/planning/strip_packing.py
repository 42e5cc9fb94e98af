"""``strip_packing``: best-fit strip packing with fixed x-intervals.

Source: T. Sekiyama, T. Imamichi, H. Imai and R. Raymond, "Profile-guided memory optimization
for deep neural networks", arXiv:1804.10001 (2018), section 4: the best-fit heuristic of
E. K. Burke, G. Kendall and G. Whitwell for 2-D strip packing ("A new placement heuristic for
the orthogonal stock-cutting problem", Operations Research 52(4), 2004), adapted to blocks whose
x-position (the usage interval) is fixed and only the y-position (the offset) is free.

The packing keeps a *skyline*: the usage timeline cut into steps, each with the height (bytes)
already used there. Repeatedly, the lowest step (leftmost on ties) is filled with the unplaced
buffer that fits it best: one whose usage interval lies inside the step, the longest-lived
such buffer, then the largest. When no buffer fits, the step is wasted: it is raised to its
lower neighbour and merged with it.

The skyline is kept as maximal runs of equal height in dicts keyed by a step's first and last
operator, with a heap of (height, first operator) for the lowest step; the fit search looks
only at buffers whose first operator lies in the step (a bisect over first-sorted buffers).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right

import numpy as np

from viewer.planning._overlap import Poll as _Poll, check_alignment as _check_alignment
from viewer.planning._overlap import problem_arrays as _problem_arrays
from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, align_up

#: Fit searches over at most this many buffers run in plain Python; wider ones with numpy.
_SMALL = 48


@register(
    "strip_packing",
    "Strip packing (best fit)",
    source="Sekiyama et al., arXiv:1804.10001 (best-fit of Burke, Kendall & Whitwell 2004)",
)
def plan_strip_packing(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit=None,
) -> Plan:
    """Best-fit strip packing of usage intervals (Sekiyama et al. 2018).

    Time (operator indices) is the strip's width and bytes its height. The skyline starts as
    one step of height 0 over every operator. While buffers remain: take the lowest step
    (leftmost among equals); among unplaced buffers whose usage interval ``[first, last]``
    (inclusive) lies within the step, choose the one with the longest interval, then the
    largest size, then the lowest id; put it at the step's height rounded up to
    ``alignment`` and raise that part of the step to its end. If none fits, raise the step to
    the lower of its neighbours' heights (the space below is wasted) and merge them.

    Parameters
    ----------
    problem : PlanningProblem
        Buffers with usage intervals and sizes in bytes.
    alignment : int
        Every offset is a multiple of this many bytes.
    progress : callable, optional
        ``progress(fraction, message)``, fraction in [0, 1] (buffers placed); called every few
        ms and with 1.0 at the end.
    cancelled : callable, optional
        Polled every few ms of work; when it returns true the planner stops.
    time_limit
        Accepted for the common planner signature and ignored.

    Returns
    -------
    Plan
        ``arena_bytes`` = max(offset + size); ``stats["wasted_steps"]`` counts raised steps.
        Zero-size buffers are put at offset 0.

    Raises
    ------
    viewer.errors.PlanningError
        When ``alignment`` is not a positive integer.
    viewer.errors.PlanCancelled
        When ``cancelled()`` returned true.

    Notes
    -----
    Each step of the loop costs O(log s) for the lowest step (s skyline steps, s <= 2n + 1)
    plus the buffers whose first operator lies inside that step, so chains of short-lived
    tensors take O(n log n); a wide step is searched with numpy.
    """
    alignment = _check_alignment(alignment)
    poll = _Poll(cancelled, progress, "strip packing")
    poll.check(0.0)
    ids, first, last, size = _problem_arrays(problem, poll)
    n = len(ids)
    offsets: dict[int, int] = dict.fromkeys(ids[size == 0].tolist(), 0)
    todo_pos = np.flatnonzero(size > 0)
    if not len(todo_pos):
        poll.done()
        return Plan("strip_packing", offsets, 0, alignment, stats={"wasted_steps": 0})
    length = last - first + 1
    # Best fit first: longest usage interval, then largest size, then lowest id, then position.
    priority = np.lexsort((np.arange(n), ids, -size, -length))
    rank = np.empty(n, dtype=np.int64)
    rank[priority] = np.arange(n)
    # Unplaced buffers sorted by first operator; a step [s0, s1] can hold only those with
    # first in [s0, s1] (a contiguous run), and of them only those with last <= s1.
    by_first = todo_pos[np.argsort(first[todo_pos], kind="stable")]
    fs_np, ls_np, rk_np = first[by_first], last[by_first], rank[by_first]
    fs, ls, rk = fs_np.tolist(), ls_np.tolist(), rk_np.tolist()
    pos_of = by_first.tolist()
    todo = bytearray(b"\x01") * len(pos_of)
    todo_np = np.frombuffer(todo, dtype=np.uint8)
    big = np.iinfo(np.int64).max

    # Skyline as maximal runs of equal height: end_at[start], start_at[end], height_at[start].
    end_at: dict[int, int] = {}
    start_at: dict[int, int] = {}
    height_at: dict[int, int] = {}
    heap: list[tuple[int, int]] = []

    def add(s0: int, s1: int, h: int) -> None:
        end_at[s0] = s1
        start_at[s1] = s0
        height_at[s0] = h
        heapq.heappush(heap, (h, s0))

    def drop(s0: int) -> int:
        s1 = end_at.pop(s0)
        del start_at[s1], height_at[s0]
        return s1

    add(int(fs_np.min()), int(ls_np.max()), 0)
    wasted = 0
    total = len(pos_of)
    remaining = total
    arena = 0
    while remaining:
        h, s0 = heapq.heappop(heap)
        if height_at.get(s0) != h:
            continue  # stale entry: that step was raised, split or merged since
        s1 = end_at[s0]
        a = bisect_left(fs, s0)
        b = bisect_right(fs, s1, a)
        best = -1
        if b - a <= _SMALL:
            best_rank = big
            for p in range(a, b):
                if todo[p] and ls[p] <= s1 and rk[p] < best_rank:
                    best, best_rank = p, rk[p]
            work = 4 + (b - a)
        else:
            fit = (todo_np[a:b] != 0) & (ls_np[a:b] <= s1)
            if fit.any():
                best = a + int(np.argmin(np.where(fit, rk_np[a:b], big)))
            work = 20 + ((b - a) >> 5)
        if best >= 0:
            i = pos_of[best]
            off = align_up(h, alignment)
            offsets[int(ids[i])] = off
            todo[best] = 0
            remaining -= 1
            top = off + int(size[i])
            if top > arena:
                arena = top
            f, l = fs[best], ls[best]
            drop(s0)
            if f > s0:
                add(s0, f - 1, h)
            lo, hi = f, l
            if f == s0 and (left := start_at.get(s0 - 1)) is not None and height_at[left] == top:
                lo = left
                drop(left)
            if l == s1 and height_at.get(s1 + 1) == top:
                hi = drop(s1 + 1)
            add(lo, hi, top)
            if l < s1:
                add(l + 1, s1, h)
        else:
            # Nothing fits: raise the step to its lower neighbour (a lone step over the whole
            # timeline fits every buffer, so a neighbour exists) and merge equal heights.
            wasted += 1
            left = start_at.get(s0 - 1)
            right = s1 + 1 if (s1 + 1) in height_at else None
            raised = min(height_at[x] for x in (left, right) if x is not None)
            drop(s0)
            lo, hi = s0, s1
            if left is not None and height_at[left] == raised:
                lo = left
                drop(left)
            if right is not None and height_at[right] == raised:
                hi = drop(right)
            add(lo, hi, raised)
        poll.tick(work, 1.0 - remaining / total)
    poll.done()
    return Plan("strip_packing", offsets, arena, alignment, stats={"wasted_steps": wasted})
