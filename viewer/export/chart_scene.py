"""Qt drawing of the packing chart: the full plot around the rectangles.

Qt is allowed here because rendering needs it; this module never imports :mod:`viewer.ui`.
:func:`build_chart` lays out the packing plot, the legend, the title and the breadth curve;
the painted pieces (:class:`PackingItem`, the byte and operator axes, :class:`TitleItem`,
:func:`fit_legend`, :func:`match_heights`) live in :mod:`viewer.export.chart_items` and are
re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt import QtCore, QtGui

from viewer.export.chart_data import CURVE_STEPS_PER_PX, ChartData, breadth_steps, temporaries_text
from viewer.export.chart_items import (  # noqa: F401 (re-exported: imported from here)
    FADED_ALPHA,
    LEGEND_PT,
    NONE_REFCOUNT_PINNED,
    OUTLINE_LIMIT,
    OUTLINE_MIN_PX,
    BytesAxisItem,
    OperatorAxisItem,
    PackingItem,
    TitleItem,
    byte_unit,
    fit_legend,
    match_heights,
)
from viewer.units import format_bytes

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
#: The packing plot shows the arena up to this multiple of its size: room above the arena line
#: for the widest-operator annotation and the line labels.
HEADROOM = 1.22
#: Height in pixels of one line of in-plot annotation text (band and line labels).
ANNOTATION_PX = 19.0
#: The packing plot keeps at least this many pixels of height: below it the legend, then the
#: kernel-temporaries line, then the breadth curve are left out (small windows and exports).
MIN_PACKING_PX = 140.0
#: Height of an x axis with its ticks and title, in pixels (for :func:`choose_rows`).
AXIS_PX = 44.0
#: Space kept between an in-plot label and the plot's border, in pixels.
LABEL_MARGIN_PX = 4.0
#: Axis titles, longest first: the first that fits along its plot's height is shown.
Y_TITLES = {"packing": ("arena offset (bytes)", "offset (bytes)", "offset", ""),
            "breadth": ("breadth (bytes)", "breadth", "")}
X_TITLES = ("operator index (execution order)", "operator index", "operator", "")


def choose_rows(height: float, title_px: float, legend_px: float, notes_px: float, *,
                legend_on_top: bool = True) -> tuple[bool, bool, bool]:
    """Which optional rows a chart ``height`` pixels tall shows: (legend, notes line, breadth
    curve). All of them while the packing plot keeps :data:`MIN_PACKING_PX`; else the legend
    goes first, then the notes line, then the breadth curve, so a small window or export keeps
    a plot with its rectangles rather than a legend over empty axes."""
    def packing(legend: bool, notes: bool, breadth: bool) -> float:
        avail = height - 20.0 - title_px - (notes_px if notes else 0.0)
        avail -= legend_px + 4.0 if legend and legend_on_top else 0.0
        return (avail - 2 * AXIS_PX) * 0.75 if breadth else avail - AXIS_PX

    for rows in ((True, True, True), (False, True, True), (False, False, True)):
        need = MIN_PACKING_PX if legend_on_top or not rows[0] else max(MIN_PACKING_PX, legend_px)
        if packing(*rows) >= need:
            return rows
    return (False, False, False)


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
    #: Optional rows shown (:func:`choose_rows`): legend, notes line, breadth curve.
    rows: tuple = (True, True, True)
    #: The band label's texts, longest first; the longest that fits the plot's width is shown.
    band_texts: tuple = ()
    #: The arena label's texts, longest first, likewise.
    arena_texts: tuple = ()

    @property
    def breadth_shown(self) -> bool:
        """False when the chart was too short for the breadth curve (:func:`choose_rows`)."""
        return bool(self.rows[2])

    def place_labels(self, *_args) -> None:
        """Fit the in-plot labels to the plot as drawn: the widest-operator label and the arena
        label each take the longest of their texts that fits inside the plot (with
        :data:`LABEL_MARGIN_PX` to the border), the band label is moved inside the plot near its
        band, and each y-axis title shortens to what fits along its plot's height."""
        vb = self.packing.getViewBox()
        rect = vb.sceneBoundingRect()
        if rect.width() <= 0 or rect.height() <= 0:
            return
        self._place_band_label(vb, rect)
        self._fit_arena_label(rect)
        plots = (("packing", self.packing),) + ((("breadth", self.breadth),) if self.breadth_shown else ())
        for name, plot in plots:
            axis = plot.getAxis("left")
            h = plot.getViewBox().sceneBoundingRect().height()
            text = next((t for t in Y_TITLES[name] if _title_fm().horizontalAdvance(t) <= h - 4), "")
            if axis.labelText != text:
                axis.setLabel(text)
                axis.resizeEvent(None)  # re-centre the new title along the axis
            axis = plot.getAxis("bottom")
            w = plot.getViewBox().sceneBoundingRect().width()
            text = next((t for t in X_TITLES if _title_fm().horizontalAdvance(t) <= w - 4), "")
            if axis.labelText != text:
                axis.setLabel(text)
                axis.resizeEvent(None)  # re-centre the new title along the axis

    def _place_band_label(self, vb, rect) -> None:
        label = self.band_label
        if not self.band.isVisible():
            return
        room = rect.width() - 2 * LABEL_MARGIN_PX
        fm = QtGui.QFontMetricsF(label.textItem.font())
        text = next((t for t in self.band_texts if fm.horizontalAdvance(t) + 6 <= room),
                    self.band_texts[-1] if self.band_texts else label.toPlainText())
        if label.toPlainText() != text:
            label.setText(text)
        lo, hi = self.widest_band()
        (x0, x1), _ = vb.viewRange()
        label.setVisible(hi > x0 and lo < x1)  # the band is in view
        w = label.boundingRect().width()
        centre = vb.mapViewToScene(QtCore.QPointF((lo + hi) / 2, 0)).x()
        left = min(max(centre - w / 2, rect.left() + LABEL_MARGIN_PX), rect.right() - LABEL_MARGIN_PX - w)
        x = vb.mapSceneToView(QtCore.QPointF(max(left, rect.left() + LABEL_MARGIN_PX), 0)).x()
        label.setAnchor((0.0, 0.0))
        label.setPos(x, label.pos().y())

    def _fit_arena_label(self, rect) -> None:
        label = self.arena_line.label
        if label is None or not self.arena_texts:
            return
        fm = QtGui.QFontMetricsF(label.textItem.font())
        room = rect.width() * 0.96 - 2 * LABEL_MARGIN_PX
        if self.band.isVisible():  # nor over the widest operator's band (it sits on the other side)
            vb = self.packing.getViewBox()
            lo, hi = (vb.mapViewToScene(QtCore.QPointF(x, 0)).x() for x in self.widest_band())
            if rect.left() <= hi and lo <= rect.right():
                if label.anchors[0][0] >= 0.5:  # right-aligned near the right border
                    beside = rect.left() + 0.98 * rect.width() - hi - 2 * LABEL_MARGIN_PX
                else:
                    beside = lo - rect.left() - 0.02 * rect.width() - 2 * LABEL_MARGIN_PX
                if beside >= 0.3 * rect.width():  # a band over most of the plot (1 operator): no way round
                    room = min(room, beside)
        text = next((t for t in self.arena_texts if fm.horizontalAdvance(t) + 6 <= room), self.arena_texts[-1])
        if label.toPlainText() != text:
            label.setText(text)
            label.updatePosition()

    def fit_curve_to_view(self, *_args) -> None:
        """Redraw the breadth curve for the operators in view, at most
        :data:`~viewer.export.chart_data.CURVE_STEPS_PER_PX` steps per pixel
        (:func:`~viewer.export.chart_data.breadth_steps`: each run's peak and trough). The
        window calls it on every pan, zoom and resize, so a 100k-operator curve is never
        painted step by step (half a second a frame); zoomed in far enough, every operator is
        its own step again.
        """
        d = self.data
        n = len(d.breadth)
        vb = self.breadth.getViewBox()
        px = float(vb.width())
        if px <= 0 or n == 0:
            return
        (x0, x1), _ = vb.viewRange()
        lo = int(min(max(np.floor(x0), 0), n))
        hi = int(min(max(np.ceil(x1), lo), n))
        steps = max(int(CURVE_STEPS_PER_PX * px * (hi - lo) / max(x1 - x0, 1e-9)), 2)
        key = (lo, hi, min(steps, hi - lo))
        if key == getattr(self, "_curve_key", None):
            return
        self._curve_key = key
        edges, values = breadth_steps(d.breadth[lo:hi], steps)
        self.breadth_curve.setData(edges + lo, values / self.breadth_scale)

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
        labels = [self.band_label] + ([self.arena_line.label] if self.arena_line.label is not None else [])
        need = max(2.4 * ANNOTATION_PX, sum(lab.boundingRect().height() for lab in labels) + 6.0)
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
        self.place_labels()


