"""``naive``: every buffer gets its own bytes; the arena is the naive sum (aligned)."""

from __future__ import annotations

from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, align_up


@register("naive", "Naive (no sharing)", source="every tensor its own bytes")
def plan_naive(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit=None,
) -> Plan:
    """Place buffers one after another in id order, each at an aligned offset.

    Returns
    -------
    Plan
        ``arena_bytes`` is the naive sum of sizes plus alignment padding.
    """
    offsets: dict[int, int] = {}
    top = 0
    end = 0
    for b in problem.buffers:
        top = align_up(top, alignment)
        offsets[b.id] = top
        end = max(end, top + b.size)
        top += b.size
    return Plan("naive", offsets, end, alignment)
