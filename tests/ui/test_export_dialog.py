"""File > Export image's dialog takes the sizes the export takes (one constant:
viewer.export.image.MIN_SIZE..MAX_SIZE, PNG_MAX_PIXELS), and says why when it cannot: it used to
accept a height of 150 the export then refused (stops.txt)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from tests.ui.test_main_window import dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.export.image import MAX_SIZE, MIN_SIZE, check_output
from viewer.resources import DEMO_MODEL, resource_path


def _type(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Tab)  # leave the box: Qt corrects an out-of-range value


def _in_export_dialog(qtbot, w, act) -> None:
    """Ctrl+E opens the modal dialog; ``act(dialog)`` runs inside it, then it is cancelled."""
    done = []

    def run():
        dlg = QApplication.activeModalWidget()
        if dlg is None:  # not shown yet (a loaded machine): look again
            QTimer.singleShot(50, run)
            return
        dlg.activateWindow()  # keyboard focus moves inside the dialog, as for a user
        qtbot.waitUntil(dlg.isActiveWindow, timeout=5_000)
        try:
            act(dlg)
        finally:
            done.append(dlg)
            dlg.reject()

    QTimer.singleShot(0, run)
    w.activateWindow()
    qtbot.keyClick(w, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(done), timeout=10_000)


def test_export_dialog_sizes_are_the_exports_and_a_refused_png_says_why(qtbot, window, tmp_path):
    w = window
    open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    seen = {}

    def act(dlg):
        ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
        seen["limits"] = dlg.limits.text()
        _type(qtbot, dlg.height_spin, "150")
        seen["height_150"] = dlg.height_spin.text()
        seen["ranges"] = [(b.minimum(), b.maximum()) for b in (dlg.width_spin, dlg.height_spin)]
        _type(qtbot, dlg.width_spin, str(MAX_SIZE))
        _type(qtbot, dlg.height_spin, str(MAX_SIZE))
        seen["png_big"] = (ok.isEnabled(), dlg.problem.isVisible(), dlg.problem.text())
        dlg.format_combo.setCurrentIndex(dlg.format_combo.findData("svg"))
        seen["svg_big"] = (ok.isEnabled(), dlg.problem.isVisible())
        seen["values"] = dlg.values()

    _in_export_dialog(qtbot, w, act)
    assert f"{MIN_SIZE}..{MAX_SIZE} px per side" in seen["limits"] and "8192x8192" in seen["limits"]
    # 150 is below what export takes: the box shows the nearest size export takes, not 150.
    assert seen["height_150"] == f"{MIN_SIZE} px"
    assert seen["ranges"] == [(MIN_SIZE, MAX_SIZE)] * 2
    check_output(tmp_path / "a.png", MIN_SIZE, MIN_SIZE)  # the dialog's smallest, export accepts
    # A 16384x16384 PNG: OK disabled, the reason on screen (export would refuse it).
    enabled, visible, text = seen["png_big"]
    assert not enabled and visible and "above the PNG limit" in text and "SVG" in text, text
    assert seen["svg_big"] == (True, False)  # SVG has no pixel limit
    width, height, fmt = seen["values"]
    check_output(tmp_path / "a.svg", width, height)
