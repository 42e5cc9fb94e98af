"""File > Compare with another model…: a second model beside the first, on one y scale."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from tests.conftest import shared_model
from viewer.ui import main_window as main_window_module
from viewer.ui.main_window import MainWindow

pytestmark = pytest.mark.shared

FIRST = "coral_mobilenet_v1_0.25_128_quant.tflite"
SECOND = "mobilenet_v2_224_int8.tflite"


@pytest.fixture
def window(qtbot, tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=s, measure=False)
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.runner.shutdown()


def test_the_shortcut_opens_a_second_model_beside_the_first(window, qtbot, monkeypatch, tmp_path):
    first, second = shared_model(FIRST), shared_model(SECOND)
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    window.open_model(str(first))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    asked = []
    monkeypatch.setattr(main_window_module.QFileDialog, "getOpenFileName",
                        lambda *a, **k: (asked.append(a[1]) or str(second), ""))
    assert window.compare_model_action.isEnabled()
    assert not window.close_compare_model_action.isEnabled()
    qtbot.keyClick(window, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert asked == ["Compare with model"]
    cv = window.compare
    qtbot.waitUntil(lambda: cv.isVisible() and cv.sides() is not None
                    and "other:" in cv.right.chart_plot().title.text(), timeout=60_000)
    left_title = cv.left.chart_plot().title.text()
    right_title = cv.right.chart_plot().title.text()
    assert left_title.startswith(FIRST) and right_title.startswith(f"other: {SECOND}")
    assert cv.y_tops()[0] == pytest.approx(cv.y_tops()[1])  # one y scale
    # The larger model sets the scale; the delta line names both arenas.
    other_arena = window.document.other.plans[cv.sides()[1][1].planner].arena_bytes
    assert cv.y_tops()[0] >= other_arena
    assert "arena" in cv.delta_label.text()
    # Both charts lie inside the window, each a readable height.
    for chart in (cv.left, cv.right):
        g = chart.geometry()
        assert g.height() >= 300 and chart.mapTo(window, g.topLeft()).x() >= 0
    path = tmp_path / "window.png"  # for a reviewer: ARENA_VIEWER_SHOT=dir keeps it
    import os

    if os.environ.get("ARENA_VIEWER_SHOT"):
        path = os.path.join(os.environ["ARENA_VIEWER_SHOT"], "compare_models.png")
    qtbot.wait(300)  # let the layout settle, as a user would see it
    window.grab().save(str(path))
    assert os.path.getsize(path) > 10_000
    # Stop comparing: back to the baseline beside the shown model.
    assert window.close_compare_model_action.isEnabled()
    window.close_compare_model_action.trigger()
    assert window.document.other is None
    assert not window.close_compare_model_action.isEnabled()
    assert cv.sides()[0][2].startswith("baseline:")
    assert "other:" not in cv.right.chart_plot().title.text()


def test_f1_lists_every_shortcut_the_window_has(window):
    from PySide6.QtGui import QAction

    from viewer.ui.dialogs import SHORTCUTS

    listed = {k.strip() for keys, _ in SHORTCUTS for k in keys.split(" / ")}
    used = {a.shortcut().toString() for a in window.findChildren(QAction) if not a.shortcut().isEmpty()}
    assert used - {"Ctrl+Q"} <= listed, f"not in the F1 list: {sorted(used - listed)}"
