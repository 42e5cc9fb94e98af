"""``optimal``'s exact stage: MiniMalloc-style decision searches ("arena <= C?") by capacity.

Descends from the best arena towards the proven bound in passes of geometrically growing time
slices, suspending and resuming searches by capacity (Moffitt, ASPLOS 2023; google/minimalloc
src/solver.cc; the search itself is :mod:`viewer.planning._minimalloc`). Called by
:func:`viewer.planning.optimal.plan_optimal`; arrays are the non-zero-size buffers, shape (n,),
half-open intervals ``[start, end)`` over operators, sizes in bytes.
"""

from __future__ import annotations

import time

from viewer.errors import PlanCancelled
from viewer.planning import _minimalloc as mm
from viewer.planning._optimal_state import _Anytime


#: Seconds of the first slice; every pass doubles it.
FIRST_SLICE = 0.05
#: The attempt at the proven bound gets this many times the descent's slice in each pass.
BOUND_SHARE = 2.0
#: Capacities the descent tries per pass before it hands over to the bound.
DESCENT_TRIES = 2


#: Seconds of searching after which the other preorders move to worker processes
#: (:mod:`viewer.planning._mm_workers`); problems decided sooner never start one.
PROCESSES_AFTER = 0.1


class _Capacities:
    """Open decision searches, by capacity (bytes), resumed when the same capacity comes back."""

    def __init__(self, st: _Anytime, start, end, size, idx, ids, alignment, params, stage_end,
                 processes: bool = False):
        self.st, self.idx, self.ids = st, idx, ids
        self.args = (start, end, size)
        self.alignment, self.params, self.stage_end = alignment, params, stage_end
        self.sw = mm.sweep(start, end)
        self.open: dict[int, mm.Decision] = {}
        self.processes = processes
        self.pool = None
        self.t_start = time.monotonic()

    def _start_pool(self) -> None:
        """Start the worker processes once the search has run :data:`PROCESSES_AFTER`."""
        if not self.processes or time.monotonic() - self.t_start < PROCESSES_AFTER:
            return
        self.processes = False  # once
        from viewer.planning._mm_workers import WorkerPool

        p = self.params or mm.SearchParams()
        others = list(dict.fromkeys(p.preordering_heuristics))[1:]
        if others and p.static_preordering:
            self.pool = WorkerPool(*self.args, self.alignment, p, others)
            self.st.log.append({"stage": "minimalloc", "workers": len(self.pool.workers),
                                "preorders": others,
                                "seconds": round(time.monotonic() - self.st.t0, 3)})

    def attempt(self, cap: int, seconds: float) -> str:
        """Decide "arena <= cap?" for up to ``seconds`` more; keep what it proves or finds."""
        st = self.st
        self._start_pool()
        d = self.open.pop(cap, None)
        if d is None:
            d = mm.Decision(*self.args, cap, self.alignment, params=self.params, sw=self.sw)
        d.pool = self.pool
        deadline = min(self.stage_end, time.monotonic() + max(seconds, 0.01))
        status = d.run(deadline, st.cancelled, lambda _d: st.report())
        st.log.append({"stage": "minimalloc", "capacity": int(cap), "status": status,
                       "nodes": d.nodes, "seconds": round(d.seconds, 3), "preorder": d.heuristic})
        if status == mm.CANCELLED:
            d.close()
            raise PlanCancelled("optimal planner cancelled")
        if status == mm.FEASIBLE:
            offs = {int(self.ids[k]): int(d.offsets[j]) for j, k in enumerate(self.idx)}
            st.offer({**st.zero_offsets, **offs}, "minimalloc")
            st.log[-1]["arena"] = st.best_arena
        elif status == mm.INFEASIBLE:
            st.raise_bound(cap + 1)
        else:
            self.open[cap] = d
        # A search outside [bound, best arena) can no longer tell anything new.
        for c in [c for c in self.open if c < st.bound or c >= st.best_arena]:
            self.open.pop(c).close()
        st.report()
        return status

    def close(self) -> None:
        try:
            for d in self.open.values():
                d.close()
            self.open.clear()
        finally:
            if self.pool is not None:
                self.pool.close()
                self.pool = None


def _dfs_stage(st: _Anytime, start, end, size, idx, ids, alignment, params, budget: float,
               target: int | None = None, processes: bool = False) -> str:
    """Decision searches that descend from the best arena, in passes of growing time slices.

    Feasibility is monotone in the capacity: "infeasible at C" proves the bound C + 1, and
    "feasible at C" gives an arena <= C. Each pass, with a slice twice the last one's
    (:data:`FIRST_SLICE` first):

    1. descends from the best arena U towards the proven bound L (with a slice that doubles
       after a pass where the descent found something and halves after one where it did not,
       down to a quarter of the pass's slice, so a stalled descent costs the bound's attempt
       little but still grows): the capacity half way
       between them, and after a search runs out of time the one half way from there to U
       (closer to U feasible answers come faster; :data:`DESCENT_TRIES` of them per pass),
       starting again half way after every answer; then
    2. resumes the attempt at the proven bound for :data:`BOUND_SHARE` slices (a yes there ends
       everything; nobody can say how long it takes, so it never runs long first).

    Every search that runs out of time is suspended, not dropped, and resumed when a later
    pass asks for the same capacity (the bound's attempt always is). Every improvement is
    offered (and reported) at once.

    With a ``target`` (bytes; a budget the caller wants to meet, as MiniMalloc's
    ``--capacity``), passes ask "does it fit in ``target``?" (and, for a quarter of that time,
    the bound: a loose target can be slower to meet than a tight optimum) until that is
    answered, then go on as above.
    """
    stage_end = min(st.deadline, time.monotonic() + budget)
    caps = _Capacities(st, start, end, size, idx, ids, alignment, params, stage_end, processes)
    outcome = "open"
    slice_ = FIRST_SLICE  # the bound's attempt gets BOUND_SHARE of it; doubles every pass
    descent_slice = FIRST_SLICE  # doubles after a fruitful pass, else halves (>= slice_ / 4)
    try:
        while not st.done and time.monotonic() < stage_end:
            st.poll()
            before = (st.best_arena, st.bound)
            if target is not None:
                cap = target - target % st.granularity
                if st.bound <= cap < st.best_arena:
                    caps.attempt(cap, BOUND_SHARE * slice_)
                    if st.bound < cap and not st.done and time.monotonic() < stage_end:
                        caps.attempt(st.bound, slice_ / 2)  # the optimum may be far below
                    slice_ *= 2
                    continue
                target = None
            tries = 0
            while not st.done and time.monotonic() < stage_end and tries < DESCENT_TRIES:
                top = st.best_arena - 1
                cap = top - (top - st.bound) // 2 ** (tries + 1)  # 1/2, 3/4, ... of the way
                cap -= cap % st.granularity  # the same question, and a stronger answer
                if cap <= st.bound:
                    break  # the bound is the next step's
                status = caps.attempt(cap, descent_slice)
                tries = tries + 1 if status == mm.TIMEOUT else 0
            if (st.best_arena, st.bound) != before:
                descent_slice *= 2
            else:
                descent_slice = max(slice_ / 4, descent_slice / 2)
            if not st.done and time.monotonic() < stage_end:
                caps.attempt(st.bound, BOUND_SHARE * slice_)
            if (st.best_arena, st.bound) != before:
                outcome = "improved"
            slice_ *= 2
    finally:
        caps.close()
    if st.done:
        outcome = "optimal"
    return outcome
