"""The tiling what-if of the open document, without Qt.

A grid or split change is answered at once from our own numbers (:func:`evaluate`: the
:class:`~viewer.whatif.tiling.plan.Tiler` of the model is kept, so a change re-plans only the
patch classes it has not seen), as a drawable tiled execution (:func:`tiled_view`): one patch's
tensors (the largest patch class), the cut buffers as long rectangles across the patch stage and
into the tail, the graph input when resident, then the tail. The runtime's confirmation
(:func:`compute_confirm`: write the models, LiteRT measures and stitches) and the peak-vs-split
curve (:func:`compute_curve`) are background work, ``fn(request, progress, cancelled)`` as the
window's TaskRunner runs it.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from viewer.analysis.types import KIND_INPUT, KIND_INTERMEDIATE, KIND_OUTPUT, KIND_TEMPORARY, Analysis, TensorUsage
from viewer.errors import PlanCancelled
from viewer.model.types import Operator, Subgraph, Tensor
from viewer.planning.litert import plan_litert
from viewer.planning.types import Plan, align_up
from viewer.whatif.tiling.graph import to_subgraph
from viewer.whatif.tiling.plan import RESIDENT, TilePlan, Tiler, analyze_with_temporaries
from viewer.whatif.tiling.report import make_tiler

#: The planner name of the drawn tiled execution.
TILED_PLANNER = "tiled"
_TILERS: dict[tuple, Tiler] = {}
#: Ids of the drawn kernel temporaries start here (after any tensor index).
_TEMP_BASE = 1 << 24


def tiler_for(path: str, subgraph: int = 0) -> Tiler:
    """The :class:`Tiler` of ``path`` (kept while the file is unchanged)."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = 0
    key = (os.path.abspath(path), subgraph, stamp)
    if key not in _TILERS:
        if len(_TILERS) > 4:
            _TILERS.clear()
        _TILERS[key] = make_tiler(path, subgraph)
    return _TILERS[key]


@dataclass(frozen=True)
class TiledView:
    """A tiled execution drawn as one timeline: patch-stage operators, then the tail's."""

    plan: TilePlan
    analysis: Analysis
    drawn: Plan
    patch_ops: int
    patch_class: str


def evaluate(path: str, grid: tuple[int, int], split: int, input_mode: str = RESIDENT,
             subgraph: int = 0) -> TiledView:
    """Plan ``grid`` / ``split`` from our own numbers and build its drawable view.

    Raises
    ------
    ValueError, viewer.ops.NotLocal
        As :meth:`Tiler.evaluate`.
    """
    tiler = tiler_for(path, subgraph)
    return tiled_view(tiler.evaluate(tuple(grid), int(split), input_mode), tiler)


def _usage_plan(sub: Subgraph):
    analysis, _ = analyze_with_temporaries(sub)
    return analysis, plan_litert(analysis.problem())


