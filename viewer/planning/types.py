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


@dataclass(frozen=True)
class Buffer:
    """One thing to place in the arena.

    Attributes
    ----------
    id : int
        Tensor index in the subgraph (kernel temporaries use the runtime's indices, which
        follow the model's tensors).
    first : int
        First operator that uses it, inclusive.
    last : int
        Last operator that uses it, inclusive.
    size : int
        Bytes (unaligned; planners round offsets, not sizes).
    pinned : bool
        Never freed during inference (graph inputs, outputs, variables): LiteRT's
        ``dealloc_node == kNodeNotAssigned``. Only the ``litert`` planner's order uses it.
    """

    id: int
    first: int
    last: int
    size: int
    pinned: bool = False


@dataclass(frozen=True)
class PlanningProblem:
    """Buffers to place, and the number of operators they span.

    Attributes
    ----------
    buffers : tuple of Buffer
        In tensor-index order.
    num_ops : int
        Operators in the subgraph; every ``last`` is < ``num_ops`` (or 0 when there are none).
    """

    buffers: tuple[Buffer, ...]
    num_ops: int

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(ids, first, last, size)`` as int64 arrays of shape (n,)."""
        n = len(self.buffers)
        out = np.empty((4, n), dtype=np.int64)
        for i, b in enumerate(self.buffers):
            out[0, i], out[1, i], out[2, i], out[3, i] = b.id, b.first, b.last, b.size
        return out[0], out[1], out[2], out[3]

    def breadth(self) -> np.ndarray:
        """Bytes live at each operator, shape (num_ops,): the operator breadth."""
        _, first, last, size = self.arrays()
        m = max(self.num_ops, int(last.max()) + 1 if len(last) else 0, 1)
        diff = np.zeros(m + 1, dtype=np.int64)
        np.add.at(diff, first, size)
        np.add.at(diff, last + 1, -size)
        return np.cumsum(diff)[:m]

    def lower_bound(self) -> int:
        """The widest operator's breadth in bytes: no plan can be smaller."""
        if not self.buffers:
            return 0
        return int(self.breadth().max())


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
