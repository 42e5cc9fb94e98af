"""The offset planners' gap search as one sweep over time, for tensors placed in time order.

``greedy_by_size`` and ``litert`` place tensors one after another; each goes into a gap among
the *placed tensors whose usage interval overlaps its own*. When the tensors are placed in
non-decreasing order of their first operator (LiteRT's order whenever sizes tie, and
greedy_by_size's too: deep graphs of equal-sized activations, the residual chains of
benchmarks/bench_scale.py), those placed tensors are exactly the ones still live at the new
tensor's first operator: a placed tensor ``j`` has ``first[j] <= first[k] <= last[k]``, so it
overlaps ``k`` exactly when ``last[j] >= first[k]``.

So one sweep keeps the live placed tensors sorted by offset and drops each once its last
operator is passed (a heap by last operator). Live tensors are pairwise live together, so their
byte ranges are disjoint and their offsets distinct, and the gaps between them are kept sorted
by size: no pair lists (:func:`viewer.planning._overlap.overlap_lists`), no walk per tensor. Same offsets as the pair-list paths, which tests/planning/test_litert_fast.py
and tests/planning/test_greedy.py check against the straightforward re-statements.
"""

from __future__ import annotations

import bisect
import heapq
from typing import Callable

import numpy as np

#: Off switch for tests (the pair-list paths must give the same offsets).
ENABLED = True


def in_time_order(first: np.ndarray) -> bool:
    """True when ``first`` (shape (m,), int64: first operators in placing order) never
    decreases, so :func:`sweep_place` applies."""
    return ENABLED and (len(first) < 2 or bool((first[1:] >= first[:-1]).all()))


def sweep_place(
    first: list[int],
    last: list[int],
    size: list[int],
    end_of: Callable[[int, int], int],
    poll,
) -> list[int]:
    """Offsets of tensors placed in time order, each by a gap search over the live placed ones.

    The gap search is the *best-fit* rule both planners reduce to when every end is aligned
    (greedy_by_size always; LiteRT when every size is a multiple of the alignment): the
    smallest gap between consecutive live tensors (from 0 below the first) that holds
    ``size`` bytes, the lowest on ties, else the highest end. The gaps are kept sorted by
    (bytes, start), so each tensor costs O(log n) plus the list inserts.

    Parameters
    ----------
    first, last, size : list of int
        Usage intervals (operator indices, inclusive; ``first`` non-decreasing) and bytes
        (> 0), in placing order.
    end_of : callable
        ``end_of(offset, size)``: the end a placed tensor's gap search sees (greedy_by_size
        uses the aligned end, LiteRT the plain one).
    poll : viewer.planning._overlap.Poll
        Ticked as tensors are placed.

    Returns
    -------
    list of int
        Offsets in bytes, in placing order.
    """
    m = len(first)
    offs: list[int] = []  # live placed tensors, ascending offset
    ends: list[int] = []  # their ends (end_of), same order
    gaps: list[int] = []  # (bytes << 63 | start) of the gaps > 0 between them, ascending
    expiry: list[tuple[int, int]] = []  # (last operator, offset) of the live ones
    out = [0] * m
    pop, push, find = heapq.heappop, heapq.heappush, bisect.bisect_left

    def drop_gap(g: int, start: int) -> None:
        if g > 0:
            del gaps[find(gaps, (g << 63) | start)]

    def add_gap(g: int, start: int) -> None:
        if g > 0:
            bisect.insort(gaps, (g << 63) | start)

    for k in range(m):
        f = first[k]
        while expiry and expiry[0][0] < f:
            i = find(offs, pop(expiry)[1])
            below = ends[i - 1] if i else 0
            drop_gap(offs[i] - below, below)
            if i + 1 < len(offs):
                drop_gap(offs[i + 1] - ends[i], ends[i])
                add_gap(offs[i + 1] - below, below)
            del offs[i], ends[i]
        s = size[k]
        j = find(gaps, s << 63)
        best = gaps[j] & _LOW if j < len(gaps) else (ends[-1] if ends else 0)
        out[k] = best
        i = find(offs, best)
        e = end_of(best, s)
        below = ends[i - 1] if i else 0
        if i < len(offs):
            drop_gap(offs[i] - below, below)
            add_gap(offs[i] - e, e)
        add_gap(best - below, below)
        offs.insert(i, best)
        ends.insert(i, e)
        push(expiry, (last[k], best))
        poll.tick(4, k / m)
    return out


_LOW = (1 << 63) - 1
