"""``naive``: every buffer gets its own bytes; the arena is the naive sum (aligned)."""

from __future__ import annotations

from viewer.errors import PlanCancelled
from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, align_up


@register("naive", "Naive (no reuse)", source="every buffer its own bytes; in-place outputs still share their input's, as in LiteRT")
def plan_naive(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit=None,
) -> Plan:
    """Place buffers one after another in id order, each at an aligned offset.

    Polls ``cancelled()`` every 4096 buffers (raising
    :class:`viewer.errors.PlanCancelled`) and reports ``progress(1.0, ...)`` at the end.

    Returns
    -------
    Plan
        ``arena_bytes``: the sum of the buffers' sizes plus alignment padding. In-place outputs
        (RESHAPE and friends) are not buffers of their own, so this is below the analysis'
        ``naive_bytes``, which gives every tensor its own bytes.
    """
    offsets: dict[int, int] = {}
    top = 0
    end = 0
    for k, b in enumerate(problem.buffers):
        if not k & 4095 and cancelled is not None and cancelled():
            raise PlanCancelled("naive: cancelled")
        top = align_up(top, alignment)
        offsets[b.id] = top
        end = max(end, top + b.size)
        top += b.size
    if cancelled is not None and cancelled():
        raise PlanCancelled("naive: cancelled")
    if progress is not None:
        progress(1.0, "naive")
    return Plan("naive", offsets, end, alignment)
