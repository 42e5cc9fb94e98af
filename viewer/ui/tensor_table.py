"""A searchable, sortable table of the arena's tensors, kept in sync with the chart.

One row per tensor in the analysis' usages (kernel temporaries and in-place aliases included).
Sorting uses raw numbers (``Qt.UserRole``), not the formatted text.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QRegularExpression,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QLineEdit,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from viewer.analysis.types import Analysis
from viewer.planning.types import Plan
from viewer.units import format_bytes

COLUMNS = ("id", "name", "shape", "dtype", "kind", "bytes", "first op", "last op", "held ops", "offset",
           "producer")
SORT_ROLE = Qt.ItemDataRole.UserRole
#: Columns whose text is a number or a shape: re-fitted when a what-if widens them, and never
#: elided on the left ("…48,736" reads as another offset). Only the name keeps its tail.
NUMERIC_COLUMNS = ("id", "shape", "bytes", "first op", "last op", "held ops", "offset")
_REFIT_COLUMNS = ("shape", "dtype", "kind", "bytes", "first op", "last op", "held ops", "offset")


class _ElideRightDelegate(QStyledItemDelegate):
    """Paints a cell elided on the right (the view elides names on the left)."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt override)
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


def _shape_dtype(analysis: Analysis, tensor: int) -> tuple[tuple[int, ...] | None, str]:
    """Shape and dtype of ``tensor`` (the analysed, possibly edited, subgraph's); a kernel
    temporary the runtime added has neither in the model: ``(None, "-")``."""
    sg = analysis.subgraph
    if 0 <= tensor < len(sg.tensors):
        t = sg.tensors[tensor]
        return tuple(int(d) for d in t.shape), str(t.dtype)
    return None, "-"


class TensorTableModel(QAbstractTableModel):
    """Rows: the analysis' usages; the offset column follows the current plan."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows: list[tuple] = []
        self._row_of: dict[int, int] = {}

    def set_view(self, analysis: Analysis | None, plan: Plan | None, extra_shapes=None) -> None:
        """Rows of ``analysis``'s usages; ``extra_shapes`` (tensor -> (shape, dtype)) gives the
        shapes of tensors the model does not hold (the runtime's kernel temporaries)."""
        extra = dict(extra_shapes or {})
        self.beginResetModel()
        self._rows = []
        if analysis is not None:
            offsets = analysis.resolve_alias_offsets(plan.offsets) if plan is not None else {}
            for u in analysis.usages:
                kind = u.kind if u.alias_of is None else f"{u.kind} (of {u.alias_of})"
                producer = "-" if u.producer is None else f"#{u.producer} {analysis.op_name(u.producer)}"
                shape, dtype = extra.get(u.tensor) or _shape_dtype(analysis, u.tensor)
                self._rows.append((
                    u.tensor, analysis.tensor_name(u.tensor), shape, dtype, kind, u.nbytes,
                    u.first_op, u.last_op, u.held_ops, offsets.get(u.tensor), producer,
                ))
        self._row_of = {int(r[0]): i for i, r in enumerate(self._rows)}
        self.endResetModel()

    def tensor_at(self, row: int) -> int:
        return int(self._rows[row][0])

    def row_of(self, tensor: int) -> int | None:
        return self._row_of.get(tensor)

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt override)
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        v = self._rows[index.row()][index.column()]
        col = COLUMNS[index.column()]
        if role == SORT_ROLE:
            if col == "shape":  # by element count
                return -1 if v is None else int(np.prod(v, dtype=np.float64)) if v else 1
            return -1 if v is None else v
        if role == Qt.ItemDataRole.ToolTipRole and col == "name":
            return str(v)
        if role == Qt.ItemDataRole.DisplayRole:
            if v is None:
                return "-"
            if col == "bytes":
                return f"{v:,} ({format_bytes(v)})"
            if col == "offset":
                return f"{v:,}"
            if col == "shape":
                return "x".join(str(d) for d in v) or "scalar"
            return str(v)
        if role == Qt.ItemDataRole.TextAlignmentRole and isinstance(v, int) and not isinstance(v, bool):
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None


