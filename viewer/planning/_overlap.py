"""What the offset planners share: polling, the problem as arrays, overlapping pairs.

:func:`overlap_lists` lists, for each buffer in a placing order, the earlier buffers whose usage
intervals overlap its own (numpy, O(n log n + pairs)); ``greedy_by_size``, ``greedy_by_breadth``
and ``litert`` walk those lists instead of every placed buffer.
"""

from __future__ import annotations

import operator

import numpy as np


def check_alignment(alignment: int) -> int:
    from viewer.errors import PlanningError

    if not isinstance(alignment, (int, np.integer)) or alignment < 1:
        raise PlanningError(f"alignment must be a positive integer, not {alignment!r}")
    return int(alignment)


class Poll:
    """Polls ``cancelled()`` and reports ``progress()`` every few ms of planner work.

    Work is counted in units of roughly a microsecond (a buffer visited in a Python loop, or a
    few hundred array elements); once ``budget`` units are spent, :meth:`tick` calls
    ``cancelled()``, raising :class:`viewer.errors.PlanCancelled` when it returns true, then
    ``progress(fraction, message)``. No clock is read, so the polling is the same on every
    machine and in tests.
    """

    __slots__ = ("cancelled", "progress", "message", "budget", "work")

    def __init__(self, cancelled, progress, message: str, budget: int = 2048):
        self.cancelled = cancelled
        self.progress = progress
        self.message = message
        self.budget = budget
        self.work = 0

    def check(self, fraction: float | None = None) -> None:
        """Poll now: raise PlanCancelled if cancelled, else report ``fraction`` if given."""
        self.work = 0
        if self.cancelled is not None and self.cancelled():
            from viewer.errors import PlanCancelled

            raise PlanCancelled(f"{self.message}: cancelled")
        if fraction is not None and self.progress is not None:
            self.progress(min(max(float(fraction), 0.0), 1.0), self.message)

    def tick(self, work: int, fraction: float) -> None:
        """Count ``work`` units; poll (and report ``fraction``) once the budget is spent."""
        self.work += work
        if self.work >= self.budget:
            self.check(fraction)

    def done(self) -> None:
        """Last poll; reports 1.0."""
        self.check(1.0)


def problem_arrays(problem: PlanningProblem, poll: Poll):
    """``problem.arrays()`` built 8192 buffers at a time, polling between them.

    Returns
    -------
    ids, first, last, size : numpy.ndarray
        Shape (n,), int64 each.
    """
    bufs = problem.buffers
    out = np.empty((len(bufs), 4), dtype=np.int64)
    get = operator.attrgetter("id", "first", "last", "size")
    for s in range(0, len(bufs), 8192):
        out[s:s + 8192] = list(map(get, bufs[s:s + 8192]))
        poll.check()
    return out[:, 0].copy(), out[:, 1].copy(), out[:, 2].copy(), out[:, 3].copy()


#: Overlapping pairs above which the planners scan every placed buffer per buffer instead of
#: listing the pairs (keeps the lists under ~160 MB; the scan is quadratic but still polled).
_MAX_PAIRS = 10_000_000
#: Pairs listed per numpy pass between two polls of ``cancelled()`` (a few ms each).
_CHUNK = 1 << 17


def overlap_lists(first: np.ndarray, last: np.ndarray, poll: Poll):
    """For each buffer ``k``, the buffers ``j < k`` whose usage intervals overlap its own.

    The pairs are listed from the buffers sorted by first operator (position ``p`` overlaps
    exactly the positions ``p + 1 .. hi[p] - 1`` after it, ``hi`` by ``searchsorted``), then
    grouped by the later buffer with a counting sort, in chunks of :data:`_CHUNK` pairs so
    that ``cancelled()`` is polled every few ms.

    Parameters
    ----------
    first, last : numpy.ndarray
        Shape (m,), int64: usage intervals (inclusive operator indices), in placing order.
    poll : _Poll
        Polled after every chunk.

    Returns
    -------
    (ptr, earlier) or None
        CSR lists, int64: ``earlier[ptr[k]:ptr[k + 1]]`` are the positions ``j < k`` whose
        intervals overlap buffer ``k``'s (any order). None when there are more than
        :data:`_MAX_PAIRS` overlapping pairs.
    """
    m = len(first)
    by_first = np.argsort(first, kind="stable")
    hi = np.searchsorted(first[by_first], last[by_first], side="right")
    count = hi - np.arange(m) - 1
    cum = np.cumsum(count)
    total = int(cum[-1]) if m else 0
    if total > _MAX_PAIRS:
        return None
    poll.check()
    chunks = []
    per_buffer = np.zeros(m, dtype=np.int64)
    p0 = 0
    while p0 < m:
        done = int(cum[p0 - 1]) if p0 else 0
        p1 = max(int(np.searchsorted(cum, done + _CHUNK, side="right")), p0 + 1)
        cnt = count[p0:p1]
        n_pairs = int(cum[p1 - 1]) - done
        p0, q0 = p1, p0
        if not n_pairs:
            continue
        src = np.repeat(np.arange(q0, p1), cnt)
        dst = np.arange(n_pairs) - np.repeat(np.cumsum(cnt) - cnt, cnt) + src + 1
        a, b = by_first[src], by_first[dst]
        # Sorted (later << 32 | earlier) keys: the chunk grouped by its later buffer.
        keys = (np.maximum(a, b) << 32) | np.minimum(a, b)
        keys.sort()
        chunks.append(keys)
        per_buffer += np.bincount(keys >> 32, minlength=m)
        poll.check()
    ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(per_buffer, out=ptr[1:])
    fill = ptr[:-1].copy()
    earlier = np.empty(total, dtype=np.int64)
    for s in range(0, total, 8 * _CHUNK):  # touch the pages here, not in one scattered pass
        earlier[s:s + 8 * _CHUNK] = 0
        poll.check()
    while chunks:
        keys = chunks.pop(0)
        later = keys >> 32
        starts = np.flatnonzero(np.concatenate(([True], later[1:] != later[:-1])))
        sizes = np.diff(np.append(starts, len(keys)))
        within = np.arange(len(keys)) - np.repeat(starts, sizes)
        earlier[fill[later] + within] = keys & 0xFFFFFFFF
        fill[later[starts]] += sizes
        poll.check()
    return ptr, earlier
