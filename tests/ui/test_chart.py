"""PackingChart: one rectangle per planned tensor, widest band, hover/click, plans, keys, export."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from conftest import shared_model
from tests.export.test_chart_data import plan_of, synthetic_analysis
from viewer.ui.chart import PackingChart


@pytest.fixture
def chart(qtbot):
    w = PackingChart()
    qtbot.addWidget(w)
    w.resize(1000, 700)
    w.show()
    qtbot.waitExposed(w)
    return w


def _view_point(chart: PackingChart, x: float, y: float) -> QPoint:
    """Widget (viewport) position of data point (x operators, y bytes) in the packing plot."""
    return chart.view.mapFromScene(chart.scene_pos_of(x, y))


def _breadth_point(chart: PackingChart, x: float) -> QPoint:
    from PySide6.QtCore import QPointF

    plot = chart.chart_plot().breadth
    y = float(np.mean(plot.getViewBox().viewRange()[1]))
    return chart.view.mapFromScene(plot.getViewBox().mapViewToScene(QPointF(x, y)))


def test_one_rectangle_per_planned_tensor_and_widest_band(chart, qtbot):
    a = synthetic_analysis()
    chart.set_view(a, plan_of(a, "greedy_by_size"), model_name="synthetic.tflite", subgraph=0)
    assert chart.rect_count() == len(a.usages) == 6
    assert chart.widest_band() == (float(a.widest_op), float(a.widest_op + 1))
    assert int(np.argmax(a.breadth)) == a.widest_op == 1
    # The packing plot gets most of the height, the breadth curve a strip under it.
    packing = chart.chart_plot().packing.getViewBox().sceneBoundingRect()
    breadth = chart.chart_plot().breadth.getViewBox().sceneBoundingRect()
    assert packing.height() > 0.5 * chart.height() and breadth.height() > 0.08 * chart.height()
    assert breadth.top() > packing.bottom()


def test_hover_and_click_resolve_to_the_tensor_under_the_mouse(chart, qtbot):
    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    # Tensor 1 ("a", 2048 B) spans operators 0..2: aim at its middle.
    u = a.usage(1)
    x, y = 1.5, plan.offsets[1] + u.nbytes / 2
    assert chart.tensor_at(x, y) == 1
    with qtbot.waitSignal(chart.tensor_hovered, timeout=2000) as hovered:
        qtbot.mouseMove(chart.view.viewport(), _view_point(chart, x, y))
    assert hovered.args == [1]
    assert chart.view.viewport().toolTip() == chart.tooltip_text(1)
    qtbot.wait(40)  # pyqtgraph drops mouse moves closer together than its frame interval
    with qtbot.waitSignal(chart.tensor_hovered, timeout=2000) as left:
        qtbot.mouseMove(chart.view.viewport(), _view_point(chart, 2.5, plan.arena_bytes * 1.08))
    assert left.args == [-1]
    tip = chart.tooltip_text(1)
    for part in ("<b>a</b>", "1x8x8x8", "float32", "2.0 KiB", "#0 CONV_2D",
                 "#1 DEPTHWISE_CONV_2D", "#2 ADD", "operators 0..2", "offset"):
        assert part in tip
    with qtbot.waitSignal(chart.tensor_selected, timeout=2000) as selected:
        qtbot.mouseClick(chart.view.viewport(), Qt.MouseButton.LeftButton,
                         pos=_view_point(chart, x, y))
    assert selected.args == [1]
    assert chart.selected_tensor() == 1
    # Producer column plus two consumer columns, in both plots, plus the outline.
    assert len(chart._overlays) == 2 * 2 + 1


def test_click_on_empty_area_or_breadth_curve_emits_the_operator(chart, qtbot):
    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    top = plan.arena_bytes * 1.08  # above every rectangle, below the title annotation
    assert chart.tensor_at(2.5, top) is None
    with qtbot.waitSignal(chart.operator_clicked, timeout=2000) as clicked:
        qtbot.mouseClick(chart.view.viewport(), Qt.MouseButton.LeftButton,
                         pos=_view_point(chart, 2.5, top))
    assert clicked.args == [2]
    with qtbot.waitSignal(chart.operator_clicked, timeout=2000) as clicked:
        qtbot.mouseClick(chart.view.viewport(), Qt.MouseButton.LeftButton,
                         pos=_breadth_point(chart, 3.5))
    assert clicked.args == [3]


def test_switching_plan_changes_drawn_offsets(chart):
    a = synthetic_analysis()
    naive, greedy = plan_of(a, "naive"), plan_of(a, "greedy_by_size")
    chart.set_view(a, naive, model_name="m", subgraph=0)
    first = chart.drawn_offsets()
    assert first == a.resolve_alias_offsets(naive.offsets)
    chart.set_view(a, greedy, model_name="m", subgraph=0)
    second = chart.drawn_offsets()
    assert second == a.resolve_alias_offsets(greedy.offsets)
    assert first != second
    assert chart.chart_plot().arena_line.value() * chart.chart_plot().y_scale == greedy.arena_bytes


def test_min_held_fades_short_lived_tensors_and_colour_mode(chart):
    a = synthetic_analysis()
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)
    chart.set_min_held(2)  # opaque: held across more than 2 operators
    held = {u.tensor: u.held_ops for u in a.usages}
    assert chart.chart_plot().item.faded_count() == sum(h <= 2 for h in held.values())
    chart.set_color_mode("op")
    assert chart.chart_data().color_by == "op"
    assert "CONV_2D" in [label for label, _ in chart.chart_data().legend]
    assert chart.chart_plot().item.faded_count() == sum(h <= 2 for h in held.values())
    chart.set_min_held(0)
    assert chart.chart_plot().item.faded_count() == 0


def test_keyboard_zoom_pan_and_reset(chart, qtbot):
    a = synthetic_analysis()
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)
    (x0, x1), (y0, y1) = chart.view_range()
    qtbot.keyClick(chart.view, Qt.Key.Key_Plus)
    (a0, a1), _ = chart.view_range()
    assert (a1 - a0) < (x1 - x0) * 0.9
    qtbot.keyClick(chart.view, Qt.Key.Key_Right)
    (b0, b1), _ = chart.view_range()
    assert b0 > a0
    qtbot.keyClick(chart.view, Qt.Key.Key_0)
    (c0, c1), (d0, d1) = chart.view_range()
    assert (c0, c1) == pytest.approx((x0, x1)) and (d0, d1) == pytest.approx((y0, y1))


def test_clear_and_select_nothing(chart):
    a = synthetic_analysis()
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)
    chart.select_tensor(2)
    assert chart.selected_tensor() == 2
    chart.select_tensor(None)
    assert chart._overlays == []
    chart.clear()
    assert chart.rect_count() == 0 and chart.drawn_offsets() == {} and chart.tensor_at(1, 1) is None
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)  # after clear(): full size again
    assert chart.chart_plot().packing.getViewBox().sceneBoundingRect().height() > 0.5 * chart.height()


def test_export_writes_the_requested_size(chart, tmp_path):
    a = synthetic_analysis()
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)
    chart.export(str(tmp_path / "w.png"), 720, 480)
    head = (tmp_path / "w.png").read_bytes()[:24]
    assert struct.unpack(">II", head[16:24]) == (720, 480)
    assert chart.view.size().width() > 0  # the on-screen chart is untouched


@pytest.mark.shared
def test_mobilenet_v2_one_rectangle_per_tensor_and_band_at_lower_bound(chart, qtbot):
    from viewer.planning.run import best_plan_name, run_planners
    from viewer.whatif.pipeline import prepare

    prep = prepare(shared_model("mobilenet_v2_224.tflite"), 0)
    a = prep.analysis
    plans = run_planners(a.problem(), ["naive", "greedy_by_size"])
    chart.set_view(a, plans["naive"], model_name="mobilenet_v2_224.tflite", subgraph=0)
    assert chart.rect_count() == len(a.usages)
    lo, hi = chart.widest_band()
    assert a.breadth[int(lo)] == a.lower_bound_bytes == a.breadth.max() and hi == lo + 1
    naive = chart.drawn_offsets()
    chart.set_view(a, plans[best_plan_name(plans)], model_name="m", subgraph=0)
    assert chart.drawn_offsets() != naive
    # Every drawn tensor is found by hit-testing at its own rectangle's centre (or an alias on top).
    d = chart.chart_data()
    for row in range(0, len(d), 7):
        if d.y1[row] > d.y0[row]:
            hit = chart.tensor_at((d.x0[row] + d.x1[row]) / 2, (d.y0[row] + d.y1[row]) / 2)
            assert hit is not None
            assert hit == d.tensor[row] or d.y0[d.row_of(hit)] == d.y0[row]


@pytest.mark.parametrize("width", [1100, 520])
def test_legend_is_a_row_above_the_plot_and_rewraps_on_resize(chart, qtbot, width):
    a = synthetic_analysis()
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)
    chart.set_color_mode("op")
    chart.resize(width, 650)
    qtbot.wait(30)
    plot = chart.chart_plot()
    legend = plot.legend.sceneBoundingRect()
    packing = plot.packing.getViewBox().sceneBoundingRect()
    assert not legend.intersects(packing)
    assert legend.bottom() <= packing.top() and legend.right() <= chart.width()
    assert packing.height() > 0.4 * chart.height()


def _menu_action(menu, text):
    hits = [a for a in menu.actions() if a.text() == text]
    assert hits, [a.text() for a in menu.actions()]
    return hits[0]


def test_right_click_on_a_rectangle_offers_storage_precisions(chart, qtbot):
    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="m", subgraph=0)
    qtbot.wait(50)
    x, y = 1.5, plan.offsets[1] + a.usage(1).nbytes / 2  # tensor 1 ("a", float32)
    qtbot.mouseMove(chart.view.viewport(), _view_point(chart, x, y))
    qtbot.mouseClick(chart.view.viewport(), Qt.MouseButton.RightButton, pos=_view_point(chart, x, y))
    menu = chart._menu
    assert menu is not None and menu.isVisible()
    texts = [act.text() for act in menu.actions() if act.text()]
    assert texts[1:6] == ["Store as float16", "Store as bfloat16", "Store as int8",
                          "Store as float32", "Reset to the model's dtype"]
    assert texts[6:] == ["Tiling: split here (patches through operator #1)"]  # the operator under the click
    assert _menu_action(menu, "Store as float32").isChecked()  # the model's own dtype
    assert not _menu_action(menu, "Reset to the model's dtype").isEnabled()
    with qtbot.waitSignal(chart.tensor_dtype_requested, timeout=2000) as req:
        _menu_action(menu, "Store as float16").trigger()
    assert req.args == [1, "float16"]
    menu.close()
    # With the what-if in force, the menu ticks it and offers the reset (empty dtype).
    chart.set_tensor_dtypes({1: "float16"})
    menu = chart.context_menu(1)
    assert _menu_action(menu, "Store as float16").isChecked()
    with qtbot.waitSignal(chart.tensor_dtype_requested, timeout=2000) as req:
        _menu_action(menu, "Reset to the model's dtype").trigger()
    assert req.args == [1, ""]
    # A kernel temporary is sized by its kernel: nothing to choose.
    menu = chart.context_menu(7)
    assert not _menu_action(menu, "Store as int8").isEnabled()
    assert "im2col" in menu.actions()[0].text() or "temporary" in menu.actions()[0].text()


def test_right_click_on_empty_area_opens_no_tensor_menu(chart, qtbot):
    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="m", subgraph=0)
    qtbot.wait(50)
    seen = []
    chart.tensor_dtype_requested.connect(lambda t, d: seen.append((t, d)))
    pos = _view_point(chart, 2.5, plan.arena_bytes * 1.08)
    qtbot.mouseClick(chart.view.viewport(), Qt.MouseButton.RightButton, pos=pos)
    assert chart._menu is None and seen == []
    vb_menu = chart.chart_plot().packing.getViewBox().menu  # pyqtgraph's own: zoom, export
    assert vb_menu.isVisible()
    vb_menu.close()


def test_tooltip_gives_the_runtime_name_of_a_kernel_temporary(chart):
    import dataclasses

    a = dataclasses.replace(synthetic_analysis(),
                            temporary_names={7: "#0 CONV_2D kernel temporary 0 (1x8x8x36 float32)"})
    chart.set_view(a, plan_of(a), model_name="m", subgraph=0)
    tip = chart.tooltip_text(7)
    assert "<b>#0 CONV_2D kernel temporary 0 (1x8x8x36 float32)</b> (tensor 7, temporary)" in tip
    assert "producer: #0 CONV_2D" in tip and "512 B" in tip


def test_hover_shows_the_tooltip_with_name_shape_dtype_and_bytes(chart, qtbot):
    """Issue 12 item 1: a real hover over a known rectangle shows QToolTip's text (the
    viewport's tooltip property alone never appeared: the graphics view eats the event)."""
    from PySide6.QtWidgets import QToolTip

    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    u = a.usage(1)
    QToolTip.hideText()
    qtbot.mouseMove(chart.view.viewport(), QPoint(2, 2))  # from elsewhere (a move to where the
    qtbot.wait(40)  # mouse already is sends nothing), then onto tensor 1's rectangle
    qtbot.mouseMove(chart.view.viewport(), _view_point(chart, 1.5, plan.offsets[1] + u.nbytes / 2))
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    text = QToolTip.text()
    assert text == chart.tooltip_text(1)
    for part in ("<b>a</b>", "shape 1x8x8x8, float32", "2.0 KiB", "operators 0..2"):
        assert part in text
    qtbot.wait(40)
    qtbot.mouseMove(chart.view.viewport(), _view_point(chart, 2.5, plan.arena_bytes * 1.08))
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=3000)