def tiled_view(tp: TilePlan, tiler: Tiler) -> TiledView:
    """One drawable :class:`Analysis` + :class:`Plan` of the tiled execution.

    Offsets: the tail's own plan (LiteRT places its inputs, the cut tensors, first); in the
    patch stage the cut buffers keep those offsets, the graph input (resident) sits above them,
    and the largest patch graph's own plan above that. Operator indices: 0..P-1 the patch
    graph's, P.. the tail's.
    """
    sg = tiler.sg
    cls = max(tp.classes, key=lambda c: c.arena_bytes)
    psub = to_subgraph(cls.graph, sg)
    tsub = to_subgraph(tp.tail, sg)
    pa, pp = _usage_plan(psub)
    ta, tplan = _usage_plan(tsub)
    n_p = len(psub.operators)
    n_ops = n_p + len(tsub.operators)
    tensors: list[Tensor] = []
    usages: list[TensorUsage] = []
    offsets: dict[int, int] = {}
    names: dict[int, str] = {}
    temps: dict[int, str] = {}

    def add(t: Tensor, first: int, last: int, kind: str, offset: int, producer=None, consumers=(),
            temporary: str | None = None) -> None:
        i = len(tensors) if temporary is None else _TEMP_BASE + len(temps)
        if temporary is None:
            tensors.append(Tensor(i, t.name, t.shape, t.shape, t.dtype, t.nbytes))
        else:
            temps[i] = temporary
            names[i] = t.name
        usages.append(TensorUsage(i, first, last, t.nbytes, kind, producer, tuple(consumers)))
        offsets[i] = offset

    # Tail first (its plan fixes the cut buffers' offsets), shifted after the patch stage.
    tail_inputs = set(tsub.inputs)
    cut_names = set(tp.cut_names)
    for u in ta.usages:
        off = tplan.offsets.get(u.tensor)
        if off is None or u.alias_of is not None:
            continue
        if u.kind == KIND_TEMPORARY:
            t = Tensor(0, ta.tensor_name(u.tensor), (u.nbytes,), (u.nbytes,), "uint8", u.nbytes)
            add(t, u.first_op + n_p, u.last_op + n_p, KIND_TEMPORARY, off, u.first_op + n_p,
                temporary=ta.temporaries_ops.get(u.tensor, "?"))
            continue
        t = tsub.tensors[u.tensor]
        if u.tensor in tail_inputs and t.name in cut_names:  # a cut buffer: filled by every patch
            add(t, 0, u.last_op + n_p, KIND_INTERMEDIATE, off, 0, [c + n_p for c in u.consumers])
            continue
        kind = KIND_OUTPUT if u.kind == KIND_OUTPUT else KIND_INTERMEDIATE
        add(t, u.first_op + n_p, u.last_op + n_p, kind, off,
            None if u.producer is None else u.producer + n_p, [c + n_p for c in u.consumers])
    cut_top = max((offsets[u.tensor] + u.nbytes for u in usages if u.first_op == 0), default=0)
    base = align_up(cut_top, 64)
    if tp.input_mode == RESIDENT:
        for t in sg.inputs:
            full = sg.tensors[t]
            add(Tensor(0, f"{full.name} (whole input, resident)", full.shape, full.shape, full.dtype, full.nbytes),
                0, n_p - 1, KIND_INPUT, base)
            base = align_up(base + full.nbytes, 64)
    for u in pa.usages:
        off = pp.offsets.get(u.tensor)
        if off is None or u.alias_of is not None:
            continue
        if u.kind == KIND_TEMPORARY:
            t = Tensor(0, pa.tensor_name(u.tensor), (u.nbytes,), (u.nbytes,), "uint8", u.nbytes)
            add(t, u.first_op, u.last_op, KIND_TEMPORARY, base + off, u.first_op,
                temporary=pa.temporaries_ops.get(u.tensor, "?"))
            continue
        t = psub.tensors[u.tensor]
        name = f"patch {cls.key}: {t.name}"
        kind = KIND_INPUT if u.kind == KIND_INPUT else KIND_INTERMEDIATE
        add(Tensor(0, name, t.shape, t.shape, t.dtype, t.nbytes), u.first_op, min(u.last_op, n_p - 1), kind,
            base + off, u.producer, u.consumers)
    ops = [Operator(i, o.op_name, o.builtin_code, o.custom_code, o.version, (), (), options=o.options)
           for i, o in enumerate(list(psub.operators) + list(tsub.operators))]
    comb = Subgraph(sg.index, f"{sg.name} tiled", tuple(tensors), tuple(ops), (), ())
    m = max(n_ops, 1)
    diff = np.zeros(m + 1, dtype=np.int64)
    for u in usages:
        diff[u.first_op] += u.nbytes
        diff[min(u.last_op, m - 1) + 1] -= u.nbytes
    breadth = np.cumsum(diff)[:m]
    lb = int(breadth.max()) if len(breadth) else 0
    analysis = Analysis(comb, tuple(usages), {}, temps, breadth, sum(u.nbytes for u in usages), lb,
                        int(np.argmax(breadth)) if len(breadth) else -1, (), temporary_names=names)
    arena = max((offsets[u.tensor] + u.nbytes for u in usages), default=0)
    drawn = Plan(TILED_PLANNER, offsets, arena, stats={"patch_ops": n_p})
    return TiledView(tp, analysis, drawn, n_p, cls.key)


