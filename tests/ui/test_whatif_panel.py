"""WhatIfPanel: editors per input, presets, keep aspect, batch, dtype, budget; and compare()."""

from __future__ import annotations

import pytest

from tests.whatif._graphs import model, op, subgraph, t
from viewer.ui.whatif_panel import WhatIfPanel
from viewer.whatif.budget import BudgetSettings, compare
from viewer.whatif.edits import WhatIfEdits


def two_inputs():
    tensors = [t(0, (1, 240, 320, 3), name="image"), t(1, (1, 240, 320, 3)), t(2, (1, 4), name="vec"), t(3, (1, 4))]
    ops = [op(0, "RELU", (0,), (1,)), op(1, "RELU", (2,), (3,))]
    return model(subgraph(tensors, ops, (0, 2), (1, 3)))


@pytest.fixture
def panel(qtbot):
    p = WhatIfPanel()
    qtbot.addWidget(p)
    p.set_model(two_inputs(), 0)
    return p


def test_one_editor_per_input_and_hw_only_for_images(panel):
    eds = panel.input_editors()
    assert [(e.position, e.name, e.is_image) for e in eds] == [(0, "image", True), (1, "vec", False)]
    assert panel.edits().is_empty()


def test_keep_aspect_and_the_emitted_edits(panel, qtbot):
    img = panel.input_editors()[0]
    with qtbot.waitSignal(panel.edits_changed) as sig:
        img.h.setValue(480)
    assert img.w.value() == 640  # 320 * 480 / 240
    assert sig.args[0] == WhatIfEdits(input_shapes={0: (1, 480, 640, 3)})
    img.keep_aspect.setChecked(False)
    with qtbot.waitSignal(panel.edits_changed) as sig:
        img.w.setValue(100)
    assert dict(sig.args[0].input_shapes) == {0: (1, 480, 100, 3)}


def test_presets(panel, qtbot):
    img = panel.input_editors()[0]
    k = img.presets.findData(512)
    with qtbot.waitSignal(panel.edits_changed) as sig:
        img.presets.activated.emit(k)
    assert dict(sig.args[0].input_shapes) == {0: (1, 512, 683, 3)}  # keep aspect: W follows 4:3
    img.keep_aspect.setChecked(False)
    with qtbot.waitSignal(panel.edits_changed) as sig:
        img.presets.activated.emit(img.presets.findData(224))
    assert dict(sig.args[0].input_shapes) == {0: (1, 224, 224, 3)}


def test_full_shape_editor_and_bad_text(panel, qtbot):
    vec = panel.input_editors()[1]
    vec.shape_edit.setText("1x16")
    with qtbot.waitSignal(panel.edits_changed) as sig:
        vec.shape_edit.editingFinished.emit()
    assert dict(sig.args[0].input_shapes) == {1: (1, 16)}
    vec.shape_edit.setText("1x16x2")
    with qtbot.assertNotEmitted(panel.edits_changed):
        vec.shape_edit.editingFinished.emit()
    assert "need 2 dimensions" in vec.error.text()


def test_batch_and_dtype(panel, qtbot):
    with qtbot.waitSignal(panel.edits_changed) as sig:
        panel.batch.setValue(4)
    assert sig.args[0].batch == 4
    with qtbot.waitSignal(panel.edits_changed) as sig:
        panel.dtype.setCurrentIndex(panel.dtype.findData("int8"))
    assert sig.args[0] == WhatIfEdits(batch=4, activation_dtype="int8")
    with qtbot.waitSignal(panel.edits_changed) as sig:
        panel.reset()
    assert sig.args[0].is_empty()


def test_budget_value_unit_runtime_and_weights(panel, qtbot):
    assert panel.budget().limit_bytes is None
    with qtbot.waitSignal(panel.budget_changed) as sig:
        panel.use_budget.setChecked(True)
    assert sig.args[0] == BudgetSettings(4 << 20, 0, "copied")
    with qtbot.waitSignal(panel.budget_changed) as sig:
        panel.limit.unit.setCurrentText("KiB")
    assert sig.args[0].limit_bytes == 4 << 10
    with qtbot.waitSignal(panel.budget_changed) as sig:
        panel.runtime.value.setValue(1.5)
    assert sig.args[0].runtime_bytes == 1536
    with qtbot.waitSignal(panel.budget_changed) as sig:
        panel.weights.setCurrentIndex(panel.weights.findData("mapped"))
    assert sig.args[0] == BudgetSettings(4096, 1536, "mapped")
    r = sig.args[0].report(arena_bytes=2000, weights_bytes=10_000)
    assert r.fits and r.used_bytes == 3536 and r.headroom_bytes == 560


