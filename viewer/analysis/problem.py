"""The planning problem: buffers with usage intervals and sizes.

It lives in the analysis layer because an analysis produces it; planners re-export it from
:mod:`viewer.planning.types`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


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
    alloc_queue : tuple of tuple of Buffer
        Optional, read by the ``litert`` planner only: per operator, every tensor LiteRT queues
        for allocation there (``ArenaPlanner::nodes_to_tensors_``) in insertion order,
        including ones outside this arena (in-place aliases, persistent tensors), each as a
        Buffer (alloc node, dealloc node, bytes, never freed). It decides the ties of LiteRT's
        unstable sort. Empty: the planner derives it from ``buffers``.
    """

    buffers: tuple[Buffer, ...]
    num_ops: int
    alloc_queue: tuple[tuple[Buffer, ...], ...] = field(default=(), compare=False, hash=False)

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
