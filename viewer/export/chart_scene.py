"""Qt drawing of the packing chart: one item for every rectangle, and the full plot around it.

Qt is allowed here because rendering needs it; this module never imports :mod:`viewer.ui`.
:class:`PackingItem` paints all rectangles of a plan from numpy arrays, after pyqtgraph's
``BarGraphItem`` (graphicsItems/BarGraphItem.py): rectangles are written into numpy-backed
``QRectF`` primitive arrays (prepared once per data/filter change), one ``drawRects`` call per
colour; its bounding rect comes from the arrays and hit-testing is a numpy search.
:func:`build_chart` lays out the packing plot, the legend, the title and the breadth curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt import QtCore, QtGui, QtWidgets

try:  # pyqtgraph's numpy-backed QRectF array (internal API, present since 0.12.4)
    from pyqtgraph.Qt.internals import PrimitiveArray as _PrimitiveArray
except ImportError:  # pragma: no cover - other pyqtgraph versions
    _PrimitiveArray = None


class _RectList:
    """Fallback for :class:`PrimitiveArray`: a list of QRectF built from the same numpy rows."""

    def __init__(self):
        self._mem = np.zeros((0, 4))

    def resize(self, n):
        self._mem = np.zeros((n, 4))

    def ndarray(self):
        return self._mem

    def __len__(self):
        return len(self._mem)

    def drawargs(self):
        return ([QtCore.QRectF(*row) for row in self._mem.tolist()],)

from viewer.export.chart_data import ChartData, temporaries_text
from viewer.units import format_bytes

from viewer.export._qt_compat import guard_refcount_bug  # noqa: E402

NONE_REFCOUNT_PINNED = guard_refcount_bug()

#: Colours of everything but the rectangles (light theme, also used for export).
THEME = {
    "background": (255, 255, 255),
    "foreground": (40, 40, 40),
    "grid_alpha": 0.25,
    "band": (255, 160, 0, 55),
    "band_text": (170, 90, 0),
    "lower_bound": (200, 30, 30),
    "arena": (20, 20, 20),
    "breadth": (78, 121, 167),
    "breadth_fill": (78, 121, 167, 90),
}
#: Rectangles drawn with an outline while there are at most this many (else fill only).
OUTLINE_LIMIT = 20000
#: ... and while one operator column is at least this many device pixels wide.
OUTLINE_MIN_PX = 3.0
#: The packing plot shows the arena up to this multiple of its size: room above the arena line
#: for the widest-operator annotation and the line labels.
HEADROOM = 1.22
#: Height in pixels of one line of in-plot annotation text (band and line labels).
ANNOTATION_PX = 19.0
#: Alpha of rectangles filtered out (``set_min_held``).
FADED_ALPHA = 35

_KIB = 1024


class PackingItem(pg.GraphicsObject):
    """Every rectangle of a plan in one graphics item.

    Coordinates: x is the operator index in execution order (a tensor spans
    ``[first_op, last_op + 1)``), y is the byte offset in the tensor arena divided by
    ``y_scale`` (bytes per scene unit). Scaling keeps the view transform well conditioned: an
    arena of 10^9 bytes in raw bytes gives a scale of ~1e-6 px per unit, which SVG output
    rounds away. :meth:`tensor_at` takes bytes.
    """

    def __init__(self, data: ChartData | None = None, y_scale: float = 1.0):
        super().__init__()
        self.y_scale = float(y_scale)
        self._data: ChartData | None = None
        self._faded: np.ndarray | None = None
        self._groups: list[tuple[QtGui.QBrush, QtGui.QPen, object]] = []
        self._bounds = QtCore.QRectF()
        self.set_data(data)

    # -- data ------------------------------------------------------------------------------
    @property
    def data(self) -> ChartData | None:
        return self._data

    def set_data(self, data: ChartData | None, faded: np.ndarray | None = None) -> None:
        """Show ``data`` (None clears); ``faded`` is a bool mask, shape (n,), of faded rows."""
        self._data = data
        self._faded = None if faded is None else np.asarray(faded, dtype=bool)
        self._rebuild()

    def set_faded(self, faded: np.ndarray | None) -> None:
        """Fade the rows where ``faded`` (bool, shape (n,)) is true; None fades none."""
        self._faded = None if faded is None else np.asarray(faded, dtype=bool)
        self._rebuild()

    def rect_count(self) -> int:
        """Rectangles painted (one per planned tensor)."""
        return sum(len(g[2]) for g in self._groups)

    def faded_count(self) -> int:
        """Rectangles drawn faded (filtered out by the held-operators filter)."""
        return 0 if self._faded is None else int(self._faded.sum())

    def tensor_at(self, x: float, y: float) -> int | None:
        """Tensor whose rectangle contains data point (x, y); the topmost when several do.

        ``x`` in operator units, ``y`` in bytes (not scene units). Zero-byte tensors are never hit.
        """
        d = self._data
        if d is None or not len(d):
            return None
        hit = (d.x0 <= x) & (x < d.x1) & (d.y0 <= y) & (y < d.y1)
        idx = np.flatnonzero(hit)
        if not len(idx):
            return None
        return int(d.tensor[idx[-1]])  # aliases come last: drawn on top, hit first

    def _rebuild(self) -> None:
        self._groups = []
        d = self._data
        if d is None or not len(d):
            self._bounds = QtCore.QRectF()
        else:
            x0 = d.x0.astype(np.float64)
            y0 = d.y0.astype(np.float64) / self.y_scale
            w = (d.x1 - d.x0).astype(np.float64)
            h = (d.y1 - d.y0).astype(np.float64) / self.y_scale
            faded = self._faded if self._faded is not None and len(self._faded) == len(d) else None
            outline = len(d) <= OUTLINE_LIMIT
            key = d.color.astype(np.int64) * 2 + (faded.astype(np.int64) if faded is not None else 0)
            order = np.argsort(key, kind="stable")
            keys, starts = np.unique(key[order], return_index=True)
            ends = list(starts[1:]) + [len(order)]
            for k, s, e in zip(keys.tolist(), starts.tolist(), ends):
                rows = order[s:e]
                # Keep the rows' original order inside a group (aliases last, drawn on top).
                rows = np.sort(rows)
                arr = _PrimitiveArray(QtCore.QRectF, 4) if _PrimitiveArray else _RectList()
                arr.resize(len(rows))
                mem = arr.ndarray()
                mem[:, 0] = x0[rows]
                mem[:, 1] = y0[rows]
                mem[:, 2] = w[rows]
                mem[:, 3] = h[rows]
                rgb = d.palette[k // 2]
                is_faded = bool(k % 2)
                color = QtGui.QColor(*rgb, FADED_ALPHA if is_faded else 255)
                brush = QtGui.QBrush(color)
                if outline:
                    edge = QtGui.QColor(*rgb).darker(160)
                    edge.setAlpha(FADED_ALPHA if is_faded else 255)
                    pen = QtGui.QPen(edge)
                    pen.setCosmetic(True)
                    pen.setWidthF(1.0)
                else:
                    pen = QtGui.QPen(QtCore.Qt.PenStyle.NoPen)
                self._groups.append((brush, pen, arr))
            xmn, xmx = float(d.x0.min()), float(d.x1.max())
            ymn, ymx = float(d.y0.min()) / self.y_scale, float(d.y1.max()) / self.y_scale
            self._bounds = QtCore.QRectF(xmn, ymn, xmx - xmn, max(ymx - ymn, 1e-9))
        self.prepareGeometryChange()
        self.update()
        self.informViewBoundsChanged()

    # -- painting --------------------------------------------------------------------------
    def paint(self, p, *args):
        # One drawRects per colour straight from the numpy-backed arrays. Replaying a recorded
        # QPicture instead was measured 10x slower (100k rectangles, 1600x1000 raster: 200 ms
        # vs 23 ms): QPicture replays a rectangle list one primitive at a time.
        # Outlines only while an operator column is at least OUTLINE_MIN_PX wide on the device:
        # thinner, a 1 px outline per rectangle would paint a dense chart in its edge colour.
        outline = abs(p.transform().m11()) >= OUTLINE_MIN_PX
        no_pen = QtGui.QPen(QtCore.Qt.PenStyle.NoPen)
        for brush, pen, arr in self._groups:
            p.setPen(pen if outline else no_pen)
            p.setBrush(brush)
            p.drawRects(*arr.drawargs())

    def boundingRect(self):
        return QtCore.QRectF(self._bounds)

    def dataBounds(self, ax, frac=1.0, orthoRange=None):
        if self._bounds.isNull():
            return None, None
        if ax == 0:
            return self._bounds.left(), self._bounds.right()
        return self._bounds.top(), self._bounds.bottom()


def _nice_step(raw: float) -> float:
    """Smallest of 1, 2, 2.5, 5 x 10^k that is >= ``raw`` (> 0)."""
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * 10.0**exp
        if step >= raw * (1 - 1e-9):
            return step
    return 10.0 ** (exp + 1)


def byte_unit(span: float) -> tuple[int, str]:
    """The binary unit (scale, name) for labelling a byte range of ``span`` bytes."""
    for scale, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if span >= scale:
            return scale, name
    return 1, "B"


class BytesAxisItem(pg.AxisItem):
    """An axis of bytes: ticks on round numbers of KiB/MiB/GiB, labelled with their unit."""

    def __init__(self, orientation: str = "left", **kwargs):
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)
        self._unit = (1, "B")

    def tickSpacing(self, minVal, maxVal, size):
        span = abs(maxVal - minVal)
        if span <= 0 or size <= 0:
            return []
        scale, _ = byte_unit(span)
        self._unit = byte_unit(span)
        count = max(4.0, size / 40.0)  # about one label every 40 px
        step = _nice_step(span / scale / count)
        if scale == 1:
            step = max(step, 1.0)
        return [(step * scale, 0)]  # major ticks only: a clean grid

    def tickStrings(self, values, scale, spacing):
        # pyqtgraph passes scene values and spacing, and ``scale`` = bytes per scene unit.
        values = [v * scale for v in values]
        spacing = spacing * scale
        unit_scale, unit = self._unit
        step = spacing / unit_scale
        decimals = 0  # as few as show the step exactly (2.5 MiB -> 1, 0.25 MiB -> 2)
        while decimals < 3 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-6:
            decimals += 1
        out = []
        for v in values:
            x = v / unit_scale
            if abs(x) < 1e-12:
                out.append("0")
            else:
                out.append(f"{x:.{decimals}f} {unit}")
        return out


class OperatorAxisItem(pg.AxisItem):
    """Operator indices, each tick at the middle of its operator's column ``[k, k + 1)``."""

    def __init__(self, orientation: str = "bottom", **kwargs):
        super().__init__(orientation, **kwargs)
        self.enableAutoSIPrefix(False)

    def tickValues(self, minVal, maxVal, size):
        levels = super().tickValues(minVal - 0.5, maxVal - 0.5, size)
        out = []
        for spacing, vals in levels:
            if spacing < 1:
                continue
            vals = [v + 0.5 for v in vals if abs(v - round(v)) < 1e-9 and v >= 0]
            out.append((spacing, vals))
        if not out:
            lo, hi = math.ceil(minVal - 0.5), math.floor(maxVal - 0.5)
            out = [(1.0, [k + 0.5 for k in range(max(lo, 0), hi + 1)])]
        return out

    def tickStrings(self, values, scale, spacing):
        return [str(int(round(v - 0.5))) for v in values]


