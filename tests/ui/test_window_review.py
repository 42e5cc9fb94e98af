"""What a reviewer of the window's screenshots noticed (notes/window3.md, item 7): driven
offscreen with real models, asserting the text on screen."""

from __future__ import annotations

import pytest

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait, settings, window  # noqa: F401

pytestmark = pytest.mark.shared


def test_summary_says_a_size_under_one_kib_once(qtbot, window):
    """nested_while: "68 B", not "68 B (68 B)" (the exact bytes are added from 1 KiB up)."""
    w = window
    open_and_wait(qtbot, w, shared_model("litert_testdata_nested_while.tflite"))
    arena, weights = w.side.arena_label.text(), w.side.weights_label.text()
    assert arena.startswith("68 B") and "(68 B)" not in arena, arena
    assert weights.startswith("0 B") and "(0 B)" not in weights, weights
    open_and_wait(qtbot, w, shared_model("coral_mobilenet_v1_0.25_128_quant.tflite"))
    assert "(147,456 B)" in w.side.arena_label.text()  # from 1 KiB: both


def test_chart_title_names_the_signature_of_a_multi_signature_model(qtbot, window):
    """multi_out_sigs: the title said "subgraph 0" only, while the Summary's selector said
    "signature second"; a one-signature model keeps its title as it was."""
    w = window
    open_and_wait(qtbot, w, shared_model("multi_out_sigs.tflite"))
    title = w.chart.chart_plot().title.text()
    # (the temporaries' words follow the name, as export's title has them: newuser3 #18)
    assert title.startswith("multi_out_sigs.tflite (signature second) — ") and "— subgraph 0 —" in title, title
    w.side.subgraph_combo.setCurrentIndex(1)
    qtbot.waitUntil(lambda: "split_unpack" in w.chart.chart_plot().title.text(), timeout=60_000)
    title = w.chart.chart_plot().title.text()
    assert "(signature split_unpack) — " in title and "— subgraph 1 —" in title, title
    open_and_wait(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))  # serving_default only
    assert "signature" not in w.chart.chart_plot().title.text()


def test_chart_title_says_a_dynamic_input_is_drawn_at_its_placeholder_shape(qtbot, window):
    """dyn_hw (input 1x?x?x3): the chart said "arena 832 B" as if that were the model's arena;
    check says "cannot tell" until the H x W is given. The title says what the figure is for, and
    drops it once What if sets the shape."""
    from PySide6.QtCore import Qt

    w = window
    open_and_wait(qtbot, w, shared_model("dyn_hw.tflite"))
    title = w.chart.chart_plot().title.text()
    assert "dynamic input: drawn at its placeholder shape 1x1x1x3; set it in What if" in title, title
    ed = w.whatif._inputs[0]
    with qtbot.waitSignal(w.view_changed, timeout=60_000):
        ed.shape_edit.setFocus()
        ed.shape_edit.selectAll()
        qtbot.keyClicks(ed.shape_edit, "1x64x64x3")
        qtbot.keyClick(ed.shape_edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "placeholder" not in w.chart.chart_plot().title.text(), timeout=60_000)
    open_and_wait(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))  # a dynamic batch only
    assert "placeholder" not in w.chart.chart_plot().title.text()


def test_tensors_sized_during_invoke_are_said_so_not_as_a_runtime_failure(qtbot, settings):
    """litert_testdata_dynamic_shapes, measured: 17 tensors are sized during Invoke. The status bar
    said "measured, but the runtime's offsets cannot be drawn: …: the runtime placed no bytes for
    tensors [25, 26, …]", which reads as a failure; it says why the runtime's placement is not drawn."""
    from viewer.ui.main_window import MainWindow

    w = MainWindow(settings=settings, measure=True)
    qtbot.addWidget(w)
    w.show()
    try:
        open_and_wait(qtbot, w, shared_model("litert_testdata_dynamic_shapes.tflite"))
        status = w.status_label.text()  # the whole line (its tooltip when elided)
        assert "sizes" in status and "during Invoke" in status and "re-stated plan" in status, status
        assert "placed no bytes" not in status, status
    finally:
        w.runner.shutdown()
