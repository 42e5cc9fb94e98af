"""The Tiling section of the What if panel, offscreen, on mobilenet_v2_224_int8 (real events)."""

from __future__ import annotations

import pytest
import math

from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtWidgets import QDockWidget

from tests.conftest import shared_model
from viewer.ui.main_window import MainWindow

pytestmark = pytest.mark.shared
MODEL = "mobilenet_v2_224_int8.tflite"


@pytest.fixture
def window(qtbot, tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=s, measure=False)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.runner.shutdown()
    w.tiling.shutdown()


def _open(qtbot, w):
    shown = []
    w.view_changed.connect(lambda: shown.append(1))
    w.open_model(str(shared_model(MODEL)))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    w.findChild(QDockWidget, "whatif_dock").raise_()  # the What if tab in front
    qtbot.waitUntil(lambda: w.tiling.panel.isVisible(), timeout=5_000)


def _view_point(chart, x, y):
    return chart.view.mapFromScene(chart.scene_pos_of(x, y))


def test_grid_split_and_runtime_confirmation(qtbot, window):
    w = window
    _open(qtbot, w)
    panel = w.tiling.panel
    untiled_ops = w.chart.chart_data().num_ops
    panel.rows.setValue(2)
    panel.cols.setValue(2)
    w.whatif_scroll.ensureWidgetVisible(panel.show_tiled)
    box = panel.show_tiled
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))  # on the indicator
    assert panel.show_tiled.isChecked()
    view = w.tiling.view
    assert view is not None and view.plan.grid == (2, 2) and view.plan.split == 12
    # The chart draws the tiled execution: one patch's operators, then the tail's.
    assert w.chart.chart_data().num_ops == view.patch_ops + (untiled_ops - 13)
    assert "peak 883.9 KiB (905,088 B)" in panel.figures.text()
    # The runtime's confirmation follows (written models, LiteRT measures and stitches).
    qtbot.waitUntil(lambda: panel.runtime_line.text().startswith("LiteRT"), timeout=120_000)
    assert panel.runtime_line.text().startswith("LiteRT confirms: 4 signatures + tail, arenas equal")
    assert w.tiling.verification["measured_peak_bytes"] == 905_088
    # newuser F-1: the peak assumes the stages share one arena; as written all are resident
    v = w.tiling.verification
    assert "if the stages share one arena in turn" in panel.figures.text()
    assert "deployed with LiteRT as written (every stage's arena resident)" in panel.figures.text()
    assert f"{v['deployed_bytes']:,d} B deployed as written (all resident)" in panel.runtime_line.text()
    assert v["arenas_disjoint"] and v["deployed_bytes"] > 905_088


def test_right_click_split_here_and_compare(qtbot, window):
    w = window
    _open(qtbot, w)
    panel = w.tiling.panel
    panel.rows.setValue(2)
    panel.cols.setValue(2)
    panel.show_tiled.setChecked(True)
    a, plan = w.chart._analysis, w.chart._plan
    u = next(u for u in a.usages if u.first_op <= 5 <= u.last_op and u.nbytes > 100_000)
    pos = _view_point(w.chart, 5.5, plan.offsets[u.tensor] + u.nbytes / 2)
    qtbot.mouseMove(w.chart.view.viewport(), pos)
    qtbot.mouseClick(w.chart.view.viewport(), Qt.MouseButton.RightButton, pos=pos)
    op = math.floor(w.chart._data_point(w.chart.view.mapToScene(pos))[1])  # the operator under the click
    assert 4 <= op <= 6
    menu = w.chart._menu
    act = next(x for x in menu.actions() if x.text().startswith("Tiling: split here"))
    assert act.text() == f"Tiling: split here (patches through operator #{op})"
    act.trigger()
    menu.close()
    # An early operator of the drawn (tiled) timeline is the patch graph's: the split moves there.
    assert panel.split.value() == op and w.tiling.view.plan.split == op
    w.set_compare_visible(True)
    assert w.compare.isVisible()
    charts = w.compare.findChildren(type(w.chart))
    assert any(c._analysis is w.tiling.view.analysis for c in charts)  # the tiled run beside
    assert any(c._analysis is w.document.baseline.analysis or c._analysis is w.response.analysis
               for c in charts)  # the untiled one


def test_whole_input_tiling_in_the_window(qtbot, window):
    w = window
    _open(qtbot, w)
    p = w.tiling.panel
    p.tile.setValue(112)
    p.overlap.setValue(16)
    p.full_h.setValue(448)
    p.full_w.setValue(448)
    w.whatif_scroll.ensureWidgetVisible(p.whole_button)
    qtbot.mouseClick(p.whole_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "tiles for 448x448: 16" in p.whole_line.text(), timeout=60_000)
    assert "redundant compute" in p.whole_line.text()
