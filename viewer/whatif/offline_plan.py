"""Plan a model for TFLite Micro offline: the offsets to write into ``OfflineMemoryAllocation``.

Every tensor TFLM plans gets the chosen planner's offset; the measured kernel scratch buffers
are planned with them (so the plan leaves room for them) but stay online, as TFLM cannot take
them offline (they are not tensors). TFLM's greedy planner then places them first-fit around the
fixed tensors; :func:`offline_plan` predicts that with ``tflm_greedy`` (re-stated exactly), which
is the head the runtime will report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from viewer.analysis.tflm import TFLM_ALIGNMENT, tflm_problem
from viewer.model.types import Model
from viewer.planning.run import run_planners
from viewer.planning.tflm import plan_tflm_greedy


@dataclass(frozen=True)
class OfflinePlan:
    """Offsets to store, and what TFLM will do with them (bytes).

    Attributes
    ----------
    offsets : tuple of int
        One per tensor across all subgraphs (-1: online), the metadata's order.
    planner : str
    planned_bytes : int
        The planner's arena over tensors and scratch.
    predicted_head_bytes : int
        ``tflm_greedy`` with these offsets fixed and the scratch online: TFLM's head.
    greedy_head_bytes : int
        TFLM's head without an offline plan (its greedy planner on the same problem).
    given_head_bytes : int
        TFLM's head for the file as given: its greedy planner keeping the model's own
        ``OfflineMemoryAllocation`` entry when it has one (then it can differ from
        ``greedy_head_bytes``, e.g. Vela's plan aliasing scratch and scratch_fast).
    has_offline_plan : bool
        The model already carries an ``OfflineMemoryAllocation`` entry.
    proven_optimal : bool
    """

    offsets: tuple[int, ...]
    planner: str
    planned_bytes: int
    predicted_head_bytes: int
    greedy_head_bytes: int
    proven_optimal: bool
    num_subgraphs: int
    scratch_count: int
    given_head_bytes: int = 0
    has_offline_plan: bool = False

    @property
    def worse_than_given(self) -> bool:
        """The new plan does not beat the model's existing offline plan (bytes of TFLM's head)."""
        return self.has_offline_plan and self.predicted_head_bytes >= self.given_head_bytes


def offline_plan(model: Model, scratch=(), *, planner: str = "optimal",
                 time_limit: float | None = 10.0) -> OfflinePlan:
    """Offsets for every tensor TFLM plans, from ``planner`` under TFLM's rules.

    The model's own offline entry, if any, is not kept: everything is planned afresh. What
    TFLM does with the file as given (that entry kept) is ``given_head_bytes``, the figure to
    compare with: a plan that does not beat it is ``worse_than_given``.

    Raises
    ------
    viewer.errors.PlanningError
        Unknown planner.
    """
    n = sum(len(g.tensors) for g in model.subgraphs)
    online = tflm_problem(model, scratch, offline_offsets=[-1] * n)
    plan = run_planners(online, [planner], TFLM_ALIGNMENT, time_limit=time_limit)[planner]
    greedy = plan_tflm_greedy(online).arena_bytes
    offsets = [-1] * n
    for b in online.buffers:
        if b.id < online.tensor_count:
            offsets[b.id] = int(plan.offsets[b.id])
    fixed = replace(online, offline={i: o for i, o in enumerate(offsets) if o >= 0})
    predicted = plan_tflm_greedy(fixed).arena_bytes
    given = tflm_problem(model, scratch)  # the model's own offline entry, if any, kept
    has_entry = bool(given.offline)
    given_head = plan_tflm_greedy(given).arena_bytes if has_entry else greedy
    return OfflinePlan(tuple(offsets), planner, plan.arena_bytes, predicted, greedy,
                       plan.proven_optimal, len(model.subgraphs), len(tuple(scratch)),
                       given_head, has_entry)