def test_tooltip_survives_the_tooltip_event_qt_sends_when_the_mouse_rests(chart, qtbot):
    """Issue 12 item 1 under a real X server: ~0.7 s after the mouse stops, Qt sends the
    viewport a ToolTip event; the graphics view answered it with QGraphicsScene.helpEvent,
    which found no item tooltip and hid ours. Offscreen Qt never sends it to an inactive
    window, so send the same event Qt's wake-up timer sends (tests/ui/test_window_x11.py
    does it with the real pointer)."""
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QToolTip

    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    vp = chart.view.viewport()
    QToolTip.hideText()
    qtbot.mouseMove(vp, QPoint(2, 2))
    qtbot.wait(40)
    pos = _view_point(chart, 1.5, plan.offsets[1] + a.usage(1).nbytes / 2)
    qtbot.mouseMove(vp, pos)
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    QCoreApplication.sendEvent(vp, QHelpEvent(QEvent.Type.ToolTip, pos, vp.mapToGlobal(pos)))
    qtbot.wait(600)  # past QToolTip's 300 ms hide delay
    assert QToolTip.isVisible() and QToolTip.text() == chart.tooltip_text(1)
    # Resting on empty chart area: the same event hides it.
    empty = _view_point(chart, 2.5, plan.arena_bytes * 1.08)
    QCoreApplication.sendEvent(vp, QHelpEvent(QEvent.Type.ToolTip, empty, vp.mapToGlobal(empty)))
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=3000)


