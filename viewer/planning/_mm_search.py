"""The depth-first search of the MiniMalloc-style decision "does the arena fit in C bytes?".

One :class:`_Solver` is one complete search with one static preorder (google/minimalloc
src/solver.cc ``SolverImpl``): canonical solutions, section inference, unallocated floors,
dominance, hatless pruning and dynamic decomposition, each switched by :class:`SearchParams`.
:mod:`viewer.planning._minimalloc` runs solvers in turns; :mod:`viewer.planning._mm_sweep`
gives the sections they search over.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from viewer.planning._mm_sweep import Sweep, section_loads

#: Search outcomes.
FEASIBLE = "feasible"
INFEASIBLE = "infeasible"
TIMEOUT = "timeout"
ABORTED = "aborted"  # a suspended search closed before it finished (internal)
CANCELLED = "cancelled"

_INF = np.iinfo(np.int64).max // 4
_min = np.minimum.reduce  # skips ndarray.min's Python-level wrapper (hot loop)
_max = np.maximum.reduce


@dataclass(frozen=True)
class SearchParams:
    """Switches for each ingredient of the search (all on by default, as in MiniMalloc).

    Attributes mirror ``minimalloc::SolverParams`` (src/solver.h). Preorder keys, each
    descending, ties by buffer index (``PreorderingComparator``): ``W`` lifetime width in time
    steps, ``A`` area (width x size), ``T`` largest unplaced bytes over the buffer's sections,
    ``C`` sections spanned, ``Z`` size, ``L``/``U`` start/end. The default is MiniMalloc's
    ``WAT, TAW, TWA``. Run in turns without restarts (:class:`Decision`), one of the three
    decides each of the benchmark instances A-K at capacity 1048576 (TWA eight of them, TAW
    B, C and H; 0.1-4.8 s alone on this machine, benchmarks/bench_optimal_ingredients.py).
    With MiniMalloc's restarts the three alone left E, H and I undecided after 30 s, which is
    why the previous default added ``CAT, TAC, TCA``; with turns every added preorder slows
    every instance (TAC searched the same nodes as TAW on B, C and H).
    """

    canonical_only: bool = True
    section_inference: bool = True
    dynamic_ordering: bool = True
    check_dominance: bool = True
    unallocated_floor: bool = True
    static_preordering: bool = True
    dynamic_decomposition: bool = True
    monotonic_floor: bool = True
    hatless_pruning: bool = True
    preordering_heuristics: tuple[str, ...] = ("WAT", "TAW", "TWA")

    def without(self, name: str) -> "SearchParams":
        """A copy with ingredient ``name`` switched off."""
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        if name == "round_robin":
            kw["preordering_heuristics"] = self.preordering_heuristics[:1]
        else:
            kw[name] = False
        return SearchParams(**kw)

    def enabled(self) -> list[str]:
        """Names of the switched-on ingredients."""
        out = [f.name for f in fields(self) if f.name != "preordering_heuristics" and getattr(self, f.name)]
        if len(self.preordering_heuristics) > 1:
            out.append("round_robin")
        return out


@dataclass
class SearchResult:
    """Outcome of one decision search."""

    status: str
    offsets: np.ndarray | None = None
    nodes: int = 0
    backtracks: int = 0
    seconds: float = 0.0
    heuristic: str = ""
    stats: dict = field(default_factory=dict)


class _Stop(Exception):
    def __init__(self, status: str):
        self.status = status


class _Solver:
    """One decision search; state lives in numpy arrays indexed by buffer / section."""

    def __init__(self, size, start, end, sw: Sweep, capacity, alignment, params: SearchParams,
                 heuristic: str):
        self.size = size
        self.start = start
        self.end = end
        self.sw = sw
        self.C = int(capacity)
        self.align = max(int(alignment), 1)
        self.p = params
        self.runner: _Runner | None = None
        n = len(size)
        self.n = n
        self.assigned = np.zeros(n, bool)
        self.offset = np.full(n, -1, np.int64)
        self.solution = np.full(n, -1, np.int64)
        # Minimum feasible offset of each unplaced buffer; _INF once placed. One extra entry
        # (index n, always _INF) pads ``members``.
        self.min_off = np.zeros(n + 1, np.int64)
        self.min_off[n] = _INF
        S = sw.num_sections
        self.floor = np.zeros(S, np.int64)
        # Unplaced bytes per section, plus one spare entry so reduceat can end at S.
        self.total_pad = np.zeros(S + 1, np.int64)
        self.total = self.total_pad[:S]
        self.total[:] = section_loads(sw.sec_lo, sw.sec_hi, size, S)
        # cuts[s]: buffers (unplaced) live in both section s and s + 1.
        self.cuts = np.zeros(max(S - 1, 0), np.int64)
        for i in range(n):
            lo, hi = int(sw.sec_lo[i]), int(sw.sec_hi[i])
            if hi - 1 > lo:
                self.cuts[lo: hi - 1] += 1
        self.width = end - start
        self.sections = sw.sec_hi - sw.sec_lo
        self.area = self.width * size
        self.nodes = 0
        self.backtracks = 0
        self.heuristic = heuristic
        # Every ingredient on: search_fast() does the same search with fewer numpy calls.
        self.fast = all(getattr(params, f.name) for f in fields(params)
                        if f.name not in ("preordering_heuristics", "static_preordering"))
        self.overlaps = sw.overlaps
        self.members = np.where(sw.members >= 0, sw.members, n)
        self.sec_lo_l = sw.sec_lo.tolist()
        self.sec_hi_l = sw.sec_hi.tolist()
        # Union of the section ranges of each buffer's overlapping buffers.
        self.nb_lo = [int(sw.sec_lo[o].min()) if len(o) else 0 for o in sw.overlaps]
        self.nb_hi = [int(sw.sec_hi[o].max()) if len(o) else 0 for o in sw.overlaps]

    # -- top level ------------------------------------------------------------------------
    def solve(self) -> str:
        """Search every partition with ``self.heuristic``'s preorder (complete: the answer is
        exact unless a :class:`_Stop` ends it)."""
        for part in self.sw.partitions:
            st = self.sub_solve(part[0], part[1])
            if st != FEASIBLE:
                return st
        return FEASIBLE

    def preorder(self, bufs: np.ndarray) -> np.ndarray:
        if not self.p.static_preordering or len(bufs) == 0:
            return bufs
        keys = {"W": self.width, "A": self.area, "Z": self.size, "C": self.sections,
                "L": self.start, "U": self.end}
        cols = [bufs]  # last tie-break: buffer index ascending
        for c in reversed(self.heuristic):
            if c == "T":
                # Largest unplaced bytes over the buffer's sections, as of now (SubSolve).
                idx = np.empty(2 * len(bufs), np.int64)
                idx[0::2] = self.sw.sec_lo[bufs]
                idx[1::2] = self.sw.sec_hi[bufs]
                cols.append(-np.maximum.reduceat(self.total_pad, idx)[0::2])
            elif c in keys:
                cols.append(-keys[c][bufs])
        # np.lexsort sorts by the last key first: [idx, ..., third, second, first].
        return bufs[np.lexsort(cols)]

    def sub_solve(self, bufs: np.ndarray, sec_range) -> str:
        try:
            return self._sub(bufs, sec_range)
        except _Stop as s:
            return s.status

    # -- the depth-first search ------------------------------------------------------------
    def search(self, order, rank, sec_range, min_offset, min_rank, part_bufs) -> str:
        self.nodes += 1
        if (self.nodes & 63) == 0 and self.runner is not None:
            self.runner.checkpoint()
        assigned = self.assigned
        order = order[~assigned[order]]
        if len(order) == 0:
            self.solution[part_bufs] = self.offset[part_bufs]
            return FEASIBLE
        min_off = self.min_off
        offs = min_off[order]
        p = self.p
        size = self.size
        C = self.C
        floor = self.floor
        total = self.total
        sec_lo = self.sec_lo_l
        sec_hi = self.sec_hi_l
        a_sec, b_sec = sec_range
        # Fast check: with a monotonic floor and section inference, every section's unplaced
        # bytes sit at or above the offset being tried, so off + max(total) must fit; the
        # parent's check already holds for sections this placement leaves alone.
        fast = p.monotonic_floor and p.section_inference
        t_max = int(_max(total[a_sec:b_sec])) if fast else 0
        min_height = int(_min(offs + size[order]))
        if p.dynamic_ordering:
            # Smallest feasible offset first, the static preorder breaks ties (kDynamicComparator).
            # Only offsets below the dominance and capacity limits can be tried: sort just those.
            limit = _INF
            if p.check_dominance:
                limit = min_height
            if fast:
                limit = min(limit, C - t_max + 1)
            sel = (offs < limit).nonzero()[0]
            cand = order[sel]
            if len(sel) > 1:
                trip = sorted(zip(offs[sel].tolist(), rank[cand].tolist(), cand.tolist()))
                offs_l = [t[0] for t in trip]
                order_l = [t[2] for t in trip]
            else:
                order_l = cand.tolist()
                offs_l = offs[sel].tolist()
        else:
            order_l = order.tolist()
            offs_l = offs.tolist()
        align = self.align
        for j in range(len(order_l)):
            off = offs_l[j]
            if p.check_dominance and off >= min_height:
                if p.dynamic_ordering:
                    break
                continue
            if fast and off + t_max > C:
                if p.dynamic_ordering:
                    break
                continue
            b = order_l[j]
            r = int(rank[b])
            if p.canonical_only and (off < min_offset or (off == min_offset and r < min_rank)):
                continue
            sz = int(size[b])
            if off + sz > C:
                continue
            # Place b at off.
            assigned[b] = True
            min_off[b] = _INF
            self.offset[b] = off
            height = off + sz
            nb = self.overlaps[b]
            mo_nb = min_off[nb]
            raise_ = nb[mo_nb < height]
            hatless = len(raise_) == 0 and int(_min(mo_nb, initial=_INF)) >= _INF
            old_min = min_off[raise_]
            new_min = -(-height // align) * align
            min_off[raise_] = new_min
            lo, hi = sec_lo[b], sec_hi[b]
            total[lo:hi] -= sz
            if not fast:
                old_floor = floor[lo:hi].copy()
                floor[lo:hi] = height
            uf = None
            ok_ = True
            if p.unallocated_floor and len(raise_):
                # A section's unplaced buffers all sit at or above the lowest of their minimum
                # offsets (UpdateSectionData). Sections of b's overlapping buffers are looked at.
                alo = self.nb_lo[b]
                ahi = self.nb_hi[b]
                if fast:
                    # Only sections where new_min + unplaced bytes overflow can fail (each
                    # touched one's lowest minimum offset is at most new_min); the floor
                    # itself adds nothing that the checks above have not covered.
                    tot = total[alo:ahi]
                    rows = (tot > C - new_min).nonzero()[0]
                    if len(rows):
                        mo = _min(min_off[self.members[alo + rows]], axis=1)
                        ok_ = int(_max(mo + tot[rows])) <= C
                else:
                    mo = min_off[self.members[alo:ahi]].min(axis=1)
                    fl = floor[alo:ahi]
                    up = (mo < _INF) & (fl < mo)
                    if up.any():
                        uf = (alo, ahi, fl.copy())
                        floor[alo:ahi] = np.where(up, mo, fl)
            if not fast:
                ok_ = self.check(sec_range, off)
            status = INFEASIBLE
            if ok_:
                if p.dynamic_decomposition:
                    status = self.decompose(order, rank, sec_range, off, r, b, part_bufs)
                else:
                    status = self.search(order, rank, sec_range, off, r, part_bufs)
            # Restore.
            if uf is not None:
                floor[uf[0]:uf[1]] = uf[2]
            total[lo:hi] += sz
            if not fast:
                floor[lo:hi] = old_floor
            min_off[raise_] = old_min
            min_off[b] = off
            assigned[b] = False
            self.offset[b] = -1
            if status != INFEASIBLE:
                return status
            if hatless and p.hatless_pruning:
                break
        self.backtracks += 1
        return INFEASIBLE

    def check(self, sec_range, off) -> bool:
        a, b = sec_range
        fl = self.floor[a:b]
        if self.p.monotonic_floor:
            fl = np.maximum(fl, off)
        if self.p.section_inference:
            fl = fl + self.total[a:b]
        return not (fl > self.C).any()

    def decompose(self, order, rank, sec_range, off, r, b, part_bufs) -> str:
        self.solution[b] = self.offset[b]
        lo, hi = self.sec_lo_l[b], self.sec_hi_l[b]
        status = FEASIBLE
        if hi - 1 > lo:
            cuts = self.cuts[lo: hi - 1]
            cuts -= 1
            zero = (cuts == 0).nonzero()[0] + (lo + 1)
        else:
            zero = ()
        try:
            if len(zero) == 0:
                status = self.search(order, rank, sec_range, off, r, part_bufs)
            else:
                cutpoints = [sec_range[0], *[int(z) for z in zero], sec_range[1]]
                unplaced = part_bufs[~self.assigned[part_bufs]]
                ulo = self.sw.sec_lo[unplaced]
                uhi = self.sw.sec_hi[unplaced]
                for a, c in zip(cutpoints[:-1], cutpoints[1:]):
                    sel = unplaced[~((uhi <= a) | (c <= ulo))]
                    if len(sel) == 0:
                        continue
                    status = self._sub(sel, (a, c))
                    if status != FEASIBLE:
                        break
        finally:
            if hi - 1 > lo:
                self.cuts[lo: hi - 1] += 1
        return status

    def _sub(self, bufs, sec_range) -> str:
        pre = self.preorder(bufs)
        if self.fast:
            return self.search_fast((pre, self.size[pre], pre.tolist(), self.size[pre].tolist()),
                                    sec_range, 0, 0, bufs)
        rank = np.empty(self.n, np.int64)
        rank[pre] = np.arange(len(pre))
        return self.search(pre, rank, sec_range, 0, 0, bufs)

    # -- the same search, every ingredient on (the default), fewer numpy calls per node --------
    def search_fast(self, ctx, sec_range, min_offset, min_rank, part_bufs) -> str:
        """:meth:`search` with every :class:`SearchParams` switch on: the same nodes in the
        same order (tests/planning/test_optimal.py checks it), about half the numpy calls.

        ``ctx`` is ``(order, size[order], order as a list, sizes as a list)`` for the
        sub-search's preorder; a buffer's rank is its position in ``order``, and placed buffers
        stay in it (their ``min_off`` is ``_INF``, so they are never candidates).
        """
        self.nodes += 1
        if (self.nodes & 63) == 0 and self.runner is not None:
            self.runner.checkpoint()
        order, ord_size, order_l, size_l = ctx
        min_off = self.min_off
        offs = min_off[order]
        tops = offs + ord_size
        min_height = int(_min(tops))
        if min_height >= _INF:  # every buffer of this sub-search is placed
            self.solution[part_bufs] = self.offset[part_bufs]
            return FEASIBLE
        C = self.C
        total = self.total
        t_max = int(_max(total[sec_range[0]:sec_range[1]]))
        # Dominance (below the lowest top of any unplaced buffer) and the fast section check
        # (off + the fullest section's unplaced bytes must fit), as in search().
        idx = (offs < min(min_height, C - t_max + 1)).nonzero()[0]
        cands = [(o, i) for o, i, tp in zip(offs[idx].tolist(), idx.tolist(), tops[idx].tolist())
                 if tp <= C and (o > min_offset or (o == min_offset and i >= min_rank))]
        if len(cands) > 1:
            cands.sort()
        align = self.align
        offset = self.offset
        members = self.members
        for off, i in cands:
            b = order_l[i]
            sz = size_l[i]
            min_off[b] = _INF
            offset[b] = off
            height = off + sz
            nb = self.overlaps[b]
            mo_nb = min_off[nb]
            mask = mo_nb < height
            raise_ = nb[mask]
            ok_ = True
            if len(raise_):
                hatless = False
                old_min = mo_nb[mask]
                new_min = -(-height // align) * align
                min_off[raise_] = new_min
            else:
                hatless = int(_min(mo_nb, initial=_INF)) >= _INF
            lo, hi = self.sec_lo_l[b], self.sec_hi_l[b]
            total[lo:hi] -= sz
            if not hatless and len(raise_):
                alo, ahi = self.nb_lo[b], self.nb_hi[b]
                tot = total[alo:ahi]
                rows = (tot > C - new_min).nonzero()[0]
                if len(rows):
                    mo = _min(min_off[members[alo + rows]], axis=1)
                    ok_ = int(_max(mo + tot[rows])) <= C
            status = self._decompose_fast(ctx, sec_range, off, i, b, part_bufs) if ok_ else INFEASIBLE
            total[lo:hi] += sz
            if len(raise_):
                min_off[raise_] = old_min
            min_off[b] = off
            offset[b] = -1
            if status != INFEASIBLE:
                return status
            if hatless:
                break
        self.backtracks += 1
        return INFEASIBLE

    def _decompose_fast(self, ctx, sec_range, off, r, b, part_bufs) -> str:
        """:meth:`decompose` for :meth:`search_fast`."""
        self.solution[b] = off
        lo, hi = self.sec_lo_l[b], self.sec_hi_l[b]
        if hi - 1 <= lo:
            return self.search_fast(ctx, sec_range, off, r, part_bufs)
        cuts = self.cuts[lo: hi - 1]
        cuts -= 1
        try:
            zero = (cuts == 0).nonzero()[0]
            if len(zero) == 0:
                return self.search_fast(ctx, sec_range, off, r, part_bufs)
            cutpoints = [sec_range[0], *(zero + (lo + 1)).tolist(), sec_range[1]]
            unplaced = part_bufs[self.min_off[part_bufs] < _INF]
            ulo = self.sw.sec_lo[unplaced]
            uhi = self.sw.sec_hi[unplaced]
            status = FEASIBLE
            for a, c in zip(cutpoints[:-1], cutpoints[1:]):
                sel = unplaced[(uhi > a) & (c > ulo)]
                if len(sel) == 0:
                    continue
                status = self._sub(sel, (a, c))
                if status != FEASIBLE:
                    break
            return status
        finally:
            cuts += 1
