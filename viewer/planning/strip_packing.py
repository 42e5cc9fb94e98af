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
"""

from __future__ import annotations

import numpy as np

from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, align_up


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
    progress, cancelled, time_limit
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

    Notes
    -----
    O(n * s) with n buffers and s skyline steps (s <= 2n + 1); the fit search is vectorised.
    """
    from viewer.planning.greedy import _check_alignment

    alignment = _check_alignment(alignment)
    ids, first, last, size = problem.arrays()
    n = len(ids)
    offsets: dict[int, int] = {int(i): 0 for i, s in zip(ids, size) if s == 0}
    todo = size > 0
    if not todo.any():
        return Plan("strip_packing", offsets, 0, alignment, stats={"wasted_steps": 0})
    length = last - first + 1
    # Skyline: parallel lists of step starts, ends (inclusive) and heights, left to right.
    lo = int(first[todo].min())
    hi = int(last[todo].max())
    starts, ends, heights = [lo], [hi], [0]
    wasted = 0
    remaining = int(todo.sum())
    order = np.arange(n)
    while remaining:
        k = min(range(len(heights)), key=lambda j: (heights[j], j))
        s0, s1, h = starts[k], ends[k], heights[k]
        fits = todo & (first >= s0) & (last <= s1)
        if fits.any():
            cand = order[fits]
            # Longest usage interval, then largest size, then lowest id.
            key = np.lexsort((ids[cand], -size[cand], -length[cand]))
            i = int(cand[key[0]])
            off = align_up(h, alignment)
            offsets[int(ids[i])] = off
            todo[i] = False
            remaining -= 1
            top = off + int(size[i])
            f, l = int(first[i]), int(last[i])
            new = []
            if f > s0:
                new.append((s0, f - 1, h))
            new.append((f, l, top))
            if l < s1:
                new.append((l + 1, s1, h))
            starts[k:k + 1] = [x[0] for x in new]
            ends[k:k + 1] = [x[1] for x in new]
            heights[k:k + 1] = [x[2] for x in new]
        else:
            wasted += 1
            left = heights[k - 1] if k > 0 else None
            right = heights[k + 1] if k + 1 < len(heights) else None
            # A lone step over the whole timeline always fits every buffer, so one exists.
            heights[k] = min(x for x in (left, right) if x is not None)
        _merge_equal(starts, ends, heights)
    arena = max((offsets[int(i)] + int(s) for i, s in zip(ids, size)), default=0)
    return Plan("strip_packing", offsets, arena, alignment, stats={"wasted_steps": wasted})


def _merge_equal(starts: list[int], ends: list[int], heights: list[int]) -> None:
    """Merge neighbouring skyline steps of equal height, in place."""
    j = 1
    while j < len(heights):
        if heights[j] == heights[j - 1]:
            ends[j - 1] = ends[j]
            del starts[j], ends[j], heights[j]
        else:
            j += 1
