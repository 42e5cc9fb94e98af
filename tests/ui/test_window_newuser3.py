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
def test_compare_with_another_model_banner_shows_persistent_and_held(qtbot, window, monkeypatch, tmp_path):
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
    # The view's "Export image…" writes the same line above the pair.
    from viewer.ui import compare as compare_module

    svg = tmp_path / "pair.svg"
    monkeypatch.setattr(compare_module.QFileDialog, "getSaveFileName", lambda *a, **k: (str(svg), ""))
    qtbot.mouseClick(cv.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(svg.exists, timeout=30_000)
    assert "persistent 0 B" in svg.read_text() and "(arena + persistent)" in svg.read_text()


def _planner_of_row(table, row: int) -> str:
    return table.item(row, 0).data(Qt.ItemDataRole.UserRole)


def test_planner_table_keyboard_row_is_the_drawn_plan(qtbot, window):
    """#13: Tab into the Summary's planner table: the current row is the plan drawn; Down/Up
    draw the next/previous plan, Space and Return draw the current row's."""
    from viewer.resources import DEMO_MODEL, resource_path

    w = window
    open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    t = w.side.planner_table
    assert t.rowCount() >= 3
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)
    w.chart.setFocus()
    for _ in range(40):  # Tab along the focus chain until the planner table has the focus
        if QApplication.focusWidget() is t:
            break
        qtbot.keyClick(QApplication.focusWidget() or w, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is t
    title = lambda: w.chart.chart_plot().title.text()  # noqa: E731
    drawn = w.planner
    assert _planner_of_row(t, t.currentRow()) == drawn and f"— {drawn}: arena" in title()
    start = t.currentRow()
    down = (start + 1) % t.rowCount() if start + 1 < t.rowCount() else start - 1
    key = Qt.Key.Key_Down if down > start else Qt.Key.Key_Up
    qtbot.keyClick(t, key)
    want = _planner_of_row(t, down)
    qtbot.waitUntil(lambda: f"— {want}: arena" in title(), timeout=10_000)
    assert t.currentRow() == down and w.planner == want
    assert w.side.planner_combo.currentData() == want
    # Space and Return draw the current row (after the current row was moved without drawing).
    other = start
    t.selectionModel().blockSignals(True)
    t.setCurrentCell(other, 0)
    t.selectionModel().blockSignals(False)
    qtbot.keyClick(t, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: w.planner == _planner_of_row(t, other), timeout=10_000)
    assert f"— {_planner_of_row(t, other)}: arena" in title()


def test_find_then_return_selects_the_first_match_and_down_enters_the_rows(qtbot, window):
    """#9: Ctrl+F, type, Return: the first match is selected and the chart highlights it;
    Ctrl+F, Down: the focus moves into the filtered rows (first row current and selected)."""
    from viewer.resources import DEMO_MODEL, resource_path

    w = window
    open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    tab = w.table
    names = [tab.proxy.index(r, 1).data() for r in range(tab.proxy.rowCount())]
    name = names[len(names) // 2]  # a tensor in the middle of the table
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)
    qtbot.keyClick(w, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is tab.search
    qtbot.keyClicks(tab.search, name)
    first = tab.visible_tensors()[0]
    assert w.selected_tensor != first
    qtbot.keyClick(tab.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.selected_tensor == first, timeout=5_000)
    assert w.chart.selected_tensor() == first and tab.selected_tensor() == first
    assert QApplication.focusWidget() is tab.view
    # Down from the search box: into the rows.
    w.select_tensor(None)
    qtbot.keyClick(w, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is tab.search
    qtbot.keyClick(tab.search, Qt.Key.Key_Down)
    assert QApplication.focusWidget() is tab.view and tab.view.currentIndex().row() == 0
    qtbot.waitUntil(lambda: w.chart.selected_tensor() == first, timeout=5_000)


def _inside_viewport(side, widget) -> bool:
    vp = side.viewport()
    right = widget.mapTo(vp, widget.rect().topRight()).x()
    return right <= vp.width()


def test_summary_wraps_after_optimize_and_keeps_planner_numbers_visible(qtbot, window):
    """#6: Ctrl+Shift+O (a what-if planner's note on the Arena line) widened the Summary past the
    dock: the planner table's arena / gap columns and the sentences were cut at the right edge."""
    from viewer.document.state import OPTIMAL
    from viewer.resources import DEMO_MODEL, resource_path

    w = window
    w.resize(1400, 860)  # the default size
    open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=5_000)
    qtbot.keyClick(w, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: OPTIMAL in w.response.plans and w.planner == OPTIMAL, timeout=120_000)
    side, t = w.side, w.side.planner_table
    qtbot.waitUntil(lambda: "LiteRT does not use it" in side.arena_label.text(), timeout=5_000)
    qtbot.wait(50)  # let the layout settle (no timing asserted)
    assert side.widget().width() <= side.viewport().width()
    for col in (1, 2):  # the arena and gap columns lie inside the panel, with text
        x = t.columnViewportPosition(col) + t.columnWidth(col)
        assert t.viewport().mapTo(side.viewport(), t.viewport().rect().topLeft()).x() + x <= side.viewport().width()
        assert t.item(0, col).text()
    for lab in (side.arena_label, side.best_label, side.optimal_label):
        assert _inside_viewport(side, lab), lab.text()
