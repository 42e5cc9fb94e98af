"""LiteRT's ``SimpleMemoryArena`` placement for the ``litert`` planner, fast.

Follows google-ai-edge/LiteRT ``tflite/simple_memory_arena.cc`` (``Allocate``,
``PurgeActiveAllocs``, ``ResetAllocs``). ``Allocate`` walks every active allocation, in offset
order, and takes the best-fitting gap among those whose usage interval intersects the new
tensor's. That is quadratic; here:

- the allocations that intersect each tensor's usage interval are listed once for all tensors
  (:func:`viewer.planning._overlap.overlap_lists`: O(n log n + overlapping pairs));
- tensors are placed in *rounds*: a tensor's offset depends only on the tensors before it
  (in allocation order) that it overlaps, so every tensor whose overlapping predecessors are all
  placed can be placed at once, in one vectorised gap search (Kahn's levels of that DAG);
  small rounds are walked in Python;
- past ten million overlapping pairs, one vectorised mask over the active allocations per
  tensor (:class:`Arena`);
- tensors sorted by first operator (equal sizes), all sizes multiples of the alignment, into
  an empty arena: one sweep over time with a best-fit gap index (:mod:`viewer.planning._sweep`),
  no pair lists.

Every path gives the offsets of the straightforward re-statement (one Python walk over every
active allocation per tensor), which tests/planning/test_litert_fast.py checks.
"""

from __future__ import annotations

import math

import numpy as np

from viewer.planning import _sweep
from viewer.planning._overlap import overlap_lists as _overlap_lists

#: Candidate allocations above which one tensor's gap search runs in numpy.
_NUMPY_FIT = 64
#: Tensors in a round below which the round is placed one tensor at a time in Python.
_SMALL_ROUND = 48


