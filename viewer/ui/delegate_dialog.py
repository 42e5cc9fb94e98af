"""Analysis > Memory under a delegate: the open model's memory under XNNPACK or a delegate library.

A non-modal dialog: the delegate (XNNPACK, LiteRT's default CPU delegate, or a library path with
``KEY=VALUE`` options, e.g. a GPU/NPU delegate), Measure. The work is
:func:`viewer.document.delegate_work.compute_delegate` in a :class:`~viewer.ui.workers.TaskRunner`
(two fresh LiteRT processes); the table lists each term (the CPU arena beside the delegate, the
delegate's setup, the runtime overhead, the arena without a delegate, not counted) with its
source and how it was measured; the line below it the sum, what the delegate took and what is
unknown (a library delegate's device memory).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox, QDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from viewer.document.delegate_work import (DelegateRequest, compute_delegate, delegate_rows,
                                           delegate_summary)
from viewer.runtime.delegates import DelegateSpec
from viewer.ui.workers import TaskRunner
from viewer.units import format_bytes

COLUMNS = ("Term", "Bytes", "Counted", "Source", "How")
KINDS = ("XNNPACK (LiteRT's default CPU delegate)", "Delegate library (.so)")


def _size(n: int) -> str:
    return f"{format_bytes(n)} ({n:,d} B)"


def _options(text: str) -> tuple:
    """``"a=1, b=2"`` -> ``(("a", "1"), ("b", "2"))``; a part without ``=`` raises ValueError."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise ValueError(f"delegate option {part!r}: need KEY=VALUE")
        out.append((k.strip(), v.strip()))
    return tuple(out)


class DelegateDialog(QDialog):
    """The delegate measurement of the model the window shows (one per window)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Memory under a delegate")
        self.setObjectName("delegate_dialog")
        self._model, self._path = None, ""
        self.kind_combo = QComboBox(self)
        self.kind_combo.addItems(KINDS)
        self.library_edit = QLineEdit(self)
        self.library_edit.setPlaceholderText("/path/to/libdelegate.so")
        self.options_edit = QLineEdit(self)
        self.options_edit.setPlaceholderText("KEY=VALUE, KEY=VALUE")
        self.run_button = QPushButton("Measure", self)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.kind_combo)
        row.addWidget(self.library_edit, 1)
        row.addWidget(self.options_edit, 1)
        row.addWidget(self.run_button)
        lay = QVBoxLayout(self)
        lay.addLayout(row)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.summary)
        self.resize(1000, 320)
        self.runner = TaskRunner(self, fn=compute_delegate)
        self.runner.response_ready.connect(self._on_runner_response_ready)
        self.runner.failed.connect(self._on_runner_failed)
        self.runner.busy_changed.connect(self._on_runner_busy_changed)
        self.run_button.clicked.connect(self._on_run_clicked)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_combo_changed)
        self._on_kind_combo_changed(0)

    def set_model(self, model) -> None:
        """Show ``model`` (its subgraph 0, which LiteRT runs); clears the old answer."""
        if model is not self._model:
            self.table.setRowCount(0)
            self.summary.setText("")
        self._model = model
        self._path = str(getattr(model, "path", "") or "")
        self.run_button.setEnabled(model is not None)

    def _on_kind_combo_changed(self, index: int) -> None:
        library = index == 1
        self.library_edit.setEnabled(library)
        self.options_edit.setEnabled(library)

    def _spec(self) -> DelegateSpec:
        if self.kind_combo.currentIndex() == 0:
            return DelegateSpec("xnnpack")
        return DelegateSpec("external", self.library_edit.text().strip(),
                            _options(self.options_edit.text()))

    def _on_run_clicked(self) -> None:
        if self._model is None:
            return
        try:
            spec = self._spec()
        except ValueError as e:
            self.summary.setText(str(e))
            return
        self.table.setRowCount(0)
        self.summary.setText(f"Measuring under {spec.name}…")
        self.runner.submit(DelegateRequest(self._path, spec, model=self._model))

    def _on_runner_busy_changed(self, busy: bool) -> None:
        self.run_button.setEnabled(not busy and self._model is not None)

    def _on_runner_failed(self, message: str) -> None:
        self.summary.setText(message)

    def _on_runner_response_ready(self, resp) -> None:
        rows = delegate_rows(resp)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            cells = (row.name, _size(row.bytes), "yes" if row.counted else "no", row.source,
                     row.method)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(row.method)
                if c == 1:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self.summary.setText(delegate_summary(resp))

    def shutdown(self) -> None:
        self.runner.shutdown()


def open_delegate_dialog(window) -> DelegateDialog:
    """Show (creating once) the window's delegate dialog for the model it shows."""
    dialog = getattr(window, "_delegate_dialog", None)
    if dialog is None:
        dialog = window._delegate_dialog = DelegateDialog(window)
    doc = getattr(window, "document", None)
    dialog.set_model(getattr(doc, "model", None))
    dialog.show()
    dialog.raise_()
    return dialog
