"""``optimal``: the smallest tensor arena, proven (anytime: best found, proven bound, gap).

The problem is two-dimensional packing with fixed x (usage intervals over operators) and free
y (byte offsets): dynamic storage allocation, NP-hard. The planner

1. starts from the best plan of the registered heuristic (non-exact) planners;
2. stops at once when that plan already meets the lower bound (the widest operator's breadth,
   raised by :func:`aligned_lower_bound` where alignment padding is unavoidable);
3. asks a MiniMalloc-style exact search (:mod:`viewer.planning._minimalloc`; Moffitt, ASPLOS
   2023, google/minimalloc src/solver.cc) whether the arena fits in capacities between the
   proven bound and the best arena, descending from the best arena in passes of geometrically
   growing time slices, the bound itself resumed in each pass
   (:mod:`viewer.planning._optimal_search`); the preorders of each search run at the same
   time in worker processes once it has run :data:`PROCESSES_AFTER` seconds
   (:mod:`viewer.planning._mm_workers`);
4. hands whatever gap is left to OR-Tools CP-SAT (fixed x intervals, y intervals of fixed size,
   ``AddNoOverlap2D``, minimise the highest end, hinted with the best plan, bounded below by the
   proven bound; offsets are ``alignment * k``), which also tightens the proven bound;

and stops at the lower bound or at ``time_limit`` seconds. The run's best plan and bound live in
:class:`viewer.planning._optimal_state._Anytime`; CP-SAT is :mod:`viewer.planning._optimal_cp_sat`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from viewer.errors import PlanCancelled, PlanningError
from viewer.planning import _minimalloc as mm
from viewer.planning._optimal_cp_sat import _cp_sat_stage
from viewer.planning._optimal_search import (  # noqa: F401 (re-exported: the search's tunables)
    BOUND_SHARE, DESCENT_TRIES, FIRST_SLICE, PROCESSES_AFTER, _dfs_stage,
)
from viewer.planning._optimal_state import NAME, _Anytime
from viewer.planning.bounds import size_granularity
from viewer.planning.registry import register
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem, unique_sorted
from viewer.units import format_bytes

#: Seconds when ``time_limit`` is None.
DEFAULT_TIME_LIMIT = 10.0

#: Problems with more buffers of positive size than this skip the exact searches (their
#: sweep and CP-SAT model grow with the pairs of overlapping buffers) and keep the best
#: heuristic plan, with its gap to the proven bound.
MAX_SEARCH_BUFFERS = 10_000

#: Ingredient names, in the order the planner uses them.
INGREDIENTS = ("heuristics", "aligned_bound", "minimalloc", "cp_sat")
#: Opt-in ingredients (not in the default): ``subset_bound``
#: (:func:`viewer.planning.bounds.subset_bound`, given :data:`SUBSET_SHARE` of the time left
#: after the heuristics; it raised no bound on the benchmark instances, see its docstring).
OPTIONAL_INGREDIENTS = ("subset_bound",)
SUBSET_SHARE = 0.25


def _check_alignment(alignment) -> int:
    if not isinstance(alignment, (int, np.integer)) or isinstance(alignment, bool) or alignment < 1:
        raise PlanningError(f"alignment must be a positive integer, not {alignment!r}")
    return int(alignment)


def aligned_lower_bound(start: np.ndarray, end: np.ndarray, size: np.ndarray, alignment: int) -> int:
    """A lower bound on the arena that counts alignment padding (bytes).

    Buffers live at the same time stack up. With every offset a multiple of ``alignment``, each
    buffer but the topmost takes at least ``align_up(size)`` bytes of the stack, so a set live
    together needs ``sum(align_up(size)) - max(align_up(size) - size)``. Taken over every
    section (the sets of buffers live just before each end time, which include every maximal
    clique of the interval graph). Equals the widest operator's breadth when ``alignment`` is 1.

    Parameters
    ----------
    start, end : ndarray of int, shape (n,)
        Half-open usage intervals ``[start, end)``.
    size : ndarray of int, shape (n,)
        Bytes.
    alignment : int
        Bytes.
    """
    if len(size) == 0:
        return 0
    pad = -(-size // alignment) * alignment
    best = 0
    for t in unique_sorted(end):
        live = (start < t) & (end >= t)
        if live.any():
            best = max(best, int(pad[live].sum() - (pad[live] - size[live]).max()))
    return best


def _heuristic_plans(problem, alignment, cancelled, time_limit) -> dict[str, Plan]:
    """Every registered non-exact planner's verified plan (a failing one is skipped)."""
    from viewer.planning.registry import PLANNERS, _load_all
    from viewer.planning.verify import verify_plan

    _load_all()
    out: dict[str, Plan] = {}
    for name, spec in list(PLANNERS.items()):
        if spec.exact:
            continue
        if cancelled is not None and cancelled():
            raise PlanCancelled("planning cancelled")
        try:
            plan = spec.func(problem, alignment, progress=None, cancelled=cancelled,
                             time_limit=time_limit)
            verify_plan(problem, plan)
        except PlanCancelled:
            raise
        except PlanningError:
            continue
        out[name] = plan
    return out