class TensorTable(QWidget):
    """Search box + sortable table. Emits ``tensor_selected`` when the user picks a row."""

    tensor_selected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = TensorTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setFilterKeyColumn(-1)  # search every column
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search tensors (name, kind, op, id)…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._on_search_text_changed)
        self.search.returnPressed.connect(self._select_first_match)  # Return: the first match
        self.search.installEventFilter(self)  # Down: into the filtered rows
        self.view = QTableView(self)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(COLUMNS.index("bytes"), Qt.SortOrder.DescendingOrder)
        # Long names share a prefix (the Keras model's scope): keep the distinctive tail.
        self.view.setTextElideMode(Qt.TextElideMode.ElideLeft)
        self.view.setWordWrap(False)  # one line per row: wrapping would elide the last line's end
        self._elide_right = _ElideRightDelegate(self.view)
        for col in NUMERIC_COLUMNS + ("dtype", "kind", "producer"):
            self.view.setItemDelegateForColumn(COLUMNS.index(col), self._elide_right)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(20)
        hdr = self.view.horizontalHeader()
        hdr.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hdr.setStretchLastSection(True)
        self.view.selectionModel().selectionChanged.connect(self._on_view_selection_changed)
        self._syncing = False
        self._fitted_for = None  # (tensors, rows) the column widths were fitted to
        hdr.setResizeContentsPrecision(500)  # fit to a sample of rows: 20k-tensor models too
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.no_match = QLabel(self)
        self.no_match.setStyleSheet("color: #8a6d00;")
        self.no_match.hide()
        lay.addWidget(self.search)
        lay.addWidget(self.no_match)
        lay.addWidget(self.view)

    def set_view(self, analysis: Analysis | None, plan: Plan | None, extra_shapes=None, *,
                 fit_key=None) -> None:
        """Show ``analysis``'s tensors with ``plan``'s offsets (see :meth:`TensorTableModel.set_view`).

        The columns are fitted to their contents when ``fit_key`` (e.g. the model's path and
        subgraph) differs from the last view's, or, without one, when the tensors' names do;
        what-ifs and other plans of the same model keep the widths, including any the user set.
        """
        selected = self.selected_tensor()
        self._syncing = True
        try:
            self.model.set_view(analysis, plan, extra_shapes)
            # Fit the columns to a new model or subgraph only: a what-if or another plan of the
            # same tensors keeps the widths (and any the user set), and a re-fit costs ~100 ms.
            key = None if analysis is None else (fit_key if fit_key is not None
                                                 else _tensors_key(analysis))
            if key != self._fitted_for:
                self._fitted_for = key
                self.view.resizeColumnsToContents()
                self.view.setColumnWidth(1, min(self.view.columnWidth(1), 320))
            else:  # a what-if can make numbers, shapes, dtypes wider: widen only
                for col in map(COLUMNS.index, _REFIT_COLUMNS):
                    need = self.view.sizeHintForColumn(col)
                    if need > self.view.columnWidth(col):
                        self.view.setColumnWidth(col, need)
        finally:
            self._syncing = False
        if selected is not None:
            self.select_tensor(selected)
        self._update_no_match()

    def _update_no_match(self) -> None:
        """Say so when the search hides every row (e.g. a search kept from another model)."""
        text = self.search.text()
        empty = bool(text) and self.proxy.rowCount() == 0 and self.model.rowCount() > 0
        self.no_match.setText(f"No tensor matches “{text}”; clear the search to see all "
                              f"{self.model.rowCount()}." if empty else "")
        self.no_match.setVisible(empty)

    def selected_tensor(self) -> int | None:
        rows = self.view.selectionModel().selectedRows()
        if not rows:
            return None
        return self.model.tensor_at(self.proxy.mapToSource(rows[0]).row())

    def select_tensor(self, tensor: int | None) -> None:
        """Select ``tensor``'s row (without emitting ``tensor_selected``)."""
        self._syncing = True
        try:
            sm = self.view.selectionModel()
            if tensor is None:
                sm.clearSelection()
                return
            row = self.model.row_of(tensor)
            if row is None:
                sm.clearSelection()
                return
            idx = self.proxy.mapFromSource(self.model.index(row, 0))
            if not idx.isValid():  # filtered out by the search
                sm.clearSelection()
                return
            sm.select(idx, QItemSelectionModel.SelectionFlag.ClearAndSelect
                      | QItemSelectionModel.SelectionFlag.Rows)
            self.view.scrollTo(idx)
        finally:
            self._syncing = False

    def visible_tensors(self) -> list[int]:
        """Tensor ids in the table's current (sorted, filtered) order."""
        return [
            self.model.tensor_at(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
            for r in range(self.proxy.rowCount())
        ]

    def _on_search_text_changed(self, text: str) -> None:
        self.proxy.setFilterRegularExpression(
            QRegularExpression(QRegularExpression.escape(text),
                               QRegularExpression.PatternOption.CaseInsensitiveOption)
        )
        self._update_no_match()

    def _select_first_match(self) -> bool:
        """Select the first row shown (the search's first match) and give the rows the focus;
        False when the search shows none."""
        if self.proxy.rowCount() == 0:
            return False
        idx = self.proxy.index(0, 0)
        self.view.setFocus(Qt.FocusReason.OtherFocusReason)
        self.view.selectionModel().setCurrentIndex(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.view.scrollTo(idx)
        return True

    def eventFilter(self, obj, event) -> bool:
        """Down in the search box moves into the filtered rows (the first one selected)."""
        if (obj is self.search and event.type() == QEvent.Type.KeyPress
                and event.key() == Qt.Key.Key_Down and self._select_first_match()):
            return True
        return super().eventFilter(obj, event)

    def _on_view_selection_changed(self, *_):
        if self._syncing:
            return
        t = self.selected_tensor()
        if t is not None:
            self.tensor_selected.emit(t)


def _tensors_key(analysis: Analysis) -> tuple:
    """What identifies a table's rows across what-ifs of one model: the subgraph and its tensor
    names (a what-if changes shapes and sizes, not names; the runtime's kernel temporaries come
    and go with the measurement and the temporaries toggle)."""
    sg = analysis.subgraph
    names = tuple(t.name for t in sg.tensors)
    return (sg.index, sg.name, hash(names))