def test_hovering_the_breadth_curve_shows_the_operator_and_its_breadth(chart, qtbot):
    from PySide6.QtWidgets import QToolTip

    a = synthetic_analysis()
    chart.set_view(a, plan_of(a, "greedy_by_size"), model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    QToolTip.hideText()
    qtbot.mouseMove(chart.view.viewport(), QPoint(2, 2))
    qtbot.wait(40)
    op = a.widest_op
    qtbot.mouseMove(chart.view.viewport(), _breadth_point(chart, op + 0.5))
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    text = QToolTip.text()
    assert text == chart.breadth_tooltip_text(op)
    breadth = int(a.breadth[op])
    assert f"<b>#{op} {a.op_name(op)}</b> (the widest operator)" in text.split("<br>")[0]
    assert f"({breadth:,d} B)" in text and f"{len(a.operator_profile(op))} tensors live" in text
    qtbot.wait(40)  # to the next operator's column: the text follows
    qtbot.mouseMove(chart.view.viewport(), _breadth_point(chart, op + 1.5))
    qtbot.waitUntil(lambda: QToolTip.text() == chart.breadth_tooltip_text(op + 1), timeout=3000)


def test_tooltip_comes_back_on_the_next_move_after_a_click_closed_it(chart, qtbot):
    """Qt closes any tooltip on a mouse press (and on a wheel zoom); the next move over the same
    rectangle shows it again instead of leaving it closed until the tensor changes."""
    from PySide6.QtWidgets import QToolTip

    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    vp = chart.view.viewport()
    QToolTip.hideText()
    qtbot.mouseMove(vp, QPoint(2, 2))
    qtbot.wait(40)
    y = plan.offsets[1] + a.usage(1).nbytes / 2
    qtbot.mouseMove(vp, _view_point(chart, 1.5, y))
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    qtbot.mouseClick(vp, Qt.MouseButton.LeftButton, pos=_view_point(chart, 1.5, y))
    qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=3000)
    assert chart.selected_tensor() == 1
    qtbot.wait(40)
    qtbot.mouseMove(vp, _view_point(chart, 1.7, y))  # still tensor 1
    # At once, on the move itself (delivered synchronously), not ~0.7 s later through Qt's
    # ToolTip event once the mouse rests.
    assert QToolTip.isVisible() and QToolTip.text() == chart.tooltip_text(1)


