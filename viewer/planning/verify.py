"""An independent check of any plan (after Arm Vela's ``verify_allocation``)."""

from __future__ import annotations

import numpy as np

from viewer.errors import PlanningError
from viewer.model.dtypes import MAX_SUM_BYTES
from viewer.planning.types import Plan, PlanningProblem


def verify_plan(problem: PlanningProblem, plan: Plan) -> None:
    """Check that ``plan`` is a valid placement of ``problem``.

    Checks: every buffer has an offset; every offset is >= 0 and a multiple of
    ``plan.alignment``; no two buffers overlap in both usage interval (inclusive operator
    indices) and bytes; ``plan.arena_bytes`` equals max(offset + size); no offset or arena
    beyond 2^62 B (so int64 sums cannot wrap; sizes are capped at 2^53 B upstream).

    One exception, TFLM's: in a plan that keeps the model's offline plan (``tflm_greedy``, whose
    plan says so in ``stats["keeps_offline"]``), two buffers the model plans offline
    (``problem.offline``, an ``OfflineMemoryAllocation`` entry) may overlap at the model's
    offsets. That is the model's own plan, which TFLM takes as given
    (``GreedyMemoryPlanner::AddBuffer`` with an offline offset; Vela aliases ``scratch`` and
    ``scratch_fast`` on purpose). Every other buffer must still avoid them, and a planner that
    plans every buffer online may not alias them.

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
    get = plan.offsets.get
    offsets = list(map(get, ids.tolist()))
    if None in offsets:
        missing = [int(i) for i, o in zip(ids.tolist(), offsets) if o is None]
        raise PlanningError(f"{plan.planner}: no offset for buffers {missing[:10]}")
    worst = max(offsets)
    if worst > MAX_SUM_BYTES or plan.arena_bytes > MAX_SUM_BYTES:
        # Beyond 2^62 B an int64 offset + size could wrap; no real plan is that large.
        raise PlanningError(f"{plan.planner}: offset {worst:,} or arena {plan.arena_bytes:,} B is beyond "
                            f"2^62 B; not a plan of a real arena")
    off = np.array(offsets, dtype=np.int64)
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
    kept = _kept_offline(problem, plan, ids)
    if kept is None:
        _check_no_overlap(plan.planner, ids, first, last, off, end, size)
        return
    free = ~kept
    _check_no_overlap(plan.planner, ids[free], first[free], last[free], off[free], end[free], size[free])
    _check_against_fixed(plan.planner, ids, first, last, off, end, size, kept)


def _kept_offline(problem: PlanningProblem, plan: Plan, ids: np.ndarray) -> np.ndarray | None:
    """Mask of the buffers placed at the model's own offline offsets; None when fewer than two."""
    offline = getattr(problem, "offline", None) or {}
    if len(offline) < 2 or not plan.stats.get("keeps_offline"):
        return None
    kept = np.fromiter((int(i) in offline and plan.offsets[int(i)] == offline[int(i)] for i in ids.tolist()),
                       dtype=bool, count=len(ids))
    return kept if int(kept.sum()) >= 2 else None


def _check_against_fixed(name, ids, first, last, off, end, size, kept) -> None:
    """Every buffer not at an offline offset against every one that is (numpy, per buffer)."""
    k = np.nonzero(kept & (size > 0))[0]
    for i in np.nonzero(~kept & (size > 0))[0].tolist():
        hit = k[(first[k] <= last[i]) & (last[k] >= first[i]) & (off[k] < end[i]) & (end[k] > off[i])]
        if hit.size:
            j = int(hit[0])
            raise PlanningError(
                f"{name}: buffer {int(ids[i])} at [{int(off[i])}, {int(end[i])}) overlaps buffer "
                f"{int(ids[j])} at [{int(off[j])}, {int(end[j])}) (planned offline), both live at "
                f"operator {int(max(first[i], first[j]))}"
            )


def _check_no_overlap(name, ids, first, last, off, end, size) -> None:
    """Event sweep over time with the live buffers kept sorted by offset: O(n log n).

    The live set never overlaps (that is what is being checked), so a new buffer only has to
    be compared with its neighbours by offset.
    """
    import bisect

    keep = np.nonzero(size > 0)[0]
    if len(keep) < 2:
        return
    # Events: (time, kind, index). A buffer [first, last] leaves at last + 1; at one time,
    # departures (kind 0) go before arrivals (kind 1).
    times = np.concatenate([last[keep] + 1, first[keep]])
    kinds = np.concatenate([np.zeros(len(keep), np.int8), np.ones(len(keep), np.int8)])
    which = np.concatenate([keep, keep])
    order = np.lexsort((kinds, times))
    # Plain lists: indexing numpy arrays per event costs more than the sweep itself.
    leaving = (order < len(keep)).tolist()
    who = which[order].tolist()
    off_l, end_l = off.tolist(), end.tolist()
    offs: list[int] = []  # live offsets, sorted
    ends: list[int] = []  # their ends, same order
    owner: list[int] = []
    for gone, i in zip(leaving, who):
        o, e = off_l[i], end_l[i]
        j = bisect.bisect_left(offs, o)
        if gone:
            # Remove it (offsets are unique among non-overlapping live buffers of size > 0).
            if j < len(offs) and owner[j] == i:
                del offs[j], ends[j], owner[j]
            continue
        clash = None
        if j > 0 and ends[j - 1] > o:
            clash = owner[j - 1]
        elif j < len(offs) and offs[j] < e:
            clash = owner[j]
        if clash is not None:
            raise PlanningError(
                f"{name}: buffer {int(ids[i])} at [{o}, {e}) overlaps buffer {int(ids[clash])} "
                f"at [{int(off[clash])}, {int(end[clash])}), both live at operator "
                f"{int(max(first[i], first[clash]))}"
            )
        offs.insert(j, o)
        ends.insert(j, e)
        owner.insert(j, i)
