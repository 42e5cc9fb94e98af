"""``optimal``'s last stage: OR-Tools CP-SAT on the whole problem for the time that is left.

Fixed x intervals (usage intervals), y intervals of fixed size, ``AddNoOverlap2D``, minimise the
highest end, hinted with the best plan and bounded below by the proven bound; offsets are
``alignment * k``. Called by :func:`viewer.planning.optimal.plan_optimal`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from viewer.errors import PlanCancelled
from viewer.planning._optimal_state import _Anytime


def _cp_sat_stage(st: _Anytime, start, end, size, idx, ids, alignment, workers: int) -> str:
    """CP-SAT on the whole problem, hinted with the best plan, for the time that is left."""
    from ortools.sat.python import cp_model

    remaining = st.deadline - time.monotonic()
    if remaining < 0.05 or st.done:
        return "skipped"
    hi = st.best_arena
    lo = st.bound
    m = cp_model.CpModel()
    n = len(size)
    xs, ys, ks = [], [], []
    best = st.best_offsets
    for j in range(n):
        s = int(size[j])
        kmax = (hi - s) // alignment
        k = m.new_int_var(0, max(kmax, 0), f"k{j}")
        y = m.new_int_var(0, hi - s, f"y{j}") if alignment > 1 else k
        if alignment > 1:
            m.add(y == alignment * k)
        ks.append(k)
        ys.append(m.new_fixed_size_interval_var(y, s, f"yi{j}"))
        xs.append(m.new_fixed_size_interval_var(int(start[j]), int(end[j] - start[j]), f"xi{j}"))
        m.add_hint(k, best[int(ids[idx[j]])] // alignment)
    m.add_no_overlap_2d(xs, ys)
    top = m.new_int_var(lo, hi, "arena")
    for j in range(n):
        m.add(top >= ys[j].end_expr())
    m.add_hint(top, hi)
    m.minimize(top)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(remaining)
    solver.parameters.num_workers = workers
    box: dict[str, Any] = {}

    def run():
        box["status"] = solver.solve(m)

    t = threading.Thread(target=run, name="optimal-cp-sat", daemon=True)
    t0 = time.monotonic()
    t.start()
    cancelled = False
    while t.is_alive():
        t.join(0.05)
        if not cancelled and st.cancelled is not None and st.cancelled():
            cancelled = True
            solver.stop_search()
        st.report(st.summary().replace("optimal:", "optimal (CP-SAT):"))
    if cancelled:
        raise PlanCancelled("optimal planner cancelled")
    status = box.get("status")
    name = solver.status_name(status) if status is not None else "ERROR"
    st.log.append({"stage": "cp_sat", "status": name, "seconds": round(time.monotonic() - t0, 3),
                   "objective_bound": int(solver.best_objective_bound) if status is not None else None})
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        offs = {int(ids[idx[j]]): int(solver.value(ks[j])) * alignment for j in range(n)}
        st.offer({**st.zero_offsets, **offs}, "cp_sat")
        st.raise_bound(int(np.ceil(solver.best_objective_bound)))
        if status == cp_model.OPTIMAL:
            st.raise_bound(st.best_arena)
    elif status == cp_model.INFEASIBLE:
        st.raise_bound(hi)  # nothing within [lo, hi] other than the hint region: hi is optimal
    return name
