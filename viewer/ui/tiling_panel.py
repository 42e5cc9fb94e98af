"""The Tiling section of the What if panel, and what it drives in the window.

:class:`TilingPanel` collects grid, split, input mode, "show tiled execution" and the
whole-input settings, and shows the figures. :class:`TilingController` answers a change at once
from our own numbers (:func:`viewer.document.tiling.evaluate`, on the GUI thread: tens of
milliseconds), draws the tiled execution in the chart (and beside the untiled run in the compare
view), then has LiteRT confirm it in the background (write the models, measure every signature
and the tail, stitch), as resolution edits are confirmed. The peak-vs-split plot (one line per
grid) is computed in the background once per model.
"""

from __future__ import annotations

import os
import time

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from viewer.document.tiling import (
    CurveRequest,
    ConfirmRequest,
    WholeRequest,
    compute_confirm,
    compute_curve,
    compute_whole,
    evaluate,
    tiler_for,
)
from viewer.errors import ViewerError
from viewer.ops import NotLocal
from viewer.ui.widgets import FocusWheelComboBox, FocusWheelSpinBox, WrapLabel
from viewer.units import format_bytes
from viewer.whatif.tiling.report import deployed_planned_bytes, versus_untiled

#: Shown where the peak-vs-split plot goes until a search drew it.
PLOT_PLACEHOLDER = ("peak vs split after operator: no curve yet. Press \u201cbest split\u201d "
                    "to search every split for this grid and draw it here.")
_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


