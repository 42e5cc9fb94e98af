"""The planning problem and its answer, shared by every planner.

A planning problem is a set of buffers, each with a usage interval over operator indices and a
size in bytes. A plan gives each buffer a byte offset in one arena such that no two buffers
whose intervals overlap also overlap in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np

#: LiteRT's ``kDefaultTensorAlignment`` (tflite/core/subgraph.h / arena_planner.cc): 64 bytes.
DEFAULT_ALIGNMENT = 64


from viewer.analysis.problem import Buffer, PlanningProblem, unique_sorted  # noqa: E402,F401  (re-exported)


@dataclass(frozen=True)
class Plan:
    """A placement of every buffer.

    Attributes
    ----------
    planner : str
        Registry name of the planner that made it.
    offsets : Mapping[int, int]
        Buffer id -> byte offset from the arena's start.
    arena_bytes : int
        max(offset + size) over all buffers: the arena's high-water mark, in bytes.
    alignment : int
        Every offset is a multiple of this.
    proven_optimal : bool
        The planner proved no smaller arena exists for this problem.
    bound_bytes : int or None
        The best lower bound the planner proved (>= the widest operator's breadth).
    stats : Mapping[str, Any]
        Planner-specific figures (time, status, gap...).
    """

    planner: str
    offsets: Mapping[int, int]
    arena_bytes: int
    alignment: int = DEFAULT_ALIGNMENT
    proven_optimal: bool = False
    bound_bytes: int | None = None
    stats: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


ProgressFn = Callable[[float, str], None]
"""``progress(fraction in [0, 1], message)``."""
CancelledFn = Callable[[], bool]
"""Returns True when the caller wants the planner to stop (it raises PlanCancelled)."""


class Planner(Protocol):
    """The one signature every planner has."""

    def __call__(
        self,
        problem: PlanningProblem,
        alignment: int = DEFAULT_ALIGNMENT,
        *,
        progress: ProgressFn | None = None,
        cancelled: CancelledFn | None = None,
        time_limit: float | None = None,
    ) -> Plan: ...


def align_up(n: int, alignment: int) -> int:
    """Round ``n`` up to a multiple of ``alignment``."""
    return -(-n // alignment) * alignment