def test_set_model_none_and_again(panel):
    panel.set_model(None)
    assert panel.input_editors() == [] and panel.edits().is_empty()
    panel.set_model(two_inputs())
    assert len(panel.input_editors()) == 2


def mlp():
    # x[1,4] -> FC(W1 100x4) -> h1[1,100] -> FC -> y1[1,4] -> FC(W3 90x4) -> h2[1,90] -> FC -> out[1,4]
    tensors = [t(0, (1, 4), name="x"), t(1, (100, 4), const=True), t(2, (1, 100), name="h1"),
               t(3, (4, 100), const=True), t(4, (1, 4)), t(5, (90, 4), const=True), t(6, (1, 90), name="h2"),
               t(7, (4, 90), const=True), t(8, (1, 4))]
    ops = [op(0, "FULLY_CONNECTED", (0, 1, -1), (2,)), op(1, "FULLY_CONNECTED", (2, 3, -1), (4,)),
           op(2, "FULLY_CONNECTED", (4, 5, -1), (6,)), op(3, "FULLY_CONNECTED", (6, 7, -1), (8,))]
    return model(subgraph(tensors, ops, (0,), (8,)))


def test_compare_reports_the_change_and_a_moved_widest_operator():
    from viewer.analysis.intervals import analyze
    from viewer.planning.naive import plan_naive
    from viewer.whatif.apply import apply_edits

    m = mlp()
    a0 = analyze(m.subgraphs[0])
    p0 = plan_naive(a0.problem())
    # Breadth before: op1 = x 16 + h1 400 + y1 16 = 432 (widest); op2 = 16 + 16 + 360 = 392.
    assert (a0.widest_op, a0.lower_bound_bytes) == (1, 432)
    e = apply_edits(m, 0, WhatIfEdits(tensor_dtypes={2: "int8"}))  # h1: 400 -> 100 B
    a1 = analyze(e.subgraph)
    p1 = plan_naive(a1.problem())
    c = compare(a0, p0, a1, p1)
    assert (c["lower_bound_before"], c["lower_bound_after"], c["lower_bound_delta"]) == (432, 392, -40)
    assert (c["widest_before"], c["widest_after"], c["widest_moved"]) == (1, 2, True)
    assert c["widest_after_op"] == "FULLY_CONNECTED"
    assert c["naive_delta"] == -300
    assert c["arena_before"] == p0.arena_bytes and c["arena_delta"] == p1.arena_bytes - p0.arena_bytes
    assert "widest operator moved: 1 FULLY_CONNECTED -> 2 FULLY_CONNECTED" in c["lines"]
    same = compare(a0, p0, a0, p0)
    assert same["arena_delta"] == 0 and same["arena_ratio"] == 1.0 and not same["widest_moved"]


def test_show_edits_sets_the_controls_without_emitting(panel, qtbot):
    img = panel.input_editors()[0]
    seen = []
    panel.edits_changed.connect(seen.append)
    applied = WhatIfEdits(input_shapes={0: (1, 480, 640, 3)}, batch=2, activation_dtype="float16")
    panel.show_edits(applied)
    assert (img.shape_edit.text(), img.h.value(), img.w.value()) == ("1x480x640x3", 480, 640)
    assert panel.edits() == applied
    panel.show_edits(None)
    assert (img.shape_edit.text(), img.h.value(), img.w.value()) == ("1x240x320x3", 240, 320)
    assert panel.edits().is_empty()
    assert seen == []


def test_verdict_line_colour_and_hidden_when_empty(panel):
    panel.set_verdict("over budget by 1.0 KiB (binding operator #0 RELU)", False)
    assert panel.verdict.isVisibleTo(panel) and "c62828" in panel.verdict.styleSheet()
    panel.set_verdict("fits, headroom 1.0 KiB", True)
    assert "1a7f37" in panel.verdict.styleSheet()
    panel.set_verdict("")
    assert not panel.verdict.isVisibleTo(panel)