class TilingPanel(QGroupBox):
    """Grid, split, input mode; figures; the peak-vs-split plot; whole-input tiling.

    Signals
    -------
    settings_changed()
        Grid, split, input mode or "show tiled execution" changed.
    best_requested()
        "Best split" pressed.
    whole_requested()
        "Compute" of the whole-input tiling pressed.
    """

    settings_changed = Signal()
    best_requested = Signal()
    whole_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Tiling (patch-based execution)", parent)
        self._quiet = False
        outer = QVBoxLayout(self)
        form = QFormLayout()
        outer.addLayout(form)
        self.show_tiled = QCheckBox("show the tiled execution")
        self.show_tiled.setToolTip("draw one patch's tensors, the cut buffers and the tail in the chart")
        self.show_tiled.toggled.connect(self._on_control_changed)
        form.addRow(self.show_tiled)
        row = QHBoxLayout()
        self.rows, self.cols = FocusWheelSpinBox(), FocusWheelSpinBox()
        for sb in (self.rows, self.cols):
            sb.setRange(1, 16)
            sb.setValue(4)
            sb.setKeyboardTracking(False)
            sb.valueChanged.connect(self._on_control_changed)
        row.addWidget(self.rows)
        row.addWidget(QLabel("x"))
        row.addWidget(self.cols)
        form.addRow("grid (rows x columns)", row)
        row = QHBoxLayout()
        self.split = FocusWheelSpinBox()
        self.split.setRange(0, 0)
        self.split.setKeyboardTracking(False)
        self.split.setToolTip("last operator of the patch stage (or right-click an operator on the chart)")
        self.split.valueChanged.connect(self._on_control_changed)
        row.addWidget(self.split)
        self.best = QPushButton("best split")
        self.best.setToolTip("the split with the lowest peak for this grid")
        self.best.clicked.connect(self.best_requested)
        row.addWidget(self.best)
        form.addRow("split after operator", row)
        self.input_mode = FocusWheelComboBox()
        self.input_mode.addItem("resident (LiteRT keeps it)", "resident")
        self.input_mode.addItem("streamed per patch", "streamed")
        self.input_mode.currentIndexChanged.connect(self._on_control_changed)
        form.addRow("graph input", self.input_mode)
        self.figures = WrapLabel("")
        self.figures.setWordWrap(True)
        outer.addWidget(self.figures)
        self.runtime_line = WrapLabel("")
        self.runtime_line.setWordWrap(True)
        outer.addWidget(self.runtime_line)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setMinimumHeight(150)
        self.plot.setMinimumWidth(120)
        self.plot.setLabel("bottom", "split after operator")
        self.plot.setLabel("left", "peak (MiB)")
        self.plot.addLegend(offset=(-5, 5), labelTextSize="7pt")
        # Until a search ran there is no curve: a sentence in place of empty 0..1 axes.
        self.plot_placeholder = WrapLabel(PLOT_PLACEHOLDER)
        self.plot_placeholder.setWordWrap(True)
        self.plot_placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.plot_placeholder.setStyleSheet("color: #666; border: 1px dashed #bbb; padding: 8px;")
        self.plot_stack = QStackedWidget()
        self.plot_stack.addWidget(self.plot_placeholder)
        self.plot_stack.addWidget(self.plot)
        self.plot_stack.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        outer.addWidget(self.plot_stack)
        self.clear_curve()
        self.search_line = WrapLabel("")
        self.search_line.setWordWrap(True)
        outer.addWidget(self.search_line)

        box = QGroupBox("Whole-input tiling")
        wf = QFormLayout(box)
        self.tile, self.overlap, self.full_h, self.full_w = (FocusWheelSpinBox() for _ in range(4))
        for sb, lo, hi, v in ((self.tile, 8, 8192, 256), (self.overlap, 0, 1024, 0),
                              (self.full_h, 8, 65536, 1024), (self.full_w, 8, 65536, 1024)):
            sb.setRange(lo, hi)
            sb.setValue(v)
        wf.addRow("tile T (px)", self.tile)
        wf.addRow("overlap O (px)", self.overlap)
        row = QHBoxLayout()
        row.addWidget(self.full_h)
        row.addWidget(QLabel("x"))
        row.addWidget(self.full_w)
        wf.addRow("full resolution", row)
        self.whole_button = QPushButton("Compute")
        self.whole_button.clicked.connect(self.whole_requested)
        wf.addRow(self.whole_button)
        self.whole_line = WrapLabel("")
        self.whole_line.setWordWrap(True)
        wf.addRow(self.whole_line)
        outer.addWidget(box)

    # -- state --------------------------------------------------------------------------------
    def settings(self) -> tuple[tuple[int, int], int, str, bool]:
        return ((self.rows.value(), self.cols.value()), self.split.value(),
                self.input_mode.currentData(), self.show_tiled.isChecked())

    def set_split_range(self, last: int, value: int | None = None) -> None:
        self._quiet = True
        self.split.setRange(0, max(last, 0))
        if value is not None:
            self.split.setValue(value)
        self._quiet = False

    def set_split(self, k: int, show: bool = True) -> None:
        """Set the split (emits ``settings_changed`` once)."""
        self._quiet = True
        self.split.setValue(k)
        if show:
            self.show_tiled.setChecked(True)
        self._quiet = False
        self.settings_changed.emit()

    def clear_curve(self) -> None:
        """No curve: the placeholder sentence in place of the plot."""
        self.plot.clear()
        self.plot_stack.setCurrentWidget(self.plot_placeholder)
        self.plot_stack.setMaximumHeight(self.plot_placeholder.sizeHint().height() + 4)

    def show_curve(self, res, current: tuple[int, int] | None = None) -> None:
        self.plot_stack.setMaximumHeight(16777215)
        self.plot_stack.setCurrentWidget(self.plot)
        self.plot.clear()
        for n, (g, pts) in enumerate(res.curve.items()):
            if not pts:
                continue
            xs = [k for k, _, _ in pts]
            ys = [p / 2 ** 20 for _, p, _ in pts]
            width = 3 if g == current else 1
            self.plot.plot(xs, ys, pen=pg.mkPen(_COLORS[n % len(_COLORS)], width=width), name=f"{g[0]}x{g[1]}")
        self.plot.addLine(y=res.untiled_peak_bytes / 2 ** 20, pen=pg.mkPen("k", style=pg.QtCore.Qt.PenStyle.DashLine))

    def _on_control_changed(self, *_):
        if not self._quiet:
            self.settings_changed.emit()