@dataclass
class ChartPlot:
    """Handles on the parts of a built chart (for interactivity and tests)."""

    data: ChartData
    packing: pg.PlotItem
    breadth: pg.PlotItem
    item: PackingItem
    legend: pg.LegendItem
    title: "TitleItem"
    band: pg.LinearRegionItem
    breadth_band: pg.LinearRegionItem
    band_label: pg.TextItem
    lower_bound_line: pg.InfiniteLine
    arena_line: pg.InfiniteLine
    breadth_curve: pg.PlotDataItem
    y_scale: float = 1.0
    breadth_scale: float = 1.0
    #: Bytes: show the packing plot / breadth curve up to at least this (a compare view gives
    #: both charts the larger arena so sizes compare by eye); 0 = this chart's own.
    shared_top: int = 0
    shared_breadth_top: int = 0
    #: The line naming the largest kernel temporaries (exports), or None.
    notes: "TitleItem | None" = None
    #: True while the packing plot shows the full view (reset_view), until the user zooms/pans.
    at_home: bool = False
    #: The breadth curve's lower-bound line.
    breadth_lower_bound_line: "pg.InfiniteLine | None" = None

    def widest_band(self) -> tuple[float, float]:
        """x extent of the widest-operator band, in operator units."""
        lo, hi = self.band.getRegion()
        return float(lo), float(hi)

    def y_top(self) -> int:
        """Bytes at the top of the packing plot's full view (before the headroom)."""
        d = self.data
        return max(d.arena_bytes, d.lower_bound, self.shared_top, 1)

    def set_shared_top(self, arena_top: int, breadth_top: int = 0) -> None:
        """Show bytes ``0..arena_top`` in the packing plot and ``0..breadth_top`` in the breadth
        curve (each at least this chart's own), then reset the view."""
        self.shared_top, self.shared_breadth_top = int(arena_top), int(breadth_top)
        top = self.y_top()
        line = self.breadth_lower_bound_line
        if line is not None and line.label is not None:
            # A lower bound well under the shared top: its label goes above the line, where the
            # axis cannot cut it (the curve peaks at the line only at the widest operator).
            above = self.shared_breadth_top >= 1.5 * max(self.data.lower_bound, 1)
            x, _ = line.label.anchors[0]
            line.label.anchors = [(x, 1 if above else 0)] * 2
            line.label.updatePosition()
        self.packing.setLimits(yMin=-top * 0.05 / self.y_scale, yMax=top * 2 / self.y_scale)
        self.reset_view()

    def headroom(self) -> float:
        """Factor above the arena shown by :meth:`reset_view`: :data:`HEADROOM`, or more when
        the plot is short, so the widest-operator annotation (at the top) and the arena's
        label (above its line) get two text lines between them and never overlap."""
        h = float(self.packing.getViewBox().height())
        if h <= 0:
            return HEADROOM
        need = 2.4 * ANNOTATION_PX
        return max(HEADROOM, h / max(h - need, 0.25 * h))

    def reset_view(self) -> None:
        """Show every operator and the whole arena (with room for the annotations)."""
        d = self.data
        top = self.y_top()
        room = self.headroom()
        self.packing.setXRange(0, max(d.num_ops, 1), padding=0.01)
        self.packing.setYRange(0, top * room / self.y_scale, padding=0)
        self.band_label.setPos(self.band_label.pos().x(), top * (room - 0.003) / self.y_scale)
        btop = int(d.breadth.max()) if len(d.breadth) else 0
        btop = max(btop, d.lower_bound, self.shared_breadth_top, 1)
        self.breadth.setYRange(0, btop * 1.2 / self.breadth_scale, padding=0)
        self.at_home = True

    def _on_packing_resized(self, *_args) -> None:
        if self.at_home:  # keep the full view's headroom right for the new height
            self.reset_view()


