"""The window's runtime selector: TFLite Micro's rules and planners, offscreen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait  # noqa: F401 - the fixture
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


def test_each_runtime_headlines_its_own_plan_and_labels_others_what_if(qtbot, window):
    """newuser F-0: the chart title and Summary's Arena line show the runtime's own plan by
    default (litert / tflm_greedy); another planner is labelled a what-if, in check's words."""
    open_and_wait(qtbot, window, shared_model("mlperftiny_vww_mobilenet_int8.tflite"))
    assert window.document.planner == "litert"
    title, arena = window.chart._data.title, window.side.arena_label.text()
    assert " litert: arena " in title and "what-if" not in title and "what-if" not in arena
    window.set_planner("greedy_by_size")
    want = "what-if: greedy_by_size's layout; LiteRT does not use it"
    assert want in window.chart._data.title and want in window.side.arena_label.text()
    assert _switch_to_tflm(qtbot, window) == []
    assert window.document.planner == "tflm_greedy"  # not the smaller greedy_by_size (63.0 KiB)
    title, arena = window.chart._data.title, window.side.arena_label.text()
    assert "tflm_greedy: arena 72.0 KiB" in title and "73,728 B" in arena
    assert "what-if" not in title and "what-if" not in arena
    window.set_planner("greedy_by_size")
    want = ("what-if: greedy_by_size's layout; TFLM does not use it unless it is written into "
            "the model (arena-viewer offline-plan)")
    assert want in window.chart._data.title and want in window.side.arena_label.text()
    assert "63.0 KiB" in window.chart._data.title


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


def _switch_to_tflm(qtbot, window):
    shown, failed = [], []
    window.view_changed.connect(lambda: shown.append(1))
    window.open_failed.connect(failed.append)
    window.runtime_combo.setFocus()
    qtbot.keyClick(window.runtime_combo, Qt.Key.Key_Down)  # LiteRT -> TFLite Micro
    qtbot.waitUntil(lambda: bool(shown or failed), timeout=60_000)
    return failed


def test_vela_under_tflm_shows_its_offline_plan(qtbot, window, dialogs_seen, tmp_path, monkeypatch):
    """Vela's offline plan aliases scratch and scratch_fast: TFLM's plan, not an error."""
    from viewer.ui import file_actions

    open_and_wait(qtbot, window, shared_model("tfmicro_person_detect_vela.tflite"))
    assert _switch_to_tflm(qtbot, window) == [] and dialogs_seen == []
    resp = window.response
    assert window.runtime_combo.currentData() == "tflm" and resp.request.runtime == "tflm"
    assert resp.plans["tflm_greedy"].arena_bytes == 74464 == resp.analysis.lower_bound_bytes
    assert window.document.planner == "tflm_greedy"  # the offline plan TFLM keeps, by default
    assert "tflm_greedy: arena 72.7 KiB" in window.chart._data.title
    status = window.status_label.text()  # one line, naming TFLM's head
    assert "\n" not in status and "TFLite Micro: head 74,464 B" in status, status
    window.set_planner("tflm_greedy")
    assert "74,464 B" in window.side.arena_label.text()
    assert window.side.measured_box.title() == "Measured (TFLite Micro runtime)"
    assert "TFLite Micro: head 74,464 B" in window.side.measured_label.text()
    # weights in flash, as check --runtime tflm counts them unless --weights copied
    assert window.whatif.weights.currentData() == "mapped"
    assert window.whatif.weights.currentText() == "in flash (not counted)"
    assert "in flash" in window.side.weights_label.text()
    # Save with this plan refuses to replace the model's better offline plan with an online one
    window.set_planner("greedy_by_size")
    out = tmp_path / "vela_replanned.tflite"
    monkeypatch.setattr(file_actions, "_ask_save", lambda *a: str(out))
    window.save_offline_plan_action.trigger()
    assert not out.exists()
    assert "already carries an offline plan" in dialogs_seen[-1][1] and "74,464 B" in dialogs_seen[-1][1]


