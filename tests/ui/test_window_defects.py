"""Issue 12: the window as a new user met it. One test per numbered defect, each driving the
window with real events and asserting what the user sees (offscreen)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QFontMetrics, QWheelEvent
from PySide6.QtWidgets import QApplication

from tests.conftest import shared_model
from tests.ui.test_main_window import SMALL, dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.resources import DEMO_MODEL, resource_path
from viewer.ui.tensor_table import COLUMNS

MOBILENET = "mobilenet_v2_224.tflite"


def wheel(widget, steps: int = -1) -> None:
    """A real wheel event over the middle of ``widget`` (negative: scroll down)."""
    pos = QPointF(widget.rect().center())
    ev = QWheelEvent(pos, QPointF(widget.mapToGlobal(pos.toPoint())), QPoint(0, 0), QPoint(0, 120 * steps),
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
                     False)
    QApplication.sendEvent(widget, ev)


# --- item 2: Reset edits ----------------------------------------------------------------------


def test_reset_edits_button_clears_the_per_tensor_dtype_edits(qtbot, window):
    base = open_and_wait(qtbot, window, resource_path(DEMO_MODEL))
    t = max(base.analysis.usages, key=lambda u: u.nbytes).tensor
    menu = window.chart.context_menu(t)
    (bf16,) = [a for a in menu.actions() if a.text() == "Store as bfloat16"]
    with qtbot.waitSignal(window.view_changed, timeout=60_000):
        bf16.trigger()
    assert f"tensor {t} bfloat16" in window.chart.chart_data().title
    with qtbot.waitSignal(window.view_changed, timeout=60_000):
        qtbot.mouseClick(window.whatif.reset_button, Qt.MouseButton.LeftButton)
    assert "what-if" not in window.chart.chart_data().title, window.chart.chart_data().title
    assert window.response.analysis.lower_bound_bytes == base.analysis.lower_bound_bytes
    assert window.document.tensor_dtypes == {}


# --- item 3: the wheel over the Planners combo box --------------------------------------------


def test_wheel_over_the_unfocused_planner_combo_does_not_switch_the_planner(qtbot, window):
    open_and_wait(qtbot, window, resource_path(DEMO_MODEL))
    combo = window.side.planner_combo
    before = (window.planner, combo.currentIndex())
    window.chart.setFocus()
    for steps in (-1, -1, 1):
        wheel(combo, steps)
    assert (window.planner, combo.currentIndex()) == before
    # The batch spin box of the what-if panel neither (it would re-plan).
    batch = window.whatif.batch.value()
    wheel(window.whatif.batch, 1)
    assert window.whatif.batch.value() == batch and window.runner.busy is False
    # With focus (the user clicked into it) the wheel works as usual.
    combo.setFocus()
    qtbot.waitUntil(combo.hasFocus, timeout=2000)
    wheel(combo, -1)
    assert combo.currentIndex() != before[1] and window.planner != before[0]


# --- item 8: clipped text ---------------------------------------------------------------------


def test_long_error_in_the_status_bar_is_readable_in_its_tooltip(qtbot, window):
    msg = "not measured: " + "RuntimeError: Encountered unresolved custom op: FancyOp. " * 8
    window.status_label.setText(msg)
    qtbot.wait(10)
    assert window.status_label.text() == msg
    shown = window.status_label.shown_text()
    assert shown != msg and shown.endswith("…")
    assert window.status_label.toolTip() == msg


def test_lower_bound_field_is_not_cut(qtbot, settings):
    from viewer.ui.main_window import MainWindow

    w = MainWindow(settings=settings, measure=True)  # measured: six lines, both bounds
    qtbot.addWidget(w)
    w.show()
    open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    qtbot.wait(50)
    for lab in (w.side.lower_label, w.side.measured_label, w.side.best_label):
        lines = lab.text().count("\n") + 1
        assert lab.height() >= QFontMetrics(lab.font()).lineSpacing() * lines, lab.text()
        assert lab.height() >= lab.heightForWidth(lab.width()), (lab.height(), lab.text())
    w.runner.shutdown()


@pytest.mark.shared
def test_tensor_name_column_keeps_the_distinctive_tail(qtbot, window):
    from PySide6.QtWidgets import QStyleOptionViewItem

    open_and_wait(qtbot, window, shared_model(MOBILENET))
    view = window.table.view
    idx = view.model().index(0, COLUMNS.index("name"))
    name = idx.data()
    assert name.startswith("mobilenetv2_1.00_224_1/"), name
    # The options the delegate paints the cell with: one line, elided on the left.
    opt = QStyleOptionViewItem()
    view.initViewItemOption(opt)
    view.itemDelegate().initStyleOption(opt, idx)
    assert not opt.features & QStyleOptionViewItem.ViewItemFeature.WrapText
    assert opt.textElideMode == Qt.TextElideMode.ElideLeft
    width = view.visualRect(idx).width() - 8
    shown = QFontMetrics(opt.font).elidedText(opt.text, opt.textElideMode, width)
    assert shown != name, "column wide enough: the test needs an elided name"
    assert shown.startswith("…") and name.endswith(shown[1:]), shown
    assert idx.data(Qt.ItemDataRole.ToolTipRole) == name


# --- item 10: shapes in the table -------------------------------------------------------------


def test_table_has_shape_and_dtype_columns(qtbot, window):
    resp = open_and_wait(qtbot, window, resource_path(DEMO_MODEL))
    m = window.table.model
    assert "shape" in COLUMNS and "dtype" in COLUMNS
    assert [m.headerData(i, Qt.Orientation.Horizontal) for i in range(m.columnCount())] == list(COLUMNS)
    u = max(resp.analysis.usages, key=lambda u: u.nbytes)
    t = resp.analysis.subgraph.tensors[u.tensor]
    row = m.row_of(u.tensor)
    assert m.index(row, COLUMNS.index("shape")).data() == "x".join(str(d) for d in t.shape)
    assert m.index(row, COLUMNS.index("dtype")).data() == t.dtype


# --- item 6: rescale fixed sizes in the window --------------------------------------------------


def test_resize_through_a_fixed_size_suggests_rescaling_and_the_checkbox_does_it(qtbot, window, dialogs_seen):
    base = open_and_wait(qtbot, window, shared_model(SMALL))  # a fixed 4x4 pool, then a RESHAPE
    panel = window.whatif
    assert panel.rescale.text() == "Rescale fixed sizes (estimated)" and not panel.rescale.isChecked()
    img = panel.input_editors()[0]
    with qtbot.waitSignal(window.open_failed, timeout=60_000) as failed:
        img.set_hw(256, 256)
    assert "cannot take the new input shape" in failed.args[0]
    assert 'tick "Rescale fixed sizes (estimated)"' in failed.args[0], failed.args[0]
    assert dialogs_seen[-1][0] == "What-if not applied" and "Rescale fixed sizes" in dialogs_seen[-1][1]
    img.set_hw(256, 256)  # the panel went back to 128x128: ask again, now with the checkbox
    with qtbot.waitSignal(window.view_changed, timeout=60_000):
        qtbot.mouseClick(panel.rescale, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.response.request.edits is not None
                    and window.response.request.edits.rescale_fixed_sizes, timeout=60_000)
    resp = window.response
    assert resp.estimated and dict(resp.request.edits.input_shapes) == {0: (1, 256, 256, 3)}
    assert resp.analysis.lower_bound_bytes > 3 * base.analysis.lower_bound_bytes
    assert any("rescaled" in n for n in resp.notes)
    assert "fixed sizes rescaled (estimated)" in window.chart.chart_data().title


# --- item 11: one rounding in the window, the CLI and the compare line ---------------------------


@pytest.mark.shared
def test_window_cli_and_compare_line_round_bytes_the_same(qtbot, window, capsys):
    from viewer.cli import main

    model = shared_model("unet_256.tflite")  # lower bound 25,952,256 B = 24.75 MiB
    resp = open_and_wait(qtbot, window, model)
    lb = resp.analysis.lower_bound_bytes
    assert lb == 25_952_256
    assert main(["plan", str(model), "--planner", "litert"]) == 0
    cli = capsys.readouterr().out
    lb_line = next(line for line in cli.splitlines() if line.strip().startswith("lower bound"))
    assert "24.8 MiB" in lb_line
    assert "24.8 MiB (25,952,256 B)" in window.side.lower_label.text()
    assert "lower bound 24.8 MiB" in window.chart.chart_data().title
    with qtbot.waitSignal(window.view_changed, timeout=60_000):
        window.whatif.dtype.setCurrentIndex(window.whatif.dtype.findData("float16"))
    window.set_compare_visible(True)
    assert "24.8 MiB →" in window.compare.delta_text(), window.compare.delta_text()
    assert "24.75" not in window.compare.delta_text() + window.side.lower_label.text()


# --- item 4: the chart is never cut off on the right ----------------------------------------------


def _assert_chart_inside_its_view(chart):
    from PySide6.QtCore import QRectF

    vp = QRectF(chart.view.viewport().rect())
    p = chart.chart_plot()
    for name in ("packing", "breadth", "legend", "title"):
        item = getattr(p, name)
        r = chart.view.mapFromScene(item.sceneBoundingRect()).boundingRect()
        assert r.left() >= 0 and r.right() <= vp.right() + 1, (name, r, vp)
    # The right border of the packing plot (its view box) and the last operator are shown.
    vb = chart.view.mapFromScene(p.packing.getViewBox().sceneBoundingRect()).boundingRect()
    assert vb.right() <= vp.right() + 1
    assert p.packing.getViewBox().viewRange()[0][1] >= p.data.num_ops


@pytest.mark.shared
def test_bodypix_at_the_default_size_shows_the_right_border_and_legend(qtbot, window):
    assert (window.width(), window.height()) == (1400, 860)
    open_and_wait(qtbot, window, shared_model("coral_bodypix_mnv1_512_decoder.tflite"))
    qtbot.wait(20)
    _assert_chart_inside_its_view(window.chart)


@pytest.mark.shared
def test_resized_right_after_opening_the_chart_follows(qtbot, window):
    """Maximised (here: resized larger) right after launch, then back: never cut off."""
    window.open_model(str(shared_model("unet_256.tflite")))
    window.resize(1900, 1040)
    qtbot.waitUntil(lambda: window.chart.chart_plot() is not None, timeout=60_000)
    qtbot.wait(50)
    _assert_chart_inside_its_view(window.chart)
    window.resize(1400, 860)
    qtbot.wait(50)
    _assert_chart_inside_its_view(window.chart)


# --- item 9: labels do not overlap -------------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.parametrize("model", ["unet_256.tflite", "mobilenet_v2_224.tflite", "coral_bodypix_mnv1_512_decoder.tflite"])
def test_arena_label_overlaps_no_other_label_nor_the_widest_band(qtbot, window, model):
    from PySide6.QtCore import QRectF

    resp = open_and_wait(qtbot, window, shared_model(model))
    for planner in resp.plans:
        window.set_planner(planner)
        qtbot.wait(10)
        p = window.chart.chart_plot()
        arena = p.arena_line.label.sceneBoundingRect()
        others = [p.band_label.sceneBoundingRect()]
        if p.lower_bound_line.label.isVisible():
            others.append(p.lower_bound_line.label.sceneBoundingRect())
        lo, hi = p.band.getRegion()
        vb = p.packing.getViewBox()
        band = vb.mapViewToScene(QRectF(lo, vb.viewRange()[1][0], hi - lo, vb.viewRange()[1][1])).boundingRect()
        others.append(band)
        for o in others:
            assert not arena.intersects(o), (planner, arena, o)
        # The lower bound is named on the arena's label (or the two are equal).
        assert "lower bound" in p.arena_line.label.toPlainText()


# --- item 5: a readable compare view -----------------------------------------------------------------


@pytest.mark.shared
def test_compare_view_is_readable_at_1600x1000(qtbot, window):
    from PySide6.QtCore import QRectF
    from PySide6.QtWidgets import QDockWidget

    window.resize(1600, 1000)
    open_and_wait(qtbot, window, shared_model("unet_256.tflite"))
    with qtbot.waitSignal(window.view_changed, timeout=60_000):
        window.whatif.dtype.setCurrentIndex(window.whatif.dtype.findData("float16"))
    window.compare_action.trigger()
    window.findChild(QDockWidget, "whatif_dock").raise_()
    qtbot.wait(50)
    cmp = window.compare
    assert cmp.isVisible() and cmp.delta_text().startswith("arena 24.8 MiB → 12.4 MiB")
    rects = []
    for chart in (cmp.left, cmp.right):
        p = chart.chart_plot()
        vb = p.packing.getViewBox().sceneBoundingRect()
        assert vb.height() >= 300, vb  # the packing plot itself, not the legends
        # Titles shown whole (wrapped, not elided); axis labels of one chart apart.
        assert "…" not in p.title.shown_text() and "lower bound" in p.title.shown_text()
        labels = [p.packing.getAxis("left").label, p.breadth.getAxis("left").label]
        a, b = (lab.sceneBoundingRect() for lab in labels)
        assert not a.intersects(b), (a, b)
        to_win = lambda r, c=chart: QRectF(c.view.mapTo(window, c.view.mapFromScene(r).boundingRect().topLeft()),
                                           r.size())
        rects += [to_win(a), to_win(b), to_win(p.title.sceneBoundingRect())]
    left, right = rects[:3], rects[3:]
    assert not any(x.intersects(y) for x in left for y in right)
    # The compare view takes the centre: the What if panel's rows stay whole.
    panel = window.whatif
    for w in (panel.weights, panel.reset_button, panel.rescale, panel.limit.value):
        assert w.isVisible() and w.visibleRegion().boundingRect() == w.rect(), w


def test_kernel_temporaries_have_their_runtime_shape_in_the_table(qtbot, settings):
    from viewer.ui.main_window import MainWindow

    w = MainWindow(settings=settings, measure=True)
    qtbot.addWidget(w)
    w.show()
    resp = open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    a = resp.analysis
    temps = [u for u in a.usages if u.tensor in a.temporaries_ops]
    assert temps, "the demo's convolutions have im2col temporaries"
    m = w.table.model
    for u in temps:
        shape = m.index(m.row_of(u.tensor), COLUMNS.index("shape")).data()
        assert shape != "-" and shape in a.tensor_name(u.tensor), (shape, a.tensor_name(u.tensor))
    w.runner.shutdown()


def test_column_widths_the_user_set_survive_a_whatif_and_refit_for_another_model(qtbot, window):
    open_and_wait(qtbot, window, resource_path(DEMO_MODEL))
    header = window.table.view.horizontalHeader()
    col = COLUMNS.index("bytes")
    fitted = header.sectionSize(col)
    header.resizeSection(col, fitted + 57)  # what dragging the header's edge does
    # A storage what-if re-plans and redraws the same tensors: the width the user chose stays.
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    from viewer.whatif.edits import WhatIfEdits

    window.document.set_panel_edits(WhatIfEdits(activation_dtype="float16"))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    assert window.document.edits is not None and window.document.edits.activation_dtype == "float16"
    assert header.sectionSize(col) == fitted + 57
    # Another model's tensors: the columns are fitted to them again.
    open_and_wait(qtbot, window, shared_model(SMALL))
    assert header.sectionSize(col) != fitted + 57
