"""Run several planners on one problem and pick the smallest plan."""

from __future__ import annotations

import time
from typing import Iterable

from viewer.errors import PlanCancelled
from viewer.planning.registry import get_planner, planner_names
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan, PlanningProblem
from viewer.planning.verify import verify_plan


def default_planner_names(include_exact: bool = False, runtime: str = "litert") -> list[str]:
    """Every registered planner; exact (slow) ones only when ``include_exact``; a runtime's own
    planner (e.g. ``tflm_greedy``) only for that ``runtime``."""
    return [n for n in planner_names()
            if (include_exact or not get_planner(n).exact)
            and get_planner(n).runtime in (None, runtime)]


def run_planners(
    problem: PlanningProblem,
    names: Iterable[str] | None = None,
    alignment: int = DEFAULT_ALIGNMENT,
    *,
    progress=None,
    cancelled=None,
    time_limit: float | None = None,
    verify: bool = True,
    planner_options: dict[str, dict] | None = None,
) -> dict[str, Plan]:
    """Run each named planner (default: every non-exact one) and verify its plan.

    ``planner_options`` maps a planner name to extra keyword arguments for it (e.g.
    ``{"optimal": {"target_bytes": 1048576, "stop_at_target": True}}``).

    Returns
    -------
    dict
        name -> Plan, in the order given. Each plan's ``stats["seconds"]`` is its run time.

    Raises
    ------
    viewer.errors.PlanningError
        Unknown planner, or a plan that fails :func:`verify_plan` (a bug, reported plainly).
    viewer.errors.PlanCancelled
        When ``cancelled()`` turned true.
    """
    names = list(names) if names is not None else default_planner_names()
    out: dict[str, Plan] = {}
    for k, name in enumerate(names):
        if cancelled is not None and cancelled():
            raise PlanCancelled("planning cancelled")
        spec = get_planner(name)
        if progress is not None:
            progress(k / max(len(names), 1), f"planning: {spec.label}")
        t0 = time.perf_counter()
        sub = None
        if progress is not None:
            def sub(f, msg, _k=k, _label=spec.label):
                progress((_k + min(max(f, 0.0), 1.0)) / len(names), f"{_label}: {msg}" if msg else _label)
        extra = (planner_options or {}).get(name, {})
        plan = spec.func(problem, alignment, progress=sub, cancelled=cancelled, time_limit=time_limit,
                         **extra)
        dt = time.perf_counter() - t0
        plan = Plan(
            plan.planner, plan.offsets, plan.arena_bytes, plan.alignment,
            plan.proven_optimal, plan.bound_bytes, {**dict(plan.stats), "seconds": dt},
        )
        if verify:
            verify_plan(problem, plan)
        out[name] = plan
    if progress is not None:
        progress(1.0, "planned")
    return out


def best_plan_name(plans: dict[str, Plan]) -> str | None:
    """Name of the smallest plan; None when empty.

    On a tie the first registered wins, except ``naive``, which is a baseline and never "best"
    while any other plan ties it.
    """
    if not plans:
        return None
    order = list(plans)
    return min(plans, key=lambda n: (plans[n].arena_bytes, n == "naive", order.index(n)))
