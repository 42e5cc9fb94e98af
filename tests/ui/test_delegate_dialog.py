"""Analysis > Memory under a delegate, offscreen, on a real model (real events; LiteRT measures)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt

from conftest import shared_model
from viewer.ui.main_window import MainWindow


@pytest.fixture
def window(qtbot, tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=s, measure=False)
    qtbot.addWidget(w)
    w.show()
    yield w
    if getattr(w, "_delegate_dialog", None) is not None:
        w._delegate_dialog.shutdown()
    w.runner.shutdown()


def _open(qtbot, w, path):
    shown = []
    w.view_changed.connect(lambda: shown.append(1))
    w.open_model(str(path))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)


def _cells(table, row):
    return [table.item(row, c).text() for c in range(table.columnCount())]


@pytest.mark.shared
def test_xnnpack_terms_listed_beside_the_cpu_arena(qtbot, window):
    w = window
    _open(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))
    w.delegate_action.trigger()  # Analysis > Memory under a delegate…
    dialog = w._delegate_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=5_000)
    assert not dialog.library_edit.isEnabled()  # XNNPACK needs no library
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.table.rowCount() >= 4, timeout=60_000)
    rows = {r[0]: r for r in (_cells(dialog.table, k) for k in range(dialog.table.rowCount()))}
    # LiteRT's own figures: the CPU arena beside XNNPACK and without it (tensor pointer spans)
    assert rows["tensor arena"][1:4] == ["149.0 KiB (152,552 B)", "yes", "measured"]
    assert rows["tensor arena without the delegate"][1:3] == ["1.6 MiB (1,655,808 B)", "no"]
    assert rows["delegate: XNNPACK setup"][3] == "measured" and "Pss_Anon" in rows["delegate: XNNPACK setup"][4]
    assert "took 64 of 65 operators" in dialog.summary.text()


@pytest.mark.shared
def test_a_missing_library_is_said_in_one_line(qtbot, window, tmp_path):
    w = window
    _open(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))
    w.delegate_action.trigger()
    dialog = w._delegate_dialog
    dialog.kind_combo.setFocus()
    qtbot.keyClick(dialog.kind_combo, Qt.Key.Key_Down)  # Delegate library (.so)
    assert dialog.library_edit.isEnabled()
    lib = tmp_path / "libgpu_delegate.so"
    qtbot.keyClicks(dialog.library_edit, str(lib))
    qtbot.keyClicks(dialog.options_edit, "backend=gpu")
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "no such delegate library" in dialog.summary.text(), timeout=30_000)
    assert dialog.table.rowCount() == 0 and "\n" not in dialog.summary.text()
