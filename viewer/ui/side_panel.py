"""The side panel: model summary, planners, measurement, view options, operator profile, tensor.

All figures are bytes, formatted with :func:`viewer.units.format_bytes`; operator indices are
0-based execution order.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from viewer.ui.workers import MEASURED, OPTIMAL, AnalysisResponse, optimal_summary, plan_label
from viewer.document.runtime_plan import runtime_plan_name, whatif_note
from viewer.export.report import gap_bound, gap_pct
from viewer.ui.summary_text import (
    _b,
    _html,
    best_text,
    budget_report,
    budget_verdict,
    lower_bound_text,
    measured_text,
    reorder_lines,
    tensor_details,
    untiled_bound_line,
)
from viewer.ui.widgets import FocusWheelComboBox, FocusWheelSpinBox, WrapLabel, keep_together
from viewer.units import format_bytes


class _NumItem(QTableWidgetItem):
    """A table item that sorts by a number, not its text."""

    def __init__(self, text: str, value: float):
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole, value)
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other):  # noqa: D105
        return self.data(Qt.ItemDataRole.UserRole) < other.data(Qt.ItemDataRole.UserRole)


class SidePanel(QScrollArea):
    """Everything beside the chart. Emits the user's choices; never computes anything slow."""

    planner_changed = Signal(str)
    subgraph_changed = Signal(int)
    min_held_changed = Signal(int)
    color_mode_changed = Signal(str)
    tensor_selected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setMinimumWidth(380)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._resp: AnalysisResponse | None = None
        self._planner: str | None = None
        self._updating = False
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(4, 4, 4, 4)

        # Model summary
        box = QGroupBox("Model")
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.file_label = WrapLabel("-")
        self.file_label.setWordWrap(True)
        self.subgraph_combo = FocusWheelComboBox()
        self.subgraph_combo.setToolTip("Subgraph (or signature) to analyse: models with control flow "
                                       "or several signatures have several; also View > Subgraph")
        self.subgraph_combo.currentIndexChanged.connect(self._on_subgraph_combo_changed)
        self.subgraph_row_label = QLabel("Subgraph / signature")
        self.graph_label = WrapLabel("-")
        self.graph_label.setWordWrap(True)
        self.weights_label = QLabel("-")
        self.weights_label.setToolTip(
            "Constant tensors' buffers. File-backed: a runtime that maps the model keeps them "
            "in page cache the OS can reclaim.")
        self.arena_label = WrapLabel("-")  # a what-if planner's note is long: wrap, never widen the panel
        self.arena_label.setToolTip(
            "The chosen plan's tensor arena. Anonymous memory: the OS cannot reclaim it.")
        self.naive_label = QLabel("-")
        self.naive_label.setToolTip("Every arena tensor in its own bytes (no sharing).")
        self.lower_label = WrapLabel("-")
        self.lower_label.setToolTip(
            "The widest operator's breadth: no plan can be smaller. With the runtime measured, "
            "both: the file's tensors alone, and with the kernel temporaries its kernels add.")
        self.lower_label.setWordWrap(True)
        form.addRow("File", self.file_label)
        form.addRow(self.subgraph_row_label, self.subgraph_combo)
        form.addRow("Graph", self.graph_label)
        form.addRow("Weights", self.weights_label)
        form.addRow("Arena", self.arena_label)
        form.addRow("Naive sum", self.naive_label)
        form.addRow("Lower bound", self.lower_label)
        lay.addWidget(box)

        # Planners
        box = QGroupBox("Planners")
        v = QVBoxLayout(box)
        self.planner_combo = FocusWheelComboBox()
        self.planner_combo.setToolTip("Plan drawn in the chart (Ctrl+[ / Ctrl+] step through)")
        self.planner_combo.currentIndexChanged.connect(self._on_planner_combo_changed)
        v.addWidget(self.planner_combo)
        self.planner_table = QTableWidget(0, 3)
        self.planner_table.setHorizontalHeaderLabels(["planner", "arena", "gap to LB"])
        self.planner_table.verticalHeader().setVisible(False)
        self.planner_table.verticalHeader().setDefaultSectionSize(22)
        self.planner_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.planner_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.planner_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.planner_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.planner_table.cellClicked.connect(self._on_planner_table_clicked)
        # The keyboard's current row is the drawn plan: Up/Down switch it, Space/Return too.
        self.planner_table.selectionModel().currentRowChanged.connect(self._on_planner_row_changed)
        self.planner_table.installEventFilter(self)
        v.addWidget(self.planner_table)
        self.best_label = WrapLabel("-")
        self.best_label.setWordWrap(True)
        v.addWidget(self.best_label)
        self.optimal_label = WrapLabel("")
        self.optimal_label.setWordWrap(True)
        self.optimal_label.setVisible(False)
        v.addWidget(self.optimal_label)
        lay.addWidget(box)

        # Reordered operators (the reorder what-if)
        self.reorder_box, self.reorder_label = _text_box("Reordered operators")
        self.reorder_box.setVisible(False)
        lay.addWidget(self.reorder_box)

        # Measured
        self.measured_box, self.measured_label = _text_box("Measured (LiteRT runtime)")
        lay.addWidget(self.measured_box)

        # Device budget and what-if change
        self.budget_box, self.budget_label = _text_box("Budget and what-if")
        lay.addWidget(self.budget_box)
        self._budget = None  # BudgetSettings from the what-if panel
        self._baseline: AnalysisResponse | None = None  # the unedited model, for comparisons

        # View options: a bar the main window puts in its toolbar, above the chart.
        self.view_bar = QWidget()
        bar = QHBoxLayout(self.view_bar)
        bar.setContentsMargins(4, 0, 4, 0)
        self.color_combo = FocusWheelComboBox()
        self.color_combo.addItem("tensor kind", "kind")
        self.color_combo.addItem("producer op type", "op")
        self.color_combo.currentIndexChanged.connect(
            lambda i: self.color_mode_changed.emit(self.color_combo.itemData(i)))
        self.min_held_spin = FocusWheelSpinBox()
        self.min_held_spin.setRange(0, 1_000_000)
        self.min_held_spin.setSpecialValueText("show all")
        self.min_held_spin.setSuffix(" operators")
        self.min_held_spin.setToolTip(
            "Highlight tensors held longer than N operators (skip connections); 0 shows all")
        self.min_held_spin.valueChanged.connect(self.min_held_changed.emit)
        bar.addWidget(QLabel("Colour by"))
        bar.addWidget(self.color_combo)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Held longer than"))
        bar.addWidget(self.min_held_spin)

        # Operator profile
        box = self.profile_box = QGroupBox("Operator profile")
        v = QVBoxLayout(box)
        self.profile_label = WrapLabel("-")
        self.profile_label.setWordWrap(True)
        v.addWidget(self.profile_label)
        self.profile_table = QTableWidget(0, 4)
        self.profile_table.setHorizontalHeaderLabels(["tensor", "bytes", "producer", "held ops"])
        self.profile_table.verticalHeader().setVisible(False)
        self.profile_table.verticalHeader().setDefaultSectionSize(22)
        self.profile_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.profile_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.profile_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.profile_table.setMinimumHeight(160)
        self.profile_table.cellClicked.connect(self._on_profile_table_clicked)
        v.addWidget(self.profile_table)
        lay.addWidget(box)

        # Selected tensor
        box = QGroupBox("Selected tensor")
        v = QVBoxLayout(box)
        self.tensor_label = WrapLabel("Click a rectangle or a table row.")
        self.tensor_label.setWordWrap(True)
        self.tensor_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        v.addWidget(self.tensor_label)
        lay.addWidget(box)
        lay.addStretch(1)
        self.setWidget(body)
        self._profile_op: int | None = None
        self.clear()

    # --- state --------------------------------------------------------------------------

    @property
    def planner(self) -> str | None:
        return self._planner

    @property
    def profile_op(self) -> int | None:
        """Operator whose profile is listed."""
        return self._profile_op

    def clear(self) -> None:
        self._resp = None
        self._updating = True
        try:
            self.planner_combo.clear()
            self.subgraph_combo.clear()
        finally:
            self._updating = False
        self.subgraph_combo.setVisible(False)
        self.subgraph_row_label.setVisible(False)
        for lab in (self.file_label, self.graph_label, self.weights_label, self.arena_label,
                    self.naive_label, self.lower_label, self.best_label, self.measured_label,
                    self.profile_label):
            lab.setText("-")
        self.planner_table.setRowCount(0)
        self.profile_table.setRowCount(0)
        self._baseline = None
        self.budget_box.setVisible(False)
        self.reorder_box.setVisible(False)
        self.optimal_label.setVisible(False)

    def set_response(self, resp: AnalysisResponse, planner: str | None = None) -> str | None:
        """Show ``resp``; select ``planner`` if it has that plan, else the smallest.

        Returns the planner now selected.
        """
        self._resp = resp
        a, m = resp.analysis, resp.model
        sg = a.subgraph
        self._updating = True
        try:
            self.subgraph_combo.clear()
            keys = {}
            for sig in m.signatures:  # the runtime allocates these through their runner
                keys.setdefault(sig.subgraph_index, []).append(sig.key)
            for s in m.subgraphs:
                sig = f" — signature {', '.join(keys[s.index])}" if s.index in keys else ""
                self.subgraph_combo.addItem(
                    f"{s.index}: {s.name or '(unnamed)'}{sig} — {len(s.operators)} ops", s.index)
            self.subgraph_combo.setCurrentIndex(resp.request.subgraph)
            many = len(m.subgraphs) > 1
            self.subgraph_combo.setVisible(many)
            self.subgraph_row_label.setVisible(many)
            self.planner_combo.clear()
            for name in resp.plans:
                self.planner_combo.addItem(plan_label(name), name)
        finally:
            self._updating = False
        self.file_label.setText(os.path.basename(m.path))
        self.file_label.setToolTip(m.path)
        self.graph_label.setText(
            f"{len(sg.operators)} operators, {len(sg.tensors)} tensors, "
            f"{len(a.usages)} arena tensors"
            + (f" ({n_alias} in-place)" if (n_alias := sum(u.alias_of is not None for u in a.usages)) else ""))
        self.weights_label.setText(f"{_b(m.weights_bytes)}\n" + (
            "in flash (TFLite Micro)" if resp.request.runtime == "tflm" else "file-backed, reclaimable"))
        self.naive_label.setText(_b(a.naive_bytes))
        self.lower_label.setText(lower_bound_text(resp))
        self._fill_planner_table()
        self._fill_measured()
        self._fill_reorder()
        if planner not in resp.plans:
            planner = runtime_plan_name(resp.request.runtime, resp.plans, resp.best)
        self.set_planner(planner, emit=False)
        self.show_operator(a.widest_op if a.widest_op >= 0 else None)
        return planner

    def set_planner(self, name: str | None, *, emit: bool = True) -> None:
        """Select the plan ``name`` in the selector and the summary."""
        if self._resp is None or name not in self._resp.plans:
            return
        self._planner = name
        self._updating = True
        try:
            self.planner_combo.setCurrentIndex(self.planner_combo.findData(name))
            row = list(self._resp.plans).index(name)
            self.planner_table.setCurrentCell(row, 0)  # the keyboard's current row: the drawn plan
            self.planner_table.selectRow(row)
        finally:
            self._updating = False
        plan = self._resp.plans[name]
        note = whatif_note(self._resp.request.runtime, name)
        self.arena_label.setText(
            f"{_b(plan.arena_bytes)}\n{plan_label(name)}\n"
            + (f"{note}\n" if note else "") + "anonymous, not reclaimable")
        self._fill_budget()
        if emit:
            self.planner_changed.emit(name)

    def step_planner(self, step: int) -> None:
        """Select the next (``step=1``) or previous (``-1``) plan."""
        n = self.planner_combo.count()
        if n:
            self.planner_combo.setCurrentIndex((self.planner_combo.currentIndex() + step) % n)

    def _fill_planner_table(self) -> None:
        self._updating = True  # refilling moves the current row: not the user's choice
        try:
            self._fill_planner_rows()
        finally:
            self._updating = False

    def _fill_planner_rows(self) -> None:
        resp = self._resp
        lb = resp.analysis.lower_bound_bytes
        self.planner_table.setRowCount(len(resp.plans))
        bounds: dict = {}  # the aligned bound: what 64-byte-aligned plans can reach
        for row, (name, plan) in enumerate(resp.plans.items()):
            label = plan_label(name)
            if name == resp.best:
                label = "★ " + label
            if name == OPTIMAL:
                label = ("★ " if name == resp.best else "") + f"Optimal ({optimal_summary(plan)})"
            elif plan.proven_optimal:
                label += " (proven optimal)"
            item = QTableWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setToolTip(f"{name}: {plan.stats.get('seconds', 0.0) * 1000:.1f} ms")
            self.planner_table.setItem(row, 0, item)
            self.planner_table.setItem(row, 1, _NumItem(format_bytes(plan.arena_bytes), plan.arena_bytes))
            g = gap_pct(plan.arena_bytes, gap_bound(resp.analysis, plan.alignment, bounds))
            self.planner_table.setItem(row, 2, _NumItem(f"{g:+.1f} %", g))
        self.planner_table.resizeColumnsToContents()
        self.planner_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        h = self.planner_table.horizontalHeader().height() + 4
        h += sum(self.planner_table.rowHeight(r) for r in range(len(resp.plans)))
        self.planner_table.setFixedHeight(h)
        if resp.best is not None:
            self.best_label.setText(best_text(resp, bounds))
        opt = resp.plans.get(OPTIMAL)
        self.optimal_label.setVisible(opt is not None)
        if opt is not None:
            bound = opt.bound_bytes or lb
            self.optimal_label.setText(
                f"<b>Optimal</b>: {format_bytes(opt.arena_bytes)}, {optimal_summary(opt)} "
                f"(proven bound {format_bytes(bound)}; "
                f"{opt.stats.get('seconds', 0.0):.1f} s)")

    def _fill_measured(self) -> None:
        tflm = getattr(self._resp.request, "runtime", "litert") == "tflm"
        self.measured_box.setTitle("Measured (TFLite Micro runtime)" if tflm else "Measured (LiteRT runtime)")
        self.measured_label.setText(measured_text(self._resp))

    def set_baseline(self, resp: AnalysisResponse | None) -> None:
        """The unedited model's response: what-if results are compared with it."""
        self._baseline = resp
        self._fill_budget()

    def set_tiled_arena(self, tiled: tuple[int, str] | None) -> None:
        """The tiled execution's counted arena (bytes, label) the budget uses; None: untiled."""
        if tiled != getattr(self, "_tiled", None):
            self._tiled = tiled
            self._fill_budget()

    def set_budget(self, settings) -> None:
        """Device budget settings (``viewer.whatif.budget.BudgetSettings``) to check the plan against."""
        self._budget = settings
        self._fill_budget()

    def _fill_budget(self) -> None:
        resp, name = self._resp, self._planner
        lines: list[str] = []
        if resp is not None and name in resp.plans:
            plan = resp.plans[name]
            a = resp.analysis
            edits = resp.request.edits
            base = self._baseline
            edited = edits is not None and not edits.is_empty()
            if (edited or resp.reorder is not None) and base is not None and base is not resp:
                from viewer.whatif.budget import compare

                c = compare(base.analysis, base.plans.get(name), a, plan)
                what = "What-if" if edited else "Reordered"
                lines.append(f"<b>{what} vs the model as stored</b> (" + plan_label(name) + ")")
                if resp.request.shape_source == "inferred":
                    lines.append("<i>estimated</i> (our shape inference); the runtime confirms it next")
                lines += [_html(x) for x in c["lines"]]
                lines += [_html(n) for n in resp.notes]
            if self._budget is not None and getattr(self._budget, "limit_bytes", None) is not None:
                tiled = getattr(self, "_tiled", None)
                rep = budget_report(self._budget, resp, name, tiled)
                if rep is not None:
                    text, fits, _ = budget_verdict(self._budget, resp, name, tiled)
                    color = "#1a7f37" if fits else "#c62828"
                    lines.append(f"<b style='color:{color}'>{_html(text)}</b>")
                    lines += [_html(x) for x in rep.lines()]
                    if tiled is not None:  # as check --tile: no one operator binds all stages
                        lines.append(_html(untiled_bound_line(resp)))
        self.budget_label.setText(keep_together("<br>".join(lines)) if lines else "-")
        self.budget_box.setVisible(bool(lines))

    def _fill_reorder(self) -> None:
        lines = reorder_lines(self._resp) if self._resp is not None else []
        self.reorder_box.setVisible(bool(lines))
        if lines:
            self.reorder_label.setText("<br>".join(lines))

    @property
    def reorder_text(self) -> str:
        """What the reordered-operators section says (for tests)."""
        return self.reorder_label.text() if self.reorder_box.isVisibleTo(self) else ""

    # --- operator profile and tensor details --------------------------------------------

    def show_operator(self, op: int | None) -> None:
        """List operator ``op``'s profile (tensors live while it runs), largest first."""
        self._profile_op = op
        self.profile_table.setSortingEnabled(False)
        if self._resp is None or op is None or not (0 <= op < self._resp.analysis.num_ops):
            self.profile_label.setText("-")
            self.profile_table.setRowCount(0)
            return
        a = self._resp.analysis
        entries = a.operator_profile(op)
        breadth = int(a.breadth[op]) if a.breadth is not None and len(a.breadth) else 0
        widest = " (the widest operator)" if op == a.widest_op else ""
        self.profile_label.setText(
            f"#{op} {a.op_name(op)}{widest}: breadth {format_bytes(breadth)}, "
            f"{len(entries)} tensors live")
        self.profile_table.setRowCount(len(entries))
        for row, e in enumerate(entries):
            item = QTableWidgetItem(e.name or f"tensor {e.tensor}")
            item.setData(Qt.ItemDataRole.UserRole, e.tensor)
            item.setToolTip(f"tensor {e.tensor} ({e.kind})")
            self.profile_table.setItem(row, 0, item)
            self.profile_table.setItem(row, 1, _NumItem(format_bytes(e.nbytes), e.nbytes))
            prod = "-" if e.producer is None else f"#{e.producer} {e.producer_op}"
            self.profile_table.setItem(row, 2, QTableWidgetItem(prod))
            self.profile_table.setItem(row, 3, _NumItem(str(e.held_ops), e.held_ops))
        self.profile_table.resizeColumnsToContents()
        self.profile_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.profile_table.setSortingEnabled(True)
        self.profile_table.sortItems(1, Qt.SortOrder.DescendingOrder)  # ranked by bytes

    def show_tensor(self, tensor: int | None) -> None:
        """Describe ``tensor``: shape, dtype, bytes, usage interval, offset in the plan."""
        if self._resp is None or tensor is None:
            self.tensor_label.setText("Click a rectangle or a table row.")
            return
        self.tensor_label.setText(tensor_details(self._resp, tensor, self._planner))

    # --- slots --------------------------------------------------------------------------

    def _on_planner_combo_changed(self, index: int) -> None:
        if self._updating or index < 0:
            return
        self.set_planner(self.planner_combo.itemData(index))

    def _on_planner_row_changed(self, current, _previous) -> None:
        if not self._updating and current.isValid():
            self._on_planner_table_clicked(current.row(), 0)

    def eventFilter(self, obj, event) -> bool:
        """Space/Return in the planner table draw the current row's plan."""
        if (obj is self.planner_table and event.type() == QEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)):
            row = self.planner_table.currentRow()
            if row >= 0:
                self._on_planner_table_clicked(row, 0)
                return True
        return super().eventFilter(obj, event)

    def _on_planner_table_clicked(self, row: int, _col: int) -> None:
        item = self.planner_table.item(row, 0)
        if item is not None and not self._updating:
            self.set_planner(item.data(Qt.ItemDataRole.UserRole))

    def _on_subgraph_combo_changed(self, index: int) -> None:
        if self._updating or index < 0:
            return
        self.subgraph_changed.emit(int(self.subgraph_combo.itemData(index)))

    def _on_profile_table_clicked(self, row: int, _col: int) -> None:
        item = self.profile_table.item(row, 0)
        if item is not None:
            self.tensor_selected.emit(int(item.data(Qt.ItemDataRole.UserRole)))


def _text_box(title: str) -> tuple[QGroupBox, QLabel]:
    """A titled group box holding one word-wrapped, selectable label."""
    box = QGroupBox(title)
    label = WrapLabel("-")
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    QVBoxLayout(box).addWidget(label)
    return box, label


__all__ = ["SidePanel", "MEASURED", "budget_report", "lower_bound_text"]
