"""``tflm_greedy`` and ``tflm_linear``: TensorFlow Lite Micro's two memory planners, re-stated.

``tflm_greedy`` follows ``GreedyMemoryPlanner::CalculateOffsetsIfNeeded``
(tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc) exactly:

1. offline-planned buffers first, in ``AddBuffer`` order, at their fixed offsets; then the
   online ones, laid out from the tail of the array (so in *reverse* ``AddBuffer`` order) and
   sorted by size, largest first, with ``ReverseSortInPlace`` (a bubble sort that only swaps
   on "smaller before larger", hence stable: equal sizes keep the reversed order);
2. the first buffer of that order goes at offset 0 (or its offline offset);
3. each next one walks the already placed buffers that overlap it in time, in offset order,
   keeping ``candidate = max(end of every overlapping buffer seen so far)``, and stops at the
   first gap ``next.offset - candidate >= size`` (first fit), else goes above the last;
4. the arena is ``max(offset + size)`` (``GetMaximumMemorySize``).

Sizes are used as given: TFLM rounds them up to 16 bytes before ``AddBuffer``
(:func:`viewer.analysis.tflm.tflm_problem` does the same). On a problem whose sizes are not
multiples of ``alignment`` the sizes are rounded up first so every offset stays aligned.

``tflm_linear`` follows ``LinearMemoryPlanner::AddBuffer`` (linear_memory_planner.cc): every
buffer after the previous one, no reuse.
"""

from __future__ import annotations

from math import gcd

import numpy as np
from typing import Mapping

from viewer.errors import PlanCancelled
from viewer.planning.registry import register
from viewer.planning.types import Plan, PlanningProblem, align_up

#: TFLM's ``MicroArenaBufferAlignment()``.
TFLM_ALIGNMENT = 16


def _offline(problem: PlanningProblem) -> Mapping[int, int]:
    return getattr(problem, "offline", None) or {}


def _plan_alignment(alignment: int, offline: Mapping[int, int]) -> int:
    """``alignment``, lowered to what the fixed offline offsets allow."""
    a = alignment
    for off in offline.values():
        a = gcd(a, int(off)) if off else a
    return max(a, 1)


def _first_fit(off, end, first, last, f: int, l_: int, size: int) -> int:
    """The offset ``CalculateOffsetsIfNeeded``'s walk gives a buffer live over [f, l_].

    Over the placed buffers that overlap it in time, in offset order: ``candidate`` is the
    highest end seen so far (0 before any); the first buffer whose offset leaves a gap of
    ``size`` above ``candidate`` stops the walk; otherwise it goes above them all.
    """
    idx = np.flatnonzero((first <= l_) & (last >= f))
    if idx.size == 0:
        return 0
    ends = np.maximum.accumulate(end[idx])
    before = np.concatenate(([0], np.maximum(ends[:-1], 0)))
    hit = np.flatnonzero(off[idx] - before >= size)
    return int(before[hit[0]]) if hit.size else int(max(ends[-1], 0))


@register("tflm_greedy", "TFLM greedy (GreedyMemoryPlanner)",
          source="tflite-micro memory_planner/greedy_memory_planner.cc", runtime="tflm")
def plan_tflm_greedy(problem: PlanningProblem, alignment: int = TFLM_ALIGNMENT, *, progress=None,
                     cancelled=None, time_limit=None) -> Plan:
    """TFLM's ``GreedyMemoryPlanner``, re-stated (see the module docstring).

    Parameters
    ----------
    problem : PlanningProblem
        Buffers in ``AddBuffer`` order; a :class:`viewer.analysis.tflm.TflmProblem` may fix
        some offsets (``offline``, bytes).
    alignment : int
        Sizes are rounded up to it (a no-op on TFLM's problems, already 16-byte sized).

    Returns
    -------
    Plan
        ``arena_bytes`` = ``GetMaximumMemorySize()`` (max offset + size); ``stats["order"]``: buffer ids in
        placement order.
    """
    bufs = problem.buffers
    offline = _offline(problem)
    size = [align_up(b.size, alignment) if alignment > 1 else b.size for b in bufs]
    fixed = [i for i, b in enumerate(bufs) if b.id in offline]
    online = [i for i, b in enumerate(bufs) if b.id not in offline][::-1]
    online.sort(key=lambda i: -size[i])  # stable, as ReverseSortInPlace
    order = fixed + online
    # The offset-sorted list of placed buffers (ties: insertion order), as numpy arrays so the
    # walk over it is vectorised: O(n) numpy work per buffer instead of a Python loop.
    n = len(order)
    p_off = np.zeros(n, dtype=np.int64)
    p_end = np.zeros(n, dtype=np.int64)
    p_first = np.zeros(n, dtype=np.int64)
    p_last = np.zeros(n, dtype=np.int64)
    offsets: dict[int, int] = {}
    for k, i in enumerate(order):
        if not k & 1023 and cancelled is not None and cancelled():
            raise PlanCancelled("tflm_greedy: cancelled")
        b = bufs[i]
        if b.id in offline:
            cand = int(offline[b.id])
        else:
            cand = _first_fit(p_off[:k], p_end[:k], p_first[:k], p_last[:k], b.first, b.last, size[i])
        offsets[b.id] = cand
        # The list walk inserts before the first entry whose offset is > cand.
        pos = int(np.searchsorted(p_off[:k], cand, side="right"))
        for arr, v in ((p_off, cand), (p_end, cand + size[i]), (p_first, b.first), (p_last, b.last)):
            arr[pos + 1:k + 1] = arr[pos:k]
            arr[pos] = v
    arena = max((offsets[b.id] + b.size for b in bufs), default=0)
    if progress is not None:
        progress(1.0, "tflm_greedy")
    return Plan("tflm_greedy", offsets, arena, _plan_alignment(alignment, offline),
                stats={"order": [bufs[i].id for i in order], "keeps_offline": bool(offline)})


@register("tflm_linear", "TFLM linear (LinearMemoryPlanner)",
          source="tflite-micro memory_planner/linear_memory_planner.cc", runtime="tflm")
def plan_tflm_linear(problem: PlanningProblem, alignment: int = TFLM_ALIGNMENT, *, progress=None,
                     cancelled=None, time_limit=None) -> Plan:
    """TFLM's ``LinearMemoryPlanner``: each buffer right after the previous one, in order.

    The arena is the sum of the (alignment-rounded) sizes. It ignores offline offsets, as the
    runtime's linear planner does.
    """
    offsets: dict[int, int] = {}
    top = end = 0
    for b in problem.buffers:
        offsets[b.id] = top
        end = top + b.size
        top += align_up(b.size, alignment) if alignment > 1 else b.size
    if cancelled is not None and cancelled():
        raise PlanCancelled("tflm_linear: cancelled")
    if progress is not None:
        progress(1.0, "tflm_linear")
    return Plan("tflm_linear", offsets, end if problem.buffers else 0, alignment)
