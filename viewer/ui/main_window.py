"""The main window: renders a :class:`~viewer.document.Document` and forwards the user's actions.

The document (Qt-free) holds the state: model, subgraph, edits, responses, planner, selection,
pending work. This window builds the widgets (packing chart or compare view in the centre, side
panel, what-if panel and tensor table in docks), subscribes to the document's callbacks, runs
the work the document asks for in a :class:`~viewer.ui.workers.TaskRunner` and hands the
results back. Menus live in :mod:`viewer.ui.window_actions`, files in :mod:`viewer.ui.file_actions`.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QByteArray, QEvent, QSettings, QSignalBlocker, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMainWindow, QStackedWidget, QWidget

from viewer.document import Document
from viewer.document.state import OPTIMAL_TIME_LIMIT, REORDER_TIME_LIMIT
from viewer.document import views
from viewer.document.work import AnalysisResponse, plan_label
from viewer.document.runtime_plan import whatif_note
from viewer.export.chart_data import temporaries_title, titled_model_name
from viewer.resources import DEMO_MODEL, resource_path
from viewer.ui import dialogs, dock_layout, file_actions, widgets, window_actions
from viewer.ui.chart import PackingChart
from viewer.ui.compare import CompareView
from viewer.ui.side_panel import SidePanel
from viewer.ui.summary_text import budget_verdict
from viewer.ui.tensor_table import TensorTable
from viewer.ui.tiling_panel import TilingController
from viewer.ui.widgets import VerticalScrollArea
from viewer.ui.whatif_panel import WhatIfPanel
from viewer.ui.workers import TaskRunner

APP_NAME = "Arena Viewer"
DEFAULT_SIZE = QSize(1400, 860)
_FAIL_TITLES = {"open": "Cannot open model", "subgraph": "Cannot analyse subgraph",
                "what-if": "What-if not applied", "what-if-estimate": "What-if not applied",
                "optimize": "Optimize failed", "reorder": "Reorder failed", "show": "Cannot show model"}


def _is_model_url(url) -> bool:
    return url.isLocalFile() and url.toLocalFile().lower().endswith(".tflite")


def _signature_suffix(resp) -> str:
    """" (signature KEY)" when the model has several signatures and the shown subgraph runs
    one: the chart's title then says which ("subgraph 1" alone does not); "" otherwise."""
    sigs = getattr(resp.model, "signatures", ()) or ()
    keys = [s.key for s in sigs if s.subgraph_index == resp.request.subgraph]
    return f" (signature {', '.join(keys)})" if len(sigs) > 1 and keys else ""


def _temporaries_suffix(resp) -> str:
    """What the chart's title says on kernel temporaries, in ``export``'s words (newuser3 #18):
    " — kernel temporaries included (measured)" (or "(estimated)"), " — tensors only, kernel
    temporaries NOT included" when they are left out (Ctrl+T off, measuring off), "… NOT
    included (the runtime could not measure them)" when the runtime failed. "" under TFLM
    (its title names its own scratch)."""
    if resp.request.runtime != "litert":
        return ""
    if resp.temporaries_shown:
        return temporaries_title(True, estimated=resp.temporaries_estimated)
    probe_ok = resp.probe is not None and bool(getattr(resp.probe, "ok", False))
    if probe_ok and not resp.has_temporaries:  # measured: the runtime has none to add
        return temporaries_title(True)
    confirming = resp.request.shape_source == "inferred"  # the runtime runs next: not a failure
    failed = resp.request.measure and not probe_ok and not resp.has_temporaries and not confirming
    return temporaries_title(False, measured=not failed)