def _pen(rgb, width=1.0, style=QtCore.Qt.PenStyle.SolidLine):
    pen = pg.mkPen(rgb, width=width)
    pen.setStyle(style)
    pen.setCosmetic(True)
    return pen


def _style_axis(axis: pg.AxisItem, label: str) -> None:
    fg = THEME["foreground"]
    axis.setPen(pg.mkPen(fg))
    axis.setTextPen(pg.mkPen(fg))
    font = QtGui.QFont()
    font.setPointSize(9)
    axis.setStyle(tickFont=font, tickTextOffset=4)
    axis.setLabel(label, color="#%02x%02x%02x" % fg, **{"font-size": "10pt"})


def _gap_text(data: ChartData) -> str:
    gap = data.arena_bytes - data.lower_bound
    pct = 100.0 * gap / max(data.lower_bound, 1)
    return f"{format_bytes(gap)} ({pct:.2f}%)" if pct < 0.1 else f"{format_bytes(gap)} ({pct:.1f}%)"


class TitleItem(pg.GraphicsWidget):
    """Bold text, centred: one line, or two when the chart is too narrow (broken at the
    " — ", "; " or ": " nearest the middle), each elided in the middle if still too long.
    A pyqtgraph ``LabelItem`` would force the layout to be as wide as its text."""

    SEPARATORS = (" — ", "; ", ": ")

    def __init__(self, text: str, point_size: float = 13.0, color=(40, 40, 40), bold: bool = True):
        super().__init__()
        self._text = text
        self._font = QtGui.QFont()
        self._font.setPointSizeF(point_size)
        self._font.setBold(bold)
        self._color = QtGui.QColor(*color)
        self._line = QtGui.QFontMetricsF(self._font).height()
        self._lines = 1
        self._floor = 0.0  # a height kept even when fewer lines are needed (match_heights)
        self._height = self._line + 8
        self.setMinimumHeight(self._height)
        self.setMaximumHeight(self._height)
        self.setMinimumWidth(40)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)

    def sizeHint(self, which, constraint=QtCore.QSizeF()):
        if which == QtCore.Qt.SizeHint.MaximumSize:
            return QtCore.QSizeF(1e6, self._height)
        return QtCore.QSizeF(40 if which == QtCore.Qt.SizeHint.MinimumSize else 400, self._height)

    def text(self) -> str:
        return self._text

    def _split(self, width: float) -> list[str]:
        fm = QtGui.QFontMetricsF(self._font)
        if fm.horizontalAdvance(self._text) <= width:
            return [self._text]
        best = None
        for sep in self.SEPARATORS:
            start = 0
            while (k := self._text.find(sep, start)) >= 0:
                head, tail = self._text[:k + len(sep.rstrip())], self._text[k + len(sep):]
                cost = max(fm.horizontalAdvance(head), fm.horizontalAdvance(tail))
                if best is None or cost < best[0]:
                    best = (cost, [head, tail])
                start = k + 1
        return [self._text] if best is None else best[1]

    def fit(self, width: float) -> int:
        """Choose one or two lines for ``width`` pixels; returns the number of lines."""
        lines = len(self._split(width - 8))
        height = max(self._line * lines + 8, self._floor)
        if lines != self._lines or height != self._height:
            self._lines = lines
            self._height = height
            self.setMinimumHeight(self._height)
            self.setMaximumHeight(self._height)
            self.updateGeometry()
        return lines

    def shown_text(self) -> str:
        """The text as drawn at the current width (lines joined by newlines, elided)."""
        fm = QtGui.QFontMetricsF(self._font)
        w = self.size().width() - 8
        parts = self._split(w) if self._lines > 1 else [self._text]
        return "\n".join(fm.elidedText(t, QtCore.Qt.TextElideMode.ElideMiddle, w) for t in parts)

    def resizeEvent(self, ev):  # noqa: N802 (Qt override)
        super().resizeEvent(ev)
        self.fit(self.size().width())

    def paint(self, p, *args):
        p.setFont(self._font)
        p.setPen(self._color)
        p.drawText(self.boundingRect(), QtCore.Qt.AlignmentFlag.AlignCenter, self.shown_text())


