"""newuser3's window findings (#18, #5, #13, #9, #6, #17), driven with real key and mouse events;
each test asserts what the user sees: the exported file's title, the banner, the table's current row."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QFileDialog

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.ui.main_window import MainWindow


@pytest.fixture
def measured(qtbot, tmp_path):
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), measure=True)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.runner.shutdown()


def _export_svg_with_ctrl_e(qtbot, w, out, monkeypatch) -> str:
    """Ctrl+E, SVG in the size dialog, OK; the save dialog answers ``out``. Returns the file's text."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    done = []

    def run():
        dlg = QApplication.activeModalWidget()
        if dlg is None:
            QTimer.singleShot(50, run)
            return
        dlg.format_combo.setCurrentIndex(dlg.format_combo.findData("svg"))
        qtbot.mouseClick(dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
        done.append(dlg)

    QTimer.singleShot(0, run)
    w.activateWindow()
    qtbot.keyClick(w, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(done) and out.exists(), timeout=30_000)
    return out.read_text()


@pytest.mark.shared
def test_window_export_says_whether_kernel_temporaries_are_in_it(qtbot, measured, tmp_path, monkeypatch):
    """#18: Ctrl+T off, Ctrl+E: the SVG's title says "tensors only, kernel temporaries NOT included",
    export's own words; with them on, "kernel temporaries included (measured)"."""
    w = measured
    open_and_wait(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))
    qtbot.waitUntil(lambda: w.temporaries_action.isEnabled(), timeout=60_000)
    on = _export_svg_with_ctrl_e(qtbot, w, tmp_path / "on.svg", monkeypatch)
    assert "kernel temporaries included (measured)" in on
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)
    assert w.temporaries_action.isChecked()
    qtbot.keyClick(w, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not w.response.temporaries_shown, timeout=10_000)
    off = _export_svg_with_ctrl_e(qtbot, w, tmp_path / "off.svg", monkeypatch)
    assert "tensors only, kernel temporaries NOT included" in off
    assert "kernel temporaries included" not in off
    assert "tensors only, kernel temporaries NOT included" in w.chart.chart_plot().title.text()


@pytest.mark.shared
def test_compare_with_another_model_banner_shows_persistent_and_held(qtbot, window, monkeypatch):
    """#5: File > Compare with another model (Ctrl+Shift+M), mobilenet_v2_224 vs its fp16 twin:
    the banner said "arena 6.3 MiB → 6.3 MiB (±0 B)" and nothing of the fp16 model's 13.3 MiB of
    persistent DEQUANTIZE outputs; now it says persistent and held (compare's columns)."""
    from viewer.ui import main_window as main_window_module
    from viewer.units import format_bytes

    w = window
    open_and_wait(qtbot, w, shared_model("mobilenet_v2_224.tflite"))
    other = shared_model("mobilenet_v2_224_fp16.tflite")
    monkeypatch.setattr(main_window_module.QFileDialog, "getOpenFileName", lambda *a, **k: (str(other), ""))
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)
    qtbot.keyClick(w, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    cv = w.compare
    qtbot.waitUntil(lambda: cv.isVisible() and "other:" in cv.right.chart_plot().title.text(), timeout=120_000)
    text = cv.delta_label.text()
    fp = w.document.other.footprint
    assert fp.persistent_bytes > 13_000_000  # the DEQUANTIZE outputs
    assert f"persistent 0 B → {format_bytes(fp.persistent_bytes)}" in text, text
    arena_l, arena_r = cv.left.chart_data().arena_bytes, cv.right.chart_data().arena_bytes
    assert f"held {format_bytes(arena_l)} → {format_bytes(arena_r + fp.persistent_bytes)}" in text, text
    assert cv.delta_label.isVisible() and cv.delta_label.wordWrap()
