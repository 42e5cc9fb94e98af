"""The main window's menus, toolbar and status bar: actions wired to the window's methods.

Built once by :class:`~viewer.ui.main_window.MainWindow`; each action sets an attribute of the
window (``open_action``, ``temporaries_action``, ...) that the window and the tests use.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QComboBox, QDockWidget, QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from viewer.ui import dialogs, file_actions


def _action(w, text: str, slot, shortcut=None, tip: str = "", checkable: bool = False) -> QAction:
    a = QAction(text, w)
    if shortcut is not None:
        a.setShortcut(QKeySequence(shortcut))
    if tip:
        a.setStatusTip(tip)
    if checkable:
        a.setCheckable(True)
        a.toggled.connect(slot)
    else:
        a.triggered.connect(slot)
    return a


class ProgressWithText(QWidget):
    """A progress bar with its percentage in a label beside it, not painted over the fill.

    Styles such as Fusion centre the text on the bar, where the fill's edge cuts through it
    ("5|9%"). Offers the ``QProgressBar`` calls the window makes: ``setRange``, ``setValue``,
    ``value``, ``maximum`` and ``text`` (the label's, e.g. ``"59%"``).
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.label = QLabel("0%")
        self.label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance("100%") + 2)
        lay.addWidget(self.label)
        lay.addWidget(self.bar, 1)
        self.bar.valueChanged.connect(self._on_bar_value_changed)

    def setRange(self, lo: int, hi: int) -> None:  # noqa: N802 (Qt's name)
        self.bar.setRange(lo, hi)

    def setValue(self, v: int) -> None:  # noqa: N802
        self.bar.setValue(v)
        self._on_bar_value_changed(self.bar.value())

    def value(self) -> int:
        return self.bar.value()

    def maximum(self) -> int:
        return self.bar.maximum()

    def text(self) -> str:
        return self.label.text()

    def _on_bar_value_changed(self, v: int) -> None:
        lo, hi = self.bar.minimum(), self.bar.maximum()
        pct = 0 if hi <= lo else int(100 * (max(v, lo) - lo) / (hi - lo))
        self.label.setText(f"{pct}%")


def build_status_bar(w) -> None:
    """Status line (elided; its tooltip holds the whole text), progress bar and Cancel."""
    from viewer.ui.widgets import ElidedLabel

    sb = w.statusBar()
    w.status_label = ElidedLabel("Open a .tflite model (Ctrl+O) or drop one here.")
    w.progress = ProgressWithText()
    w.progress.setRange(0, 1000)
    w.progress.setMaximumWidth(260)
    w.progress.setVisible(False)
    w.cancel_button = QToolButton()
    w.cancel_button.setText("Cancel")
    w.cancel_button.setVisible(False)
    w.cancel_button.clicked.connect(w.cancel)
    sb.addWidget(w.status_label, 1)
    sb.addPermanentWidget(w.progress)
    sb.addPermanentWidget(w.cancel_button)


