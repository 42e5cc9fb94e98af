"""Lower bounds on the tensor arena beyond the widest operator's breadth.

Each takes half-open usage intervals ``[start, end)`` (time steps) and sizes (bytes) as numpy
arrays of shape (n,) and returns bytes. :mod:`viewer.planning.optimal` raises its proven
bound with them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from viewer.planning._mm_sweep import section_loads as _loads, section_spans


def size_granularity(size: np.ndarray, alignment: int = 1) -> int:
    """Bytes of which some optimal arena is a multiple.

    Push every buffer of an optimal plan down as far as it goes (to offset 0 or, aligned, onto
    the top of a buffer below): the plan stays valid and no higher. With ``alignment`` 1 every
    offset is then a sum of sizes, so every top, and the arena, is a multiple of
    ``g = gcd(size)``; with a larger alignment every offset is a multiple of the alignment, so
    every top is a multiple of ``gcd(alignment, g)``. A proof that the arena cannot be ``c``
    bytes therefore proves it cannot be less than the next multiple above ``c``.

    Parameters
    ----------
    size : ndarray of int, shape (n,)
        Bytes, zero-size buffers ignored.
    alignment : int
        Bytes (>= 1).

    Returns
    -------
    int
        >= 1 (1 when there is no buffer of positive size).
    """
    g = 0
    for s in np.asarray(size).tolist():
        g = math.gcd(g, int(s))
    if g == 0:
        return 1
    return g if alignment <= 1 else math.gcd(int(alignment), g)


def round_up(bound: int, granularity: int) -> int:
    """The smallest multiple of ``granularity`` that is >= ``bound`` (bytes)."""
    return -(-int(bound) // granularity) * granularity


# --- Subset bounds -------------------------------------------------------------------------
#
# Any subset S of the buffers needs no more arena than all of them: OPT(S) <= OPT. So an
# exhaustive search proving that S cannot fit in C bytes proves the whole problem cannot
# either. Small, well-chosen subsets can be decided where the whole problem cannot.


@dataclass(frozen=True)
class Subset:
    """A sub-instance: buffers ``index`` (into the caller's arrays), with usage intervals
    ``[start, end)`` (time steps; clipped to a window when ``clipped``) and sizes (bytes)."""

    name: str
    index: np.ndarray
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    clipped: bool = False


@dataclass
class SubsetBound:
    """Outcome of :func:`subset_bound`.

    Attributes
    ----------
    bound : int
        Proven lower bound on the whole problem's arena (bytes), >= the bound it started from.
    proofs : list of dict
        One per raise: ``subset`` (name), ``buffers``, ``capacity`` (bytes proven too small).
    log : list of dict
        Every decision attempt: ``subset``, ``buffers``, ``capacity``, ``status``
        (``feasible``, ``infeasible``, ``timeout``), ``nodes``, ``seconds``.
    seconds : float
    """

    bound: int
    proofs: list = field(default_factory=list)
    log: list = field(default_factory=list)
    seconds: float = 0.0


def section_loads(start: np.ndarray, end: np.ndarray, size: np.ndarray):
    """Breadth of every section (the buffers live just before each distinct end time), as the
    exact search sweeps them (:func:`viewer.planning._mm_sweep.section_spans`).

    Parameters
    ----------
    start, end : ndarray of int, shape (n,)
        Half-open usage intervals ``[start, end)`` (time steps).
    size : ndarray of int, shape (n,)
        Bytes.

    Returns
    -------
    times : ndarray of int, shape (S,)
        Section ``k`` is the instant just before ``times[k]``.
    loads : ndarray of int, shape (S,)
        Bytes live in each section.
    """
    times, lo, hi = section_spans(start, end)  # live in section k iff start < times[k] <= end
    return times, _loads(lo, hi, size, len(times))


def window_subset(start, end, size, times, first: int, last: int, clip: bool = False) -> Subset:
    """The buffers live in sections ``first..last`` (inclusive indices into ``times``).

    Unclipped, each keeps its whole usage interval (a true subset: at least as hard as any
    clipped window). Clipped, intervals are cut to the window (a relaxation, so still a valid
    bound, and easier to decide).
    """
    lo = int(times[first - 1]) if first > 0 else int(np.min(start))
    hi = int(times[last])
    m = (start < hi) & (end > lo)
    idx = np.nonzero(m)[0]
    s, e = start[idx], end[idx]
    if clip:
        s, e = np.maximum(s, lo), np.minimum(e, hi)
    kind = "clipped window" if clip else "window"
    return Subset(f"{kind} {first}-{last}", idx, s, e, size[idx], clip)


def default_subsets(start, end, size, widths=(2, 4, 8, 16, 32, 48),
                    quantiles=(0.5, 0.25, 0.1, 0.05)) -> list[Subset]:
    """Candidate subsets, cheapest first: buffers of at least a size quantile, then windows
    of ``widths`` consecutive sections around the widest one (every such window that contains
    it, in steps of a quarter of the width), each unclipped. The whole problem is left out
    (that is the main search's question)."""
    start, end, size = (np.asarray(a, np.int64) for a in (start, end, size))
    n = len(size)
    out: list[Subset] = []
    seen: set[bytes] = set()

    def add(sub: Subset) -> None:
        key = np.packbits(np.isin(np.arange(n), sub.index)).tobytes()
        if 0 < len(sub.index) < n and key not in seen:
            seen.add(key)
            out.append(sub)

    for q in quantiles:
        t = int(np.quantile(size, 1.0 - q, method="lower"))
        idx = np.nonzero(size >= t)[0]
        add(Subset(f"size >= {t}", idx, start[idx], end[idx], size[idx]))
    times, loads = section_loads(start, end, size)
    peak = int(np.argmax(loads))
    for w in widths:
        w = min(w, len(times))
        for a in range(max(0, peak - w + 1), peak + 1, max(1, w // 4)):
            b = min(a + w - 1, len(times) - 1)
            add(window_subset(start, end, size, times, a, b))
    return out


def subset_bound(start: np.ndarray, end: np.ndarray, size: np.ndarray, bound: int, *,
                 alignment: int = 1, granularity: int = 1, upper: int | None = None,
                 subsets: list[Subset] | None = None, deadline: float | None = None,
                 cancelled=None, first_slice: float = 0.05) -> SubsetBound:
    """Raise a proven lower bound by exact searches on subsets of the buffers.

    Any subset S needs no more arena than the whole problem (drop the other buffers from an
    optimal plan), and a window with its intervals clipped needs no more than S. So when the
    MiniMalloc-style exhaustive search (:class:`viewer.planning._minimalloc.Decision`, Moffitt,
    ASPLOS 2023) proves that S does not fit in ``bound`` bytes, the arena is at least
    ``bound + 1``, rounded up to ``granularity`` (:func:`size_granularity` of the *whole*
    problem). Candidate subsets (:func:`default_subsets`) drop the many small buffers, or keep
    the buffers of a few sections around the widest, where fragmentation of the remaining
    buffers can force more than the breadth while the search can still finish.

    Runs in passes of doubling time slices (``first_slice`` first): each pending subset is
    asked "does S fit in ``bound``?"; a subset that fits is dropped (it fits at any higher
    bound too); one that does not raises the bound and is asked again; one that runs out of
    time is asked again next pass with twice the time. A subset of the buffers of an unclipped
    subset that fits fits too and is not searched (on instance D the search times out in 15 s
    on the window of sections 35-93 at 1000 KiB, yet fits its superset 33-93 in 0.2 s).

    Measured on instances D and J (capacity 1048576, ``benchmarks/bench_bounds.py``, 60 s a
    part): every size subset, every window of 2-48 sections around the widest (unclipped and
    clipped) fits at the breadth; windows of 64-80 sections time out; so the bound stays at
    the breadth there (D 986112 B, J 989184 B). It raises the bound on problems whose
    fragmentation is local, e.g. a few large buffers with alignment padding (tests).

    Parameters
    ----------
    start, end : ndarray of int, shape (n,)
        Half-open usage intervals ``[start, end)`` (time steps).
    size : ndarray of int, shape (n,)
        Bytes, all > 0.
    bound : int
        A proven lower bound to start from (bytes), e.g. the widest section's breadth.
    alignment : int
        Every offset a multiple of it (bytes).
    granularity : int
        The whole problem's optimum is a multiple of it (bytes).
    upper : int, optional
        An arena known to be achievable (bytes); the search stops once the bound reaches it.
    subsets : list of Subset, optional
        Default :func:`default_subsets`.
    deadline : float, optional
        ``time.monotonic()`` value to stop at (default: one pass of every subset).
    cancelled : callable, optional
        Polled between search turns; True stops with the bound proven so far.
    first_slice : float
        Seconds per subset in the first pass.

    Returns
    -------
    SubsetBound
        ``bound`` >= the given bound and <= the optimum.
    """
    from viewer.planning import _minimalloc as mm

    t0 = time.monotonic()
    start, end, size = (np.asarray(a, np.int64) for a in (start, end, size))
    out = SubsetBound(int(bound))
    pending = list(default_subsets(start, end, size) if subsets is None else subsets)
    one_pass = deadline is None
    slice_ = float(first_slice)
    fits: list[np.ndarray] = []  # unclipped subsets that fit at the bound (its subsets do too)
    while pending and (upper is None or out.bound < upper):
        timed_out: list[Subset] = []
        for sub in pending:
            if not sub.clipped and any(np.isin(sub.index, f).all() for f in fits):
                out.log.append({"subset": sub.name, "buffers": len(sub.index), "capacity": out.bound,
                                "status": mm.FEASIBLE, "nodes": 0, "seconds": 0.0,
                                "note": "inside a subset that fits"})
                continue
            now = time.monotonic()
            if not one_pass and now >= deadline or cancelled is not None and cancelled():
                out.seconds = time.monotonic() - t0
                return out
            while True:
                cap = out.bound
                stop = now + slice_ if one_pass else min(deadline, now + slice_)
                with mm.Decision(sub.start, sub.end, sub.size, cap, alignment) as d:
                    status = d.run(stop, cancelled)
                    out.log.append({"subset": sub.name, "buffers": len(sub.index), "capacity": cap,
                                    "status": status, "nodes": d.nodes,
                                    "seconds": round(d.seconds, 3)})
                if status != mm.INFEASIBLE:
                    if status == mm.FEASIBLE and not sub.clipped:
                        fits.append(sub.index)
                    break
                out.bound = round_up(cap + 1, granularity)
                out.proofs.append({"subset": sub.name, "buffers": len(sub.index), "capacity": cap})
                if upper is not None and out.bound >= upper:
                    break
                now = time.monotonic()
            if status in (mm.TIMEOUT, mm.CANCELLED):
                timed_out.append(sub)
        if one_pass:
            break
        pending = timed_out
        slice_ *= 2
    out.seconds = time.monotonic() - t0
    return out