def _title_fm() -> QtGui.QFontMetricsF:
    """Metrics of the axis titles (10 pt, :func:`_style_axis`)."""
    font = QtGui.QFont()
    font.setPointSizeF(10.0)
    return QtGui.QFontMetricsF(font)


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
    """The arena's gap, worded as every view words it (:func:`viewer.export.report.gap_text`)."""
    from viewer.export.report import gap_text

    return gap_text(data.arena_bytes, data.lower_bound, data.gap_bound, data.alignment)


def build_chart(data: ChartData, layout: pg.GraphicsLayout, *, legend_cols: int = 1,
                legend: str = "right", title_pt: float = 13.0,
                temporaries_line: bool = False, size: tuple[float, float] | None = None,
                curve_steps: int | None = None) -> ChartPlot:
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
        Point size of the title, which wraps onto up to three lines when the chart is narrow
        (:class:`TitleItem`).
    temporaries_line : bool
        Add a line under the plots naming the largest kernel temporaries with their runtime
        names (:func:`viewer.export.chart_data.temporaries_text`; exports, where there is no
        hover); nothing when the chart has none.
    size : (float, float), optional
        Pixels the chart will get, when the layout does not have its size yet (a sub-layout
        of a compare image); default the layout's geometry.
    curve_steps : int, optional
        Most steps of the breadth curve (:func:`viewer.export.chart_data.breadth_steps`:
        longer graphs keep each run's peak and trough); None (the window) draws every operator.

    When the layout's height leaves the packing plot less than :data:`MIN_PACKING_PX`, the
    legend, then the notes line, then the breadth curve are left out (:func:`choose_rows`;
    ``ChartPlot.rows`` says which are shown). The in-plot labels and the y-axis titles fit the
    plot's size as drawn (:meth:`ChartPlot.place_labels`).

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
    layout.layout.setRowStretchFactor(2, 3)

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
    # Behind the rectangles; a band spanning the whole plot (one operator) tints nothing:
    # its dashed edges alone mark it.
    band_brush = pg.mkBrush(None) if data.num_ops <= 1 else pg.mkBrush(THEME["band"])
    band = pg.LinearRegionItem(
        values=band_region, movable=False, brush=band_brush,
        pen=_pen(THEME["band"][:3], 1.0),
    )
    band.setZValue(-10)
    packing.addItem(band)
    breadth_band = pg.LinearRegionItem(
        values=band_region, movable=False, brush=band_brush,
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
    band_texts = (
        (f"widest operator #{w} {data.widest_op_name}: breadth {format_bytes(data.lower_bound)}",
         f"widest #{w} {data.widest_op_name}: {format_bytes(data.lower_bound)}",
         f"widest #{w}: {format_bytes(data.lower_bound)}", f"#{w}")
        if w >= 0 else ("no operators: the tensor arena is empty", "no operators")
    )
    band_text = band_texts[0]
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
    # Longest first; place_labels shows the longest that fits beside the band.
    arena = f"arena {format_bytes(data.arena_bytes)}"
    gap = _gap_text(data)
    over = "the aligned lower bound" if "-byte-aligned" in gap else "the lower bound"
    figure = gap.split(" over the ")[0]
    arena_texts = ((f"{arena} ({data.planner}) = lower bound", f"{arena} = lower bound", arena)
                   if same else
                   (f"{arena} ({data.planner}): {gap}", f"{arena} ({data.planner}): {figure} over {over}",
                    f"{arena}: {figure} over {over}", f"{arena}: {figure}", arena))
    arena_line = pg.InfiniteLine(
        pos=data.arena_bytes / ys, angle=0, movable=False, pen=_pen(THEME["arena"], 1.5),
        label=arena_texts[0],
        labelOpts={"position": 0.98 if right_side else 0.02, "color": THEME["arena"],
                   "anchors": [(1, 1) if right_side else (0, 1)] * 2,
                   "fill": pg.mkBrush(255, 255, 255, 210)},
    )
    for line in (lb_line, arena_line):
        line.setZValue(15)
        packing.addItem(line)
    lb_line.label.setVisible(False)  # named by the arena's label (and the breadth curve's)

    # Breadth curve.
    xs, ys_curve = breadth_steps(data.breadth, curve_steps)
    curve = pg.PlotDataItem(
        xs, ys_curve / bs, stepMode="center", fillLevel=0,
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

    notes = None
    text = temporaries_text(data) if temporaries_line else ""
    if text:
        notes = TitleItem(text, 8.5, fg, bold=False)
        if geometry.width() > 0:
            notes.fit(geometry.width() - 20)

    # The optional rows the height leaves room for (all of them for an unsized layout).
    rows = (True, True, True)
    height = float(size[1]) if size is not None else geometry.height()
    if height > 0:
        rows = choose_rows(height, title.minimumHeight(), legend.minimumHeight(),
                           notes.minimumHeight() if notes is not None else 0.0,
                           legend_on_top=top_legend)
    if rows[0]:
        if top_legend:
            layout.addItem(legend, row=1, col=0, colspan=2)
        else:
            layout.addItem(legend, row=2, col=1)
        layout.layout.setAlignment(
            legend, QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
    else:
        legend.setVisible(False)
    if rows[2]:
        layout.addItem(breadth, row=3, col=0)
        layout.layout.setRowStretchFactor(3, 1)
    else:
        breadth.setVisible(False)
    if notes is not None:
        if rows[1]:
            layout.addItem(notes, row=4, col=0, colspan=2)
        else:
            notes.setVisible(False)
            notes = None

    # Emptying a shown layout shrinks it to its minimum size; give it back the view's size.
    if geometry.height() > 0 and geometry.width() > 0:
        layout.setGeometry(geometry)

    plot = ChartPlot(
        data=data, packing=packing, breadth=breadth, item=item, legend=legend, title=title,
        band=band, breadth_band=breadth_band, band_label=band_label, lower_bound_line=lb_line,
        arena_line=arena_line, breadth_curve=curve, y_scale=ys, breadth_scale=bs, notes=notes,
        breadth_lower_bound_line=blb, rows=rows, band_texts=band_texts, arena_texts=arena_texts,
    )
    packing.setLimits(xMin=-1, xMax=max(data.num_ops, 1) + 1, yMin=-top * 0.05 / ys,
                      yMax=top * 2 / ys)
    breadth.setLimits(xMin=-1, xMax=max(data.num_ops, 1) + 1)
    breadth.setMouseEnabled(x=True, y=False)
    plot.reset_view()
    vb = packing.getViewBox()
    vb.sigResized.connect(plot._on_packing_resized)
    vb.sigXRangeChanged.connect(plot.place_labels)
    plot.place_labels()
    vb.sigRangeChangedManually.connect(lambda *_: setattr(plot, "at_home", False))
    return plot

