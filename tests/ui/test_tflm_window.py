"""The window's runtime selector: TFLite Micro's rules and planners, offscreen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.conftest import shared_model
from tests.ui.test_main_window import open_and_wait
from viewer.ui.main_window import MainWindow

pytestmark = pytest.mark.shared


@pytest.fixture
def window(qtbot, tmp_path):
    s = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=s, measure=False)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.runner.shutdown()


def test_runtime_selector_switches_to_tflm_plans(qtbot, window):
    resp = open_and_wait(qtbot, window, shared_model("mlperftiny_vww_mobilenet_int8.tflite"))
    assert "tflm_greedy" not in resp.plans
    combo = window.runtime_combo
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # LiteRT -> TFLite Micro, as a user does
    qtbot.waitUntil(lambda: bool(shown) and "tflm_greedy" in window.response.plans, timeout=60_000)
    plans = window.response.plans
    assert plans["tflm_greedy"].arena_bytes == 73728  # TFLM's head for this model
    window.set_planner("tflm_greedy")
    assert "73,728 B" in window.side.arena_label.text()
    assert window.document.runtime == "tflm"
    # the Summary shows both runtimes' arenas
    text = window.side.measured_label.text()
    assert "TFLite Micro: head 73,728 B" in text and "LiteRT arena 82,944 B" in text


def test_save_with_this_plan_writes_tflms_offline_entry(qtbot, window, tmp_path, monkeypatch):
    from viewer.model.offline_plan import read_offline_offsets
    from viewer.ui import file_actions

    open_and_wait(qtbot, window, shared_model("mlperftiny_vww_mobilenet_int8.tflite"))
    assert not window.save_offline_plan_action.isEnabled()  # LiteRT: nothing to write
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    window.runtime_combo.setFocus()
    qtbot.keyClick(window.runtime_combo, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: bool(shown) and "tflm_greedy" in window.response.plans, timeout=60_000)
    window.set_planner("greedy_by_size")
    out = tmp_path / "vww_offline.tflite"
    monkeypatch.setattr(file_actions, "_ask_save", lambda *a: str(out))
    assert window.save_offline_plan_action.isEnabled()
    window.save_offline_plan_action.trigger()
    offs = read_offline_offsets(out)
    plan = window.response.plans["greedy_by_size"]
    assert {i: o for i, o in enumerate(offs) if o >= 0} == {
        u.tensor: plan.offsets[u.tensor] for u in window.response.analysis.usages}
    assert "offline plan" in window.status_label.text()