def build_menus(w) -> None:
    """File, View, Analysis and Help menus."""
    mb = w.menuBar()
    m = mb.addMenu("&File")
    w.open_action = _action(w, "&Open…", lambda: w.open_dialog(), QKeySequence.StandardKey.Open,
                            "Open a .tflite model")
    w.demo_action = _action(w, "Open &demo model", w.open_demo)
    w.recent_menu = m.addMenu("Open &recent")
    w.compare_model_action = _action(w, "Compare with another &model…", w.compare_with_dialog,
                                     "Ctrl+Shift+M", "Show a second model beside this one, on one y scale")
    w.close_compare_model_action = _action(w, "Stop comparing with the other model",
                                           lambda: w.document.close_other())
    w.export_image_action = _action(w, "&Export image…", lambda: w.export_image(), "Ctrl+E",
                                    "Save the chart as PNG or SVG")
    w.export_json_action = _action(w, "Export &JSON…", lambda: w.export_json(), "Ctrl+Shift+E",
                                   "Save the report (the same object as 'plan --json')")
    w.quit_action = _action(w, "&Quit", w.close, QKeySequence.StandardKey.Quit)
    for a in (w.open_action, w.demo_action, w.recent_menu.menuAction(), None,
              w.compare_model_action, w.close_compare_model_action, None, w.export_image_action,
              w.export_json_action, None, w.quit_action):
        m.addSeparator() if a is None else m.addAction(a)

    m = w.view_menu = mb.addMenu("&View")
    w.next_planner_action = _action(w, "&Next planner", lambda: w.side.step_planner(1), "Ctrl+]")
    w.prev_planner_action = _action(w, "&Previous planner", lambda: w.side.step_planner(-1), "Ctrl+[")
    w.reset_view_action = _action(w, "&Reset zoom", w.chart.reset_view, "Ctrl+0")
    w.color_action = _action(w, "Toggle &colour (kind / op)", w.toggle_color, "Ctrl+K")
    w.find_action = _action(w, "&Find tensor", w.focus_search, QKeySequence.StandardKey.Find)
    w.escape_action = _action(w, "Clear selection", w.escape, Qt.Key.Key_Escape)
    for a in (w.next_planner_action, w.prev_planner_action, w.reset_view_action,
              w.color_action, w.find_action, w.escape_action):
        m.addAction(a)
    m.addSeparator()
    w.compare_action = _action(
        w, "&Compare with baseline", w.set_compare_visible, "Ctrl+B",
        "The baseline and the what-if side by side, on one y scale, with the delta", checkable=True)
    m.addAction(w.compare_action)
    w.temporaries_action = _action(
        w, "Include kernel temporaries", w.document.set_with_temporaries, "Ctrl+T",
        "Chart, bound and plans with the kernel temporaries the runtime measured, or the "
        "model's tensors alone", checkable=True)
    w.temporaries_action.setChecked(True)
    m.addAction(w.temporaries_action)
    w.subgraph_menu = m.addMenu("&Subgraph / signature")
    w.subgraph_menu.setToolTipsVisible(True)
    w.subgraph_menu.setEnabled(False)
    m.addSeparator()
    for dock in w.findChildren(QDockWidget):
        m.addAction(dock.toggleViewAction())
    w.reset_layout_action = _action(w, "Reset &layout", w.reset_layout,
                                    tip="Docks and window size as on first start")
    m.addAction(w.reset_layout_action)

    m = mb.addMenu("&Analysis")
    w.measure_action = _action(
        w, "&Measure with the LiteRT runtime", w.set_measure, None,
        "Run the real interpreter (in a subprocess) for kernel temporaries and the measured arena",
        checkable=True)
    w.measure_action.blockSignals(True)
    w.measure_action.setChecked(w.document.measure)
    w.measure_action.blockSignals(False)
    m.addAction(w.measure_action)
    m.addSeparator()
    w.optimize_action = _action(
        w, "Optimize (exact planner)…", w.optimize, "Ctrl+Shift+O",
        "Run the exact planner 'optimal' on the analysis shown: proven optimal, or the gap "
        "to its proven bound")
    w.reorder_action = _action(
        w, "Reorder operators to lower the peak…", w.reorder_operators, "Ctrl+Shift+R",
        "Search topological operator orders for the smallest lower bound")
    w.restore_order_action = _action(
        w, "Back to the &original order", w.restore_original_order, None,
        "Show the model's own operator order again")
    w.save_reordered_action = _action(
        w, "&Save reordered model…", lambda: w.save_reordered(), None,
        "Write a copy of the model with the operators in the new order")
    w.save_offline_plan_action = _action(
        w, "Save with this plan (TFLite Micro)…", lambda: file_actions.save_offline_plan(w), None,
        "Write a copy of the model whose OfflineMemoryAllocation entry holds the shown plan's "
        "offsets, so TFLite Micro's planner uses it (runtime target TFLite Micro)")
    for a in (w.optimize_action, w.reorder_action, w.restore_order_action, w.save_reordered_action,
              w.save_offline_plan_action):
        m.addAction(a)
    m.addSeparator()
    w.session_action = _action(
        w, "Dynamic-shape &session…", lambda: _open_session(w), None,
        "Run a sequence of input shapes in one LiteRT interpreter: the arena each step needs, "
        "the arena held (LiteRT never shrinks it), growth and the high-water mark")
    m.addAction(w.session_action)
    w.delegate_action = _action(
        w, "Memory under a &delegate…", lambda: _open_delegate(w), None,
        "Measure the model under XNNPACK or a delegate library (GPU/NPU): LiteRT's CPU arena "
        "beside it, the delegate's own memory (packed weights, workspace) and the runtime overhead")
    m.addAction(w.delegate_action)

    m = mb.addMenu("&Help")
    m.addAction(_action(w, "&Keyboard shortcuts", lambda: dialogs.show_shortcuts(w), "F1"))


