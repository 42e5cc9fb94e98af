"""The compare view: the baseline and an edit side by side, on one y scale.

Two interactive :class:`~viewer.ui.chart.PackingChart` widgets share the larger arena as their
y range (and the larger breadth for the breadth curves), so sizes compare by eye; a line above
them gives the delta (arena, lower bound, whether the widest operator moved).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from viewer.analysis.types import Analysis
from viewer.errors import UsageError, ViewerError
from viewer.export.chart_data import compare_text
from viewer.export.chart_scene import match_heights
from viewer.planning.types import Plan
from viewer.ui.chart import PackingChart

#: One side of the comparison: an analysis, a plan of its problem, and its label.
Side = tuple[Analysis, Plan, str]


class CompareView(QWidget):
    """Baseline (left) and edit (right) packing charts on one y scale, with a delta line.

    Signals
    -------
    tensor_hovered(int)
        Tensor under the mouse in either chart; -1 when none.
    """

    tensor_hovered = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.delta_label = QLabel("Open a model and make a what-if edit to compare it with the baseline.")
        self.delta_label.setWordWrap(True)
        self.delta_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.delta_label.setStyleSheet("font-weight: bold; padding: 4px;")
        self.left = PackingChart(self)
        self.right = PackingChart(self)
        for chart in (self.left, self.right):
            chart.tensor_hovered.connect(self.tensor_hovered)
            chart.rows_changed.connect(lambda: QTimer.singleShot(0, self._match_rows))
            chart.view.viewport().installEventFilter(self)  # re-match the rows after a resize
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(self.left)
        splitter.addWidget(self.right)
        splitter.setChildrenCollapsible(False)
        self.splitter = splitter
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.delta_label, 1)
        self.export_button = QToolButton(self)
        self.export_button.setText("Export image…")
        self.export_button.setToolTip("Save the pair, on one y scale, as PNG or SVG")
        self.export_button.clicked.connect(lambda: self.export_dialog())
        top.addWidget(self.export_button)
        lay.addLayout(top)
        lay.addWidget(splitter, 1)
        self._sides: tuple[Side, Side] | None = None
        self._delta, self._outside = "", None

    # --- API --------------------------------------------------------------------------------

    def set_views(self, left: Side, right: Side, *, subgraph: int | None = None,
                  note: str = "", outside=None) -> None:
        """Show ``left`` (the baseline) and ``right`` (the edit), each ``(analysis, plan,
        label)``; the label stands in the chart's title in place of the model name.

        Both packing plots then show bytes ``0..max(arena, lower bound)`` of the larger side,
        both breadth curves the larger breadth. ``note`` follows the delta line (e.g. why
        kernel temporaries are left out of both sides). ``outside``: each side's
        ``(persistent_bytes, other_subgraphs_bytes)`` (None: not known), for the delta line's
        persistent and held figures (:func:`viewer.export.chart_data.compare_text`).

        Raises
        ------
        viewer.errors.UsageError
            When a side is not ``(analysis, plan, label)``.
        viewer.errors.PlanningError
            When a plan is not a plan of its analysis.
        """
        for side in (left, right):
            if not (isinstance(side, tuple) and len(side) == 3):
                raise UsageError("a compare side is (analysis, plan, label)")
        for chart, (analysis, plan, label) in ((self.left, left), (self.right, right)):
            sg = analysis.subgraph.index if subgraph is None else subgraph
            chart.set_view(analysis, plan, model_name=str(label), subgraph=sg)
        self._sides = (left, right)
        self._share_y()
        ld, rd = self.left.chart_data(), self.right.chart_data()
        self._outside = outside
        self._delta = compare_text(ld, rd, outside)
        self.delta_label.setText(self._delta + (f" — {note}" if note else ""))

    def clear(self, message: str = "") -> None:
        """Show nothing (with ``message`` in place of the delta line)."""
        self.left.clear()
        self.right.clear()
        self._sides = None
        self._delta, self._outside = "", None
        self.delta_label.setText(message)

    def delta_text(self) -> str:
        """The delta line shown (:func:`viewer.export.chart_data.compare_text`); "" when empty."""
        return self._delta

    def sides(self) -> tuple[Side, Side] | None:
        return self._sides

    def y_tops(self) -> tuple[float, float]:
        """Bytes at the top of each packing plot's visible range (equal after :meth:`set_views`)."""
        return self.left.view_range()[1][1], self.right.view_range()[1][1]

    def export(self, path: str, width: int = 2000, height: int = 900) -> None:
        """Write the pair as shown (colour mode) to a PNG or SVG
        (:func:`viewer.export.image.export_compare`).

        Raises
        ------
        viewer.errors.UsageError
            Unknown suffix, bad size; or nothing is shown.
        """
        from viewer.export.image import export_compare

        ld, rd = self.left.chart_data(), self.right.chart_data()
        if ld is None or rd is None:
            raise UsageError(f"{path}: nothing to compare (open a model and make a what-if edit first)")
        export_compare(ld, rd, path, width=int(width), height=int(height),
                       force=True, outside=self._outside)  # the save dialog asked before replacing a file

    def export_dialog(self, path: str | None = None) -> str | None:
        """Ask for a file (PNG or SVG by its suffix, 2000 x 900 px) and export the pair there;
        a failure is shown in a dialog. Returns the path written, or None."""
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export compare image", "compare.png",
                                                  "PNG image (*.png);;SVG image (*.svg)")
            if not path:
                return None
        try:
            self.export(path)
        except (ViewerError, OSError) as e:
            QMessageBox.warning(self, "Export failed", str(e))
            return None
        return path

    def set_color_mode(self, mode: str) -> None:
        """Colour both charts by tensor kind or producer op (see :meth:`PackingChart.set_color_mode`)."""
        self.left.set_color_mode(mode)
        self.right.set_color_mode(mode)
        self._share_y()

    # --- internals ----------------------------------------------------------------------------

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self._match_rows)
        return super().eventFilter(obj, event)

    def _match_rows(self) -> None:
        """Same title/legend heights on both sides: the packing plots get the same pixel height."""
        plots = [c.chart_plot() for c in (self.left, self.right)]
        if all(p is not None for p in plots):
            match_heights(plots)

    def _share_y(self) -> None:
        plots = [c.chart_plot() for c in (self.left, self.right)]
        if any(p is None for p in plots):
            return
        top = max(p.y_top() for p in plots)
        btop = max(max(int(p.data.breadth.max()) if len(p.data.breadth) else 0, p.data.lower_bound)
                   for p in plots)
        for p in plots:
            p.set_shared_top(top, btop)
        match_heights(plots)
