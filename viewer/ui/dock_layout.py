"""How the window shares its area between the chart and the docks.

The chart keeps at least :data:`CHART_MIN` pixels whenever the window has room for it (a small
window squeezes the docks, never the chart to a legend over empty axes), and the Tensors dock
shows at least :data:`TABLE_ROWS` rows whenever the chart can spare them (a dock restored from
an earlier, smaller window grows back). A size the user gave a dock is kept otherwise.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QDockWidget

#: The chart area keeps at least this size (pixels) while the window can give it.
CHART_MIN = QSize(360, 300)
#: Rows the Tensors dock shows at least, when the chart keeps :data:`CHART_MIN`.
TABLE_ROWS = 8
#: The Tensors dock never gets less than this many rows' height from the balancing.
TABLE_MIN_ROWS = 2


def table_rows_height(table, rows: int) -> int:
    """Pixels of the Tensors dock's widget that show ``rows`` rows: search box, header, rows,
    frame and the horizontal scroll bar's height."""
    view = table.view
    row = view.verticalHeader().defaultSectionSize()
    chrome = (table.search.sizeHint().height() + view.horizontalHeader().sizeHint().height()
              + view.horizontalScrollBar().sizeHint().height() + 2 * view.frameWidth() + 12)
    return int(chrome + rows * row)


def balance_docks(w) -> None:
    """Resize the Tensors and Summary docks of main window ``w`` so the chart keeps
    :data:`CHART_MIN` and the table shows :data:`TABLE_ROWS` rows where both fit."""
    centre = w.centralWidget()
    table = w.findChild(QDockWidget, "table_dock")
    if centre is None or table is None or not w.isVisible():
        return
    if table.isVisible() and not table.isFloating():
        dock_extra = table.height() - table.widget().height()  # its title bar
        avail = centre.height() + table.height()
        want = table_rows_height(w.table, TABLE_ROWS) + dock_extra
        least = table_rows_height(w.table, TABLE_MIN_ROWS) + dock_extra
        h = max(table.height(), want)
        h = max(min(h, avail - CHART_MIN.height()), least)
        if abs(h - table.height()) > 1:
            w.resizeDocks([table], [h], Qt.Orientation.Vertical)
    side = [d for d in (w.findChild(QDockWidget, n) for n in ("side_dock", "whatif_dock"))
            if d is not None and d.isVisible() and not d.isFloating()]
    if side:
        dock = side[0]
        avail = centre.width() + dock.width()
        width = max(min(dock.width(), avail - CHART_MIN.width()), dock.minimumSizeHint().width())
        if abs(width - dock.width()) > 1:
            w.resizeDocks([dock], [width], Qt.Orientation.Horizontal)
