"""Run the real main window under an X server and report what the user sees, for
``tests/ui/test_window_x11.py`` (not a test module itself).

Usage: ``python tests/ui/x11_window_probe.py OUT_DIR`` with ``DISPLAY`` set. Opens the demo model
(measured by LiteRT, as by default, so the runtime's kernel temporaries are drawn), then writes, atomically:

- ``OUT_DIR/targets.json`` once the chart is drawn and the window is active: screen positions
  (global pixels) of the centres of a few rectangles with each tensor's tooltip text, of an empty
  spot of the packing plot and of the breadth curve at an operator;
- ``OUT_DIR/state.json`` every 100 ms: QToolTip's visibility, text, X window id and geometry, the window's
  active state, the selected tensor in the document and the table, the open popup menu's entries,
  the operator profile's title.

Exits when ``OUT_DIR/quit`` appears, or after 60 s.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, QSettings, QTimer
from PySide6.QtWidgets import QApplication, QToolTip

OUT = Path(sys.argv[1])


def write(name: str, obj) -> None:
    tmp = OUT / (name + ".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, OUT / name)


def global_pos(chart, scene_pos) -> tuple[int, int]:
    p = chart.view.viewport().mapToGlobal(chart.view.mapFromScene(scene_pos))
    return p.x(), p.y()


def targets(win) -> dict | None:
    """Pixel-exact hover targets, or None while the chart is not drawn or the window inactive."""
    chart = win.chart
    d, plot = chart.chart_data(), chart.chart_plot()
    if (d is None or plot is None or not win.isActiveWindow() or chart.rect_count() == 0
            or win.runner.busy or win.document.pending is not None):
        return None
    vp = chart.view.viewport()
    vb = plot.packing.getViewBox()
    n_model = len(win.document.response.analysis.subgraph.tensors)
    rects = []
    for row, t in enumerate(d.tensor.tolist()):
        cx, cy = (d.x0[row] + d.x1[row]) / 2, (d.y0[row] + d.y1[row]) / 2
        x, y = global_pos(chart, chart.scene_pos_of(float(cx), float(cy)))
        # The pixel the pointer will be on, mapped back the way the hover handler maps it.
        back = vb.mapSceneToView(chart.view.mapToScene(vp.mapFromGlobal(QPoint(x, y))))
        if chart.tensor_at(back.x(), back.y() * plot.y_scale) != t:
            continue  # covered by another rectangle (an in-place alias) or too thin to aim at
        height_px = (d.y1[row] - d.y0[row]) / plot.y_scale
        rects.append({"tensor": int(t), "x": x, "y": y, "text": chart.tooltip_text(int(t)),
                      "temporary": int(t) >= n_model, "height": float(height_px)})
    rects.sort(key=lambda r: -r["height"])
    (x0, x1), (y0, y1) = vb.viewRange()
    empty = None
    for fx in (0.97, 0.03, 0.5):
        p = QPointF(x0 + (x1 - x0) * fx, y0 + (y1 - y0) * 0.97)
        if chart.tensor_at(p.x(), p.y() * plot.y_scale) is None:
            empty = global_pos(chart, vb.mapViewToScene(p))
            break
    bvb = plot.breadth.getViewBox()
    (bx0, bx1), (by0, by1) = bvb.viewRange()
    op = int(d.widest_op)
    breadth = global_pos(chart, bvb.mapViewToScene(QPointF(op + 0.5, by0 + (by1 - by0) * 0.1)))
    return {"rects": rects, "empty": empty, "breadth": {"op": op, "x": breadth[0], "y": breadth[1]},
            "breadth_text": chart.breadth_tooltip_text(op)}


def state(win) -> dict:
    tip = next((w for w in QApplication.topLevelWidgets()
                if w.objectName() == "qtooltip_label" and w.isVisible()), None)
    popup = QApplication.activePopupWidget()
    menu = [a.text() for a in popup.actions()] if popup is not None and hasattr(popup, "actions") else []
    sel = win.document.selected if hasattr(win.document, "selected") else None
    return {
        "time": time.time(),
        "active": win.isActiveWindow(),
        "tip_visible": QToolTip.isVisible(),
        "tip_text": QToolTip.text(),
        "tip_handle": int(tip.windowHandle().winId()) if tip is not None and tip.windowHandle() else 0,
        "tip_geometry": [] if tip is None else [tip.x(), tip.y(), tip.width(), tip.height()],
        "selected": win.chart.selected_tensor(),
        "doc_selected": sel if isinstance(sel, int) or sel is None else None,
        "table_selected": win.table.selected_tensor(),
        "popup": menu,
        "profile": win.side.profile_label.text(),
    }


def main() -> int:
    config = OUT / "config"
    config.mkdir(exist_ok=True)
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, str(config))
    from viewer.ui.app import application, create_window

    app = application()
    win = create_window(None, measure=True)  # measured: with the runtime's kernel temporaries
    win.resize(1400, 860)
    win.move(40, 40)
    win.raise_()
    win.activateWindow()
    started = time.time()
    sent = False

    def tick() -> None:
        try:
            report()
        except Exception:  # a broken probe stops at once (the test shows its log)
            import traceback

            traceback.print_exc()
            app.exit(1)

    def report() -> None:
        nonlocal sent
        if (OUT / "quit").exists() or time.time() - started > 60:
            app.quit()
            return
        if not sent:
            found = targets(win)
            if found is not None:
                write("targets.json", found)
                sent = True
        write("state.json", state(win))

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(100)
    return int(app.exec())


if __name__ == "__main__":
    sys.exit(main())