# -- background work -----------------------------------------------------------------------
@dataclass(frozen=True)
class CurveRequest:
    """The search behind the peak-vs-split plot (square grids 1x1..max_grid, every split)."""

    path: str
    subgraph: int = 0
    input_mode: str = RESIDENT
    max_grid: int = 8
    serial: int = 0


@dataclass(frozen=True)
class Curve:
    """The search's answer as the window uses it (read from ``tile --json``)."""

    untiled_peak_bytes: int
    curve: dict
    best: dict
    verdict: str
    helps: bool


@dataclass(frozen=True)
class BestSplit:
    split: int
    peak_bytes: int
    overhead_pct: float


def compute_curve(req: CurveRequest, progress, cancelled) -> Curve:
    """The search, in a child process (``arena-viewer tile MODEL --json``)."""
    rep = _cli_json(["tile", req.path, "--subgraph", str(req.subgraph), "--input", req.input_mode],
                    progress, cancelled, "tiling search (grids 1x1..8x8, every split)", 90.0)

    def grid(key: str) -> tuple[int, int]:
        r, c = key.split("x")
        return int(r), int(c)

    curve = {grid(g): [tuple(p) for p in pts] for g, pts in rep["curve"].items()}
    best = {tuple(c["grid"]): BestSplit(c["split_operator"], c["peak_bytes"], c["overhead_pct"])
            for c in rep["candidates"]}
    return Curve(rep["untiled_peak_bytes"], curve, best, rep["verdict"], rep["helps"])


@dataclass(frozen=True)
class ConfirmRequest:
    """Write the tiled execution's models and have LiteRT measure and stitch them."""

    path: str
    grid: tuple[int, int]
    split: int
    input_mode: str = RESIDENT
    subgraph: int = 0
    serial: int = 0


@dataclass(frozen=True)
class ConfirmResponse:
    request: ConfirmRequest
    verification: dict[str, Any] = field(default_factory=dict)


def _cli_json(args: list[str], progress, cancelled, what: str, expect_s: float) -> dict:
    """Run ``arena-viewer ARGS --json`` in a child process (our pure-Python planning and the
    model writer would hold the GIL against the GUI thread); poll ``cancelled``."""
    import json
    import subprocess
    import time

    from viewer.errors import ViewerError
    from viewer.runtime.spawn import child_command

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(child_command("viewer.cli", *args, "--json"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=root)
    t0 = time.monotonic()
    while proc.poll() is None:
        if cancelled():
            proc.kill()
            proc.communicate()  # reaps it and closes the pipes
            raise PlanCancelled(f"{what} cancelled")
        progress(min(0.95, (time.monotonic() - t0) / expect_s), f"{what}…")
        time.sleep(0.1)
    out, err = proc.communicate()
    if not out.strip():
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise ViewerError(lines[-1] if lines else f"{what} failed (exit {proc.returncode})")
    return json.loads(out)


def compute_confirm(req: ConfirmRequest, progress, cancelled) -> ConfirmResponse:
    """Write the models to a temporary folder and have LiteRT measure and stitch them (a child
    ``arena-viewer tile ... -o DIR --json``)."""
    with tempfile.TemporaryDirectory(prefix="arena-tile-") as tmp:
        rep = _cli_json(["tile", req.path, "--subgraph", str(req.subgraph), "--grid", f"{req.grid[0]}x{req.grid[1]}",
                         "--split-after", str(req.split), "--input", req.input_mode, "-o", tmp],
                        progress, cancelled, "LiteRT: measuring every signature and stitching", 20.0)
    if "verification" not in rep:
        from viewer.errors import ViewerError

        raise ViewerError("; ".join(rep.get("notes", [])) or "not measured")
    return ConfirmResponse(req, rep["verification"])


@dataclass(frozen=True)
class WholeRequest:
    path: str
    tile: str
    overlap: int
    full: str
    subgraph: int = 0
    serial: int = 0


def compute_whole(req: WholeRequest, progress, cancelled) -> dict:
    from viewer.whatif.tiling.whole import whole_input_report

    return whole_input_report(req.path, req.tile, req.overlap, req.full, subgraph=req.subgraph)