def test_tooltip_shows_each_field_on_one_line(chart, qtbot):
    """Qt word-wraps a rich tooltip to a narrow width; each field (the name with its shape,
    the kernel temporary's explanation...) stays on one line: the tooltip is as tall as its
    lines."""
    from PySide6.QtWidgets import QApplication, QToolTip

    a = synthetic_analysis()
    plan = plan_of(a, "greedy_by_size")
    chart.set_view(a, plan, model_name="synthetic.tflite", subgraph=0)
    qtbot.wait(50)
    QToolTip.hideText()
    qtbot.mouseMove(chart.view.viewport(), QPoint(2, 2))
    qtbot.wait(40)
    u = next(u for u in a.usages if u.kind == "temporary")  # its explanation is a long line
    t = u.tensor
    qtbot.mouseMove(chart.view.viewport(),
                    _view_point(chart, (u.first_op + u.last_op + 1) / 2, plan.offsets[t] + u.nbytes / 2))
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    label = next(w for w in QApplication.topLevelWidgets()
                 if w.objectName() == "qtooltip_label" and w.isVisible())
    lines = QToolTip.text().count("<br>") + 1
    assert lines >= 7
    spacing = label.fontMetrics().lineSpacing()  # the bold name line is no taller
    # Its lines plus the frame's margins (a few px), not one wrapped line more.
    assert label.height() - lines * spacing < spacing, (label.height(), lines, spacing)


