"""Painted pieces of the packing chart: the rectangles item, the axes, the title and the legend.

Qt is allowed here because rendering needs it; this module never imports :mod:`viewer.ui`.
:class:`PackingItem` paints all rectangles of a plan from numpy arrays, after pyqtgraph's
``BarGraphItem`` (graphicsItems/BarGraphItem.py): rectangles are written into numpy-backed
``QRectF`` primitive arrays (prepared once per data/filter change), one ``drawRects`` call per
colour; its bounding rect comes from the arrays and hit-testing is a numpy search.
:func:`viewer.export.chart_scene.build_chart` lays these out into the full chart.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt import QtCore, QtGui, QtWidgets

from viewer.export._qt_compat import guard_refcount_bug
from viewer.export.chart_data import ChartData

NONE_REFCOUNT_PINNED = guard_refcount_bug()

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


#: Rectangles drawn with an outline while there are at most this many (else fill only).
OUTLINE_LIMIT = 20000
#: ... and while one operator column is at least this many device pixels wide.
OUTLINE_MIN_PX = 3.0
#: Alpha of rectangles filtered out (``set_min_held``).
FADED_ALPHA = 35


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



class TitleItem(pg.GraphicsWidget):
    """Bold text, centred, wrapped at its separators (" — ", "; ", ": ", ", ") onto at most
    :attr:`MAX_LINES` lines when the chart is too narrow. Lines are filled from the end, so the
    figures (which end a title: "arena X, lower bound Y") keep whole lines and only the first
    line (the file name) is elided in the middle when even that is too long.
    A pyqtgraph ``LabelItem`` would force the layout to be as wide as its text."""

    SEPARATORS = (" — ", "; ", ": ", ", ")
    MAX_LINES = 3

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

    def _tokens(self) -> list[str]:
        """The text cut after each separator (the separator's trailing space dropped)."""
        out, start, k = [], 0, 0
        text = self._text
        while k < len(text):
            hit = next((sep for sep in self.SEPARATORS if text.startswith(sep, k)), None)
            if hit is None:
                k += 1
                continue
            out.append(text[start:k + len(hit.rstrip())])
            k += len(hit)
            start = k
        out.append(text[start:])
        return [t for t in out if t]

    def _split(self, width: float) -> list[str]:
        fm = QtGui.QFontMetricsF(self._font)
        if fm.horizontalAdvance(self._text) <= width:
            return [self._text]
        tokens = self._tokens()
        lines: list[str] = []
        while tokens:
            if len(lines) == self.MAX_LINES - 1:  # the rest (the file name first) on one line
                lines.insert(0, " ".join(tokens))
                break
            line = tokens.pop()
            while tokens and fm.horizontalAdvance(tokens[-1] + " " + line) <= width:
                line = tokens.pop() + " " + line
            lines.insert(0, line)
        return lines

    def fit(self, width: float) -> int:
        """Choose how many lines ``width`` pixels need; returns the number of lines."""
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
    """Lay out a legend built by :func:`viewer.export.chart_scene.build_chart` for a chart ``width`` pixels wide.

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
