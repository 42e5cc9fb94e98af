"""The main window: packing chart in the centre, side panel and tensor table in docks.

All slow work (reading, measuring, analysing, planning) runs in :class:`~viewer.ui.workers.TaskRunner`;
this module only builds requests and applies responses, on the GUI thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QSize, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QProgressBar,
    QToolButton,
    QWidget,
)

from viewer.errors import ViewerError
from viewer.export.chart_data import titled_model_name
from viewer.resources import DEMO_MODEL, resource_path
from viewer.ui import dialogs
from viewer.ui.chart import PackingChart
from viewer.ui.side_panel import SidePanel, budget_report
from viewer.ui.tensor_table import TensorTable
from viewer.ui.whatif_panel import WhatIfPanel
from viewer.ui.workers import (
    OPTIMAL,
    AnalysisRequest,
    AnalysisResponse,
    OptimizeRequest,
    OptimizeResponse,
    ReorderRequest,
    TaskRunner,
    compute_optimal,
    compute_reorder,
    optimal_summary,
    plan_label,
)
from viewer.units import format_bytes
from viewer.whatif.edits import WhatIfEdits

APP_NAME = "Arena Viewer"
MAX_RECENT = 8
MODEL_FILTER = "TensorFlow Lite / LiteRT models (*.tflite);;All files (*)"
DEFAULT_SIZE = QSize(1400, 860)
#: Seconds the exact planner ``optimal`` may run (setting ``optimal_time_limit``).
OPTIMAL_TIME_LIMIT = 60.0
#: Seconds the operator reorder search may run (setting ``reorder_time_limit``).
REORDER_TIME_LIMIT = 10.0

_VERBS = {"open": "Opening", "subgraph": "Analysing subgraph of", "what-if": "Confirming what-if with the runtime for",
          "what-if-estimate": "Estimating what-if for", "optimize": "Optimizing the arena of",
          "reorder": "Reordering operators of"}
_FAIL_TITLES = {"open": "Cannot open model", "subgraph": "Cannot analyse subgraph",
                "what-if": "What-if not applied", "what-if-estimate": "What-if not applied",
                "optimize": "Optimize failed", "reorder": "Reorder failed"}


def _is_model_url(url) -> bool:
    return url.isLocalFile() and url.toLocalFile().lower().endswith(".tflite")


class MainWindow(QMainWindow):
    """Arena Viewer's window.

    Parameters
    ----------
    settings : QSettings, optional
        Where recent files and options live (tests pass a temporary INI file).
    measure : bool, optional
        Run the real LiteRT runtime for each opened model (default: the saved setting, on).
    """

    #: Emitted after a response is shown (tests wait on it).
    view_changed = Signal()
    #: Emitted with the one-line reason when opening or analysing failed.
    open_failed = Signal(str)
    #: Emitted with the kind of work ("optimize", "reorder", ...) when it was cancelled.
    work_cancelled = Signal(str)

    def __init__(self, settings: QSettings | None = None, measure: bool | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        from viewer.ui import gc_guard

        gc_guard.install()  # cycles collected on this thread only: no worker-thread Qt deadlock
        self.settings = settings if settings is not None else QSettings("ArenaViewer", "arena-viewer")
        if measure is None:
            measure = str(self.settings.value("measure", "true")).lower() == "true"
        self._measure = bool(measure)
        self._resp: AnalysisResponse | None = None  # shown: self._full.showing(temporaries)
        self._full: AnalysisResponse | None = None  # as the worker delivered it (+ optimal plans)
        self._with_temporaries = True  # show the analysis with the runtime's kernel temporaries
        self._before_reorder: AnalysisResponse | None = None  # the original order, to go back
        self._planner: str | None = None
        self._selected: int | None = None
        self._edits: WhatIfEdits | None = None
        self._baseline: AnalysisResponse | None = None  # the unedited subgraph's response
        self._pending_kind = "open"  # what the running request does: open, subgraph, what-if
        self.setWindowTitle(APP_NAME)
        self.setAcceptDrops(True)
        self.resize(DEFAULT_SIZE)
        self.setMinimumSize(640, 480)  # below this the docks paint over each other

        self.chart = PackingChart(self)
        self.setCentralWidget(self.chart)
        self.side = SidePanel(self)
        self.table = TensorTable(self)
        side_dock = self._add_dock("Summary", self.side, Qt.DockWidgetArea.RightDockWidgetArea, "side_dock")
        table_dock = self._add_dock("Tensors", self.table, Qt.DockWidgetArea.BottomDockWidgetArea, "table_dock")
        self.resizeDocks([table_dock], [230], Qt.Orientation.Vertical)
        self.resizeDocks([side_dock], [420], Qt.Orientation.Horizontal)
        self.whatif = WhatIfPanel(self)
        whatif_dock = self._add_dock("What if", self.whatif, Qt.DockWidgetArea.RightDockWidgetArea,
                                     "whatif_dock")
        self.tabifyDockWidget(side_dock, whatif_dock)
        side_dock.raise_()
        self.whatif.edits_changed.connect(self._on_whatif_edits_changed)
        self.whatif.budget_changed.connect(self.side.set_budget)
        self.whatif.budget_changed.connect(self._update_budget_verdict)

        self.runner = TaskRunner(self)
        self.runner.response_ready.connect(self._on_runner_response_ready)
        self.runner.failed.connect(self._on_runner_failed)
        self.runner.progressed.connect(self._on_runner_progressed)
        self.runner.busy_changed.connect(self._on_runner_busy_changed)
        self.runner.cancelled.connect(self._on_runner_cancelled)
        self._edits_pending: WhatIfEdits | None = None

        self.chart.tensor_selected.connect(self._on_chart_tensor_selected)
        self.chart.tensor_hovered.connect(self._on_chart_tensor_hovered)
        self.chart.operator_clicked.connect(self.side.show_operator)
        self.table.tensor_selected.connect(self._on_table_tensor_selected)
        self.side.tensor_selected.connect(self._on_table_tensor_selected)
        self.side.planner_changed.connect(self._on_side_planner_changed)
        self.side.subgraph_changed.connect(self._on_side_subgraph_changed)
        self.side.min_held_changed.connect(self.chart.set_min_held)
        self.side.color_mode_changed.connect(self.chart.set_color_mode)

        self._build_status_bar()
        self._build_menus()
        self._install_compare_view()
        bar = self.addToolBar("View")
        bar.setObjectName("view_toolbar")
        bar.setMovable(False)
        bar.addAction(self.open_action)
        bar.addSeparator()
        bar.addWidget(self.side.view_bar)
        bar.addSeparator()
        bar.addAction(self.temporaries_action)
        bar.addAction(self.optimize_action)
        bar.addAction(self.reorder_action)
        self._default_state = self.saveState()
        self._restore_layout()
        self._update_actions()

    # --- construction -------------------------------------------------------------------

    def _add_dock(self, title: str, widget: QWidget, area, name: str) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.status_label = QLabel("Open a .tflite model (Ctrl+O) or drop one here.")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(220)
        self.progress.setVisible(False)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self.cancel)
        sb.addWidget(self.status_label, 1)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)

    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        if tip:
            a.setStatusTip(tip)
        a.triggered.connect(slot)
        return a

    def _build_menus(self) -> None:
        mb = self.menuBar()
        m = mb.addMenu("&File")
        self.open_action = self._action("&Open…", lambda: self.open_dialog(), QKeySequence.StandardKey.Open,
                                        "Open a .tflite model")
        self.demo_action = self._action("Open &demo model", self.open_demo)
        self.recent_menu = m.addMenu("Open &recent")
        self.export_image_action = self._action("&Export image…", lambda: self.export_image(), "Ctrl+E",
                                                "Save the chart as PNG or SVG")
        self.export_json_action = self._action("Export &JSON…", lambda: self.export_json(), "Ctrl+Shift+E",
                                               "Save the report (the same object as 'plan --json')")
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        m.addAction(self.open_action)
        m.addAction(self.demo_action)
        m.addMenu(self.recent_menu)
        m.addSeparator()
        m.addAction(self.export_image_action)
        m.addAction(self.export_json_action)
        m.addSeparator()
        m.addAction(self.quit_action)
        self._rebuild_recent_menu()

        m = mb.addMenu("&View")
        self.next_planner_action = self._action("&Next planner", lambda: self.side.step_planner(1), "Ctrl+]")
        self.prev_planner_action = self._action("&Previous planner", lambda: self.side.step_planner(-1), "Ctrl+[")
        self.reset_view_action = self._action("&Reset zoom", self.chart.reset_view, "Ctrl+0")
        self.color_action = self._action("Toggle &colour (kind / op)", self._toggle_color, "Ctrl+K")
        self.find_action = self._action("&Find tensor", self._focus_search, QKeySequence.StandardKey.Find)
        self.escape_action = self._action("Clear selection", self._on_escape, Qt.Key.Key_Escape)
        for a in (self.next_planner_action, self.prev_planner_action, self.reset_view_action,
                  self.color_action, self.find_action, self.escape_action):
            m.addAction(a)
        m.addSeparator()
        self.temporaries_action = QAction("Include kernel temporaries", self)
        self.temporaries_action.setCheckable(True)
        self.temporaries_action.setChecked(True)
        self.temporaries_action.setShortcut(QKeySequence("Ctrl+T"))
        self.temporaries_action.setStatusTip(
            "Chart, bound and plans with the kernel temporaries the runtime measured, or the "
            "model's tensors alone")
        self.temporaries_action.toggled.connect(self._on_temporaries_toggled)
        m.addAction(self.temporaries_action)
        m.addSeparator()
        for dock in self.findChildren(QDockWidget):
            m.addAction(dock.toggleViewAction())
        self.reset_layout_action = self._action("Reset &layout", self.reset_layout,
                                                tip="Docks and window size as on first start")
        m.addAction(self.reset_layout_action)

        m = mb.addMenu("&Analysis")
        self.measure_action = QAction("&Measure with the LiteRT runtime", self)
        self.measure_action.setCheckable(True)
        self.measure_action.setChecked(self._measure)
        self.measure_action.setStatusTip(
            "Run the real interpreter (in a subprocess) for kernel temporaries and the measured arena")
        self.measure_action.toggled.connect(self._on_measure_toggled)
        m.addAction(self.measure_action)
        m.addSeparator()
        self.optimize_action = self._action(
            "Optimize (exact planner)…", self.optimize, "Ctrl+Shift+O",
            "Run the exact planner 'optimal' on the analysis shown: proven optimal, or the gap "
            "to its proven bound")
        self.reorder_action = self._action(
            "Reorder operators to lower the peak…", self.reorder_operators, "Ctrl+Shift+R",
            "Search topological operator orders for the smallest lower bound")
        self.restore_order_action = self._action(
            "Back to the &original order", self.restore_original_order, None,
            "Show the model's own operator order again")
        self.save_reordered_action = self._action(
            "&Save reordered model…", lambda: self.save_reordered(), None,
            "Write a copy of the model with the operators in the new order")
        for a in (self.optimize_action, self.reorder_action, self.restore_order_action,
                  self.save_reordered_action):
            m.addAction(a)

        m = mb.addMenu("&Help")
        m.addAction(self._action("&Keyboard shortcuts", lambda: dialogs.show_shortcuts(self), "F1"))

    # --- opening ------------------------------------------------------------------------

    @property
    def response(self) -> AnalysisResponse | None:
        """What is shown now."""
        return self._resp

    @property
    def planner(self) -> str | None:
        return self._planner

    @property
    def selected_tensor(self) -> int | None:
        return self._selected

    def open_dialog(self) -> None:
        start = os.path.dirname(self._resp.model.path) if self._resp else str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Open model", start, MODEL_FILTER)
        if path:
            self.open_model(path)

    def open_demo(self) -> None:
        self.open_model(str(resource_path(DEMO_MODEL)))

    def open_model(self, path: str, *, model=None, subgraph: int = 0) -> None:
        """Read, analyse and plan ``path`` in the background; show it when done.

        A file that cannot be read opens a dialog with the one-line reason; whatever was
        shown before stays.
        """
        self._submit(AnalysisRequest(str(path), subgraph, model, None, measure=self._measure), "open")

    def _submit(self, request, kind: str, fn=None) -> None:
        self._pending_kind = kind
        self.status_label.setText(f"{_VERBS[kind]} {os.path.basename(request.path)}…")
        self.runner.submit(request, fn)

    def _on_runner_response_ready(self, resp) -> None:
        previous, previous_full = self._resp, self._full
        try:
            if isinstance(resp, OptimizeResponse):
                self._apply_optimal(resp)
            else:
                self._apply_response(resp)
        except Exception as e:  # never a crash: say what failed, keep the window usable
            if os.environ.get("ARENA_VIEWER_DEBUG"):
                raise
            self._resp, self._full = previous, previous_full
            msg = f"{resp.request.path}: cannot show the result: {type(e).__name__}: {e}"
            self.open_failed.emit(msg)
            dialogs.show_error(self, "Cannot show model", msg)

    @property
    def full_response(self) -> AnalysisResponse | None:
        """The response as computed: both views (with and without kernel temporaries)."""
        return self._full

    @property
    def baseline(self) -> AnalysisResponse | None:
        """The unedited subgraph in its stored order (what-ifs and reorders compare with it)."""
        return self._baseline

    def _apply_response(self, resp: AnalysisResponse) -> None:
        new_model = self._full is None or self._full.model is not resp.model
        new_subgraph = new_model or self._full.request.subgraph != resp.request.subgraph
        self._full = resp
        self._edits = resp.request.edits
        if new_model:
            self._selected = None
            self._add_recent(resp.model.path)
        if new_subgraph:
            self.whatif.set_model(resp.model, resp.request.subgraph)
        unedited = resp.request.edits is None or resp.request.edits.is_empty()
        if resp.reorder is None:
            self._before_reorder = None
            if unedited:
                self._baseline = resp
        if self._baseline is not None and (self._baseline.model is not resp.model
                                           or self._baseline.request.subgraph != resp.request.subgraph):
            self._baseline = None
        if resp.reorder is not None:
            self._before_reorder = self._baseline
        self._show_current()
        name = os.path.basename(resp.model.path)
        self.setWindowTitle(f"{name} — {APP_NAME}")
        a = self._resp.analysis
        extra = " (shapes estimated)" if resp.estimated else ""
        stage = ""
        if resp.request.shape_source == "inferred" and not unedited:
            stage = " — estimated; confirming with the runtime…"
        elif resp.reorder is not None:
            stage = f" — reordered: {len(resp.reorder.moved_ops)} operators moved"
        self.status_label.setText(
            f"{name}: {a.num_ops} operators, {len(a.usages)} arena tensors; planned in "
            f"{resp.seconds:.2f} s{extra}{stage}"
            + (f" — {resp.measure_note}" if resp.measure_note and not stage else ""))
        self._update_actions()
        self.view_changed.emit()
        if resp.request.shape_source == "inferred" and not unedited:
            self._confirm_whatif(resp.request.edits)

    def _show_current(self) -> None:
        """Show ``self._full`` with or without kernel temporaries, as the View menu says."""
        full = self._full
        if full is None:
            return
        with_t = self._with_temporaries
        self._resp = full.showing(with_t)
        self.side.set_baseline(self._baseline.showing(with_t) if self._baseline is not None else None)
        self._planner = self.side.set_response(self._resp, self._planner)
        self._show_plan()
        if self._selected is not None and self._resp.analysis.usage(self._selected) is None:
            self._selected = None
        self._apply_selection(self._selected, source=None)
        self.temporaries_action.blockSignals(True)
        self.temporaries_action.setChecked(with_t and full.has_temporaries)
        self.temporaries_action.blockSignals(False)

    def _on_temporaries_toggled(self, on: bool) -> None:
        self._with_temporaries = bool(on)
        if self._full is not None:
            self._show_current()
            a = self._resp.analysis
            which = "with kernel temporaries" if self._resp.temporaries_shown else "tensors only"
            self.status_label.setText(f"Showing {which}: lower bound {a.lower_bound_bytes:,} bytes")
            self.view_changed.emit()

    def set_include_temporaries(self, on: bool) -> None:
        """Show the analysis with (True) or without the runtime's kernel temporaries."""
        self.temporaries_action.setChecked(bool(on))
        if self._with_temporaries != bool(on):
            self._on_temporaries_toggled(bool(on))

    # --- optimize, reorder ----------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the running background work (the view stays as it is)."""
        self.runner.cancel()

    def optimize(self) -> None:
        """Run the exact planner ``optimal`` on the analysis shown, in the background."""
        if self._resp is None:
            return
        limit = float(self.settings.value("optimal_time_limit", OPTIMAL_TIME_LIMIT))
        req = OptimizeRequest(self._resp.request.path, self._resp.analysis,
                              self._resp.request.alignment, limit)
        self._submit(req, "optimize", compute_optimal)

    def _apply_optimal(self, resp: OptimizeResponse) -> None:
        full = self._full
        if full is None:
            return
        for with_t in (True, False):
            view = full.showing(with_t)
            if view.analysis is resp.request.analysis:
                break
        else:  # the view it was run for is gone (another model or what-if)
            self.status_label.setText("Optimize finished for a view no longer shown; ignored.")
            return
        self._full = view.with_plan(OPTIMAL, resp.plan)
        if self._baseline is full:
            self._baseline = self._full
        self._with_temporaries = view.temporaries_shown if full.has_temporaries else self._with_temporaries
        self._planner = OPTIMAL
        self._show_current()
        p = resp.plan
        self.status_label.setText(
            f"Optimal: arena {p.arena_bytes:,} bytes, {optimal_summary(p)} "
            f"({p.stats.get('seconds', 0.0):.1f} s)")
        self._update_actions()
        self.view_changed.emit()

    def reorder_operators(self) -> None:
        """Search an operator order with a smaller lower bound (in the background), then show it."""
        base = self._baseline if self._baseline is not None else self._full
        if base is None:
            return
        limit = float(self.settings.value("reorder_time_limit", REORDER_TIME_LIMIT))
        self._submit(ReorderRequest(base.request.path, base, limit), "reorder", compute_reorder)

    def restore_original_order(self) -> None:
        """Show the model's own operator order again (no recomputation)."""
        if self._before_reorder is None:
            return
        self._apply_response(self._before_reorder)

    def save_reordered(self, path: str | None = None) -> str | None:
        """Write a copy of the model with the reordered operators to ``path``.

        Asks for the file when ``path`` is None, and before replacing an existing file; never
        writes over the open model. Returns the path written, or None.
        """
        from viewer.export.model_copy import write_reordered

        full = self._full
        if full is None or full.reorder is None:
            return None
        src = full.model.path
        if path is None:
            stem = Path(src).stem
            folder = self.settings.value("export_dir", os.path.dirname(os.path.abspath(src)))
            path, _ = QFileDialog.getSaveFileName(
                self, "Save reordered model", str(Path(str(folder)) / f"{stem}_reordered.tflite"),
                MODEL_FILTER, options=QFileDialog.Option.DontConfirmOverwrite)
            if not path:
                return None
        same = os.path.abspath(path) == os.path.abspath(src)
        try:
            same = same or (os.path.exists(path) and os.path.samefile(path, src))
        except OSError:
            pass
        if same:
            dialogs.show_error(self, "Not saved",
                               f"{path}: refusing to overwrite the open model; choose another file")
            return None
        if not dialogs.confirm_overwrite(self, path):
            return None
        try:
            n = write_reordered(src, path, full.request.subgraph, full.reorder.order,
                                force=True)  # confirm_overwrite asked
        except ViewerError as e:
            dialogs.show_error(self, "Not saved", str(e))
            return None
        self.status_label.setText(f"Wrote {path} ({n:,} bytes, operators reordered)")
        return path

    def _on_runner_failed(self, message: str) -> None:
        kind = self._pending_kind
        if kind == "what-if-estimate" and self._edits_pending is not None:
            # Our shape inference could not do it: let the runtime try.
            self._confirm_whatif(self._edits_pending)
            return
        if kind in ("what-if", "what-if-estimate"):
            self._restore_applied_edits()
        shown = " (the previous view stays)" if self._resp is not None else ""
        self.status_label.setText(message + shown)
        self.open_failed.emit(message)
        if kind == "open":  # a recent file that went bad leaves the list
            bad = [p for p in self.recent_files() if message.startswith(p + ":")]
            if bad:
                self.settings.setValue("recent_files", [p for p in self.recent_files() if p not in bad])
                self._rebuild_recent_menu()
        dialogs.show_error(self, _FAIL_TITLES[kind], message)

    def _restore_applied_edits(self) -> None:
        """After a rejected what-if, the panel (and the chart's per-tensor storage what-ifs)
        show the edits that are applied again, or the model's own shapes; nothing is re-planned."""
        applied = self._edits if self._full is not None else None
        self._edits_pending = applied
        self.whatif.show_edits(applied)
        if hasattr(self, "_tensor_dtypes"):
            self._tensor_dtypes = dict(applied.tensor_dtypes) if applied is not None else {}

    def _on_runner_progressed(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(1000 * fraction))
        self.status_label.setText(message)

    def _on_runner_busy_changed(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress.setValue(0)
        else:
            if self._resp is None and self.status_label.text().endswith("…"):
                self.status_label.setText("Cancelled.")
        self._update_actions()

    def _on_runner_cancelled(self) -> None:
        what = {"optimize": "Optimize", "reorder": "Reorder"}.get(self._pending_kind, "Work")
        self.status_label.setText(f"{what} cancelled; the view is unchanged.")
        self.work_cancelled.emit(self._pending_kind)

    # --- view -----------------------------------------------------------------------------

    def _show_plan(self) -> None:
        resp = self._resp
        if resp is None or self._planner not in resp.plans:
            self.chart.clear()
            self.table.set_view(None, None)
            self.whatif.set_verdict("")
            return
        plan = resp.plans[self._planner]
        name = titled_model_name(os.path.basename(resp.model.path), resp.request.edits)
        self.chart.set_view(resp.analysis, plan, model_name=name, subgraph=resp.request.subgraph)
        self.table.set_view(resp.analysis, plan)
        self._update_budget_verdict()

    def _update_budget_verdict(self, *_args) -> None:
        """The budget verdict under the what-if panel's budget inputs: the same report the
        Summary shows (``BudgetSettings.report`` for the shown plan), in one line."""
        resp, name = self._resp, self._planner
        settings = self.whatif.budget()
        if resp is None or name not in resp.plans or settings.limit_bytes is None:
            self.whatif.set_verdict("")
            return
        rep = budget_report(settings, resp, name)
        if rep is None:
            self.whatif.set_verdict("")
        elif rep.fits:
            self.whatif.set_verdict(f"fits, headroom {format_bytes(rep.headroom_bytes)}", True)
        else:
            binding = (f" (binding operator #{rep.binding_op} {rep.binding_op_name})"
                       if rep.binding_op >= 0 else "")
            self.whatif.set_verdict(f"over budget by {format_bytes(-rep.headroom_bytes)}{binding}", False)

    def set_planner(self, name: str) -> None:
        """Show plan ``name`` (a key of the response's plans)."""
        self.side.set_planner(name)

    def _on_side_planner_changed(self, name: str) -> None:
        self._planner = name
        self._show_plan()
        self._apply_selection(self._selected, source=None)
        if self._resp is not None:
            p = self._resp.plans[name]
            self.status_label.setText(f"{plan_label(name)}: arena {p.arena_bytes:,} bytes")

    def _on_side_subgraph_changed(self, index: int) -> None:
        if self._resp is None:
            return
        r = self._full.request
        self._selected = None
        self._submit(AnalysisRequest(r.path, index, self._resp.model, None, measure=self._measure),
                     "subgraph")

    def _on_whatif_edits_changed(self, edits: WhatIfEdits) -> None:
        """Re-plan a what-if: a quick estimate first, then the runtime's confirmation.

        Resized inputs / batch are first planned with our own shape inference
        (``shape_source="inferred"``, milliseconds, marked "estimated"); when that is shown the
        worker re-runs with the runtime (``shape_source="auto"``, measured) and replaces it. A
        newer edit cancels both (the runner keeps one request at a time).
        """
        if self._full is None:
            return
        r = self._full.request
        self._edits_pending = edits
        reshaped = edits is not None and (bool(edits.input_shapes) or edits.batch is not None)
        if reshaped:
            self._submit(AnalysisRequest(r.path, r.subgraph, self._full.model, edits, measure=self._measure,
                                         shape_source="inferred"), "what-if-estimate")
        else:
            self._submit(AnalysisRequest(r.path, r.subgraph, self._full.model, edits, measure=self._measure),
                         "what-if")

    def _confirm_whatif(self, edits: WhatIfEdits) -> None:
        r = self._full.request if self._full is not None else None
        if r is None:
            return
        self._submit(AnalysisRequest(r.path, r.subgraph, self._full.model, edits, measure=self._measure),
                     "what-if")

    def _on_measure_toggled(self, on: bool) -> None:
        self._measure = on
        self.settings.setValue("measure", "true" if on else "false")

    def select_tensor(self, tensor: int | None) -> None:
        """Select ``tensor`` in the chart, the table and the details."""
        self._apply_selection(tensor, source=None)

    def _apply_selection(self, tensor: int | None, source: str | None) -> None:
        self._selected = tensor
        if source != "chart":
            self.chart.select_tensor(tensor)
        if source != "table":
            self.table.select_tensor(tensor)
        self.side.show_tensor(tensor)

    def _on_chart_tensor_selected(self, tensor: int) -> None:
        self._apply_selection(None if tensor < 0 else tensor, source="chart")

    def _on_table_tensor_selected(self, tensor: int) -> None:
        self._apply_selection(tensor, source="table")

    def _on_chart_tensor_hovered(self, tensor: int) -> None:
        if self._resp is None or tensor < 0:
            return
        a = self._resp.analysis
        u = a.usage(tensor)
        if u is not None:
            self.statusBar().showMessage(
                f"{a.tensor_name(tensor)}: {u.nbytes:,} bytes, operators {u.first_op}..{u.last_op}", 4000)

    def _toggle_color(self) -> None:
        c = self.side.color_combo
        c.setCurrentIndex((c.currentIndex() + 1) % c.count())

    def _focus_search(self) -> None:
        self.table.search.setFocus()
        self.table.search.selectAll()

    def _on_escape(self) -> None:
        if self.runner.busy:
            self.runner.cancel()
        else:
            self.select_tensor(None)

    def _update_actions(self) -> None:
        has = self._resp is not None
        self.export_image_action.setEnabled(has)
        self.export_json_action.setEnabled(has)
        self.optimize_action.setEnabled(has)
        self.reorder_action.setEnabled(has)
        reordered = has and self._full.reorder is not None
        self.restore_order_action.setEnabled(reordered and self._before_reorder is not None)
        self.save_reordered_action.setEnabled(reordered and self._full.reorder.changed)
        self.temporaries_action.setEnabled(has and self._full.has_temporaries)

    # --- window layout (QSettings) --------------------------------------------------------

    def _restore_layout(self) -> None:
        geo = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)

    def save_layout(self) -> None:
        """Store window geometry and dock state in the settings (done on close)."""
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()

    def reset_layout(self) -> None:
        """Docks, toolbar and window size as on first start; forgets the stored layout."""
        self.restoreState(self._default_state)
        for dock in self.findChildren(QDockWidget):
            dock.setFloating(False)
            dock.setVisible(True)
        self.findChild(QDockWidget, "side_dock").raise_()
        compare = getattr(self, "compare_dock", None)
        if compare is not None:
            compare.hide()  # opened on request only (View > Compare with baseline)
        if not (self.isMaximized() or self.isFullScreen()):
            self.resize(DEFAULT_SIZE)
        self.settings.remove("window/geometry")
        self.settings.remove("window/state")

    # --- recent files -------------------------------------------------------------------

    def recent_files(self) -> list[str]:
        v = self.settings.value("recent_files", [])
        if isinstance(v, str):
            v = [v]
        return [str(p) for p in (v or [])]

    def _add_recent(self, path: str) -> None:
        path = os.path.abspath(path)
        try:
            if Path(path).resolve() == resource_path(DEMO_MODEL).resolve():
                return  # the demo is always one click away
        except OSError:
            pass
        items = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent_files", items[:MAX_RECENT])
        self.settings.sync()
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for i, p in enumerate(files):
            a = self.recent_menu.addAction(f"&{i + 1} {os.path.basename(p)}")
            a.setToolTip(p)
            a.setData(p)
            a.triggered.connect(lambda _=False, p=p: self.open_model(p))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear list", self._clear_recent)
        self.recent_menu.setEnabled(bool(files))

    def _clear_recent(self) -> None:
        self.settings.setValue("recent_files", [])
        self._rebuild_recent_menu()

    # --- export ---------------------------------------------------------------------------

    def _default_export_name(self, ext: str) -> str:
        resp = self._resp
        stem = Path(resp.model.path).stem if resp else "arena"
        folder = self.settings.value("export_dir", str(Path.home()))
        return str(Path(str(folder)) / f"{stem}_{self._planner or 'plan'}.{ext}")

    def export_image(self, path: str | None = None, width: int | None = None,
                     height: int | None = None) -> str | None:
        """Save the chart as PNG or SVG (format from the extension) of ``width`` x ``height`` px.

        Without arguments, asks for size and file; asks before replacing an existing file.
        Returns the path written, or None when the user cancelled.
        """
        if self._resp is None:
            return None
        if path is None:
            dlg = dialogs.ExportImageDialog(self)
            if dlg.exec() != dlg.DialogCode.Accepted:
                return None
            width, height, fmt = dlg.values()
            path, _ = QFileDialog.getSaveFileName(
                self, "Export image", self._default_export_name(fmt),
                f"{fmt.upper()} image (*.{fmt})",
                options=QFileDialog.Option.DontConfirmOverwrite)
            if not path:
                return None
            if not path.lower().endswith((".png", ".svg")):
                path += f".{fmt}"
        width = int(width or 1600)
        height = int(height or 900)
        if not dialogs.confirm_overwrite(self, path):
            return None
        try:
            self.chart.export(path, width, height)
        except (ViewerError, OSError) as e:
            dialogs.show_error(self, "Export failed", f"{path}: {e}")
            return None
        self.settings.setValue("export_dir", os.path.dirname(os.path.abspath(path)))
        self.status_label.setText(f"Wrote {path} ({width}x{height})")
        return path

    def export_json(self, path: str | None = None) -> str | None:
        """Save the report (the object ``plan --json`` prints) to ``path``.

        Asks for the file when ``path`` is None, and before replacing an existing file.
        Returns the path written, or None when cancelled.
        """
        from viewer.export.report import build_report, write_report

        resp = self._resp
        if resp is None:
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self, "Export JSON report", self._default_export_name("json"),
                "JSON (*.json)", options=QFileDialog.Option.DontConfirmOverwrite)
            if not path:
                return None
        if not dialogs.confirm_overwrite(self, path):
            return None
        notes = tuple(resp.notes) + ((resp.measure_note,) if resp.measure_note else ())
        edits = None
        if resp.request.edits is not None and not resp.request.edits.is_empty():
            e = resp.request.edits
            edits = {"input_shapes": {str(k): list(v) for k, v in e.input_shapes.items()},
                     "batch": e.batch, "activation_dtype": e.activation_dtype,
                     "tensor_dtypes": {str(k): v for k, v in e.tensor_dtypes.items()}}
        report = build_report(resp.model, resp.request.subgraph, resp.analysis, resp.plans,
                              resp.best, notes=notes, edits=edits)
        try:
            write_report(report, path, force=True)  # confirm_overwrite asked
        except ViewerError as e:
            dialogs.show_error(self, "Export failed", str(e))
            return None
        self.settings.setValue("export_dir", os.path.dirname(os.path.abspath(path)))
        self.status_label.setText(f"Wrote {path}")
        return path

    # --- compare view and per-tensor storage what-ifs (chart round 2) -----------------------

    def _install_compare_view(self) -> None:
        """View > Compare with baseline: a dock (hidden at first) with the baseline and the
        shown what-if side by side on one y scale; and the chart's per-tensor storage menu
        (``tensor_dtype_requested``) applied as ``WhatIfEdits.tensor_dtypes``, merged with the
        what-if panel's edits."""
        from viewer.ui.compare import CompareView

        self._tensor_dtypes: dict[int, str] = {}  # from the chart's context menu
        self._tensor_dtypes_key = None  # (model, subgraph) they belong to
        self.compare = CompareView(self)
        self.compare_dock = self._add_dock("Compare with baseline", self.compare,
                                           Qt.DockWidgetArea.BottomDockWidgetArea, "compare_dock")
        self.compare_dock.hide()
        self.compare.setMinimumHeight(380)  # two charts with legends need room to be readable
        self.compare_action = self.compare_dock.toggleViewAction()
        self.compare_action.setText("&Compare with baseline")
        self.compare_action.setStatusTip(
            "The baseline and the what-if side by side, on one y scale, with the delta")
        view_menu = next(a.menu() for a in self.menuBar().actions() if a.menu() and a.text() == "&View")
        view_menu.insertAction(self.temporaries_action, self.compare_action)
        self.compare_dock.visibilityChanged.connect(self._on_compare_dock_visibility_changed)
        self.view_changed.connect(self._update_compare_view)
        self.side.planner_changed.connect(lambda _name: self._update_compare_view())
        self.side.color_mode_changed.connect(self.compare.set_color_mode)
        self.chart.tensor_dtype_requested.connect(self._on_chart_tensor_dtype_requested)
        self.whatif.edits_changed.disconnect(self._on_whatif_edits_changed)
        self.whatif.edits_changed.connect(self._on_whatif_panel_edits_changed)

    def _on_compare_dock_visibility_changed(self, visible: bool) -> None:
        if visible:
            self.resizeDocks([self.compare_dock], [max(420, self.height() // 2)], Qt.Orientation.Vertical)
        self._update_compare_view()

    def _update_compare_view(self) -> None:
        """Feed the compare view from the baseline and the shown response (same planner)."""
        from viewer.export.chart_data import edits_label

        self._sync_tensor_dtypes()
        if not self.compare_dock.isVisible():
            return
        resp, base = self._resp, self._baseline
        if resp is None or base is None:
            self.compare.clear("Open a model: the compare view shows its baseline beside the what-if.")
            return
        # Like with like: kernel temporaries on both sides or on neither (a storage-dtype
        # what-if is planned without the runtime, so it has none).
        with_t = self._with_temporaries and bool(getattr(resp, "temporaries_shown", False))
        note = "" if with_t or not self._with_temporaries or not base.has_temporaries else (
            "both without kernel temporaries (the what-if was not measured)")
        base = base.showing(with_t)
        same = self._planner if self._planner in base.plans and self._planner in resp.plans else None
        left, right = base.plans.get(same or base.best), resp.plans.get(same or resp.best)
        if left is None or right is None:
            self.compare.clear("No plan to compare.")
            return
        name = os.path.basename(resp.model.path)
        what = edits_label(resp.request.edits)
        label = (f"what-if: {what}" if what
                 else ("reordered" if getattr(resp, "reorder", None) is not None else f"shown: {name}"))
        self.compare.set_views((base.analysis, left, f"baseline: {name}"), (resp.analysis, right, label),
                               subgraph=resp.request.subgraph, note=note)

    def _sync_tensor_dtypes(self) -> None:
        """Forget the per-tensor storage what-ifs when another model or subgraph is shown."""
        full = self._full
        key = None if full is None else (id(full.model), full.request.subgraph)
        if key != self._tensor_dtypes_key:
            self._tensor_dtypes_key = key
            self._tensor_dtypes = {}
        current = {} if full is None or full.request.edits is None else full.request.edits.tensor_dtypes
        self.chart.set_tensor_dtypes(current)

    def _merged_edits(self, panel: WhatIfEdits | None) -> WhatIfEdits:
        import dataclasses

        panel = panel if panel is not None else WhatIfEdits()
        if not self._tensor_dtypes:
            return panel
        return dataclasses.replace(panel, tensor_dtypes={**dict(panel.tensor_dtypes), **self._tensor_dtypes})

    def _on_whatif_panel_edits_changed(self, edits: WhatIfEdits) -> None:
        self._sync_tensor_dtypes()
        self._on_whatif_edits_changed(self._merged_edits(edits))

    def _on_chart_tensor_dtype_requested(self, tensor: int, dtype: str) -> None:
        """Store ``tensor`` as ``dtype`` ("" = as in the model) and re-plan."""
        if self._full is None:
            return
        self._sync_tensor_dtypes()
        if dtype:
            self._tensor_dtypes[int(tensor)] = dtype
        else:
            self._tensor_dtypes.pop(int(tensor), None)
        self._on_whatif_edits_changed(self._merged_edits(self.whatif.edits()))

    # --- drag and drop, close -------------------------------------------------------------

    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt override)
        md = event.mimeData()
        if md.hasUrls() and any(_is_model_url(u) for u in md.urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = [u for u in event.mimeData().urls() if _is_model_url(u)]
        if urls:
            event.acceptProposedAction()
            self.open_model(urls[0].toLocalFile())
        else:
            event.ignore()

    def closeEvent(self, event) -> None:  # noqa: N802
        self.save_layout()
        self.runner.shutdown()
        super().closeEvent(event)