def _status(proven: bool, stop_target: int | None, arena: int, bound: int) -> str:
    """``optimal``, ``target met`` / ``target impossible`` (stopped there), or ``time limit``."""
    if proven:
        return "optimal"
    if stop_target is not None and arena <= stop_target:
        return "target met"
    if stop_target is not None and bound > stop_target:
        return "target impossible"
    return "time limit"


@register(
    NAME,
    "Optimal (proven)",
    exact=True,
    source="MiniMalloc (Moffitt, ASPLOS 2023; google/minimalloc src/solver.cc) and OR-Tools "
    "CP-SAT AddNoOverlap2D, started from the best heuristic plan",
)
def plan_optimal(
    problem: PlanningProblem,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit: float | None = None,
    ingredients: tuple[str, ...] = INGREDIENTS,
    params: mm.SearchParams | None = None,
    cp_sat_workers: int = 2,
    improved=None,
    target_bytes: int | None = None,
    stop_at_target: bool = False,
    search_processes: bool | None = None,
) -> Plan:
    """Place every buffer in the smallest tensor arena this planner can find and prove.

    Parameters
    ----------
    problem : PlanningProblem
        Usage intervals (inclusive operator indices) and sizes (bytes).
    alignment : int
        Every offset is a multiple of it (bytes; LiteRT uses 64).
    progress : callable, optional
        ``progress(fraction, message)``, fraction of the time limit used (< 1 until done).
    cancelled : callable, optional
        Polled often; when it returns True the planner raises PlanCancelled.
    time_limit : float, optional
        Seconds; default :data:`DEFAULT_TIME_LIMIT` (10). The planner stops earlier when the
        arena meets the proven bound.
    ingredients : tuple of str
        Which of ``heuristics``, ``aligned_bound`` (:func:`aligned_lower_bound`),
        ``minimalloc``, ``cp_sat`` to use (for benchmarks; default all), and the opt-in
        ``subset_bound`` (:data:`OPTIONAL_INGREDIENTS`).
    params : viewer.planning._minimalloc.SearchParams, optional
        Switches for the MiniMalloc search's ingredients (default: all on).
    cp_sat_workers : int
        CP-SAT search workers.
    improved : callable, optional
        ``improved(plan)`` with every better verified :class:`Plan` as soon as it is found
        (anytime; ``stats`` has ``found_by`` and ``seconds`` since the start). ``progress``
        is called at the same moment.
    target_bytes : int, optional
        A budget (bytes) to meet first: the search asks whether the arena fits in it before it
        looks for anything smaller or proves anything (the question MiniMalloc answers for
        its ``--capacity``); then it goes on as without it.
    stop_at_target : bool
        With ``target_bytes``: return as soon as a plan within it is found, or the proven bound
        exceeds it (``stats["target"]`` says which: ``met``, ``impossible``, or ``open`` when
        the time limit came first). No smaller arena is then looked for.
    search_processes : bool, optional
        Run every static preorder but the first in its own worker process once the search has
        run :data:`PROCESSES_AFTER` seconds (:mod:`viewer.planning._mm_workers`), so they
        search at the same time on more than one core. Default: where available (POSIX, not
        frozen, more than one core, ``ARENA_VIEWER_SEARCH_PROCESSES`` not ``0``). Every worker
        has ended when the planner returns.

    Returns
    -------
    Plan
        ``arena_bytes`` is the best arena found (bytes); ``bound_bytes`` the proven lower bound
        (>= the widest operator's breadth); ``proven_optimal`` when they meet. ``stats`` has
        ``gap`` (``(arena - bound) / arena``, 0.0 when proven), ``gap_bytes``, ``status``
        (``optimal`` or ``time limit``), ``ingredients`` (which stages ran and what each
        achieved), ``start`` (the heuristic it started from), ``found_by`` (the stage that
        found the final arena), ``lower_bound`` (widest operator's breadth), ``log`` (every
        search step), ``seconds``. All JSON-serialisable.

    Notes
    -----
    Time split: the heuristics run first (milliseconds); the MiniMalloc-style search gets 75%
    of what is left (100% without ``cp_sat``), in passes that each give the descent from the
    best arena one slice per capacity and the proven bound two, the slice doubling from
    :data:`FIRST_SLICE` every pass; CP-SAT gets the remainder.
    Zero-size buffers sit at offset 0 and take no part in the search.

    Raises
    ------
    viewer.errors.PlanCancelled
        When ``cancelled()`` returns True.
    viewer.errors.PlanningError
        For a bad alignment or time limit.
    """
    alignment = _check_alignment(alignment)
    limit = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
    if not limit > 0:
        raise PlanningError(f"time limit must be positive seconds, not {time_limit!r}")
    t0 = time.monotonic()
    st = _Anytime(problem, alignment, t0 + limit, t0, progress, cancelled, improved)
    st.poll()
    ids_all, first, last, size_all = problem.arrays()
    if len(ids_all) == 0:
        return Plan(NAME, {}, 0, alignment, True, 0,
                    {"gap": 0.0, "gap_bytes": 0, "status": "optimal", "ingredients": {},
                     "start": {"planner": "", "arena_bytes": 0}, "found_by": "",
                     "lower_bound": 0, "log": [], "seconds": time.monotonic() - t0})
    st.granularity = size_granularity(size_all, alignment)
    if target_bytes is not None and stop_at_target:
        st.stop_target = int(target_bytes)
    st.raise_bound(problem.lower_bound())
    if "aligned_bound" in ingredients:
        st.raise_bound(aligned_lower_bound(first, last + 1, size_all, alignment))
    used: dict[str, Any] = {}

    # 1. Heuristics.
    if "heuristics" in ingredients:
        plans = _heuristic_plans(problem, alignment, cancelled, time_limit)
        for name, p in sorted(plans.items(), key=lambda kv: kv[1].arena_bytes):
            st.offer(dict(p.offsets), name)
            break
        used["heuristics"] = {n: p.arena_bytes for n, p in plans.items()}
    if not st.best_offsets:
        # Every buffer stacked: always valid.
        top, offs = 0, {}
        for b in problem.buffers:
            top = -(-top // alignment) * alignment
            offs[b.id] = top
            top += b.size
        st.offer(offs, "stacked")
    start_from = (st.best_from, st.best_arena)
    st.report()

    # Zero-size buffers go at offset 0 and leave the search.
    nz = np.nonzero(size_all > 0)[0]
    st.zero_offsets = {int(ids_all[k]): 0 for k in np.nonzero(size_all == 0)[0]}
    start = first[nz]
    end = last[nz] + 1
    size = size_all[nz]

    if len(nz) > MAX_SEARCH_BUFFERS and not st.done:
        used["search"] = {"result": f"skipped: {len(nz):,d} buffers (more than "
                                    f"{MAX_SEARCH_BUFFERS:,d})"}
        ingredients = tuple(i for i in ingredients if i not in ("minimalloc", "cp_sat"))
    if "subset_bound" in ingredients and not st.done and len(nz):
        from viewer.planning.bounds import subset_bound

        before = st.bound
        r = subset_bound(start, end, size, st.bound, alignment=alignment, granularity=st.granularity,
                         upper=st.best_arena, cancelled=cancelled,
                         deadline=time.monotonic() + SUBSET_SHARE * (st.deadline - time.monotonic()))
        st.poll()
        st.raise_bound(r.bound)
        used["subset_bound"] = {"raised_bound": st.bound - before, "proofs": r.proofs,
                                "attempts": len(r.log), "seconds": round(r.seconds, 3)}
    # 2. MiniMalloc-style decision searches.
    if "minimalloc" in ingredients and not st.done and len(nz):
        share = 0.75 if "cp_sat" in ingredients else 1.0
        before = (st.best_arena, st.bound)
        budget = (st.deadline - time.monotonic()) * share
        if search_processes is None:
            from viewer.planning._mm_workers import available

            search_processes = available()
        used["minimalloc"] = {"result": _dfs_stage(st, start, end, size, nz, ids_all, alignment, params,
                                                   budget, target_bytes, search_processes),
                              "improved_arena": before[0] - st.best_arena,
                              "raised_bound": st.bound - before[1]}
    # 3. CP-SAT for the rest of the time.
    if "cp_sat" in ingredients and not st.done and len(nz) and time.monotonic() < st.deadline:
        before = (st.best_arena, st.bound)
        used["cp_sat"] = {"result": _cp_sat_stage(st, start, end, size, nz, ids_all, alignment, cp_sat_workers),
                          "improved_arena": before[0] - st.best_arena,
                          "raised_bound": st.bound - before[1]}

    offsets = {b.id: int(st.best_offsets.get(b.id, 0)) for b in problem.buffers}
    arena = st.best_arena
    bound = min(st.bound, arena)
    proven = arena <= bound
    stats = {
        "gap": 0.0 if proven else (arena - bound) / arena,
        "gap_bytes": int(arena - bound),
        "status": _status(proven, st.stop_target, arena, st.bound),
        "ingredients": used,
        "start": {"planner": start_from[0], "arena_bytes": start_from[1]},
        "found_by": st.best_from,
        "lower_bound": int(problem.lower_bound()),
        "granularity": st.granularity,
        "log": st.log,
        "seconds": time.monotonic() - t0,
    }
    if target_bytes is not None:
        stats["target"] = ("met" if arena <= target_bytes else
                           "impossible" if bound > target_bytes else "open")
        stats["target_bytes"] = int(target_bytes)
    if progress is not None:
        progress(1.0, f"optimal: arena {format_bytes(arena)}, "
                      + ("proven optimal" if proven else f"bound {format_bytes(bound)} (gap {stats['gap']:.1%})"))
    return Plan(NAME, offsets, int(arena), alignment, proven, int(bound), stats)