class TilingController(QObject):
    """Wires the :class:`TilingPanel` to the window: chart, compare view, background runtime work.

    Attributes
    ----------
    view : viewer.document.tiling.TiledView or None
        The tiled execution shown (None: the untiled model).
    verification : dict or None
        LiteRT's answer for the shown tiled execution (None until it arrives).
    last_redraw_s : float
        Seconds from the last settings change to the redraw (our own numbers).
    """

    shown = Signal()
    confirmed = Signal(object)

    def __init__(self, window):
        super().__init__(window)
        from viewer.ui.workers import TaskRunner

        self.window = window
        self.panel = TilingPanel(window.whatif)
        lay = window.whatif.layout()
        lay.insertWidget(max(lay.count() - 1, 0), self.panel)  # after "Reset edits", before the stretch
        self.view = None
        self.verification = None
        self.curve = None
        self.last_redraw_s = 0.0
        self._path = None
        self._subgraph = 0
        self._searching = False
        self._tiler_ready = False
        self._confirm = TaskRunner(self, fn=compute_confirm)
        self._search = TaskRunner(self, fn=compute_curve)
        self._whole = TaskRunner(self, fn=compute_whole)
        self._confirm.response_ready.connect(self._on_confirm_response_ready)
        self._confirm.failed.connect(self._on_confirm_failed)
        self._search.response_ready.connect(self._on_search_response_ready)
        self._search.progressed.connect(self._on_search_progressed)
        self._search.failed.connect(self._on_search_failed)
        self._whole.response_ready.connect(self._on_whole_response_ready)
        self._whole.failed.connect(lambda m: self.panel.whole_line.setText(m))
        self.panel.settings_changed.connect(self.apply)
        self.panel.best_requested.connect(self._on_panel_best_requested)
        self.panel.whole_requested.connect(self._on_panel_whole_requested)
        window.document.events.connect("model_changed", self._on_document_model_changed)
        window.chart.split_requested.connect(self._on_chart_split_requested)

    # -- public -------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.view is not None

    def counted_arena(self) -> tuple[int, str] | None:
        """The arena the budget counts while the tiled execution is shown, as ``check --tile``
        counts it by default: the written deployment under LiteRT, every patch signature's arena
        and the tail's resident at once + cut + input (LiteRT's measurement once it confirmed
        this grid and split, else our plan). None when the untiled model is shown.

        Returns
        -------
        (int, str) or None
            Bytes and the budget line's label.
        """
        if self.view is None:
            return None
        p = self.view.plan
        g = f"{p.grid[0]}x{p.grid[1]} patches through operator #{p.split}"
        v = self.verification
        if v is not None and "deployed_bytes" in v:
            return int(v["deployed_bytes"]), (f"tensor arena, tiled ({g}; all stages resident; measured by "
                                              "LiteRT on the written patch and tail models)")
        return deployed_planned_bytes(p), (f"tensor arena, tiled ({g}; all stages resident; planned, "
                                           "kernel temporaries estimated from shapes)")

    def shutdown(self) -> None:
        for r in (self._confirm, self._search, self._whole):
            r.shutdown()

    def apply(self) -> None:
        """Re-plan from the panel's settings and redraw at once; the runtime confirms after."""
        t0 = time.perf_counter()
        grid, split, mode, show = self.panel.settings()
        self.verification = None
        if self._path is None or not show:
            self.view = None
            self.panel.figures.setText("")
            self.panel.runtime_line.setText("")
            self._redraw()
            return
        try:
            if not self._tiler_ready:
                t = tiler_for(self._path, self._subgraph)
                self._tiler_ready = True
                self.panel.set_split_range(t.prefix.last_op)
                split = self.panel.split.value()
            self.view = evaluate(self._path, grid, split, mode, self._subgraph)
        except ViewerError as e:
            self.view = None
            self.panel.figures.setText(f"cannot tile: {e}")
            self._redraw()
            return
        except (ValueError, NotLocal) as e:
            self.view = None
            self.panel.figures.setText(f"cannot tile {grid[0]}x{grid[1]} after #{split}: {e}")
            self.panel.runtime_line.setText("")
            self._redraw()
            return
        p = self.view.plan
        worse = ": tiling does not help here" if p.peak_bytes > p.untiled_peak_bytes else ""
        self.panel.figures.setText(
            f"peak {format_bytes(p.peak_bytes)} ({p.peak_bytes:,d} B) if the stages share one arena in "
            f"turn, {versus_untiled(p.peak_bytes, p.untiled_peak_bytes)} {format_bytes(p.untiled_peak_bytes)}"
            f"{worse}; recompute +{p.overhead_pct:.1f}% MACs\n"
            f"deployed with LiteRT as written (every stage's arena resident): "
            f"{format_bytes(deployed_planned_bytes(p))} ({deployed_planned_bytes(p):,d} B)\n"
            f"patch stage {format_bytes(p.patch_stage_bytes)} = patch {format_bytes(p.patch_arena_bytes)} "
            f"(input crop {'x'.join(map(str, p.patch_input_shape))}) + cut {format_bytes(p.cut_bytes)}"
            + (f" + input {format_bytes(p.input_bytes)}" if p.input_mode == "resident" else "")
            + f"; tail {format_bytes(p.tail_arena_bytes)}; {len(p.classes)} patch signatures; "
            f"cut: {len(p.cut)} tensor(s); patchable prefix 0..{tiler_for(self._path, self._subgraph).prefix.last_op}")
        self.panel.runtime_line.setText("estimated (our numbers); confirming with LiteRT…")
        self._redraw()
        self.last_redraw_s = time.perf_counter() - t0
        self.start_search()
        self._confirm.submit(ConfirmRequest(self._path, grid, split, mode, self._subgraph))
        if self.curve is not None:
            self.panel.show_curve(self.curve, grid)

    # -- slots --------------------------------------------------------------------------------
    def _redraw(self) -> None:
        w = self.window
        w._show_plan()
        w._update_compare_view()
        self.shown.emit()

    def _on_document_model_changed(self, resp) -> None:
        self._search.cancel()  # the previous model's search and confirmation are stale
        self._confirm.cancel()
        self._path = resp.model.path
        self._subgraph = resp.request.subgraph
        self.view, self.curve, self.verification = None, None, None
        self._tiler_ready = False  # built on first use: opening a model costs nothing more
        n = len(resp.model.subgraph(self._subgraph).operators)
        self.panel.set_split_range(max(n - 1, 0), min(12, max(n - 1, 0)))
        self.panel.figures.setText("")
        self.panel.runtime_line.setText("")
        self.panel.clear_curve()
        self.panel.search_line.setText("")
        self._searching = False
        # A what-if of the previous model: off for the new one (as its other edits are).
        self.panel._quiet = True
        self.panel.show_tiled.setChecked(False)
        self.panel._quiet = False

    def start_search(self) -> None:
        """Start the peak-vs-split search (once per model; in a child process)."""
        if self._path is None or self._searching or self.curve is not None:
            return
        self._searching = True
        self.panel.search_line.setText("searching grids 1x1..8x8 over every split…")
        self._search.submit(CurveRequest(self._path, self._subgraph))

    def _on_chart_split_requested(self, op: int) -> None:
        if self._path is None:
            return
        self.panel.set_split(min(op, self.panel.split.maximum()))

    def _on_panel_best_requested(self) -> None:
        self.start_search()
        if self.curve is None:
            self.panel.search_line.setText("the search is still running…")
            return
        grid = self.panel.settings()[0]
        best = self.curve.best.get(grid)
        if best is None:  # a grid the search did not cover (not square): search it here
            from viewer.whatif.tiling.plan import search

            best = search(tiler_for(self._path, self._subgraph), grids=[grid]).best.get(grid)
        if best is not None:
            self.panel.set_split(best.split)

    def _on_confirm_response_ready(self, resp) -> None:
        grid, split, mode, show = self.panel.settings()
        r = resp.request
        if not show or (r.grid, r.split, r.input_mode) != (grid, split, mode):
            return
        v = self.verification = resp.verification
        ok = v["arenas_equal"] and v["cut_equal"] and v["outputs_equal"]
        self.panel.runtime_line.setText(
            ("LiteRT confirms: " if ok else "LiteRT DISAGREES: ")
            + f"{len(v['signatures'])} signatures + tail, arenas {'equal' if v['arenas_equal'] else 'differ'}; "
            f"measured peak {v['measured_peak_bytes']:,d} B "
            f"({versus_untiled(v['measured_peak_bytes'], v['untiled_measured_bytes'])}) in turn, "
            f"{v['deployed_bytes']:,d} B deployed as written (all resident); stitched cut "
            f"{'equal' if v['cut_equal'] else 'differs'}, outputs {'equal' if v['outputs_equal'] else 'differ'}")
        self.window._update_budget_verdict()  # the budget counts LiteRT's figure now
        self.confirmed.emit(v)

    def _on_confirm_failed(self, message: str) -> None:
        self.panel.runtime_line.setText(f"not confirmed by LiteRT: {message}")

    def _on_search_progressed(self, fraction: float, message: str) -> None:
        self.panel.search_line.setText(message)

    def _on_search_failed(self, message: str) -> None:
        self._searching = False
        self.panel.search_line.setText(f"search failed: {message}")

    def _on_search_response_ready(self, res) -> None:
        self._searching = False
        self.curve = res
        self.panel.show_curve(res, self.panel.settings()[0])
        self.panel.search_line.setText(res.verdict)

    def _on_panel_whole_requested(self) -> None:
        if self._path is None:
            return
        p = self.panel
        self.panel.whole_line.setText("computing…")
        self._whole.submit(WholeRequest(self._path, f"{p.tile.value()}x{p.tile.value()}", p.overlap.value(),
                                        f"{p.full_h.value()}x{p.full_w.value()}", self._subgraph))

    def _on_whole_response_ready(self, rep: dict) -> None:
        self.whole_rep = rep
        self.panel.whole_line.setText("\n".join(line.strip() for line in rep["lines"][1:]))