#: Point size of legend labels.
LEGEND_PT = 9.0


def fit_legend(legend: pg.LegendItem, width: float) -> int:
    """Lay out a legend built by :func:`build_chart` for a chart ``width`` pixels wide.

    A legend on top gets as many columns as fit in ``width`` (rows wrap); one on the right
    keeps one column. Its size is then fixed, so the layout gives the plots the rest and the
    legend never overlaps them. Returns the number of columns.
    """
    if legend.property("arena_viewer_top"):
        # Each entry's width as drawn: sample, label text, spacing between them and columns.
        spacing = legend.layout.horizontalSpacing()
        widths = [sample.boundingRect().width() + label.item.boundingRect().width() + 3 * spacing + 12
                  for sample, label in legend.items]
        cols = 1
        for c in range(len(widths), 1, -1):  # the most columns (row-major) that fit
            if sum(max(widths[j::c]) for j in range(c)) <= float(width) - 40.0:
                cols = c
                break
    else:
        cols = legend.columnCount
    if cols != legend.columnCount:
        legend.setColumnCount(cols)
    legend.setMinimumSize(0, 0)  # a fixed size from an earlier fit would keep the old geometry
    legend.setMaximumSize(1e6, 1e6)
    legend.updateSize()
    # LegendItem.updateSize leaves out the grid's spacing; the grid's own size hint has it.
    hint = legend.layout.effectiveSizeHint(QtCore.Qt.SizeHint.PreferredSize)
    geo = legend.geometry().size()
    # Never wider than the chart: a width kept from a wider layout would hold the whole
    # layout wider than its view and cut the plots' right side off.
    w = min(max(geo.width(), hint.width()), max(float(width) - 16.0, hint.width() if cols == 1 else 0.0))
    size = QtCore.QSizeF(w, max(geo.height(), hint.height()))
    legend.setMinimumSize(size)
    legend.setMaximumSize(size)
    return cols


