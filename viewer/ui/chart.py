"""The interactive packing chart: hover, click, select, filter, zoom and pan.

Drawing lives in :mod:`viewer.export.chart_scene` (one :class:`PackingItem` for every
rectangle, the byte axis, the breadth curve); this widget adds interactivity on top:
tooltips, selection (the rectangle plus the columns of its producer and consumers), the
"held longer than N operators" filter, keyboard zoom/pan, and the signals the main window uses.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QApplication, QMenu, QToolTip, QVBoxLayout, QWidget

from viewer.analysis.types import Analysis
from viewer.export.chart_data import COLOR_MODES, CURVE_STEPS_PER_PX, ChartData, build_chart_data
from viewer.export.chart_scene import THEME, ChartPlot, build_chart, choose_rows, fit_legend
from viewer.planning.types import Plan
from viewer.ui.chart_text import STORAGE_DTYPES  # noqa: F401 (re-exported: the menu's dtypes)
from viewer.ui.chart_text import breadth_tip, fill_dtype_menu, tensor_tip

#: Colour of the selected tensor's outline and of its producer/consumer columns.
SELECT_PEN = (20, 20, 20)
PRODUCER_BRUSH = (214, 39, 40, 45)
CONSUMER_BRUSH = (148, 103, 189, 45)
ZOOM_STEP = 0.8  # keyboard zoom factor per press (+ zooms in by this, - out by its inverse)
PAN_STEP = 0.1  # keyboard pan: fraction of the visible range per arrow press
#: How long a tensor's tooltip stays while the mouse rests on it, ms (Qt's default, ~10-20 s
#: for this text, would drop it while the user is still reading).
TOOLTIP_MS = 10 * 60 * 1000


class PackingChart(QWidget):
    """Packing chart of one plan: x = operator index, y = arena offset in bytes.

    Signals
    -------
    tensor_hovered(int)
        Tensor under the mouse in the packing plot; -1 when none.
    tensor_selected(int)
        Tensor the user clicked; -1 when a click hit no tensor.
    operator_clicked(int)
        Operator whose column the user clicked on the breadth curve or on empty chart area.
    tensor_dtype_requested(int, str)
        From a rectangle's context menu: store this tensor as that dtype (one of
        :data:`STORAGE_DTYPES`); an empty dtype resets the tensor to the model's own. The
        window applies it as ``WhatIfEdits.tensor_dtypes`` and re-plans.
    """

    tensor_hovered = Signal(int)
    tensor_selected = Signal(int)
    operator_clicked = Signal(int)
    tensor_dtype_requested = Signal(int, str)
    split_requested = Signal(int)
    #: The chart was rebuilt with other optional rows after a resize (compare re-matches).
    rows_changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._analysis: Analysis | None = None
        self._plan: Plan | None = None
        self._model_name = "model"
        self._subgraph = 0
        self._note = ""
        self._color_mode = "kind"
        self._min_held = 0
        self._selected: int | None = None
        self.marked_operator: int | None = None  # the operator last clicked (its column outlined)
        self._hovered = -1
        self._hover_key = (-1, -1)  # (tensor, operator) whose tooltip is shown; -1 for none
        self._data: ChartData | None = None
        self._chart: ChartPlot | None = None
        self._overlays: list = []
        self._tensor_dtypes: dict[int, str] = {}  # per-tensor storage what-ifs, ticked in the menu
        self._menu: QMenu | None = None

        self.view = pg.GraphicsLayoutWidget()
        self.view.setBackground(THEME["background"])
        self.view.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self.view.scene().sigMouseClicked.connect(self._on_scene_mouse_clicked)
        self.view.installEventFilter(self)
        self.view.viewport().installEventFilter(self)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.view)

    # --- API --------------------------------------------------------------------------------

    def set_view(self, analysis: Analysis, plan: Plan, *, model_name: str = "model",
                 subgraph: int = 0, note: str = "") -> None:
        """Draw ``plan`` (a plan of ``analysis.problem()``); keeps colour mode and filter.
        ``note`` ends the title (e.g. that the plan is a what-if the runtime does not use).

        Raises
        ------
        viewer.errors.PlanningError
            When ``plan`` has no offset for a tensor of ``analysis``.
        """
        same_shape = (
            self._analysis is not None and analysis is not None
            and self._analysis.num_ops == analysis.num_ops and self._chart is not None
        )
        ranges = self._chart.packing.viewRange() if same_shape else None
        self._analysis, self._plan = analysis, plan
        self._model_name, self._subgraph, self._note = model_name, subgraph, note
        if not same_shape:
            self.marked_operator = None
        if self._selected is not None and analysis.usage(self._selected) is None:
            self._selected = None
        self._rebuild()
        if ranges is not None and self._chart is not None:  # switching plans keeps the zoom
            self._chart.packing.setXRange(*ranges[0], padding=0)
            self._chart.at_home = False

    def clear(self) -> None:
        """Show nothing."""
        self._analysis = self._plan = None
        self._data = self._chart = None
        self._selected = self.marked_operator = None
        self._overlays = []
        self._hovered = -1
        self._hover_key = (-1, -1)
        self.view.ci.clear()
        self._fit_layout()

    def set_color_mode(self, mode: str) -> None:
        """Colour rectangles by tensor kind (``"kind"``) or by producer op type (``"op"``).

        Raises
        ------
        viewer.errors.UsageError
            For another mode.
        """
        if mode not in COLOR_MODES:
            from viewer.errors import UsageError

            raise UsageError(f"unknown colour mode {mode!r}; use one of {', '.join(COLOR_MODES)}")
        if mode == self._color_mode:
            return
        self._color_mode = mode
        if self._analysis is not None:
            ranges = self._chart.packing.viewRange() if self._chart else None
            self._rebuild()
            if ranges is not None and self._chart is not None:
                self._chart.packing.setRange(xRange=ranges[0], yRange=ranges[1], padding=0)
                self._chart.at_home = False

    def color_mode(self) -> str:
        return self._color_mode

    def set_min_held(self, n: int) -> None:
        """Draw opaque only the tensors held across more than ``n`` operators; fade the rest."""
        self._min_held = max(int(n), 0)
        if self._chart is not None:
            self._chart.item.set_faded(self._faded_mask())

    def select_tensor(self, tensor: int | None) -> None:
        """Highlight ``tensor`` (None or -1 clears): its rectangle, and the columns of its
        producer (red) and consumers (purple). Emits nothing."""
        if tensor is not None and tensor < 0:
            tensor = None
        self._selected = tensor
        self._update_selection()

    def selected_tensor(self) -> int | None:
        return self._selected

    def reset_view(self) -> None:
        """Show every operator and the whole arena."""
        if self._chart is not None:
            self._chart.reset_view()

    def rect_count(self) -> int:
        """Rectangles drawn (one per planned tensor, in-place aliases included)."""
        return 0 if self._chart is None else self._chart.item.rect_count()

    def tensor_at(self, x: float, y: float) -> int | None:
        """Tensor drawn at data point (``x`` operator units, ``y`` bytes), or None."""
        return None if self._chart is None else self._chart.item.tensor_at(x, y)

    def drawn_offsets(self) -> dict[int, int]:
        """Tensor -> byte offset it is drawn at."""
        return {} if self._data is None else self._data.offsets()

    def widest_band(self) -> tuple[float, float]:
        """x extent (operator units) of the widest-operator band; (0, 0) when empty."""
        return (0.0, 0.0) if self._chart is None else self._chart.widest_band()

    def chart_data(self) -> ChartData | None:
        return self._data

    def chart_plot(self) -> ChartPlot | None:
        """The built chart (plots, item, lines), for the window and tests."""
        return self._chart

    def tooltip_text(self, tensor: int) -> str:
        """The hover text of ``tensor`` (:func:`viewer.ui.chart_text.tensor_tip`)."""
        return tensor_tip(self._analysis, self._data, tensor)

    def breadth_tooltip_text(self, op: int) -> str:
        """The hover text of operator ``op``'s column on the breadth curve
        (:func:`viewer.ui.chart_text.breadth_tip`)."""
        return breadth_tip(self._analysis, self._data, op)

    def set_tensor_dtypes(self, tensor_dtypes) -> None:
        """The per-tensor storage what-ifs in force (tensor index -> dtype), so the context
        menu ticks each tensor's current choice."""
        self._tensor_dtypes = {int(k): str(v) for k, v in dict(tensor_dtypes or {}).items()}

    def split_menu(self, op: int, menu: QMenu | None = None) -> QMenu:
        """Add "Tiling: split here" for operator ``op`` (emits :attr:`split_requested`)."""
        if menu is None:
            if self._menu is not None:
                self._menu.close()
                self._menu.deleteLater()
            menu = self._menu = QMenu(self)
        else:
            menu.addSeparator()
        act = menu.addAction(f"Tiling: split here (patches through operator #{op})")
        act.triggered.connect(lambda _=False: self.split_requested.emit(op))
        return menu

    def context_menu(self, tensor: int) -> QMenu:
        """The context menu of ``tensor``'s rectangle: "Store as float16 / bfloat16 / int8 /
        float32" and "Reset to the model's dtype", each emitting :attr:`tensor_dtype_requested`
        (:func:`viewer.ui.chart_text.fill_dtype_menu`). A kernel temporary gets them disabled.
        """
        if self._menu is not None:
            self._menu.close()
            self._menu.deleteLater()
        menu = self._menu = QMenu(self)
        fill_dtype_menu(menu, self._analysis, tensor, self._tensor_dtypes.get(tensor),
                        lambda d: self.tensor_dtype_requested.emit(tensor, d))
        return menu

    def export(self, path: str, width: int, height: int) -> None:
        """Write the chart as it is shown (colour mode, filter) to a PNG or SVG, replacing an
        existing file (the caller's save dialog has asked).

        Raises
        ------
        viewer.errors.UsageError
            Unknown suffix, bad size; or nothing is shown.
        """
        from viewer.errors import UsageError
        from viewer.export.image import export_chart_data

        if self._data is None:
            raise UsageError(f"{path}: no chart to export (open a model first)")
        export_chart_data(self._data, path, width=int(width), height=int(height),
                          faded=self._faded_mask(), force=True)  # the window asked already

    # --- building ---------------------------------------------------------------------------

    def _faded_mask(self) -> np.ndarray | None:
        if self._data is None or self._min_held <= 0:
            return None
        return self._data.held_ops <= self._min_held

    def _rebuild(self) -> None:
        self._overlays = []
        self._hover_key = (-1, -1)  # the next move shows the new drawing's text
        self._data = build_chart_data(
            self._analysis, self._plan, color_by=self._color_mode,
            model_name=self._model_name, subgraph=self._subgraph, note=self._note,
        )
        rect = QRectF(self.view.viewport().rect())
        if rect.width() > 0 and rect.height() > 0:
            self.view.ci.setGeometry(rect)  # build_chart chooses its rows for this size
        self._chart = build_chart(self._data, self.view.ci, legend="top", title_pt=11.0,
                                  curve_steps=CURVE_STEPS_PER_PX * int(rect.width() or 1600))
        self._fit_layout()
        curve_vb = self._chart.breadth.getViewBox()  # the curve follows pans, zooms and resizes
        curve_vb.sigXRangeChanged.connect(self._chart.fit_curve_to_view)
        curve_vb.sigResized.connect(self._chart.fit_curve_to_view)
        self._chart.fit_curve_to_view()
        self._chart.packing.setMenuEnabled(True)
        vb = self._chart.packing.getViewBox()
        vb.mouseClickEvent = lambda ev, vb=vb: self._on_packing_view_clicked(vb, ev)
        if self._min_held > 0:
            self._chart.item.set_faded(self._faded_mask())
        self._update_selection()

    def _fit_layout(self) -> None:
        """Give the layout the whole view again (emptying a shown layout shrinks it), with the
        legend row wrapped to the view's width."""
        rect = QRectF(self.view.viewport().rect())
        if self._chart is not None and rect.width() > 0:
            fit_legend(self._chart.legend, rect.width())
        self.view.ci.setGeometry(rect)

    def _rows_for(self, width: float, height: float) -> tuple:
        """The optional rows (legend, notes, breadth curve) a view of this size shows."""
        c = self._chart
        fit_legend(c.legend, max(width, 1.0))
        c.title.fit(width - 20)
        return choose_rows(height, c.title.minimumHeight(), c.legend.minimumHeight(), 0.0)

    def _refit(self, width: float, height: float) -> None:
        """After a resize: rebuild when the size wants other rows (a short view drops the
        legend, then the breadth curve; a taller one gets them back), keeping the zoom."""
        c = self._chart
        if c is None or width <= 0 or height <= 0 or self._rows_for(width, height) == c.rows:
            return
        ranges = c.packing.viewRange()
        home = c.at_home
        top = (c.shared_top, c.shared_breadth_top)
        self._rebuild()
        if self._chart is not None:
            if any(top):
                self._chart.set_shared_top(*top)
            if not home:
                self._chart.packing.setRange(xRange=ranges[0], yRange=ranges[1], padding=0)
                self._chart.at_home = False
            self.rows_changed.emit()

    def _update_selection(self) -> None:
        chart, d, a = self._chart, self._data, self._analysis
        if chart is None or d is None or a is None:
            return
        for plot_item, item in self._overlays:
            plot_item.removeItem(item)
        self._overlays = []
        ys, bs = chart.y_scale, chart.breadth_scale  # bytes per scene unit
        top = max(d.arena_bytes, d.lower_bound, 1) * 2 / ys
        btop = max(int(d.breadth.max()) if len(d.breadth) else 0, d.lower_bound, 1) * 2 / bs
        op = self.marked_operator
        if op is not None and 0 <= op < d.num_ops:  # the clicked operator's column, outlined
            for plot_item, height in ((chart.packing, top), (chart.breadth, btop)):
                mark = pg.BarGraphItem(x0=[float(op)], x1=[op + 1.0], y0=[0.0], y1=[height],
                                       brush=pg.mkBrush(None), pen=pg.mkPen(SELECT_PEN, width=2,
                                                                            style=Qt.PenStyle.DashLine))
                mark.setZValue(25)
                plot_item.addItem(mark, ignoreBounds=True)
                self._overlays.append((plot_item, mark))
        t = self._selected
        row = None if t is None else d.row_of(t)
        if row is None:
            return
        u = a.usage(t)
        cols = []
        if u is not None and u.producer is not None and u.producer >= 0:
            cols.append((u.producer, PRODUCER_BRUSH))
        if u is not None:
            cols += [(c, CONSUMER_BRUSH) for c in u.consumers]
        for brush in (PRODUCER_BRUSH, CONSUMER_BRUSH):
            xs = np.array([c for c, b in cols if b is brush], dtype=np.float64)
            if not len(xs):
                continue
            for plot_item, height in ((chart.packing, top), (chart.breadth, btop)):
                bars = pg.BarGraphItem(x0=xs, x1=xs + 1, y0=np.zeros_like(xs),
                                       y1=np.full_like(xs, height), brush=pg.mkBrush(brush),
                                       pen=pg.mkPen(None))
                bars.setZValue(-5)
                plot_item.addItem(bars, ignoreBounds=True)
                self._overlays.append((plot_item, bars))
        outline = pg.BarGraphItem(
            x0=[float(d.x0[row])], x1=[float(d.x1[row])], y0=[float(d.y0[row]) / ys],
            y1=[float(d.y1[row]) / ys], brush=pg.mkBrush(None),
            pen=pg.mkPen(SELECT_PEN, width=3),
        )
        outline.setZValue(30)
        chart.packing.addItem(outline, ignoreBounds=True)
        self._overlays.append((chart.packing, outline))

    # --- mouse --------------------------------------------------------------------------------

    def _data_point(self, scene_pos) -> tuple[str | None, float, float]:
        """Which plot (``"packing"``/``"breadth"``/None) ``scene_pos`` is in, and its data
        coordinates (x in operators, y in bytes)."""
        chart = self._chart
        if chart is None:
            return None, 0.0, 0.0
        for name, plot, scale in (("packing", chart.packing, chart.y_scale),
                                  ("breadth", chart.breadth, chart.breadth_scale)):
            if name == "breadth" and not chart.breadth_shown:
                continue
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(scene_pos):
                p = vb.mapSceneToView(scene_pos)
                return name, p.x(), p.y() * scale
        return None, 0.0, 0.0

    def _hover_at(self, scene_pos) -> tuple[int, int]:
        """What the mouse at ``scene_pos`` points at: (tensor whose rectangle is under it in the
        packing plot, operator whose column it is in on the breadth curve); -1 for none."""
        where, x, y = self._data_point(scene_pos)
        if where == "packing":
            t = self.tensor_at(x, y)
            return (-1 if t is None else t), -1
        op = int(np.floor(x))
        if where == "breadth" and self._data is not None and 0 <= op < self._data.num_ops:
            return -1, op
        return -1, -1

    def _show_tooltip(self, global_pos, tensor: int, op: int) -> None:
        """Show the hover text of ``tensor`` (or, for -1, of operator ``op`` on the breadth
        curve) at ``global_pos`` (screen pixels); hide the tooltip when both are -1."""
        text = (self.tooltip_text(tensor) if tensor >= 0
                else self.breadth_tooltip_text(op) if op >= 0 else "")
        if text:
            QToolTip.showText(global_pos, text, self.view.viewport(), QRect(), TOOLTIP_MS)
        else:
            QToolTip.hideText()

    def _on_scene_mouse_moved(self, scene_pos) -> None:
        t, op = self._hover_at(scene_pos)
        self._set_hovered(t)
        if QApplication.mouseButtons() != Qt.MouseButton.NoButton:
            return  # a drag (pan/zoom) or a click in progress: Qt itself shows no tooltip then
        # Also when the tooltip of the same rectangle was closed by a click, a wheel zoom or a
        # key: the next move over it brings it back, as the first move onto it did.
        if (t, op) != self._hover_key or ((t, op) != (-1, -1) and not QToolTip.isVisible()):
            self._hover_key = (t, op)
            vp = self.view.viewport()
            self._show_tooltip(vp.mapToGlobal(self.view.mapFromScene(scene_pos)), t, op)

    def _on_packing_view_clicked(self, vb, ev) -> None:
        """A right click on a rectangle opens its storage menu; anything else goes to the
        view box (whose own menu has zoom and export)."""
        if ev.button() == Qt.MouseButton.RightButton and self._data is not None:
            where, x, y = self._data_point(ev.scenePos())
            t = self.tensor_at(x, y) if where == "packing" else None
            op = int(np.floor(x))
            in_ops = where is not None and 0 <= op < self._data.num_ops
            if t is not None:
                ev.accept()
                menu = self.context_menu(t)
                if in_ops:
                    self.split_menu(op, menu)
                menu.popup(ev.screenPos().toPoint())
                return
        type(vb).mouseClickEvent(vb, ev)

    def _on_scene_mouse_clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton or self._data is None:
            return
        where, x, y = self._data_point(ev.scenePos())
        if where is None:
            return
        op = int(np.floor(x))
        if where == "packing":
            t = self.tensor_at(x, y)
            if t is not None:
                self.select_tensor(t)
                self.tensor_selected.emit(t)
                return
            if self._selected is not None:
                self.select_tensor(None)
                self.tensor_selected.emit(-1)
        if 0 <= op < self._data.num_ops:
            self.marked_operator = op
            self._update_selection()
            self.operator_clicked.emit(op)

    # --- keyboard -------------------------------------------------------------------------------

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and self._handle_key(event.key()):
            return True
        if (event.type() == QEvent.Type.Resize and obj is self.view.viewport()
                and self._chart is not None):  # re-wrap the legend row to the new width
            fit_legend(self._chart.legend, max(float(event.size().width()), 1.0))
            self._refit(float(event.size().width()), float(event.size().height()))
        if obj is self.view.viewport() and event.type() in (
                QEvent.Type.ToolTip, QEvent.Type.Enter, QEvent.Type.Leave):
            return self._on_viewport_hover_event(event)
        return super().eventFilter(obj, event)

    def _on_viewport_hover_event(self, event: QEvent) -> bool:
        """Keep the tooltip of what is under the pointer up while the pointer rests on it.

        - ToolTip: Qt sends it once the pointer has rested ~0.7 s (only to an active window).
          The graphics view would hand it to ``QGraphicsScene.helpEvent``, which finds no item
          with a tooltip and *hides* the one shown on the move: under a real X server the user
          saw it flash and vanish. Answered here instead; returns True (consumed).
        - Leave: the pointer left the chart, or went onto the tooltip's own window (a move
          down-right onto it): hide it and forget the hover.
        - Enter: the pointer is back (e.g. the tooltip under it just closed): show the text of
          what it rests on again, placed beside the pointer by Qt, without waiting for a move.
        """
        vp = self.view.viewport()
        if event.type() == QEvent.Type.ToolTip:
            self._show_tooltip(event.globalPos(), *self._hover_at(self.view.mapToScene(event.pos())))
            return True
        if event.type() == QEvent.Type.Leave:
            if self._hover_key != (-1, -1):
                self._hover_key = (-1, -1)
                QToolTip.hideText()
            t, op = -1, -1
        else:  # Enter
            pos = vp.mapFromGlobal(QCursor.pos())
            t, op = self._hover_at(self.view.mapToScene(pos)) if vp.rect().contains(pos) else (-1, -1)
            if (t, op) != self._hover_key:
                self._hover_key = (t, op)
                self._show_tooltip(QCursor.pos(), t, op)
        self._set_hovered(t)
        return False

    def _set_hovered(self, t: int) -> None:
        """The tensor under the pointer is now ``t`` (-1: none): emit :attr:`tensor_hovered`."""
        if t != self._hovered:
            self._hovered = t
            self.view.viewport().setToolTip(self.tooltip_text(t) if t >= 0 else "")
            self.tensor_hovered.emit(t)

    def keyPressEvent(self, event) -> None:
        if not self._handle_key(event.key()):
            super().keyPressEvent(event)

    def _handle_key(self, key: int) -> bool:
        """+/- zoom, arrows pan, 0/Home reset. Returns True when the key was used."""
        chart = self._chart
        if chart is None:
            return False
        vb = chart.packing.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        dx, dy = (x1 - x0) * PAN_STEP, (y1 - y0) * PAN_STEP
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            vb.scaleBy((ZOOM_STEP, ZOOM_STEP))
        elif key in (Qt.Key.Key_Minus, Qt.Key.Key_Underscore):
            vb.scaleBy((1 / ZOOM_STEP, 1 / ZOOM_STEP))
        elif key == Qt.Key.Key_Left:
            vb.translateBy(x=-dx)
        elif key == Qt.Key.Key_Right:
            vb.translateBy(x=dx)
        elif key == Qt.Key.Key_Up:
            vb.translateBy(y=dy)
        elif key == Qt.Key.Key_Down:
            vb.translateBy(y=-dy)
        elif key in (Qt.Key.Key_0, Qt.Key.Key_Home):
            self.reset_view()
            return True
        else:
            return False
        chart.at_home = False  # zoomed or panned: a resize keeps this view
        return True

    def view_range(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Visible ((x0, x1), (y0, y1)) of the packing plot, in operators and bytes."""
        if self._chart is None:
            return (0.0, 0.0), (0.0, 0.0)
        (a, b), (c, e) = self._chart.packing.getViewBox().viewRange()
        ys = self._chart.y_scale
        return (float(a), float(b)), (float(c) * ys, float(e) * ys)

    def scene_pos_of(self, x: float, y: float) -> QPointF:
        """Scene position of data point (x operators, y bytes) of the packing plot."""
        vb = self._chart.packing.getViewBox()
        return vb.mapViewToScene(QPointF(x, y / self._chart.y_scale))