def _placeholder_suffix(resp) -> str:
    """" (dynamic input: drawn at its placeholder shape 1x1x1x3; set it in What if)" while a
    graph input has a dynamic dimension past the batch that no edit sets: the arena drawn is
    the placeholder's (check says "cannot tell" until ``--input-shape`` is given)."""
    from viewer.whatif.footprint import unresolved_dynamic_inputs

    try:
        open_dims = unresolved_dynamic_inputs(resp.model, resp.request.subgraph, resp.request.edits)
    except Exception:  # a title is never worth a failed view
        return ""
    if not open_dims:
        return ""
    sg = resp.analysis.subgraph
    shapes = ", ".join("x".join(str(d) for d in sg.tensors[t].shape) for t in sg.inputs
                       if t >= 0 and any(d == -1 for d in (sg.tensors[t].shape_signature or ())[1:]))
    return f" (dynamic input: drawn at its placeholder shape {shapes}; set it in What if)"


class MainWindow(QMainWindow):
    """Arena Viewer's window.

    Parameters
    ----------
    settings : QSettings, optional
        Where recent files and options live (tests pass a temporary INI file).
    measure : bool, optional
        Run the real LiteRT runtime for each opened model (default: the saved setting, on).
    """

    #: Emitted after the document's view is drawn (tests wait on it).
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
        widgets.install_clipboard_cleaner()  # copied flags lose the labels' invisible word joiners
        self.settings = settings if settings is not None else QSettings("ArenaViewer", "arena-viewer")
        if measure is None:
            measure = str(self.settings.value("measure", "true")).lower() == "true"
        self.document = Document(measure=bool(measure))
        self.setWindowTitle(APP_NAME)
        self._title, self._title_pending, self._chart_painted = APP_NAME, False, True  # _retitle
        self.setAcceptDrops(True)
        self.resize(DEFAULT_SIZE)
        self.setMinimumSize(640, 480)  # below this the docks paint over each other
        self._build_widgets()
        self.chart.view.viewport().installEventFilter(self)  # its paints: see _retitle
        window_actions.build_status_bar(self)
        window_actions.build_menus(self)
        window_actions.build_toolbar(self)
        self.recent = file_actions.RecentFiles(self.settings, self.recent_menu, self.open_model)
        self.runner = TaskRunner(self)
        self._connect()
        self._default_state = self.saveState()
        self._restore_layout()
        window_actions.update_actions(self)

    # --- construction -------------------------------------------------------------------

    def _build_widgets(self) -> None:
        self.chart = PackingChart(self)
        self.compare = CompareView(self)
        self.centre = QStackedWidget(self)
        self.centre.addWidget(self.chart)
        self.centre.addWidget(self.compare)
        self.setCentralWidget(self.centre)
        self.side = SidePanel(self)
        self.table = TensorTable(self)
        self.whatif = WhatIfPanel(self)
        self.tiling = TilingController(self)  # its section goes into the What if panel
        right = Qt.DockWidgetArea.RightDockWidgetArea
        side_dock = self._add_dock("Summary", self.side, right, "side_dock")
        table_dock = self._add_dock("Tensors", self.table, Qt.DockWidgetArea.BottomDockWidgetArea, "table_dock")
        # The panel (with its Tiling section) is taller than a dock: it scrolls.
        self.whatif_scroll = VerticalScrollArea(self.whatif, self)
        whatif_dock = self._add_dock("What if", self.whatif_scroll, right, "whatif_dock")
        self.resizeDocks([table_dock], [230], Qt.Orientation.Vertical)
        self.resizeDocks([side_dock], [420], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(side_dock, whatif_dock)
        side_dock.raise_()

    def _add_dock(self, title: str, widget: QWidget, area, name: str) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _connect(self) -> None:
        doc = self.document
        for name, slot in (("work_requested", self._on_document_work_requested),
                           ("model_changed", self._on_document_model_changed),
                           ("shown", self._on_document_shown),
                           ("planner_changed", self._on_document_planner_changed),
                           ("selection_changed", self._on_document_selection_changed),
                           ("edits_restored", self.whatif.show_edits),
                           ("status", self.status_label.setText),
                           ("failed", self._on_document_failed),
                           ("other_changed", self._on_document_other_changed),
                           ("runtime_changed", self._on_document_runtime_changed),
                           ("cancelled", self.work_cancelled.emit)):
            doc.events.connect(name, slot)
        r = self.runner
        r.response_ready.connect(doc.receive)
        r.failed.connect(doc.fail)
        r.cancelled.connect(doc.cancelled)
        r.progressed.connect(self._on_runner_progressed)
        r.busy_changed.connect(self._on_runner_busy_changed)
        self.whatif.edits_changed.connect(doc.set_panel_edits)
        self.whatif.reset_requested.connect(doc.reset_edits)
        self.whatif.budget_changed.connect(self.side.set_budget)
        self.whatif.budget_changed.connect(self._update_budget_verdict)
        self.chart.tensor_selected.connect(doc.select)
        self.chart.tensor_dtype_requested.connect(doc.set_tensor_dtype)
        self.chart.operator_clicked.connect(self._on_chart_operator_clicked)
        for side, chart in (("left", self.compare.left), ("right", self.compare.right)):  # as the main chart
            chart.tensor_selected.connect(lambda t, s=side: self._from_compare(s, doc.select, t))
            chart.tensor_dtype_requested.connect(
                lambda t, d, s=side: self._from_compare(s, doc.set_tensor_dtype, t, d))
            chart.operator_clicked.connect(lambda op, s=side: self._from_compare(s, self.side.show_operator, op))
        self.table.tensor_selected.connect(doc.select)
        self.side.tensor_selected.connect(doc.select)
        self.side.planner_changed.connect(doc.set_planner)
        self.side.subgraph_changed.connect(doc.select_subgraph)
        self.side.min_held_changed.connect(self.chart.set_min_held)
        self.side.color_mode_changed.connect(self.chart.set_color_mode)
        self.side.color_mode_changed.connect(self.compare.set_color_mode)

    # --- the document's state (read-only views for callers and tests) ----------------------

    @property
    def response(self) -> AnalysisResponse | None:
        """What is shown now."""
        return self.document.response

    @property
    def full_response(self) -> AnalysisResponse | None:
        """The response as computed: both views (with and without kernel temporaries)."""
        return self.document.full_response

    @property
    def baseline(self) -> AnalysisResponse | None:
        """The unedited subgraph in its stored order (what-ifs and reorders compare with it)."""
        return self.document.baseline

    @property
    def planner(self) -> str | None:
        return self.document.planner

    @property
    def selected_tensor(self) -> int | None:
        return self.document.selected

    # --- user actions, forwarded to the document -------------------------------------------

    def open_dialog(self) -> None:
        resp = self.document.response
        start = file_actions.open_dialog_folder(resp.model.path if resp else None, self.settings)
        path, _ = QFileDialog.getOpenFileName(self, "Open model", start, file_actions.MODEL_FILTER)
        if path:
            self.open_model(path)

    def compare_with_dialog(self) -> None:
        """File > Compare with another model…: the compare view shows it beside this one."""
        resp = self.document.response
        start = file_actions.open_dialog_folder(resp.model.path if resp else None, self.settings)
        path, _ = QFileDialog.getOpenFileName(self, "Compare with model", start,
                                              file_actions.MODEL_FILTER)
        if path:
            self.compare_with_model(path)

    def compare_with_model(self, path: str) -> None:
        """Open ``path`` as the second model of the compare view (in the background)."""
        self.document.open_other(path)

    def open_demo(self) -> None:
        self.open_model(str(resource_path(DEMO_MODEL)))

    def open_model(self, path: str, *, model=None, subgraph: int = 0) -> None:
        """Read, analyse and plan ``path`` in the background; show it when done.

        A file that cannot be read opens a dialog with the one-line reason; whatever was
        shown before stays.
        """
        self.document.open(path, model=model, subgraph=subgraph)

    def select_tensor(self, tensor: int | None) -> None:
        """Select ``tensor`` in the chart, the table and the details."""
        self.document.select(tensor)

    def set_planner(self, name: str) -> None:
        """Show plan ``name`` (a key of the response's plans)."""
        self.document.set_planner(name)

    def set_include_temporaries(self, on: bool) -> None:
        """Show the analysis with (True) or without the runtime's kernel temporaries."""
        self.document.set_with_temporaries(on)

    def set_measure(self, on: bool) -> None:
        """Analysis > Measure with the LiteRT runtime: the open model is re-analysed at once."""
        self.document.set_measure(on)
        self.settings.setValue("measure", "true" if on else "false")

    def cancel(self) -> None:
        """Stop the running background work (the view stays as it is)."""
        self.runner.cancel()

    def optimize(self) -> None:
        """Run the exact planner ``optimal`` on the analysis shown, in the background."""
        self.document.optimize(float(self.settings.value("optimal_time_limit", OPTIMAL_TIME_LIMIT)))

    def reorder_operators(self) -> None:
        """Search an operator order with a smaller lower bound (in the background), then show it."""
        self.document.reorder(float(self.settings.value("reorder_time_limit", REORDER_TIME_LIMIT)))

    def restore_original_order(self) -> None:
        """Show the model's own operator order again (no recomputation)."""
        self.document.restore_original_order()

    def export_image(self, path: str | None = None, width: int | None = None,
                     height: int | None = None) -> str | None:
        """Save the chart as PNG or SVG; see :func:`viewer.ui.file_actions.export_image`."""
        return file_actions.export_image(self, path, width, height)

    def export_json(self, path: str | None = None) -> str | None:
        """Save the JSON report; see :func:`viewer.ui.file_actions.export_json`."""
        return file_actions.export_json(self, path)

    def save_reordered(self, path: str | None = None) -> str | None:
        """Write the reordered model; see :func:`viewer.ui.file_actions.save_reordered`."""
        return file_actions.save_reordered(self, path)

    def recent_files(self) -> list[str]:
        return self.recent.files()

    def set_compare_visible(self, on: bool) -> None:
        """Show the compare view (baseline beside the what-if) in place of the chart; shown
        while another model is compared, it goes back to the baseline."""
        with QSignalBlocker(self.compare_action):
            self.compare_action.setChecked(bool(on))
        if on and self.document.other is not None:
            self.document.close_other()  # "Compare with baseline": the baseline, not the other
        self.centre.setCurrentWidget(self.compare if on else self.chart)
        self._update_compare_view()

    def toggle_color(self) -> None:
        c = self.side.color_combo
        c.setCurrentIndex((c.currentIndex() + 1) % c.count())

    def focus_search(self) -> None:
        self.table.search.setFocus()
        self.table.search.selectAll()

    def escape(self) -> None:
        if self.runner.busy:
            self.runner.cancel()
        else:
            self.document.select(None)

    # --- rendering the document --------------------------------------------------------------

    def _on_document_work_requested(self, request, fn, _kind: str) -> None:
        self.runner.submit(request, fn)

    def _on_document_model_changed(self, resp: AnalysisResponse) -> None:
        """A new model (or subgraph): its what-ifs start afresh, as the edit controls do; the
        search filter and a comparison with another model end (they were about the old one)."""
        self.whatif.set_model(resp.model, resp.request.subgraph)
        self.recent.add(resp.model.path)
        self.table.search.clear()
        if self.document.other is not None:
            self.document.close_other()
            self.set_compare_visible(False)

    def _on_document_shown(self) -> None:
        doc = self.document
        resp = doc.response
        base = doc.baseline
        self.side.set_baseline(base.showing(doc.with_temporaries) if base is not None else None)
        self.whatif.set_runtime(resp.request.runtime)  # weights counted as check counts them
        self.side.set_response(resp, doc.planner)
        self._show_plan()
        self._on_document_selection_changed(doc.selected)
        self.chart.set_tensor_dtypes(doc.edits.tensor_dtypes if doc.edits is not None else {})
        window_actions.update_actions(self)
        window_actions.update_subgraph_menu(self)
        self._update_compare_view()
        self._retitle(f"{os.path.basename(resp.model.path)} — {APP_NAME}")
        self.view_changed.emit()

    def _retitle(self, title: str) -> None:
        """Name the shown model in the title bar once its content is on screen.

        The window manager draws a new title at once, while our widgets paint later, when the
        platform's update request comes (a few ms on an idle machine, seconds on a loaded one:
        the title named the new model over the old one's chart, newuser F-c). So the title
        waits for an update request that has painted the chart too (its scene tells the view
        one event later than the panels change: :meth:`eventFilter`); a hidden window has
        nothing to paint and takes it at once.
        """
        self._title = title
        if title == self.windowTitle():
            return
        if not self.isVisible() or self.isMinimized():
            self.setWindowTitle(title)
            return
        self._title_pending, self._chart_painted = True, not self.chart.isVisible()
        self.update()  # an update request comes even if nothing else changed

    def event(self, event) -> bool:  # noqa: D102 (Qt override)
        done = super().event(event)
        if event.type() == QEvent.Type.UpdateRequest and self._title_pending:
            if self._chart_painted:  # chart and panels painted and flushed: the title follows
                self._title_pending = False
                self.setWindowTitle(self._title)
            else:
                self.update()  # the chart's repaint is on its way: the next request
        return done

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.Paint and watched is self.chart.view.viewport():
            self._chart_painted = True
        return super().eventFilter(watched, event)

    def _on_document_other_changed(self, other) -> None:
        """A second model opened (the compare view shows it) or closed (back to the baseline)."""
        window_actions.update_actions(self)
        if other is not None:  # the compare view, showing the other model, not the baseline
            with QSignalBlocker(self.compare_action):
                self.compare_action.setChecked(False)
        else:  # stopped comparing with it: the baseline beside the shown model
            with QSignalBlocker(self.compare_action):
                self.compare_action.setChecked(True)
        self.centre.setCurrentWidget(self.compare)
        self._update_compare_view()

    def _on_document_planner_changed(self, name: str) -> None:
        self.side.set_planner(name, emit=False)
        self._show_plan()
        self._on_document_selection_changed(self.document.selected)
        self._update_compare_view()
        p = self.document.response.plans[name]
        self.status_label.setText(f"{plan_label(name)}: arena {p.arena_bytes:,} bytes")

    def _from_compare(self, side: str, fn, *args) -> None:
        """A click or menu action in the compare view acts on the shown model: from either
        chart beside the baseline (the same tensors), from the left one only beside another
        model (the right one's tensors are not this document's)."""
        if self.document.other is not None and side == "right":
            self.status_label.setText("The other model's chart is for looking: select and edit "
                                      "tensors of the shown model (left).")
            return
        fn(*args)

    def _on_chart_operator_clicked(self, op: int) -> None:
        """The operator's profile, brought into view: the Summary in front, scrolled to it."""
        self.side.show_operator(op)
        self.findChild(QDockWidget, "side_dock").raise_()
        QTimer.singleShot(0, self._scroll_to_profile)  # once the table's new rows are laid out
        self._scroll_to_profile()

    def _scroll_to_profile(self) -> None:
        self.side.ensureWidgetVisible(self.side.profile_table, 0, 0)
        self.side.ensureWidgetVisible(self.side.profile_box, 0, 0)

    def _on_document_selection_changed(self, tensor: int | None) -> None:
        self.chart.select_tensor(tensor)
        for side, chart in (("left", self.compare.left), ("right", self.compare.right)):
            if self.document.other is None or side == "left":
                chart.select_tensor(tensor)
        self.table.select_tensor(tensor)
        self.side.show_tensor(tensor)

    def _show_plan(self) -> None:
        resp, planner = self.document.response, self.document.planner
        if resp is None or planner not in resp.plans:
            self.chart.clear()
            self.table.set_view(None, None)
            self.whatif.set_verdict("")
            return
        plan = resp.plans[planner]
        name = titled_model_name(os.path.basename(resp.model.path) + _signature_suffix(resp),
                                 resp.request.edits) + _placeholder_suffix(resp)
        name += _temporaries_suffix(resp)
        tiled = self.tiling.view
        if tiled is not None:  # the tiling what-if: one patch, the cut buffers, then the tail
            g = tiled.plan.grid
            name = f"{os.path.basename(resp.model.path)} tiled {g[0]}x{g[1]} after #{tiled.plan.split}"
            self.chart.set_view(tiled.analysis, tiled.drawn, model_name=name, subgraph=resp.request.subgraph)
            self.table.set_view(tiled.analysis, tiled.drawn, fit_key=(resp.model.path, "tiled"))
            self._update_budget_verdict()
            return
        self.side.set_tiled_arena(None)
        self.chart.set_view(resp.analysis, plan, model_name=name, subgraph=resp.request.subgraph,
                            note=whatif_note(resp.request.runtime, planner))
        self.table.set_view(resp.analysis, plan, self.document.temporary_shapes(),
                            fit_key=(resp.model.path, resp.request.subgraph))
        self._update_budget_verdict()

    def _update_compare_view(self) -> None:
        """Feed the compare view from the document (baseline and shown response, one planner)."""
        if not self.compare.isVisibleTo(self):
            return
        sides = self.document.compare_sides()
        tiled = self.tiling.view
        if tiled is not None and not isinstance(sides, str):  # untiled baseline beside the tiled run
            g = tiled.plan.grid
            sides = (sides[0], (tiled.analysis, tiled.drawn, f"tiled {g[0]}x{g[1]} after #{tiled.plan.split}"), "")
        if isinstance(sides, str):
            self.compare.clear(sides)
        else:
            left, right, note = sides
            outside = views.compare_outside(self.document) if tiled is None else None
            self.compare.set_views(left, right, subgraph=self.document.subgraph, note=note,
                                   outside=outside)

    def _update_budget_verdict(self, *_args) -> None:
        """The budget verdict under the what-if panel's budget inputs: the same report the
        Summary shows (``BudgetSettings.report`` for the shown plan), in one line."""
        resp, name = self.document.response, self.document.planner
        settings = self.whatif.budget()
        if resp is None or name not in resp.plans or settings.limit_bytes is None:
            self.whatif.set_verdict("")
            return
        tiled = self.tiling.counted_arena()
        self.side.set_tiled_arena(tiled)  # the Summary's budget box counts the same
        text, fits, _ = budget_verdict(settings, resp, name, tiled)
        self.whatif.set_verdict(text, fits)

    def _on_document_runtime_changed(self, runtime: str) -> None:
        """The selector shows the runtime of the view (after a failed switch)."""
        combo = self.runtime_combo
        combo.blockSignals(True)
        combo.setCurrentIndex(max(combo.findData(runtime), 0))
        combo.blockSignals(False)
        window_actions.update_actions(self)

    def _on_document_failed(self, kind: str, message: str) -> None:
        self.open_failed.emit(message)
        if kind == "open":  # a recent file that went bad leaves the list
            self.recent.drop_failed(message)
        dialogs.show_error(self, _FAIL_TITLES.get(kind, "Failed"), message)

    def _on_runner_progressed(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(1000 * fraction))
        self.status_label.setText(message)

    def _on_runner_busy_changed(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress.setValue(0)
        elif self.document.response is None and self.status_label.text().endswith("…"):
            self.status_label.setText("Cancelled.")
        window_actions.update_actions(self)

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
        self.set_compare_visible(False)  # opened on request only (View > Compare with baseline)
        if not (self.isMaximized() or self.isFullScreen()):
            self.resize(DEFAULT_SIZE)
        self.settings.remove("window/geometry")
        self.settings.remove("window/state")

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

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        QTimer.singleShot(0, lambda: dock_layout.balance_docks(self))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().resizeEvent(event)
        QTimer.singleShot(0, lambda: dock_layout.balance_docks(self))

    def closeEvent(self, event) -> None:  # noqa: N802
        self.save_layout()
        self.runner.shutdown()
        self.tiling.shutdown()
        super().closeEvent(event)