def _open_delegate(w) -> None:
    from viewer.ui.delegate_dialog import open_delegate_dialog

    open_delegate_dialog(w)


def _open_session(w) -> None:
    from viewer.ui.session_dialog import open_session_dialog

    open_session_dialog(w)


def build_toolbar(w) -> None:
    bar = w.addToolBar("View")
    bar.setObjectName("view_toolbar")
    bar.setMovable(False)
    bar.addAction(w.open_action)
    bar.addSeparator()
    bar.addWidget(w.side.view_bar)
    bar.addSeparator()
    bar.addAction(w.temporaries_action)
    bar.addAction(w.compare_action)
    bar.addAction(w.optimize_action)
    bar.addAction(w.reorder_action)
    bar.addSeparator()
    bar.addWidget(_runtime_combo(w))


def _runtime_combo(w) -> QComboBox:
    """Runtime target: LiteRT or TensorFlow Lite Micro (its rules, planners and tail)."""
    combo = QComboBox()
    combo.setObjectName("runtime_combo")
    combo.addItem("LiteRT", "litert")
    combo.addItem("TFLite Micro", "tflm")
    combo.setToolTip("Runtime target: LiteRT's arena, or TensorFlow Lite Micro's (graph inputs "
                     "freed after last use, 16-byte sizes, its greedy planner, persistent tail)")
    combo.setCurrentIndex(max(combo.findData(w.document.runtime), 0))
    combo.currentIndexChanged.connect(lambda i: w.document.set_runtime(combo.itemData(i)))
    w.runtime_combo = combo
    return combo


def update_actions(w) -> None:
    """Enable what the document allows now."""
    doc = w.document
    has = doc.response is not None
    for a in (w.export_image_action, w.export_json_action, w.optimize_action, w.reorder_action,
              w.compare_model_action):
        a.setEnabled(has)
    w.close_compare_model_action.setEnabled(doc.other is not None)
    full = doc.full_response
    w.restore_order_action.setEnabled(doc.is_reordered and doc.before_reorder is not None)
    w.save_reordered_action.setEnabled(doc.is_reordered and full.reorder.changed)
    w.save_offline_plan_action.setEnabled(has and doc.runtime == "tflm")
    w.temporaries_action.setEnabled(doc.has_temporaries)
    w.temporaries_action.blockSignals(True)
    w.temporaries_action.setChecked(doc.with_temporaries and doc.has_temporaries)
    w.temporaries_action.blockSignals(False)


def update_subgraph_menu(w) -> None:
    """View > Subgraph / signature: one entry per subgraph of the open model, named as the
    Summary's selector names it (signature keys included), the shown one checked; enabled
    when there is more than one. Choosing an entry analyses that subgraph."""
    from PySide6.QtGui import QActionGroup

    menu, combo = w.subgraph_menu, w.side.subgraph_combo
    menu.clear()
    group = QActionGroup(menu)
    group.setExclusive(True)
    resp = w.document.response
    shown = resp.request.subgraph if resp is not None else -1
    for i in range(combo.count()):
        index = int(combo.itemData(i))
        a = menu.addAction(combo.itemText(i))
        a.setCheckable(True)
        a.setChecked(index == shown)
        a.setActionGroup(group)
        a.triggered.connect(lambda _=False, k=index: w.document.select_subgraph(k))
    menu.setEnabled(combo.count() > 1 and w.document.runtime != "tflm")