def fit(pairs: list[tuple[int, int]], size: int, alignment: int) -> int:
    """``SimpleMemoryArena::Allocate``'s gap search over allocations sorted by offset.

    Parameters
    ----------
    pairs : list of (int, int)
        ``(offset, unaligned end)`` in bytes of the active allocations whose usage interval
        intersects the new tensor's, ascending by offset. Equal offsets may come in any order:
        sizes are > 0, so only the first of them can open a gap. (``best_fit == 0``, the
        original's early exit, cannot happen for ``size > 0``.)
    size : int
        Bytes of the new tensor, > 0.
    alignment : int

    Returns
    -------
    int
        The offset: a gap is taken when ``off - aligned < best_fit``, and ``best_fit`` is then
        set to the *unaligned* ``off - current`` (sic, as in simple_memory_arena.cc); with no
        gap, the aligned end of the highest allocation.
    """
    best = -1
    best_fit = math.inf
    current = 0
    for o, e in pairs:
        aligned = -(-current // alignment) * alignment
        if aligned + size <= o and o - aligned < best_fit:
            best = aligned
            best_fit = o - current
        if e > current:
            current = e
    return best if best >= 0 else -(-current // alignment) * alignment


def fit_numpy(off: np.ndarray, end: np.ndarray, size: int, alignment: int) -> int:
    """:func:`fit` on int64 arrays already in offset order (at least one allocation)."""
    top = np.maximum.accumulate(end)
    cur = np.empty_like(top)
    cur[0] = 0
    cur[1:] = top[:-1]
    aligned = -(-cur // alignment) * alignment
    ok = np.flatnonzero(aligned + size <= off)
    if not len(ok):
        return -(-int(top[-1]) // alignment) * alignment
    return _accept(off[ok].tolist(), aligned[ok].tolist(), cur[ok].tolist())


def _accept(o: list[int], a: list[int], c: list[int]) -> int:
    """The acceptance rule of :func:`fit` over the gaps that hold the tensor, in offset order."""
    best, best_fit = a[0], o[0] - c[0]
    for k in range(1, len(o)):
        if o[k] - a[k] < best_fit:
            best, best_fit = a[k], o[k] - c[k]
    return best


class Arena:
    """``SimpleMemoryArena``'s active allocations, sorted by offset (numpy arrays).

    It holds what one ``ExecuteAllocations`` call leaves for the next (``PurgeActiveAllocs``,
    ``ResetAllocs``) and, for problems with too many overlapping pairs to list, places tensors
    one by one (:meth:`allocate`): the allocations whose usage interval intersects the new
    tensor's are one vectorised mask, already in offset order.
    """

    def __init__(self) -> None:
        self.set_all(*(np.zeros(0, dtype=np.int64),) * 4)

    def arrays(self):
        """``(off, size, first, last)`` of the active allocations, in offset order."""
        n = self.n
        return self.off[:n], self.size[:n], self.first[:n], self.last[:n]

    def clear(self) -> None:
        """``ResetAllocs``."""
        self.n = 0

    def purge_before(self, node: int) -> None:
        """``PurgeActiveAllocs(node)``: drop the allocations whose last node is before ``node``."""
        off, size, first, last = self.arrays()
        keep = last >= node
        self.set_all(off[keep], size[keep], first[keep], last[keep])

    def set_all(self, off, size, first, last) -> None:
        """Replace the contents (``off`` ascending; equal offsets in insertion order)."""
        self.off, self.size, self.first, self.last = (np.array(a, dtype=np.int64)
                                                      for a in (off, size, first, last))
        self.n = len(self.off)

    def allocate(self, alignment: int, size: int, first: int, last: int) -> int:
        """``SimpleMemoryArena::Allocate`` of one tensor of ``size`` > 0 bytes; its offset."""
        n = self.n
        idx = np.flatnonzero((self.last[:n] >= first) & (self.first[:n] <= last)) if n else ()
        if not len(idx):
            best = 0
        else:
            o = self.off[idx]
            best = fit_numpy(o, o + self.size[idx], size, alignment)
        k = int(np.searchsorted(self.off[:n], best, side="right"))  # std::upper_bound
        if n == len(self.off):
            grow = max(n, 16)
            for name in ("off", "size", "first", "last"):
                setattr(self, name, np.concatenate([getattr(self, name), np.zeros(grow, dtype=np.int64)]))
        for arr, v in ((self.off, best), (self.size, size), (self.first, first), (self.last, last)):
            arr[k + 1 : n + 1] = arr[k:n]
            arr[k] = v
        self.n = n + 1
        return best


def _gather(ptr: np.ndarray, values: np.ndarray, rows: np.ndarray):
    """CSR rows ``rows`` concatenated: ``(row number within rows, values)``, both int64."""
    starts = ptr[rows]
    lens = ptr[rows + 1] - starts
    total = int(lens.sum())
    seg = np.repeat(np.arange(len(rows)), lens)
    pos = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)
    return seg, values[pos], lens


def _rounds(ptr: list[int], earlier: list[int], m: int, poll):
    """Yield the tensors (positions, ascending) round by round: every tensor's overlapping
    predecessors are in earlier rounds. A tensor's round is one more than the latest of its
    predecessors' (the longest path to it in the overlap DAG), computed in one pass in
    allocation order since predecessors come first."""
    level = [0] * m
    get = level.__getitem__
    for k in range(m):
        p0, p1 = ptr[k], ptr[k + 1]
        if p1 > p0:
            level[k] = max(map(get, earlier[p0:p1])) + 1
        if not k & 8191:
            poll.check()
    lv = np.array(level, dtype=np.int64)
    order = np.argsort(lv, kind="stable")
    cuts = (np.flatnonzero(np.diff(lv[order])) + 1).tolist()
    for lo, hi in zip([0, *cuts], [*cuts, m]):
        yield order[lo:hi]


def _heads(seg: np.ndarray) -> np.ndarray:
    """Mask of the first element of each run of equal values in ``seg``."""
    head = np.ones(len(seg), dtype=bool)
    head[1:] = seg[1:] != seg[:-1]
    return head


def _accept_segments(seg, o, a, c, steps: int = 8) -> np.ndarray:
    """:func:`_accept` for many tensors at once: the gaps that hold each tensor, grouped by
    ``seg`` (ascending), each group in offset order. Returns the chosen offset per group,
    in group order. The chain of accepted gaps is followed ``steps`` times vectorised; the
    groups still moving after that are finished in Python."""
    heads = np.flatnonzero(_heads(seg))
    gid = np.cumsum(_heads(seg)) - 1  # group index 0.. per element
    at = heads.copy()  # index of each group's last accepted gap
    ends = np.append(heads[1:], len(seg))
    idx = np.arange(len(seg))
    moving = np.ones(len(heads), dtype=bool)
    for _ in range(steps):
        bf = (o - c)[at]
        cand = np.flatnonzero(moving[gid] & (idx > at[gid]) & ((o - a) < bf[gid]))
        if not len(cand):
            moving[:] = False
            break
        first = cand[_heads(gid[cand])]
        moved = np.zeros(len(heads), dtype=bool)
        moved[gid[first]] = True
        at[gid[first]] = first
        moving &= moved
    for g in np.flatnonzero(moving).tolist():
        lo, hi = int(at[g]), int(ends[g])
        at[g] = lo + _accept_index(o[lo:hi].tolist(), a[lo:hi].tolist(), c[lo:hi].tolist())
    return a[at]


def _accept_index(o: list[int], a: list[int], c: list[int]) -> int:
    """Index of the gap :func:`_accept` chooses."""
    best, best_fit = 0, o[0] - c[0]
    for k in range(1, len(o)):
        if o[k] - a[k] < best_fit:
            best, best_fit = k, o[k] - c[k]
    return best


def _place_round(q: np.ndarray, ptr, earlier, off_np, end_np, size_np, alignment: int):
    """Offsets (int64 array) of the tensors ``q``, none of which overlaps another of them,
    each by :func:`fit` over its listed predecessors: one segmented numpy pass. None when the
    byte figures are too large for the segmented prefix maximum in int64."""
    res = np.zeros(len(q), dtype=np.int64)
    has = np.flatnonzero(ptr[q + 1] > ptr[q])
    if not len(has):
        return res
    seg, j, lens = _gather(ptr, earlier, q[has])
    o, e = off_np[j], end_np[j]
    big = int(e.max()) + 1
    if big * (len(has) + 1) >= 2**62:
        return None
    srt = np.lexsort((o, seg))  # seg stays sorted
    o, e = o[srt], e[srt]
    base = seg * big
    top = np.maximum.accumulate(e + base) - base  # running max of ends within each segment
    seg_start = np.cumsum(lens) - lens
    cur = np.empty_like(top)
    cur[1:] = top[:-1]
    cur[seg_start] = 0
    aligned = -(-cur // alignment) * alignment
    best = -(-top[seg_start + lens - 1] // alignment) * alignment  # no gap: above them all
    ok = np.flatnonzero(aligned + size_np[q[has]][seg] <= o)
    if len(ok):
        best[seg[ok[_heads(seg[ok])]]] = _accept_segments(seg[ok], o[ok], aligned[ok], cur[ok])
    res[has] = best
    return res


def place_with_lists(arena: Arena, first: np.ndarray, last: np.ndarray, size: np.ndarray,
                     alignment: int, poll) -> list[int] | None:
    """Offsets of new tensors placed one after another into ``arena`` by ``Allocate``.

    Parameters
    ----------
    arena : Arena
        The active allocations left by earlier node ranges; the new tensors are added to it.
    first, last, size : numpy.ndarray
        Shape (m,), int64: the new tensors in allocation order, usage intervals (operator
        indices, inclusive; never-freed ones end at kNodeNotAssigned) and bytes (> 0).
    alignment : int
    poll : viewer.planning._overlap.Poll

    Returns
    -------
    list of int or None
        Offsets in bytes, in the order given; None (arena untouched) when there are too many
        overlapping pairs to list.
    """
    s_off, s_size, s_first, s_last = arena.arrays()
    ns, m = len(s_off), len(first)
    if ns == 0 and not (size % alignment).any() and _sweep.in_time_order(first):
        # Every size a multiple of the alignment: every end is aligned, and Allocate's rule
        # is plain best fit, the sweep's gap index. (With unaligned sizes the sweep would have
        # to walk every live tensor: quadratic when thousands live together.)
        new = np.array(_sweep.sweep_place(first.tolist(), last.tolist(), size.tolist(),
                                          int.__add__, poll), dtype=np.int64)
        srt = np.argsort(new, kind="stable")  # offset order, equal offsets in insertion order
        arena.set_all(new[srt], size[srt], first[srt], last[srt])
        return new.tolist()
    all_first = np.concatenate([s_first, first])
    all_last = np.concatenate([s_last, last])
    lists = _overlap_lists(all_first, all_last, poll)
    if lists is None:
        return None
    ptr_np, earlier_np = lists
    ptr = ptr_np.tolist()
    total = ns + m
    size_np = np.concatenate([s_size, size])
    off_np = np.zeros(total, dtype=np.int64)
    end_np = np.zeros(total, dtype=np.int64)
    off_np[:ns], end_np[:ns] = s_off, s_off + s_size
    off_py, end_py, sizes = off_np.tolist(), end_np.tolist(), size_np.tolist()
    done = 0
    for rnd in _rounds(ptr, earlier_np.tolist(), total, poll):
        rnd = rnd[rnd >= ns]  # survivors are placed already
        if not len(rnd):
            continue
        res = None
        if len(rnd) >= _SMALL_ROUND:
            res = _place_round(rnd, ptr_np, earlier_np, off_np, end_np, size_np, alignment)
        if res is not None:
            off_np[rnd] = res
            end_np[rnd] = res + size_np[rnd]
            for k, v in zip(rnd.tolist(), res.tolist()):
                off_py[k], end_py[k] = v, v + sizes[k]
        else:
            for k in rnd.tolist():
                p0, p1 = ptr[k], ptr[k + 1]
                s = sizes[k]
                if p1 == p0:
                    best = 0
                elif p1 - p0 <= _NUMPY_FIT:
                    best = fit(sorted([(off_py[j], end_py[j]) for j in earlier_np[p0:p1].tolist()]),
                               s, alignment)
                else:
                    cand = earlier_np[p0:p1]
                    srt = cand[np.argsort(off_np[cand], kind="stable")]
                    best = fit_numpy(off_np[srt], end_np[srt], s, alignment)
                off_py[k], end_py[k] = best, best + s
                off_np[k], end_np[k] = best, best + s
        done += len(rnd)
        poll.tick(4 * len(rnd) + 1, done / max(m, 1))
    new_off = off_np[ns:]
    # The arena after these inserts: offset order, equal offsets in insertion order
    # (std::upper_bound), which a stable sort of (survivors, new tensors) gives.
    srt = np.argsort(off_np, kind="stable")
    arena.set_all(off_np[srt], size_np[srt], all_first[srt], all_last[srt])
    return new_off.tolist()
