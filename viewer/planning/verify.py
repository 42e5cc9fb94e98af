"""An independent check of any plan (after Arm Vela's ``verify_allocation``)."""

from __future__ import annotations

import numpy as np

from viewer.errors import PlanningError
from viewer.planning.types import Plan, PlanningProblem


def verify_plan(problem: PlanningProblem, plan: Plan) -> None:
    """Check that ``plan`` is a valid placement of ``problem``.

    Checks: every buffer has an offset; every offset is >= 0 and a multiple of
    ``plan.alignment``; no two buffers overlap in both usage interval (inclusive operator
    indices) and bytes; ``plan.arena_bytes`` equals max(offset + size).

    Raises
    ------
    viewer.errors.PlanningError
        Naming the first violation found.
    """
    ids, first, last, size = problem.arrays()
    n = len(ids)
    if n == 0:
        if plan.arena_bytes != 0:
            raise PlanningError(f"{plan.planner}: empty problem but arena {plan.arena_bytes}")
        return
    missing = [int(i) for i in ids if int(i) not in plan.offsets]
    if missing:
        raise PlanningError(f"{plan.planner}: no offset for buffers {missing[:10]}")
    off = np.array([plan.offsets[int(i)] for i in ids], dtype=np.int64)
    if (off < 0).any():
        bad = int(ids[np.argmax(off < 0)])
        raise PlanningError(f"{plan.planner}: buffer {bad} has a negative offset")
    if plan.alignment > 0 and (off % plan.alignment).any():
        bad = int(ids[np.argmax(off % plan.alignment != 0)])
        raise PlanningError(
            f"{plan.planner}: buffer {bad} offset {int(off[ids == bad][0])} "
            f"is not {plan.alignment}-byte aligned"
        )
    end = off + size
    span = int(end.max())
    if span != plan.arena_bytes:
        raise PlanningError(
            f"{plan.planner}: arena_bytes {plan.arena_bytes} but buffers end at {span}"
        )
    # Sweep over operators: at each operator, sort live buffers by offset and check neighbours.
    live = size > 0
    # Any two overlapping intervals are both live where the later one starts.
    for op in np.unique(first):
        sel = live & (first <= op) & (last >= op)
        if sel.sum() < 2:
            continue
        o = off[sel]
        e = end[sel]
        i_sel = ids[sel]
        k = np.argsort(o, kind="stable")
        o, e, i_sel = o[k], e[k], i_sel[k]
        clash = np.nonzero(o[1:] < np.maximum.accumulate(e)[:-1])[0]
        if len(clash):
            j = clash[0] + 1
            raise PlanningError(
                f"{plan.planner}: buffer {int(i_sel[j])} at [{int(o[j])}, {int(e[j])}) overlaps "
                f"another live buffer at operator {int(op)}"
            )
