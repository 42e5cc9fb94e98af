"""The sweep over usage intervals of the MiniMalloc-style search (google/minimalloc src/sweeper.cc).

Sections (the buffers live just before each distinct end time), partitions (runs of time where
some buffer is always live) and the pairwise overlaps; :mod:`viewer.planning._mm_search`
searches over them. :func:`section_spans` and :func:`section_loads` are the one definition of a
section and its breadth, also used by the lower bounds (:mod:`viewer.planning.bounds`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Sweep:
    """What the sweep over usage intervals finds (``minimalloc::SweepResult``).

    Attributes
    ----------
    sec_lo, sec_hi : ndarray of int, shape (n,)
        Buffer i lies in sections ``sec_lo[i] <= s < sec_hi[i]``.
    members : ndarray of int, shape (S, K)
        Buffers of each section, padded with -1.
    overlaps : list of ndarray
        ``overlaps[i]``: buffers whose usage interval overlaps buffer i's.
    partitions : list of (ndarray, (int, int))
        Buffers and section range of each independent run of time.
    """

    sec_lo: np.ndarray
    sec_hi: np.ndarray
    members: np.ndarray
    overlaps: list
    partitions: list
    num_sections: int


def section_spans(start, end) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sections of half-open usage intervals ``[start, end)`` and each buffer's span of them.

    Section ``k`` is the instant just before ``times[k]``, the ``k``-th distinct end time; a
    buffer is live in it iff ``start < times[k] <= end``. These are :func:`sweep`'s sections
    (``sec_lo``, ``sec_hi`` equal ``lo``, ``hi``), found with two binary searches.

    Returns
    -------
    times : ndarray of int, shape (S,)
    lo, hi : ndarray of int, shape (n,)
        Buffer ``i`` lies in sections ``lo[i] <= k < hi[i]``.
    """
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    times = np.unique(end)
    return (times, np.searchsorted(times, start, side="right"),
            np.searchsorted(times, end, side="right"))


def section_loads(lo: np.ndarray, hi: np.ndarray, size: np.ndarray, num_sections: int) -> np.ndarray:
    """Bytes live in each of ``num_sections`` sections: the sum of ``size[i]`` over the buffers
    whose span ``lo[i] <= k < hi[i]`` holds section ``k`` (shape (num_sections,), int64)."""
    delta = np.zeros(int(num_sections) + 1, np.int64)
    np.add.at(delta, np.asarray(lo, np.int64), np.asarray(size, np.int64))
    np.add.at(delta, np.asarray(hi, np.int64), -np.asarray(size, np.int64))
    return np.cumsum(delta)[:-1]


def sweep(start: np.ndarray, end: np.ndarray) -> Sweep:
    """Sweep half-open usage intervals ``[start, end)`` (shape (n,), ``end > start``).

    Follows ``Sweep()`` in google/minimalloc src/sweeper.cc (no gaps/windows): a section is
    the set of live buffers just before each distinct end time; a partition ends whenever no
    buffer is live.
    """
    n = len(start)
    # Points: (time, kind 0 = right / end, 1 = left / start, idx); ends before starts.
    times = np.concatenate([end, start])
    kinds = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64)])
    idxs = np.concatenate([np.arange(n), np.arange(n)])
    order = np.lexsort((idxs, kinds, times))
    sec_lo = np.zeros(n, np.int64)
    sec_hi = np.zeros(n, np.int64)
    sections: list[list[int]] = []
    partitions: list[list] = []
    active: set[int] = set()
    last_time = None
    last_sec = 0
    for k in order:
        t, kind, i = int(times[k]), int(kinds[k]), int(idxs[k])
        if last_time is None:
            last_time = t
        if kind == 0:
            if last_time < t:
                last_time = t
                sections.append(sorted(active))
            active.discard(i)
            sec_hi[i] = len(sections)
            if not active:
                partitions[-1][1] = (last_sec, len(sections))
                last_sec = len(sections)
        else:
            if not active:
                partitions.append([[], None])
            partitions[-1][0].append(i)
            active.add(i)
            sec_lo[i] = len(sections)
    # Every end is after its start, so time has advanced by the buffer's end and a section was
    # pushed: every buffer spans at least one section (sec_lo < sec_hi).
    width = max((len(s) for s in sections), default=1)
    members = np.full((len(sections), max(width, 1)), -1, np.int64)
    for s, m in enumerate(sections):
        members[s, : len(m)] = m
    # Pairwise overlaps of half-open intervals: of the buffers that start before i ends, those
    # that end after i starts (memory in proportion to the overlaps, not n * n).
    by_start = np.argsort(start, kind="stable")
    k = np.searchsorted(start[by_start], end, side="left")
    overlaps = []
    for i in range(n):
        c = by_start[: k[i]]
        c = c[(end[c] > start[i]) & (c != i)]
        c.sort()
        overlaps.append(c)
    parts = [(np.array(p[0], np.int64), p[1]) for p in partitions]
    return Sweep(sec_lo, sec_hi, members, overlaps, parts, len(sections))

