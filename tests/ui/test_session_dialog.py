"""Analysis > Dynamic-shape session, offscreen, on a dynamic-batch model built in code (real events)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.session_models import dynamic_chain
from viewer.ui.main_window import MainWindow


@pytest.fixture
def window(qtbot, tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=s, measure=False)
    qtbot.addWidget(w)
    w.show()
    yield w
    if getattr(w, "_session_dialog", None) is not None:
        w._session_dialog.shutdown()
    w.runner.shutdown()


def _open(qtbot, w, path):
    shown = []
    w.view_changed.connect(lambda: shown.append(1))
    w.open_model(str(path))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)


def _cells(table, row):
    return [table.item(row, c).text() for c in range(table.columnCount())]


def test_session_lists_litert_steps_with_the_held_arena(qtbot, window, tmp_path):
    w = window
    _open(qtbot, w, dynamic_chain(tmp_path))
    w.session_action.trigger()  # Analysis > Dynamic-shape session…
    dialog = w._session_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5_000)
    assert dialog.steps_edit.text() == "1x8x8x3, 2x8x8x3, 4x8x8x3"  # batches of the file's shape
    dialog.steps_edit.clear()
    qtbot.keyClicks(dialog.steps_edit, "4x8x8x3, 1x8x8x3, 16x8x8x3")
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 3, timeout=60_000)
    rows = [_cells(dialog.table, r) for r in range(3)]
    assert [r[1] for r in rows] == ["t0 4x8x8x3", "t0 1x8x8x3", "t0 16x8x8x3"]
    assert [r[6] for r in rows] == ["measured"] * 3
    assert [r[4] for r in rows] == ["", "", "yes"]  # batch 1 fits in batch 4's buffer
    assert rows[1][3] == rows[0][3] != rows[2][3]  # held: kept at batch 1, grown at 16
    assert "High-water mark: step 3" in dialog.summary.text()


def test_session_prediction_only_and_a_bad_step(qtbot, window, tmp_path):
    w = window
    _open(qtbot, w, dynamic_chain(tmp_path))
    w.session_action.trigger()
    dialog = w._session_dialog
    qtbot.mouseClick(dialog.measure_box, Qt.MouseButton.LeftButton)  # off: ours alone
    assert not dialog.measure_box.isChecked()
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 3, timeout=60_000)
    assert [_cells(dialog.table, r)[6] for r in range(3)] == ["predicted"] * 3
    assert dialog.summary.text().startswith("Predicted without the runtime")
    dialog.steps_edit.clear()
    qtbot.keyClicks(dialog.steps_edit, "1x8x8")
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "rank" in dialog.summary.text(), timeout=30_000)
    assert "dyn_chain.tflite" in dialog.summary.text()
