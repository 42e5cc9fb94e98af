"""Memory of a patch-based execution, and the search over grids and splits.

For a grid R x C and a split after operator K (:mod:`viewer.whatif.tiling.geometry`):

- patch stage = the largest patch graph's arena (its crop of the input, its tensors, its kernel
  temporaries; planned by the ``litert`` planner exactly as for the model itself) + the full
  cut buffers being filled + the graph input, kept resident (``input="resident"``, the
  default: LiteRT keeps a graph input for the whole run) or not (``"streamed"``: each patch's
  crop arrives from outside, only the patch graph's own copy counts);
- tail stage = the arena of the graph after K, whose inputs are the cut tensors;
- peak = max(patch stage, tail stage).

The untiled figure is the model's own arena under the same rules (kernel temporaries
estimated by :mod:`viewer.ops`, which equals LiteRT's measurement on the shared models).
Recompute overhead: multiply-accumulates of every patch with its halos over those of operators
0..K untiled, in percent. Follows MCUNetV2 (Lin et al., NeurIPS 2021) for the execution scheme.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from viewer import ops
from viewer.analysis.intervals import analyze
from viewer.analysis.types import Temporary
from viewer.model.types import Subgraph
from viewer.planning.litert import plan_litert
from viewer.whatif.tiling.geometry import Prefix, axis_geometry, constant_ops, cut_tensors, patchable_prefix
from viewer.whatif.tiling.graph import GraphSpec, build_patch, build_tail, to_subgraph

RESIDENT, STREAMED = "resident", "streamed"


def analyze_with_temporaries(sub: Subgraph):
    """Usage intervals (:func:`viewer.analysis.intervals.analyze`) with the registry's kernel
    temporaries estimate (:func:`viewer.ops.subgraph_temporaries`)."""
    n = len(sub.tensors)
    temps = [Temporary(n + k, op, e.nbytes, e.name)
             for k, (op, e) in enumerate(ops.subgraph_temporaries(sub)) if e.nbytes > 0]
    return analyze(sub, temporaries=temps), sum(t.nbytes for t in temps)


def arena_of(sub: Subgraph) -> tuple[int, int]:
    """(arena bytes, kernel-temporary bytes) of ``sub`` under LiteRT's rules: usage intervals
    with the estimated temporaries, placed by the ``litert`` planner (arena_planner.cc re-stated)."""
    analysis, temps = analyze_with_temporaries(sub)
    return plan_litert(analysis.problem()).arena_bytes, temps


def graph_macs(sub: Subgraph) -> int:
    shapes = {t.index: tuple(t.shape) for t in sub.tensors}
    return sum(ops.macs(op, shapes) for op in sub.operators)


@dataclass
class PatchClass:
    """Patches whose graphs are alike (one signature of the written patch model).

    ``graph`` is built on first use (``make``): the search only needs the figures, and a class
    whose transpose was already planned reuses its figures (same tensor sizes, same operators).
    """

    key: str
    patches: list[tuple[int, int]]
    make: Callable[[], GraphSpec]
    input_shape: tuple[int, ...]
    arena_bytes: int
    temporaries_bytes: int
    macs: int
    _graph: GraphSpec | None = field(default=None, repr=False)

    @property
    def graph(self) -> GraphSpec:
        if self._graph is None:
            self._graph = self.make()
        return self._graph


@dataclass
class TilePlan:
    """One (grid, split) evaluated. Every size in bytes; ``split`` is an operator index (the
    last operator of the patch stage, inclusive)."""

    grid: tuple[int, int]
    split: int
    input_mode: str
    cut: list[int]
    cut_names: list[str]
    cut_bytes: int
    input_bytes: int
    classes: list[PatchClass]
    tail: GraphSpec
    tail_arena_bytes: int
    untiled_peak_bytes: int
    untiled_macs: int
    tiled_macs: int

    @property
    def patch_arena_bytes(self) -> int:
        return max(c.arena_bytes for c in self.classes)

    @property
    def patch_input_shape(self) -> tuple[int, ...]:
        return max((c for c in self.classes), key=lambda c: c.arena_bytes).input_shape

    @property
    def patch_stage_bytes(self) -> int:
        resident = self.input_bytes if self.input_mode == RESIDENT else 0
        return self.patch_arena_bytes + self.cut_bytes + resident

    @property
    def peak_bytes(self) -> int:
        return max(self.patch_stage_bytes, self.tail_arena_bytes)

    @property
    def overhead_pct(self) -> float:
        return 100.0 * (self.tiled_macs - self.untiled_macs) / self.untiled_macs if self.untiled_macs else 0.0

    @property
    def reduction(self) -> float:
        return self.untiled_peak_bytes / self.peak_bytes if self.peak_bytes else float("inf")

    def patch_of(self) -> dict[tuple[int, int], PatchClass]:
        return {p: c for c in self.classes for p in c.patches}


class Tiler:
    """Evaluates (grid, split) pairs of one subgraph, caching geometry, class plans and tails.

    Parameters
    ----------
    sg : Subgraph
    values : Mapping[int, numpy.ndarray]
        Small integer constants (PAD's paddings), :func:`viewer.model.constants.small_int_constants`.
    """

    def __init__(self, sg: Subgraph, values: Mapping[int, np.ndarray] | None = None):
        self.sg = sg
        self.values = dict(values or {})
        self.prefix: Prefix = patchable_prefix(sg, self.values)
        analysis, _ = analyze_with_temporaries(sg)
        self.untiled_peak_bytes = plan_litert(analysis.problem()).arena_bytes
        #: The widest operator with kernel temporaries (index, op name).
        self.widest_op = (analysis.widest_op, analysis.op_name(analysis.widest_op))
        shapes = {t.index: tuple(t.shape) for t in sg.tensors}
        self._cum_macs = np.cumsum([ops.macs(op, shapes) for op in sg.operators]) if sg.operators else np.zeros(0)
        self._axis: dict = {}
        self._class: dict = {}
        self._tail: dict = {}

    def splits(self) -> list[int]:
        """Every valid split K (0..last patchable operator) whose cut excludes graph outputs."""
        outs = set(self.sg.outputs)
        skip = constant_ops(self.sg)
        return [k for k in range(self.prefix.last_op + 1)
                if k not in skip and cut_tensors(self.sg, k) and not outs & set(cut_tensors(self.sg, k))]

    def _geom(self, k, cut, axis, i, n):
        key = (k, axis, i, n)
        if key not in self._axis:
            self._axis[key] = axis_geometry(self.sg, k, cut, axis, i, n, self.values)
        return self._axis[key]

    def tail(self, k: int, cut: list[int]) -> tuple[GraphSpec, int]:
        if k not in self._tail:
            g = build_tail(self.sg, k, cut)
            self._tail[k] = (g, arena_of(to_subgraph(g, self.sg))[0])
        return self._tail[k]

    def evaluate(self, grid: tuple[int, int], k: int, input_mode: str = RESIDENT) -> TilePlan:
        """Plan the tiled execution for ``grid`` (rows, columns) split after operator ``k``.

        Raises
        ------
        ValueError
            ``k`` is outside the patchable prefix, or a cut tensor is smaller than the grid.
        viewer.ops.NotLocal
            A patch cannot be made exact (see :func:`viewer.whatif.tiling.graph.build_patch`).
        """
        sg = self.sg
        if not 0 <= k <= self.prefix.last_op:
            raise ValueError(f"split {k} is outside the patchable prefix 0..{self.prefix.last_op}"
                             + (f" ({self.prefix.reason})" if self.prefix.reason else ""))
        r, c = grid
        cut = cut_tensors(sg, k)
        if k in constant_ops(sg) or not cut:
            raise ValueError(f"operator #{k} ({sg.operators[k].op_name}) computes weights from constants: "
                             "split after an operator of the image path")
        rows = [self._geom(k, cut, 1, i, r) for i in range(r)]
        cols = [self._geom(k, cut, 2, j, c) for j in range(c)]
        ykeys = _class_names([g.key(sg) for g in rows], ("top", "mid", "bottom"))
        xkeys = _class_names([g.key(sg) for g in cols], ("left", "mid", "right"))
        classes: dict[str, PatchClass] = {}
        for i, gy in enumerate(rows):
            for j, gx in enumerate(cols):
                name = f"{ykeys[i]}_{xkeys[j]}" if r > 1 and c > 1 else (ykeys[i] if c == 1 else xkeys[j])
                name = name if (r, c) != (1, 1) else "whole"
                if name in classes:
                    classes[name].patches.append((i, j))
                    continue
                ky, kx = gy.key(sg), gx.key(sg)
                figures = self._class.get((k, ky, kx)) or self._class.get((k, kx, ky))  # a transpose: same figures
                built = None
                if figures is None:
                    built = build_patch(sg, k, gy, gx, name)
                    sub = to_subgraph(built, sg)
                    arena, temps = arena_of(sub)
                    figures = self._class[(k, ky, kx)] = (arena, temps, graph_macs(sub))
                arena, temps, m = figures
                t_in = self.prefix.input
                src = sg.tensors[t_in]
                inp = (src.shape[0], gy.need[t_in][1] - gy.need[t_in][0], gx.need[t_in][1] - gx.need[t_in][0],
                       src.shape[3])
                make = (lambda gy=gy, gx=gx, name=name: build_patch(sg, k, gy, gx, name))
                classes[name] = PatchClass(name, [(i, j)], make, inp, arena, temps, m, built)
        tail, tail_arena = self.tail(k, cut)
        input_bytes = sum(sg.tensors[t].nbytes for t in sg.inputs)
        return TilePlan(
            grid=(r, c), split=k, input_mode=input_mode, cut=cut,
            cut_names=[sg.tensors[t].name for t in cut], cut_bytes=sum(sg.tensors[t].nbytes for t in cut),
            input_bytes=input_bytes, classes=list(classes.values()), tail=tail, tail_arena_bytes=tail_arena,
            untiled_peak_bytes=self.untiled_peak_bytes, untiled_macs=int(self._cum_macs[k]),
            tiled_macs=sum(cl.macs * len(cl.patches) for cl in classes.values()),
        )


def _class_names(keys: list, words: tuple[str, str, str]) -> list[str]:
    """Name each position by its class: first/middle/last word, numbered when uneven sizes make
    several distinct classes of the same kind (e.g. ``mid``, ``mid2``)."""
    first, mid, last = words
    names: list[str] = []
    seen: dict[tuple, str] = {}
    count = 0
    for i, k in enumerate(keys):
        if len(keys) == 1:
            names.append(first if False else "all")
            continue
        if i == 0:
            names.append(first)
            continue
        if i == len(keys) - 1:
            names.append(last)
            continue
        if k not in seen:
            count += 1
            seen[k] = mid if count == 1 else f"{mid}{count}"
        names.append(seen[k])
    return names


@dataclass
class SearchResult:
    """The search over grids and splits.

    Attributes
    ----------
    best : dict
        Grid -> its best plan (lowest peak; on a tie, less overhead).
    curve : dict
        Grid -> list of (split, peak bytes, overhead %) for every split tried.
    skipped : dict
        Grid -> list of (split, reason) for the splits that could not be planned.
    """

    untiled_peak_bytes: int
    prefix: Prefix
    widest_op: tuple[int, str] = (-1, "")
    best: dict[tuple[int, int], TilePlan] = field(default_factory=dict)
    curve: dict[tuple[int, int], list[tuple[int, int, float]]] = field(default_factory=dict)
    skipped: dict[tuple[int, int], list[tuple[int, str]]] = field(default_factory=dict)
    complete: bool = True

    @property
    def overall(self) -> TilePlan | None:
        plans = list(self.best.values())
        return min(plans, key=lambda p: (p.peak_bytes, p.overhead_pct)) if plans else None

    @property
    def helps(self) -> bool:
        o = self.overall
        return o is not None and o.peak_bytes < self.untiled_peak_bytes


def search(tiler: Tiler, grids=None, splits=None, input_mode: str = RESIDENT,
           progress: Callable[[int, int], None] | None = None,
           cancelled: Callable[[], bool] | None = None) -> SearchResult:
    """Try every grid (default 1x1, 2x2, ..., 8x8) with every split (default all valid ones).

    ``progress(done, total)`` is called after each (grid, split); when ``cancelled()`` turns
    true the search stops and returns what it has (``SearchResult.complete`` False).

    Returns
    -------
    SearchResult
    """
    grids = list(grids) if grids is not None else [(n, n) for n in range(1, 9)]
    splits = list(splits) if splits is not None else tiler.splits()
    res = SearchResult(tiler.untiled_peak_bytes, tiler.prefix, tiler.widest_op)
    total, done = len(grids) * len(splits), 0
    for grid in grids:
        res.curve[grid], res.skipped[grid] = [], []
        for k in splits:
            done += 1
            if cancelled is not None and cancelled():
                res.complete = False
                return res
            try:
                p = tiler.evaluate(grid, k, input_mode)
            except (ValueError, ops.NotLocal) as e:
                res.skipped[grid].append((k, str(e)))
                if progress is not None:
                    progress(done, total)
                continue
            res.curve[grid].append((k, p.peak_bytes, p.overhead_pct))
            b = res.best.get(grid)
            if b is None or (p.peak_bytes, p.overhead_pct) < (b.peak_bytes, b.overhead_pct):
                res.best[grid] = p
            if progress is not None:
                progress(done, total)
    return res
