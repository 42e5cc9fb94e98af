"""What the packing chart draws, as numpy arrays (no Qt).

:func:`build_chart_data` turns an :class:`~viewer.analysis.types.Analysis` and a
:class:`~viewer.planning.types.Plan` into one row per planned tensor: a rectangle whose x extent
is the tensor's usage interval and whose y extent is its bytes in the tensor arena. The Qt
painting item (:mod:`viewer.export.chart_scene`), the interactive widget and the PNG/SVG export
all draw from the same :class:`ChartData`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from viewer.analysis._graph_arrays import no_gc
from viewer.analysis.types import (
    KIND_ALIAS,
    KIND_INPUT,
    KIND_INTERMEDIATE,
    KIND_OUTPUT,
    KIND_TEMPORARY,
    KIND_VARIABLE,
    Analysis,
)
from viewer.errors import PlanningError, UsageError
from viewer.planning.types import Plan
from viewer.units import format_bytes
from viewer.whatif.edits import edits_label  # noqa: F401 (re-exported: the title names the edits)

#: Tensor kinds in legend order; ``ChartData.kind`` holds indices into this tuple.
KINDS: tuple[str, ...] = (
    KIND_INTERMEDIATE,
    KIND_INPUT,
    KIND_OUTPUT,
    KIND_VARIABLE,
    KIND_TEMPORARY,
    KIND_ALIAS,
)

#: Colour of each kind (RGB), colour-blind-friendly (Tableau 10). Kernel temporaries are red.
KIND_COLORS: Mapping[str, tuple[int, int, int]] = {
    KIND_INTERMEDIATE: (78, 121, 167),
    KIND_INPUT: (89, 161, 79),
    KIND_OUTPUT: (237, 201, 72),
    KIND_VARIABLE: (176, 122, 161),
    KIND_TEMPORARY: (225, 87, 89),
    KIND_ALIAS: (118, 183, 178),
}

#: Legend labels of the kinds.
KIND_LABELS: Mapping[str, str] = {
    KIND_INTERMEDIATE: "intermediate",
    KIND_INPUT: "graph input",
    KIND_OUTPUT: "graph output",
    KIND_VARIABLE: "variable",
    KIND_TEMPORARY: "kernel temporary",
    KIND_ALIAS: "in-place (alias)",
}

#: The op palette (Tableau 20 without its greys, which mean "no producer" and "other ops").
#: An op type keeps its colour across models and runs (see :func:`op_color`).
OP_PALETTE: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (188, 189, 34), (23, 190, 207), (174, 199, 232),
    (255, 187, 120), (152, 223, 138), (255, 152, 150), (197, 176, 213), (196, 156, 148),
    (247, 182, 210), (219, 219, 141), (158, 218, 229),
)
#: Fixed palette slots for the most common op types, so they never collide.
_OP_SLOTS = {
    "CONV_2D": 0, "DEPTHWISE_CONV_2D": 1, "ADD": 2, "CONCATENATION": 3, "FULLY_CONNECTED": 4,
    "MUL": 5, "AVERAGE_POOL_2D": 6, "MAX_POOL_2D": 7, "RESHAPE": 8, "TRANSPOSE_CONV": 9,
    "PAD": 10, "SOFTMAX": 11, "RESIZE_BILINEAR": 12, "MEAN": 13, "LOGISTIC": 14,
    "QUANTIZE": 15, "DEQUANTIZE": 16, "HARD_SWISH": 17, "BATCH_MATMUL": 10,
    "RESIZE_NEAREST_NEIGHBOR": 16, "SUB": 15, "TRANSPOSE": 14, "STRIDED_SLICE": 17,
}
#: Colour of tensors no operator produces (graph inputs, variables) in op mode.
NO_PRODUCER_COLOR = (170, 170, 170)
NO_PRODUCER_LABEL = "no producer (graph input)"
OTHER_OPS_COLOR = (110, 110, 110)
#: At most this many op types get their own legend entry; the rest share "other ops".
MAX_OP_LEGEND = 14

COLOR_MODES = ("kind", "op")


def op_slot(op_name: str) -> int:
    """Preferred palette slot of an op type: fixed for common ops, else a CRC32 of the name."""
    slot = _OP_SLOTS.get(op_name)
    return zlib.crc32(op_name.encode()) % len(OP_PALETTE) if slot is None else slot


def op_color(op_name: str) -> tuple[int, int, int]:
    """Preferred colour of an op type (the same in every model and run). Within one chart, an
    op whose preferred slot another op already holds takes the next free slot."""
    return OP_PALETTE[op_slot(op_name)]


@dataclass(frozen=True, eq=False)
class ChartData:
    """One rectangle per planned tensor, plus the figures drawn around them.

    Every per-tensor array has shape (n,), one row per planned tensor (in-place aliases
    included, drawn at their root's offset). Rows are in tensor-index order except that
    aliases come last, so they are drawn on top of their root.

    Attributes
    ----------
    tensor : numpy.ndarray of int64
        Tensor index (kernel temporaries use the runtime's indices).
    x0, x1 : numpy.ndarray of int64
        ``first_op`` and ``last_op + 1``: the rectangle spans the inclusive usage interval
        ``[first_op, last_op]`` of operator indices in execution order.
    y0, y1 : numpy.ndarray of int64
        ``offset`` and ``offset + nbytes``: bytes from the arena's start (y1 exclusive).
    kind : numpy.ndarray of int8
        Index into :data:`KINDS`.
    producer : numpy.ndarray of int64
        Operator that writes the tensor, -1 for none (graph inputs, variables).
    producer_op : numpy.ndarray of object (str)
        Op type of the producer, ``"-"`` when there is none.
    color : numpy.ndarray of int16
        Index into ``palette`` under the current ``color_by``.
    palette : tuple of (r, g, b)
    legend : tuple of (label, palette index)
        Legend entries, in display order.
    color_by : str
        ``"kind"`` or ``"op"``.
    breadth : numpy.ndarray of int64
        Shape (num_ops,): bytes live at each operator (operator breadth).
    lower_bound : int
        Bytes: the widest operator's breadth; no arena can be smaller.
    arena_bytes : int
        Bytes: the plan's high-water mark.
    naive_bytes : int
        Bytes: the naive sum (every tensor its own bytes).
    widest_op : int
        Index of the widest operator; -1 when there are no operators.
    widest_op_name : str
    num_ops : int
    model_name, planner : str
    subgraph : int
    title : str
        ``"MODEL — subgraph N — PLANNER: arena X, lower bound Y"``.
    gap_bound : int
        Bytes: the bound the arena's gap is measured against, the larger of ``lower_bound``
        and the bound for offsets aligned to ``alignment`` bytes
        (:func:`viewer.export.report.gap_bound`; 0 = ``lower_bound``).
    alignment : int
        The plan's offset alignment in bytes.
    names : numpy.ndarray of object (str), optional
        Each row's tensor name (:meth:`Analysis.tensor_name`: kernel temporaries get the
        runtime names of ``Analysis.temporary_names`` when the analysis has them).
    """

    tensor: np.ndarray
    x0: np.ndarray
    x1: np.ndarray
    y0: np.ndarray
    y1: np.ndarray
    kind: np.ndarray
    producer: np.ndarray
    producer_op: np.ndarray
    color: np.ndarray
    palette: tuple[tuple[int, int, int], ...]
    legend: tuple[tuple[str, int], ...]
    color_by: str
    breadth: np.ndarray
    lower_bound: int
    arena_bytes: int
    naive_bytes: int
    widest_op: int
    widest_op_name: str
    num_ops: int
    model_name: str
    subgraph: int
    planner: str
    title: str
    names: np.ndarray | None = None
    gap_bound: int = 0
    alignment: int = 1

    def __len__(self) -> int:
        return len(self.tensor)

    @property
    def nbytes(self) -> np.ndarray:
        """Bytes of each tensor, shape (n,), int64."""
        return self.y1 - self.y0

    @property
    def held_ops(self) -> np.ndarray:
        """Operators each tensor is held across (``last_op - first_op + 1``), shape (n,)."""
        return self.x1 - self.x0

    def offsets(self) -> dict[int, int]:
        """Tensor index -> drawn byte offset."""
        return {int(t): int(y) for t, y in zip(self.tensor, self.y0)}

    def row_of(self, tensor: int) -> int | None:
        """Row of ``tensor`` in the arrays, or None when it is not drawn."""
        hits = np.flatnonzero(self.tensor == tensor)
        return int(hits[0]) if len(hits) else None


def _title(model_name: str, subgraph: int, planner: str, arena: int, lower: int) -> str:
    return (
        f"{model_name} — subgraph {subgraph} — {planner}: arena {format_bytes(arena)}, "
        f"lower bound {format_bytes(lower)}"
    )


def build_chart_data(
    analysis: Analysis,
    plan: Plan,
    *,
    color_by: str = "kind",
    model_name: str = "model",
    subgraph: int | None = None,
    note: str = "",
) -> ChartData:
    """Build what the packing chart draws for ``plan`` of ``analysis``.

    Parameters
    ----------
    analysis : Analysis
        Usage intervals of one subgraph.
    plan : Plan
        Offsets of the planning problem's buffers (aliases may be absent; they are drawn at
        their root's offset through :meth:`Analysis.resolve_alias_offsets`).
    color_by : {"kind", "op"}
        Colour each rectangle by its tensor kind (input, output, intermediate, variable, kernel
        temporary, in-place) or by its producer's op type (a stable palette, see
        :func:`op_color`).
    model_name : str
        Shown in the title (usually the file's name).
    subgraph : int, optional
        Shown in the title; defaults to ``analysis.subgraph.index``.
    note : str
        Appended to the title after " — " (e.g. "what-if: greedy_by_size's layout; LiteRT
        does not use it ..."); "" for none.

    Returns
    -------
    ChartData

    Raises
    ------
    viewer.errors.UsageError
        For an unknown ``color_by``.
    viewer.errors.PlanningError
        When the plan has no offset for a tensor of the analysis (plan of another analysis).
    """
    if color_by not in COLOR_MODES:
        raise UsageError(f"unknown colour mode {color_by!r}; use one of {', '.join(COLOR_MODES)}")
    with no_gc():  # one tuple per tensor: at 100k the collector would walk the model each time
        return _build_chart_data(analysis, plan, color_by, model_name, subgraph, note)


def _build_chart_data(analysis: Analysis, plan: Plan, color_by: str, model_name: str,
                      subgraph: int | None, note: str) -> ChartData:
    offsets = analysis.resolve_alias_offsets(plan.offsets)
    usages = [u for u in analysis.usages if u.alias_of is None] + [
        u for u in analysis.usages if u.alias_of is not None
    ]
    missing = [u.tensor for u in usages if u.tensor not in offsets]
    if missing:
        raise PlanningError(
            f"plan {plan.planner!r} has no offset for tensors {missing[:8]}"
            f"{' ...' if len(missing) > 8 else ''}: it was made for another analysis"
        )
    n = len(usages)
    kind_index = {k: i for i, k in enumerate(KINDS)}
    # One pass over the usages (a Python loop per column costs as much as the paint).
    cols = np.array([(u.tensor, u.first_op, u.last_op + 1, offsets[u.tensor], u.nbytes,
                      kind_index.get(u.kind, 0), -1 if u.producer is None else u.producer)
                     for u in usages], dtype=np.int64).reshape(n, 7)
    tensor, x0, x1, y0 = (np.ascontiguousarray(cols[:, i]) for i in range(4))
    y1 = y0 + cols[:, 4]
    kind = cols[:, 5].astype(np.int8)
    producer = np.ascontiguousarray(cols[:, 6])
    producer_op, names = _names(analysis, tensor, producer)

    if color_by == "kind":
        palette = tuple(KIND_COLORS[k] for k in KINDS)
        color = kind.astype(np.int16)
        present = set(int(k) for k in np.unique(kind))
        legend = tuple((KIND_LABELS[KINDS[i]], i) for i in range(len(KINDS)) if i in present)
    else:
        palette, color, legend = _op_colors(producer_op, y1 - y0)

    breadth = analysis.breadth
    if breadth is None:
        breadth = analysis.problem().breadth()[: analysis.num_ops]
    breadth = np.asarray(breadth, dtype=np.int64)
    lower = int(analysis.lower_bound_bytes or (breadth.max() if len(breadth) else 0))
    widest = int(analysis.widest_op)
    if widest < 0 and len(breadth) and analysis.num_ops:
        widest = int(np.argmax(breadth))
    sg = analysis.subgraph.index if subgraph is None else subgraph
    return ChartData(
        tensor=tensor, x0=x0, x1=x1, y0=y0, y1=y1, kind=kind, producer=producer,
        producer_op=producer_op, color=color, palette=palette, legend=legend,
        color_by=color_by, breadth=breadth, lower_bound=lower,
        arena_bytes=int(plan.arena_bytes), naive_bytes=int(analysis.naive_bytes),
        widest_op=widest, widest_op_name=analysis.op_name(widest) if widest >= 0 else "-",
        num_ops=analysis.num_ops, model_name=model_name, subgraph=sg, planner=plan.planner,
        title=_title(model_name, sg, plan.planner, int(plan.arena_bytes), lower)
        + (f" — {note}" if note else ""),
        names=names, gap_bound=max(_gap_bound(analysis, plan), lower),
        alignment=int(plan.alignment or 1),
    )


def _gap_bound(analysis: Analysis, plan: Plan) -> int:
    from viewer.export.report import gap_bound

    return gap_bound(analysis, int(plan.alignment or 1))


def _names(analysis: Analysis, tensor: np.ndarray, producer: np.ndarray):
    """(producer op type, tensor name) per row, object arrays of shape (n,): the model's own
    tensors and operators by array lookups, only the runtime's temporaries one by one."""
    sg = analysis.subgraph
    op_types = np.array([op.op_name for op in sg.operators] + ["-"], dtype=object)
    producer_op = op_types[np.where((producer >= 0) & (producer < len(sg.operators)), producer, -1)]
    temp_ops = analysis.temporaries_ops or {}
    for i in np.flatnonzero(producer < 0):
        producer_op[i] = temp_ops.get(int(tensor[i]), "-")
    own = np.array([t.name for t in sg.tensors] + [""], dtype=object)
    inside = (tensor >= 0) & (tensor < len(sg.tensors))
    names = own[np.where(inside, tensor, -1)]
    for i in np.flatnonzero(~inside):
        names[i] = analysis.tensor_name(int(tensor[i]))
    return producer_op, names


def _op_colors(producer_op: np.ndarray, nbytes: np.ndarray):
    """Palette, per-row colour index and legend for colouring by producer op type."""
    names = [str(s) for s in producer_op]
    totals: dict[str, int] = {}
    for name, b in zip(names, nbytes.tolist()):
        if name != "-":
            totals[name] = totals.get(name, 0) + int(b)
    ranked = sorted(totals, key=lambda s: (-totals[s], s))
    shown = ranked[:MAX_OP_LEGEND]
    if len(ranked) > MAX_OP_LEGEND:  # make room for "other ops"
        shown = ranked[: MAX_OP_LEGEND - 1]
    # Give each shown op its preferred colour; on a clash, the next free one. Common ops (fixed
    # slots) choose first, then the rest by name, so colours do not depend on the plan.
    colour_of: dict[str, int] = {}
    for name in sorted(shown, key=lambda n: (n not in _OP_SLOTS, n)):
        k = op_slot(name)
        while k in colour_of.values() and len(colour_of) < len(OP_PALETTE):
            k = (k + 1) % len(OP_PALETTE)
        colour_of[name] = k
    palette: list[tuple[int, int, int]] = []
    legend: list[tuple[str, int]] = []
    slot: dict[str, int] = {}
    for name in shown:
        slot[name] = len(palette)
        legend.append((name, len(palette)))
        palette.append(OP_PALETTE[colour_of[name]])
    other = len(palette)
    if len(ranked) > len(shown):
        legend.append((f"other ops ({len(ranked) - len(shown)} types)", other))
    palette.append(OTHER_OPS_COLOR)
    none = len(palette)
    palette.append(NO_PRODUCER_COLOR)
    if "-" in names:
        legend.append((NO_PRODUCER_LABEL, none))
    color = np.fromiter(
        (none if s == "-" else slot.get(s, other) for s in names), np.int16, len(names)
    )
    return tuple(palette), color, tuple(legend)


def _delta(before: int, after: int) -> str:
    d = after - before
    sign = "+" if d > 0 else ("-" if d < 0 else "±")
    pct = f", {100.0 * d / before:+.1f}%" if before > 0 and d else ""
    return f"{format_bytes(before)} → {format_bytes(after)} ({sign}{format_bytes(abs(d))}{pct})"


def compare_text(left: ChartData, right: ChartData, outside=None) -> str:
    """One line comparing two charts (baseline ``left``, edited ``right``).

    Arena (high-water mark) and lower bound, each ``before -> after (delta, percent)``, and
    whether the widest operator moved, e.g. ``"arena 6.32 MiB → 3.16 MiB (-3.16 MiB, -50.0%);
    lower bound 6.32 MiB → 3.16 MiB (-3.16 MiB, -50.0%); widest operator #4 DEPTHWISE_CONV_2D
    in both"``. Operator indices are execution positions in each chart's subgraph.

    ``outside``, when given, is ``(left_side, right_side)``, each ``(persistent_bytes,
    other_subgraphs_bytes)`` or None when not known: the line then also says the persistent
    tensors (outside the arena) and what the model holds, arena + persistent + other subgraphs'
    arenas (``compare``'s ``held``), e.g. ``"…; persistent 0 B → 13.3 MiB (+13.3 MiB); held 6.3
    MiB → 19.6 MiB (+13.3 MiB, +210.0%) (arena + persistent + other subgraphs); …"``; a side
    not known says so ("persistent tensors not counted: not known for …").
    """
    if left.widest_op == right.widest_op and left.widest_op_name == right.widest_op_name:
        widest = (f"widest operator #{left.widest_op} {left.widest_op_name} in both"
                  if left.widest_op >= 0 else "no operators")
    else:
        widest = (f"widest operator moved: #{left.widest_op} {left.widest_op_name} → "
                  f"#{right.widest_op} {right.widest_op_name}")
    held = "" if outside is None else _held_text(left, right, *outside)
    return (f"arena {_delta(left.arena_bytes, right.arena_bytes)}; {held}"
            f"lower bound {_delta(left.lower_bound, right.lower_bound)}; {widest}")


def _held_text(left: ChartData, right: ChartData, lo, ro) -> str:
    """The persistent and held parts of :func:`compare_text` ("" never: unknown says so)."""
    if lo is None or ro is None:
        which = "either side" if lo is None and ro is None else ("the left" if lo is None else "the right")
        return f"persistent tensors outside the arena not counted (not known for {which}); "
    lh, rh = left.arena_bytes + lo[0] + lo[1], right.arena_bytes + ro[0] + ro[1]
    others = " + other subgraphs" if lo[1] or ro[1] else ""
    return (f"persistent {_delta(lo[0], ro[0])}; held {_delta(lh, rh)} "
            f"(arena + persistent{others}); ")


#: The title's words on kernel temporaries, as ``export`` and the window's export say them.
TEMPORARIES_INCLUDED = " — kernel temporaries included ({how})"
TEMPORARIES_UNMEASURED = " — kernel temporaries NOT included (the runtime could not measure them)"
TENSORS_ONLY = " — tensors only, kernel temporaries NOT included"


def temporaries_title(included: bool, estimated: bool = False, measured: bool = True) -> str:
    """The chart title's suffix on kernel temporaries (``export``'s words, the window's too).

    Parameters
    ----------
    included : bool
        The chart draws the runtime's kernel temporaries (or the runtime ran and has none).
    estimated : bool
        They are estimated (a storage what-if LiteRT cannot run), not measured.
    measured : bool
        With ``included`` False: True when the runtime's temporaries are known but left out
        (tensors only), False when the runtime could not measure them.

    Returns
    -------
    str
        E.g. ``" — kernel temporaries included (measured)"``,
        ``" — tensors only, kernel temporaries NOT included"``.
    """
    if included:
        return TEMPORARIES_INCLUDED.format(how="estimated" if estimated else "measured")
    return TENSORS_ONLY if measured else TEMPORARIES_UNMEASURED


def titled_model_name(model_name: str, edits) -> str:
    """``model_name`` with the what-if edits for a chart's title (:func:`edits_label`), e.g.
    ``"unet_256.tflite — what-if: input 0=1x512x512x3, batch 4, activations float16"``;
    ``model_name`` alone when there are no edits."""
    what = edits_label(edits)
    return f"{model_name} — what-if: {what}" if what else model_name


def temporaries_text(data: ChartData, limit: int = 4) -> str:
    """One line naming the largest kernel temporaries of a chart ("" when it has none), e.g.
    ``"kernel temporaries (largest 2 of 5): #1 CONV_2D kernel temporary 0 (...) 1.50 MiB at
    operator 1; ..."``, with the names the runtime gave (``Analysis.temporary_names``)."""
    rows = np.flatnonzero(data.kind == KINDS.index(KIND_TEMPORARY))
    if not len(rows):
        return ""
    nbytes = data.nbytes  # one array, not one per row
    rows = rows[np.lexsort((data.tensor[rows], -nbytes[rows]))].tolist()
    parts = []
    for r in rows[:limit]:
        name = str(data.names[r]) if data.names is not None else f"temporary {int(data.tensor[r])}"
        parts.append(f"{name} {format_bytes(int(nbytes[r]))} at operator {int(data.x0[r])}")
    head = (f"kernel temporaries (largest {min(limit, len(rows))} of {len(rows)})"
            if len(rows) > limit else "kernel temporaries")
    return f"{head}: " + "; ".join(parts)


#: An exported (or shown) breadth curve has at most this many steps per pixel of width; a
#: longer graph's curve keeps each run's peak and trough (:func:`breadth_steps`).
CURVE_STEPS_PER_PX = 4


def breadth_steps(breadth: np.ndarray, max_steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The breadth curve as steps: ``(edges, values)``, float64 of shapes (k + 1,) and (k,).

    Step ``i`` is drawn at height ``values[i]`` from x = ``edges[i]`` to ``edges[i + 1]``
    (operator indices; operator ``j`` spans ``[j, j + 1)``). With at most ``max_steps``
    operators (or ``max_steps`` None) every operator is its own step. With more, operators
    are taken in ``max_steps // 2`` runs of equal length and each run becomes two steps, its
    largest and its smallest breadth in the order they occur (split where the later of the two
    starts), so peaks and troughs are kept. An export asks for 4 steps per pixel of width:
    each run is then under half a pixel, and the curve covers the same pixels as one step per
    operator, while a 100k-operator curve is 6,400 steps instead of 100k (a ~45 MB SVG of
    segments took seconds to write and flatten; issue 15). The window redraws it for the
    operators in view (:meth:`viewer.export.chart_scene.ChartPlot.fit_curve_to_view`).
    """
    b = np.asarray(breadth, dtype=np.int64)
    n = len(b)
    if max_steps is None or n <= max_steps:
        return np.arange(n + 1, dtype=np.float64), b.astype(np.float64)
    runs = max(int(max_steps) // 2, 1)
    k = -(-n // runs)  # operators per run
    starts = np.arange(0, n, k)
    grid = np.pad(b, (0, len(starts) * k - n), mode="edge").reshape(len(starts), k)  # the edge: no new extremes
    rows = np.arange(len(starts))
    hi_at, lo_at = grid.argmax(axis=1), grid.argmin(axis=1)
    hi, lo = grid[rows, hi_at], grid[rows, lo_at]
    hi_first = hi_at <= lo_at
    values = np.empty(2 * len(starts), dtype=np.float64)
    values[0::2] = np.where(hi_first, hi, lo)
    values[1::2] = np.where(hi_first, lo, hi)
    edges = np.empty(2 * len(starts) + 1, dtype=np.float64)
    edges[0:-1:2] = starts
    edges[1::2] = np.minimum(starts + np.maximum(hi_at, lo_at), n)
    edges[-1] = n
    return edges, values