def match_heights(plots) -> float:
    """Give the title, legend and notes rows of charts shown side by side the same heights, so
    their packing plots get the same pixel height (with one y range, sizes then compare by
    eye). Returns the height of the tallest legend."""
    tallest = 0.0
    for attr in ("title", "legend", "notes"):
        items = [getattr(p, attr) for p in plots]
        if any(i is None for i in items):
            continue
        h = max(i.minimumHeight() for i in items)
        for i in items:
            if isinstance(i, TitleItem):
                i._floor = h
                i.fit(i.size().width() if i.size().width() > 0 else 1e6)
                h = max(h, i.minimumHeight())
            i.setMinimumHeight(h)
            i.setMaximumHeight(h)
        if attr == "legend":
            tallest = h
    return tallest


def build_chart(data: ChartData, layout: pg.GraphicsLayout, *, legend_cols: int = 1,
                legend: str = "right", title_pt: float = 13.0,
                temporaries_line: bool = False) -> ChartPlot:
    """Fill ``layout`` with the complete chart of ``data``.

    Rows: the title; the packing plot (x = operator index in execution order, y = arena
    offset in bytes on a KiB/MiB/GiB axis) with the widest-operator band, lower-bound and
    arena lines, and the legend beside it; the breadth curve (bytes live at each operator,
    with the lower bound line) underneath, its x axis linked to the packing plot's.

    Parameters
    ----------
    data : ChartData
    layout : pyqtgraph.GraphicsLayout
        Emptied first (e.g. ``GraphicsLayoutWidget.ci``).
    legend_cols : int
        Columns of legend entries.
    legend : {"right", "top"}
        Legend in its own column right of the packing plot (wide images), or in a row between
        the title and the packing plot (the widget, narrow images); ``"inside"`` is an old name
        of ``"top"``. Either way it never covers the plot area.
    title_pt : float
        Point size of the title, which is elided in the middle when the chart is narrow.
    temporaries_line : bool
        Add a line under the plots naming the largest kernel temporaries with their runtime
        names (:func:`viewer.export.chart_data.temporaries_text`; exports, where there is no
        hover); nothing when the chart has none.

    Returns
    -------
    ChartPlot
    """
    geometry = QtCore.QRectF(layout.geometry())  # what the view gave it
    layout.clear()
    layout.setContentsMargins(8, 8, 12, 8)
    layout.setSpacing(4)
    fg = THEME["foreground"]
    title = TitleItem(data.title, title_pt, fg)
    layout.addItem(title, row=0, col=0, colspan=2)
    if geometry.width() > 0:
        title.fit(geometry.width() - 20)

    # enableMenu=False: no context menus built for an export (the window enables the one it uses).
    packing = pg.PlotItem(
        axisItems={"left": BytesAxisItem("left"), "bottom": OperatorAxisItem("bottom")},
        enableMenu=False,
    )
    layout.addItem(packing, row=2, col=0)
    breadth = pg.PlotItem(
        axisItems={"left": BytesAxisItem("left"), "bottom": OperatorAxisItem("bottom")},
        enableMenu=False,
    )
    layout.addItem(breadth, row=3, col=0)
    layout.layout.setRowStretchFactor(2, 3)
    layout.layout.setRowStretchFactor(3, 1)

    for plot, ylabel, xlabel in (
        (packing, "arena offset (bytes)", "operator index (execution order)"),
        (breadth, "breadth (bytes)", "operator index (execution order)"),
    ):
        plot.hideButtons()
        plot.setMenuEnabled(False)
        plot.showGrid(x=False, y=True, alpha=THEME["grid_alpha"])
        _style_axis(plot.getAxis("left"), ylabel)
        _style_axis(plot.getAxis("bottom"), xlabel)
        plot.getAxis("left").setWidth(84)
        plot.getAxis("left").setZValue(-100)  # its grid lines go behind the rectangles
        plot.getAxis("left").setStyle(maxTextLevel=0, hideOverlappingLabels=False)
        for side in ("top", "right"):
            plot.showAxis(side)
            ax = plot.getAxis(side)
            ax.setStyle(showValues=False, tickLength=0)
            ax.setGrid(False)  # the grid follows the labelled axes only
            ax.setPen(pg.mkPen(fg))
    breadth.setXLink(packing)
    packing.getViewBox().setBackgroundColor(None)

    # Scene y units: one binary unit (B/KiB/MiB/GiB) of the arena; axes label them in bytes.
    top = max(data.arena_bytes, data.lower_bound, 1)
    ys = float(byte_unit(top)[0])
    btop = max(int(data.breadth.max()) if len(data.breadth) else 0, data.lower_bound, 1)
    bs = float(byte_unit(btop)[0])
    packing.getAxis("left").setScale(ys)
    breadth.getAxis("left").setScale(bs)

    # Rectangles.
    item = PackingItem(data, ys)
    packing.addItem(item)

    # Widest-operator band, on both plots.
    w = data.widest_op
    band_region = (float(w), float(w + 1)) if w >= 0 else (0.0, 0.0)
    band = pg.LinearRegionItem(
        values=band_region, movable=False, brush=pg.mkBrush(THEME["band"]),
        pen=_pen(THEME["band"][:3], 1.0),
    )
    band.setZValue(-10)
    packing.addItem(band)
    breadth_band = pg.LinearRegionItem(
        values=band_region, movable=False, brush=pg.mkBrush(THEME["band"]),
        pen=_pen(THEME["band"][:3], 1.0),
    )
    breadth_band.setZValue(-10)
    breadth.addItem(breadth_band)
    if w < 0:  # no operators: no widest operator to show
        band.setVisible(False)
        breadth_band.setVisible(False)
    band_edges = []
    for x in band_region if w >= 0 else ():
        edge = pg.InfiniteLine(pos=x, angle=90, movable=False,
                               pen=_pen(THEME["band_text"], 1.2, QtCore.Qt.PenStyle.DashLine))
        edge.setZValue(12)
        packing.addItem(edge)
        band_edges.append(edge)
    band_text = (
        f"widest operator #{w} {data.widest_op_name}: breadth {format_bytes(data.lower_bound)}"
        if w >= 0 else "no operators: the tensor arena is empty"
    )
    # Keep the annotation inside the plot: left-aligned near the start, right-aligned near the end.
    frac = (w + 0.5) / max(data.num_ops, 1)
    # Within the first or last tenth, from the plot's edge, so a narrow chart does not cut it.
    ax, bx = (0.0, w) if frac < 0.3 else ((1.0, w + 1) if frac > 0.7 else (0.5, w + 0.5))
    if frac < 0.1 or frac > 0.9:
        bx = -0.5 if frac < 0.1 else data.num_ops + 0.5
    band_label = pg.TextItem(
        band_text, color=THEME["band_text"], anchor=(ax, 0.0),
        fill=pg.mkBrush(255, 255, 255, 210),
    )
    band_label.setPos(bx if w >= 0 else 0, top * (HEADROOM - 0.005) / ys)
    band_label.setZValue(20)
    packing.addItem(band_label)

    # Lower bound and arena size. One label names both when they differ (the arena's, with the
    # gap "over the lower bound X"), so the arena line never strikes through a second label a
    # few pixels above the lower bound's; the dashed line itself is in the legend. The label
    # sits above its line on the side away from the widest operator, never over its band.
    same = data.arena_bytes == data.lower_bound
    lb_line = pg.InfiniteLine(
        pos=data.lower_bound / ys, angle=0, movable=False,
        pen=_pen(THEME["lower_bound"], 1.5, QtCore.Qt.PenStyle.DashLine),
        label=f"lower bound {format_bytes(data.lower_bound)}",
        labelOpts={"position": 0.01, "color": THEME["lower_bound"], "anchors": [(0, 1)] * 2,
                   "fill": pg.mkBrush(255, 255, 255, 210)},
    )
    right_side = frac <= 0.5
    arena_line = pg.InfiniteLine(
        pos=data.arena_bytes / ys, angle=0, movable=False, pen=_pen(THEME["arena"], 1.5),
        label=f"arena {format_bytes(data.arena_bytes)} ({data.planner})"
        + (" = lower bound" if same else
           f": +{_gap_text(data)} over the lower bound {format_bytes(data.lower_bound)}"),
        labelOpts={"position": 0.98 if right_side else 0.02, "color": THEME["arena"],
                   "anchors": [(1, 1) if right_side else (0, 1)] * 2,
                   "fill": pg.mkBrush(255, 255, 255, 210)},
    )
    for line in (lb_line, arena_line):
        line.setZValue(15)
        packing.addItem(line)
    lb_line.label.setVisible(False)  # named by the arena's label (and the breadth curve's)

    # Breadth curve.
    xs = np.arange(len(data.breadth) + 1, dtype=np.float64)
    curve = pg.PlotDataItem(
        xs, data.breadth.astype(np.float64) / bs, stepMode="center", fillLevel=0,
        brush=pg.mkBrush(THEME["breadth_fill"]), pen=_pen(THEME["breadth"], 1.5),
    )
    breadth.addItem(curve)
    blb = pg.InfiniteLine(
        pos=data.lower_bound / bs, angle=0, movable=False,
        pen=_pen(THEME["lower_bound"], 1.5, QtCore.Qt.PenStyle.DashLine),
        label=f"lower bound {format_bytes(data.lower_bound)}",
        # Under the line, on the side away from the widest operator (whose breadth touches it).
        labelOpts={"position": 0.02 if frac > 0.5 else 0.98,
                   "color": THEME["lower_bound"], "anchors": [(0, 0) if frac > 0.5 else (1, 0)] * 2,
                   "fill": pg.mkBrush(255, 255, 255, 210)},
    )
    blb.setZValue(15)
    breadth.addItem(blb)

    # Legend outside the plot area: its own column on the right (wide images) or a row between
    # the title and the packing plot (the widget, narrow images). It never covers a rectangle.
    top_legend = legend in ("top", "inside")
    legend = pg.LegendItem(
        colCount=max(int(legend_cols), 1), labelTextColor=fg, labelTextSize=f"{LEGEND_PT:g}pt",
        offset=None, brush=pg.mkBrush(255, 255, 255, 0), pen=None, verSpacing=-2,
        horSpacing=6 if top_legend else 25,
    )
    heading = "colour: tensor kind" if data.color_by == "kind" else "colour: producer op"
    legend.setParentItem(None)
    if top_legend:
        layout.addItem(legend, row=1, col=0, colspan=2)
    else:
        layout.addItem(legend, row=2, col=1)
    legend.addItem(pg.PlotDataItem(pen=None), f"<b>{heading}</b>")
    for label, idx in data.legend:
        rgb = data.palette[idx]
        sample = pg.PlotDataItem(
            [0], [0], pen=None, symbol="s", symbolSize=11,
            symbolBrush=pg.mkBrush(*rgb), symbolPen=pg.mkPen(QtGui.QColor(*rgb).darker(160)),
        )
        legend.addItem(sample, label)
    for line_pen, label in (
        (_pen(THEME["arena"], 2), "arena (high-water mark)"),
        (_pen(THEME["lower_bound"], 2, QtCore.Qt.PenStyle.DashLine), "lower bound"),
    ):
        legend.addItem(pg.PlotDataItem([0, 1], [0, 0], pen=line_pen), label)
    legend.addItem(
        pg.PlotDataItem([0], [0], pen=None, symbol="s", symbolSize=11,
                        symbolBrush=pg.mkBrush(THEME["band"]),
                        symbolPen=pg.mkPen(THEME["band"][:3])),
        "widest operator",
    )
    legend.setProperty("arena_viewer_top", top_legend)
    fit_legend(legend, geometry.width() if geometry.width() > 0 else 1000.0)
    layout.layout.setAlignment(
        legend, QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)

    # Emptying a shown layout shrinks it to its minimum size; give it back the view's size.
    if geometry.height() > 0 and geometry.width() > 0:
        layout.setGeometry(geometry)

    notes = None
    text = temporaries_text(data) if temporaries_line else ""
    if text:
        notes = TitleItem(text, 8.5, fg, bold=False)
        layout.addItem(notes, row=4, col=0, colspan=2)
        if geometry.width() > 0:
            notes.fit(geometry.width() - 20)

    plot = ChartPlot(
        data=data, packing=packing, breadth=breadth, item=item, legend=legend, title=title,
        band=band, breadth_band=breadth_band, band_label=band_label, lower_bound_line=lb_line,
        arena_line=arena_line, breadth_curve=curve, y_scale=ys, breadth_scale=bs, notes=notes,
        breadth_lower_bound_line=blb,
    )
    packing.setLimits(xMin=-1, xMax=max(data.num_ops, 1) + 1, yMin=-top * 0.05 / ys,
                      yMax=top * 2 / ys)
    breadth.setLimits(xMin=-1, xMax=max(data.num_ops, 1) + 1)
    breadth.setMouseEnabled(x=True, y=False)
    plot.reset_view()
    vb = packing.getViewBox()
    vb.sigResized.connect(plot._on_packing_resized)
    vb.sigRangeChangedManually.connect(lambda *_: setattr(plot, "at_home", False))
    return plot