def _long_chain(n_ops: int):
    """A chain of ``n_ops`` CONV_2D operators with varied tensor sizes, analysed."""
    from viewer.analysis.intervals import analyze
    from viewer.model.types import Operator, Subgraph, Tensor

    sizes = np.random.default_rng(3).integers(1, 64, n_ops + 1) * 64
    tensors = tuple(Tensor(i, f"t{i}", (int(s),), (int(s),), "int8", int(s)) for i, s in enumerate(sizes))
    ops = tuple(Operator(k, "CONV_2D", 3, None, 1, (k,), (k + 1,)) for k in range(n_ops))
    return analyze(Subgraph(0, "main", tensors, ops, (0,), (n_ops,)))


def test_a_long_graphs_breadth_curve_follows_the_view_and_shows_every_operator_zoomed_in(chart, qtbot):
    a = _long_chain(20_000)
    chart.set_view(a, plan_of(a, "greedy_by_size"), model_name="chain", subgraph=0)
    qtbot.wait(50)
    plot = chart.chart_plot()
    px = plot.breadth.getViewBox().width()
    curve = plot.breadth_curve
    # Zoomed out: at most 4 steps per pixel, the peak kept (20,000 operators on ~900 px).
    assert 0 < len(curve.yData) <= 4 * px + 2
    assert curve.yData.max() * plot.breadth_scale == a.breadth.max()
    # Zoomed in on 100 operators: every operator is its own step, at its breadth.
    plot.packing.setXRange(5000, 5100, padding=0)
    qtbot.wait(50)
    x, y = curve.xData, curve.yData * plot.breadth_scale
    inside = (x[:-1] >= 5000) & (x[1:] <= 5100)
    assert np.array_equal(x[:-1][inside], np.arange(5000, 5100))
    assert np.array_equal(y[inside], a.breadth[5000:5100])
    # Back home: thinned again.
    chart.reset_view()
    qtbot.wait(50)
    assert len(curve.yData) <= 4 * px + 2
