"""Analysis > Dynamic-shape session: the steps of one interpreter, listed with their sizes.

A non-modal dialog over the open model: a field for the steps (``1x224x224x3, 4x224x224x3``, or
``NAME=SHAPE+NAME=SHAPE`` per input), "Measure with LiteRT", Run. The work is
:func:`viewer.document.session_work.compute_session` in a :class:`~viewer.ui.workers.TaskRunner`;
the table shows per step the arena the plan needs, the arena held (LiteRT's buffer never shrinks),
whether it grew, and the step's total; the line below it the high-water mark and the warm-up.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from viewer.document.session_work import SessionRequest, compute_session, session_rows
from viewer.errors import ViewerError
from viewer.ui.workers import TaskRunner
from viewer.units import format_bytes

COLUMNS = ("Step", "Input shapes", "Plan needs", "Held", "Grew", "Total", "Source")


def default_steps(model, subgraph: int) -> str:
    """Batch 1, 2, 4 of the file's shapes when the batch is the only dynamic dimension; else ""."""
    sg = model.subgraph(subgraph)
    sigs = [tuple(sg.tensors[i].shape_signature or ()) for i in sg.inputs if i >= 0]
    dyn = [s for s in sigs if -1 in s]
    if len(dyn) != 1 or dyn[0][:1] != (-1,) or -1 in dyn[0][1:]:
        return ""
    rest = "x".join(str(d) for d in dyn[0][1:])
    return ", ".join(f"{b}x{rest}" if rest else str(b) for b in (1, 2, 4))


def _size(n) -> str:
    return "" if n is None else f"{format_bytes(n)} ({n:,d} B)"


class SessionDialog(QDialog):
    """The session of the model the window shows (one per window, kept between openings)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Dynamic-shape session")
        self.setObjectName("session_dialog")
        self._model, self._subgraph, self._path = None, 0, ""
        self.steps_edit = QLineEdit(self)
        self.steps_edit.setPlaceholderText("1x128x4, 64x128x4  or  NAME=SHAPE+NAME=SHAPE, ...")
        self.measure_box = QCheckBox("Measure with LiteRT (one interpreter)", self)
        self.measure_box.setChecked(True)
        self.run_button = QPushButton("Run session", self)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(QLabel("Steps:", self))
        row.addWidget(self.steps_edit, 1)
        row.addWidget(self.measure_box)
        row.addWidget(self.run_button)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.summary)
        self.resize(900, 360)
        self.runner = TaskRunner(self, fn=compute_session)
        self.runner.response_ready.connect(self._on_runner_response_ready)
        self.runner.failed.connect(self._on_runner_failed)
        self.runner.busy_changed.connect(self._on_runner_busy_changed)
        self.run_button.clicked.connect(self._on_run_clicked)
        self.steps_edit.returnPressed.connect(self._on_run_clicked)

    def set_model(self, model, subgraph: int = 0) -> None:
        """Show ``model``'s subgraph ``subgraph``; the steps field gets batches 1, 2, 4 when the
        model's only dynamic dimension is its input's batch."""
        changed = model is not self._model or subgraph != self._subgraph
        self._model, self._subgraph = model, subgraph
        self._path = getattr(model, "path", "") or ""
        if changed:
            self.table.setRowCount(0)
            self.summary.setText("")
            self.steps_edit.setText(default_steps(model, subgraph) if model is not None else "")
        self.run_button.setEnabled(model is not None)

    def _on_run_clicked(self) -> None:
        from viewer.whatif.session_plan import parse_steps

        if self._model is None:
            return
        try:
            steps = parse_steps(self.steps_edit.text(), flag="steps")
        except ViewerError as e:
            self.summary.setText(str(e))
            return
        self.summary.setText("Running…")
        self.runner.submit(SessionRequest(self._path, self._subgraph, tuple(steps),
                                          measure=self.measure_box.isChecked(), model=self._model))

    def _on_runner_busy_changed(self, busy: bool) -> None:
        self.run_button.setEnabled(not busy and self._model is not None)

    def _on_runner_failed(self, message: str) -> None:
        self.summary.setText(message)

    def _on_runner_response_ready(self, resp) -> None:
        rows = session_rows(resp)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            cells = (str(row.step), row.shapes, _size(row.needed), _size(row.held),
                     "yes" if row.grew else "", _size(row.total), row.source)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c in (2, 3, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self.summary.setText(self._summary(resp))

    def _summary(self, resp) -> str:
        if resp.error:
            return resp.error
        rep = resp.report
        if rep is not None and rep.high_water_step is None:
            return rep.error or "no step ran"
        if rep is None:
            from viewer.whatif.session_plan import PLANNED_ONLY_CAVEAT

            return (f"Predicted without the runtime [{PLANNED_ONLY_CAVEAT}]"
                    + (f"; {resp.prediction_error}" if resp.prediction_error else ""))
        parts = [f"High-water mark: step {rep.high_water_step + 1}, {_size(rep.high_water_bytes)} "
                 "(arena held, growth copy, dynamic tensors, persistent, runtime overhead, weights)"]
        if rep.warm_up_bytes is not None and rep.warm_up_bytes < rep.high_water_bytes:
            parts.append(f"With the largest step first (warm-up): {_size(rep.warm_up_bytes)}")
        parts += [f"unknown: {u}" for u in rep.unknowns]
        parts += list(rep.notes)
        if rep.error:
            parts.append(rep.error)
        return ". ".join(parts)

    def shutdown(self) -> None:
        self.runner.shutdown()


def open_session_dialog(window) -> SessionDialog:
    """Show (creating once) the window's session dialog for the model it shows."""
    dialog = getattr(window, "_session_dialog", None)
    if dialog is None:
        dialog = window._session_dialog = SessionDialog(window)
    doc = getattr(window, "document", None)
    dialog.set_model(getattr(doc, "model", None), getattr(doc, "subgraph", None) or 0)
    dialog.show()
    dialog.raise_()
    return dialog