def time_redraw(path: str, changes=(((4, 4), 13), ((4, 4), 16), ((3, 3), 16), ((5, 5), 20))) -> str:
    """Benchmark helper: seconds from a grid/split change to the redrawn chart (offscreen), with
    our own planning's share, against an anchor timed in the same run: the window's redraw of the
    untiled model (chart, table and verdict, the same work any what-if edit pays)."""
    from PySide6.QtWidgets import QApplication

    from viewer.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    w = MainWindow(measure=False)
    w.show()
    w.open_model(path)
    while w.runner.busy:
        app.processEvents()
    w.runner.wait()
    app.processEvents()
    c = w.tiling
    t0 = time.perf_counter()
    w._show_plan()
    app.processEvents()
    anchor = time.perf_counter() - t0
    c._searching = True  # keep the background search out of the timing
    c.panel.show_tiled.setChecked(True)
    app.processEvents()
    times, ours = [], []
    for grid, k in changes:
        t0 = time.perf_counter()
        c.panel._quiet = True
        c.panel.rows.setValue(grid[0])
        c.panel.cols.setValue(grid[1])
        c.panel._quiet = False
        t1 = time.perf_counter()
        evaluate(path, grid, k + 1)  # our planning alone (a split not seen yet)
        ours.append(time.perf_counter() - t1)
        t0 += ours[-1]
        c.panel.set_split(k)
        app.processEvents()
        times.append(time.perf_counter() - t0 - ours[-1] * 0)
    c.shutdown()
    w.close()
    ms = lambda xs: ", ".join(f"{1000 * t:.0f}" for t in xs)  # noqa: E731
    return (f"window ({os.path.basename(path)}): grid/split change -> redrawn chart {ms(times)} ms; "
            f"our planning of a new (grid, split) {ms(ours)} ms; anchor: the window's redraw of the "
            f"untiled model {1000 * anchor:.0f} ms (target < 200 ms)")
