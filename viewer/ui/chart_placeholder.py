"""A minimal packing chart behind :class:`viewer.ui.chart.PackingChart`'s API.

The main window uses the real chart when ``viewer.ui.chart`` exists and this stand-in
otherwise, so the window works (and is tested) either way. It draws every planned tensor as
one rectangle (x: inclusive usage interval in operator indices, y: bytes in the arena) from
:func:`viewer.export.chart_data.build_chart_data`, in a single ``BarGraphItem``.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QVBoxLayout, QWidget

from viewer.export.chart_data import ChartData, build_chart_data


class PlaceholderChart(QWidget):
    """Stand-in packing chart with the same signals and methods as ``PackingChart``."""

    tensor_hovered = Signal(int)
    tensor_selected = Signal(int)
    operator_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._analysis = None
        self._plan = None
        self._model_name = "model"
        self._subgraph = 0
        self._color_mode = "kind"
        self._min_held = 0
        self._selected: int | None = None
        self._data: ChartData | None = None
        self.plot = pg.PlotWidget(background="w")
        self.plot.setLabel("bottom", "operator (execution order)")
        self.plot.setLabel("left", "arena offset (bytes)")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.scene().sigMouseClicked.connect(self._on_scene_clicked)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.plot)

    # --- API ----------------------------------------------------------------------------

    def set_view(self, analysis, plan, *, model_name: str = "model", subgraph: int = 0) -> None:
        """Draw ``plan`` of ``analysis``."""
        self._analysis, self._plan = analysis, plan
        self._model_name, self._subgraph = model_name, subgraph
        self._rebuild()
        self.reset_view()

    def clear(self) -> None:
        self._analysis = self._plan = self._data = None
        self._selected = None
        self.plot.clear()
        self.plot.setTitle("")

    def set_color_mode(self, mode: str) -> None:
        self._color_mode = mode
        self._rebuild()

    def set_min_held(self, n: int) -> None:
        self._min_held = int(n)
        self._rebuild()

    def select_tensor(self, tensor: int | None) -> None:
        self._selected = tensor
        self._rebuild()

    def reset_view(self) -> None:
        self.plot.enableAutoRange()

    def drawn_offsets(self) -> dict[int, int]:
        """Tensor -> drawn offset (bytes) of what is on screen."""
        if self._data is None:
            return {}
        return {int(t): int(y) for t, y in zip(self._data.tensor, self._data.y0)}

    def export(self, path: str, width: int, height: int) -> None:
        """Write the chart as PNG (or SVG) of ``width`` x ``height`` pixels."""
        if str(path).lower().endswith(".svg"):
            from pyqtgraph.exporters import SVGExporter

            SVGExporter(self.plot.plotItem).export(str(path))
            return
        img = QImage(QSize(width, height), QImage.Format.Format_ARGB32)
        img.fill(QColor("white"))
        old = self.size()
        self.resize(width, height)
        p = QPainter(img)
        self.render(p)
        p.end()
        self.resize(old)
        img.save(str(path))

    # --- drawing ------------------------------------------------------------------------

    def _rebuild(self) -> None:
        self.plot.clear()
        if self._analysis is None or self._plan is None:
            return
        d = build_chart_data(
            self._analysis, self._plan, color_by=self._color_mode,
            model_name=self._model_name, subgraph=self._subgraph,
        )
        self._data = d
        self.plot.setTitle(d.title)
        if len(d) == 0:
            return
        held = d.x1 - d.x0
        keep = held >= self._min_held if self._min_held > 0 else np.ones(len(d), bool)
        brushes = [pg.mkBrush(*d.palette[int(c)], 200 if k else 40) for c, k in zip(d.color, keep)]
        item = pg.BarGraphItem(
            x0=d.x0, x1=d.x1, y0=d.y0, y1=d.y1, brushes=brushes,
            pen=pg.mkPen((40, 40, 40, 120), width=0),
        )
        self.plot.addItem(item)
        if d.lower_bound:
            self.plot.addItem(pg.InfiniteLine(d.lower_bound, angle=0, pen=pg.mkPen("r", style=Qt.PenStyle.DashLine)))
        if self._selected is not None:
            row = d.row_of(self._selected)
            if row is not None:
                self.plot.addItem(pg.BarGraphItem(
                    x0=[d.x0[row]], x1=[d.x1[row]], y0=[d.y0[row]], y1=[d.y1[row]],
                    brush=pg.mkBrush(0, 0, 0, 0), pen=pg.mkPen("k", width=3),
                ))

    def _on_scene_clicked(self, ev) -> None:
        d = self._data
        if d is None or len(d) == 0:
            return
        pt = self.plot.plotItem.vb.mapSceneToView(ev.scenePos())
        x, y = pt.x(), pt.y()
        hit = np.nonzero((d.x0 <= x) & (x < d.x1) & (d.y0 <= y) & (y < d.y1))[0]
        if len(hit):
            t = int(d.tensor[hit[-1]])
            self.select_tensor(t)
            self.tensor_selected.emit(t)
        elif 0 <= x < d.num_ops:
            self.operator_clicked.emit(int(x))
