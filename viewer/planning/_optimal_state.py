"""The anytime state of one ``optimal`` run: best plan so far, proven bound, log, progress.

Shared by the stages of :mod:`viewer.planning.optimal` (heuristics, the MiniMalloc-style
search in :mod:`viewer.planning._optimal_search`, CP-SAT in :mod:`viewer.planning._optimal_cp_sat`).
Every plan offered is checked by :func:`viewer.planning.verify.verify_plan` before it is kept.
"""

from __future__ import annotations

import time
from typing import Any

from viewer.errors import PlanCancelled, PlanningError
from viewer.planning.bounds import round_up
from viewer.planning.types import Plan
from viewer.units import format_bytes

NAME = "optimal"


class _Anytime:
    """Best plan, proven bound and bookkeeping for one run."""

    def __init__(self, problem, alignment, deadline, t0, progress, cancelled, improved=None):
        self.problem = problem
        self.improved = improved
        self.alignment = alignment
        self.deadline = deadline
        self.t0 = t0
        self.progress = progress
        self.cancelled = cancelled
        self.best_offsets: dict[int, int] = {}
        self.zero_offsets: dict[int, int] = {}  # zero-size buffers: offset 0, not searched
        self.best_arena = 0
        self.best_from = ""
        self.bound = 0
        self.granularity = 1  # the optimum is a multiple of it
        self.stop_target: int | None = None  # stop once this budget is met or proven unmeetable
        self.log: list[dict[str, Any]] = []
        self._last_fraction = 0.0

    def offer(self, offsets: dict[int, int], source: str) -> bool:
        """Keep ``offsets`` if smaller than the best so far and valid (checked by
        :func:`verify_plan`, so a search bug can never reach the user as a bad plan)."""
        from viewer.planning.verify import verify_plan

        arena = max((offsets[b.id] + b.size for b in self.problem.buffers), default=0)
        if self.best_offsets and arena >= self.best_arena:
            return False
        try:
            verify_plan(self.problem, Plan(NAME, offsets, int(arena), self.alignment))
        except PlanningError as e:
            self.log.append({"stage": source, "status": "rejected", "reason": str(e)})
            return False
        self.best_offsets, self.best_arena, self.best_from = dict(offsets), int(arena), source
        if self.improved is not None:
            self.improved(Plan(NAME, dict(offsets), int(arena), self.alignment,
                               int(arena) <= self.bound, min(self.bound, int(arena)),
                               {"found_by": source, "seconds": time.monotonic() - self.t0}))
        self.report()
        return True

    def raise_bound(self, b: int) -> None:
        """A proven lower bound ``b``, rounded up to :attr:`granularity` (see
        :func:`viewer.planning.bounds.size_granularity`)."""
        self.bound = max(self.bound, round_up(b, self.granularity))

    @property
    def done(self) -> bool:
        if self.best_arena <= self.bound:
            return True
        t = self.stop_target
        return t is not None and bool(self.best_offsets) and (self.best_arena <= t or self.bound > t)

    def poll(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise PlanCancelled("optimal planner cancelled")

    def report(self, message: str = "") -> None:
        if self.progress is None:
            return
        total = max(self.deadline - self.t0, 1e-9)
        frac = min(max((time.monotonic() - self.t0) / total, self._last_fraction), 0.99)
        self._last_fraction = frac
        self.progress(frac, message or self.summary())

    def summary(self) -> str:
        """``optimal: arena 1.2 MiB, bound 1.1 MiB (gap 4.0%)``."""
        gap = (self.best_arena - self.bound) / self.best_arena if self.best_arena else 0.0
        return (f"optimal: arena {format_bytes(self.best_arena)}, bound {format_bytes(self.bound)} "
                f"(gap {gap:.1%})")