def test_a_failed_switch_puts_the_selector_back(qtbot, window, dialogs_seen, monkeypatch):
    from viewer.document import tflm_work
    from viewer.errors import ViewerError

    open_and_wait(qtbot, window, shared_model("tfmicro_hello_world_int8.tflite"))
    assert window.side.measured_box.title() == "Measured (LiteRT runtime)"

    def refuse(*a, **k):
        raise ViewerError("x.tflite: TFLM planning failed")
    monkeypatch.setattr(tflm_work, "compute_tflm", refuse)
    assert _switch_to_tflm(qtbot, window) == ["x.tflite: TFLM planning failed"]
    assert window.runtime_combo.currentData() == "litert" == window.document.runtime
    assert window.response.request.runtime == "litert"
    assert window.whatif.weights.currentData() == "copied"
    assert dialogs_seen and "TFLM planning failed" in dialogs_seen[-1][1]


@pytest.mark.skipif(not __import__("viewer.runtime.tflm_probe", fromlist=["x"]).tflm_available(),
                    reason="tflite-micro not installed")
def test_measured_tflm_view_and_budget_are_checks(qtbot, tmp_path, dialogs_seen):
    """keyword_scrambled: TFLM's head 672 B with 14 scratch buffers, tail and prepare-time extra
    measured; the window's budget counts check's tensor_arena_size (18,080 B), so 17,000 B is
    over budget in both (the head + tail alone, 15,168 B, would say "fits")."""
    from viewer.cli import main
    from viewer.model.reader import load_model
    from viewer.runtime.tflm_probe import measure_tflm

    path = shared_model("tfmicro_keyword_scrambled.tflite")
    oracle = measure_tflm(load_model(path))
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), measure=True)
    qtbot.addWidget(w)
    w.show()
    try:
        open_and_wait(qtbot, w, path)
        assert _switch_to_tflm(qtbot, w) == []
        fp = w.response.footprint
        assert (fp.head_bytes, fp.tail_bytes) == (oracle.head_bytes, oracle.tail_bytes) == (672, oracle.tail_bytes)
        text = w.side.measured_label.text()
        assert f"head 672 B, tail {oracle.tail_bytes:,d} B, tensor_arena_size 18,080 B" in text
        assert main(["check", str(path), "--runtime", "tflm", "--budget", "17000B", "--json"]) == 1
        w.whatif.use_budget.setChecked(True)
        w.whatif.limit.unit.setCurrentText("B")
        w.whatif.limit.value.setValue(17000)
        assert w.whatif.verdict.text().startswith("over budget by 1,080 B") or \
            w.whatif.verdict.text().startswith("over budget by 1.1 KiB"), w.whatif.verdict.text()
    finally:
        w.runner.shutdown()


@pytest.mark.skipif(not __import__("viewer.runtime.tflm_probe", fromlist=["x"]).tflm_available(),
                    reason="tflite-micro not installed")
def test_tflm_abort_shows_the_planned_view_with_one_line(qtbot, tmp_path, dialogs_seen):
    """mobilenet_v2_224_int8 aborts tflite-micro (SIGABRT) in the child: the window stays up,
    shows TFLM's planned head and says in one line that TFLM aborted (cannot tell)."""
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), measure=True)
    qtbot.addWidget(w)
    w.show()
    try:
        open_and_wait(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))
        assert _switch_to_tflm(qtbot, w) == [] and dialogs_seen == []
        assert w.runtime_combo.currentData() == "tflm" and not w.response.footprint.measured
        text = w.side.measured_label.text()
        assert "TFLM aborted (SIGABRT)" in text and "scratch and persistent not measured" in text
        w.whatif.use_budget.setChecked(True)
        w.whatif.limit.value.setValue(64)  # MiB: the head fits, the tail is unknown
        assert w.whatif.verdict.text().startswith("cannot tell"), w.whatif.verdict.text()
    finally:
        w.runner.shutdown()


def test_a_cancelled_switch_puts_the_selector_back(qtbot, window, monkeypatch):
    from viewer.document import tflm_work
    from viewer.errors import PlanCancelled

    open_and_wait(qtbot, window, shared_model("tfmicro_hello_world_int8.tflite"))

    def cancel(*a, **k):
        raise PlanCancelled("cancelled")
    monkeypatch.setattr(tflm_work, "compute_tflm", cancel)
    with qtbot.waitSignal(window.work_cancelled, timeout=60_000):
        window.runtime_combo.setFocus()
        qtbot.keyClick(window.runtime_combo, Qt.Key.Key_Down)
    assert window.runtime_combo.currentData() == "litert" == window.document.runtime
