"""The new user's walkthrough (notes/newuser.md), the window's findings: one test per finding,
driving the window offscreen with real events and asserting what the user sees."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QDockWidget, QToolBar

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.whatif.tiling.report import versus_untiled

pytestmark = pytest.mark.shared


def _quiet_tiling(monkeypatch, w) -> None:
    """Our own tiling numbers only: no background search / LiteRT confirmation (minutes of CPU)."""
    monkeypatch.setattr(w.tiling, "start_search", lambda: None)
    monkeypatch.setattr(w.tiling._confirm, "submit", lambda *a, **k: None)


def _tick_show_tiled(qtbot, w) -> None:
    w.findChild(QDockWidget, "whatif_dock").raise_()
    panel = w.tiling.panel
    qtbot.waitUntil(panel.isVisible, timeout=5_000)
    w.whatif_scroll.ensureWidgetVisible(panel.show_tiled)
    box = panel.show_tiled
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))
    assert box.isChecked()


# --- #13: what-if state of the previous model -------------------------------------------------


def test_versus_untiled_words_the_ratio_both_ways():
    assert versus_untiled(100, 234) == "2.34x below untiled"
    assert versus_untiled(138_149_888, 130_859_008) == "1.06x above untiled"
    assert versus_untiled(5, 5) == "equal to untiled"


def test_open_resets_tiling_and_search_and_words_a_worse_peak(qtbot, window, monkeypatch):
    w = window
    _quiet_tiling(monkeypatch, w)
    open_and_wait(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))
    _tick_show_tiled(qtbot, w)
    assert "tiled 4x4 after #12" in w.chart.chart_data().title
    qtbot.keyClicks(w.table.search, "block_4")
    assert w.table.search.text() == "block_4"
    open_and_wait(qtbot, w, shared_model("unet_256.tflite"))
    # The new model opens untiled, unfiltered: the previous model's what-ifs are gone.
    assert not w.tiling.panel.show_tiled.isChecked() and w.tiling.view is None
    assert "tiled" not in w.chart.chart_data().title, w.chart.chart_data().title
    assert w.table.search.text() == "" and w.table.proxy.rowCount() == w.table.model.rowCount()
    # Tiling unet 4x4 after #12 raises the peak: said so, not "0.95x below".
    _tick_show_tiled(qtbot, w)
    text = w.tiling.panel.figures.text()
    assert "x above untiled" in text and "tiling does not help here" in text, text
    assert "below untiled" not in text


# --- #19: File > Open while comparing with another model ----------------------------------------


def test_open_ends_the_model_comparison_and_the_toggle_tells_the_truth(qtbot, window):
    w = window
    open_and_wait(qtbot, w, shared_model("mlperftiny_vww_mobilenet_int8.tflite"))
    shown = []
    w.document.events.connect("other_changed", shown.append)
    w.compare_with_model(str(shared_model("mlperftiny_vww_mobilenet_float.tflite")))
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    assert w.centre.currentWidget() is w.compare and w.document.other is not None
    bar = w.findChild(QToolBar, "view_toolbar")
    button = bar.widgetForAction(w.compare_action)
    assert not button.isChecked()  # "Compare with baseline" is not what is shown
    open_and_wait(qtbot, w, shared_model("dyn_hw.tflite"))
    assert w.document.other is None
    assert w.centre.currentWidget() is w.chart  # the new model alone, not beside the old other
    assert not button.isChecked() and not w.close_compare_model_action.isEnabled()


# --- #11: numbers in the Tensors table after a what-if -------------------------------------------


def _cell_shown(view, row: int, col: int) -> tuple[str, str]:
    """(the cell's text, what is painted in its width) with the delegate's own options."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QStyleOptionViewItem

    idx = view.model().index(row, col)
    opt = QStyleOptionViewItem()
    view.initViewItemOption(opt)
    view.itemDelegateForIndex(idx).initStyleOption(opt, idx)
    width = view.columnWidth(col) - 2 * (view.style().pixelMetric(view.style().PixelMetric.PM_FocusFrameHMargin) + 1)
    return opt.text, QFontMetrics(opt.font).elidedText(opt.text, opt.textElideMode, width)


def test_numbers_fit_after_a_resolution_whatif_and_never_lose_their_head(qtbot, window):
    from viewer.ui.tensor_table import COLUMNS

    w = window
    open_and_wait(qtbot, w, shared_model("dyn_hw.tflite"))
    w.findChild(QDockWidget, "whatif_dock").raise_()
    (ed,) = [e for e in w.whatif.input_editors() if e.is_image]
    shown = []
    w.view_changed.connect(lambda: shown.append(1))
    ed.h.setFocus()
    ed.h.lineEdit().selectAll()
    qtbot.keyClicks(ed.h.lineEdit(), "512")
    qtbot.keyClick(ed.h.lineEdit(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.document.edits is not None and w.document.edits.input_shapes
                    and w.runner.busy is False and bool(shown), timeout=120_000)
    view = w.table.view
    for col in ("shape", "bytes", "offset"):
        c = COLUMNS.index(col)
        for row in range(view.model().rowCount()):
            text, painted = _cell_shown(view, row, c)
            assert painted == text, (col, text, painted)  # re-fitted: nothing elided
    # A numeric column narrowed by the user loses its tail, never its head.
    c = COLUMNS.index("offset")
    view.setColumnWidth(c, 30)
    texts = [_cell_shown(view, r, c) for r in range(view.model().rowCount())]
    long = [(t, p) for t, p in texts if p != t]
    assert long and all(not p.startswith("…") and t.startswith(p.rstrip("…")) for t, p in long), long


# --- #18: Analysis > Measure with the LiteRT runtime ----------------------------------------------


def test_measure_toggle_re_analyses_at_once(qtbot, settings):  # noqa: F811
    from viewer.ui.main_window import MainWindow

    w = MainWindow(settings=settings, measure=True)
    qtbot.addWidget(w)
    w.show()
    try:
        resp = open_and_wait(qtbot, w, shared_model("mlperftiny_kws_dscnn_int8.tflite"))
        assert resp.probe is not None
        before = w.side.measured_label.text()
        assert "measurement is off" not in before
        assert w.measure_action.isChecked()
        with qtbot.waitSignal(w.view_changed, timeout=60_000):
            w.measure_action.trigger()  # what the menu item does
        assert not w.measure_action.isChecked() and w.response.probe is None
        assert "measurement is off" in w.side.measured_label.text(), w.side.measured_label.text()
        with qtbot.waitSignal(w.view_changed, timeout=60_000):
            w.measure_action.trigger()
        assert w.response.probe is not None
        assert "measurement is off" not in w.side.measured_label.text()
    finally:
        w.runner.shutdown()
        w.tiling.shutdown()


# --- #16: clicking the breadth curve -------------------------------------------------------------


def _breadth_point(chart, x: float):
    from PySide6.QtCore import QPointF

    vb = chart.chart_plot().breadth.getViewBox()
    y = float(sum(vb.viewRange()[1]) / 2)
    return chart.view.mapFromScene(vb.mapViewToScene(QPointF(x, y)))


def _in_view(scroll, widget) -> bool:
    """``widget`` (inside ``scroll``'s contents) has its top line on screen."""
    top = widget.mapTo(scroll.widget(), widget.rect().topLeft()).y() - scroll.verticalScrollBar().value()
    return 0 <= top and top + widget.fontMetrics().height() <= scroll.viewport().height()


def test_breadth_click_scrolls_to_the_profile_and_marks_the_operator(qtbot, window):
    w = window
    open_and_wait(qtbot, w, shared_model("mobilenet_v2_224_int8.tflite"))
    side = w.side
    qtbot.wait(200)  # the resize's re-layout of the chart
    assert w.chart.chart_plot().breadth_shown
    side.verticalScrollBar().setValue(0)
    assert not _in_view(side, side.profile_label), "needs a Summary taller than its dock"
    w.findChild(QDockWidget, "whatif_dock").raise_()  # even with the What if tab in front
    qtbot.mouseClick(w.chart.view.viewport(), Qt.MouseButton.LeftButton, pos=_breadth_point(w.chart, 20.5))
    assert side.profile_label.text().startswith("#20 ")
    qtbot.waitUntil(lambda: side.isVisible() and _in_view(side, side.profile_label), timeout=2_000)
    # The clicked operator is marked on the chart: its column outlined in both plots.
    assert w.chart.marked_operator == 20
    marks = [it for _, it in w.chart._overlays if it.opts.get("x0") is not None and list(it.opts["x0"]) == [20.0]]
    assert len(marks) == 2


# --- #22: the widest-operator band of a 1-operator graph -----------------------------------------


def test_one_operator_graph_band_tints_nothing(qtbot, window):
    from PySide6.QtGui import QColor

    from viewer.export.chart_scene import THEME

    w = window
    resp = open_and_wait(qtbot, w, shared_model("tfmicro_person_detect_vela.tflite"))
    assert resp.analysis.num_ops == 1
    qtbot.wait(100)
    chart = w.chart
    assert chart.widest_band() == (0.0, 1.0)  # the band spans the whole plot ...
    image = chart.view.grab().toImage()
    arena = chart.chart_data().arena_bytes
    # ... but the plot's background above the rectangles is not tinted (only the edges mark it)
    p = chart.view.mapFromScene(chart.scene_pos_of(0.5, arena * 1.04))
    assert QColor(image.pixel(p)).getRgb()[:3] == tuple(THEME["background"][:3]), QColor(image.pixel(p)).getRgb()
    # ... and the graph input's rectangle shows its own colour.
    rect = chart.view.mapFromScene(chart.scene_pos_of(0.5, arena * 0.5))
    before = QColor(image.pixel(rect)).getRgb()[:3]
    assert before != tuple(THEME["band"][:3])


# --- #9: the subgraph / signature selector -------------------------------------------------------


@pytest.mark.parametrize("name, pick, words", [
    ("litert_testdata_nested_while.tflite", 2, "2: while_body"),
    ("multi_out_sigs.tflite", 1, "signature split_unpack"),
])
def test_view_menu_and_summary_select_a_subgraph_or_signature(qtbot, window, name, pick, words):
    w = window
    resp = open_and_wait(qtbot, w, shared_model(name))
    (view,) = [a.menu() for a in w.menuBar().actions() if a.text() == "&View"]
    (entry,) = [a for a in view.actions() if a.text() == "&Subgraph / signature"]
    assert entry.isEnabled() and entry.menu() is w.subgraph_menu
    items = w.subgraph_menu.actions()
    assert len(items) == len(resp.model.subgraphs) and items[0].isChecked()
    assert w.side.subgraph_combo.isVisibleTo(w) and w.side.subgraph_row_label.text() == "Subgraph / signature"
    (target,) = [a for a in items if a.text().startswith(f"{pick}: ")]
    assert words in target.text(), target.text()
    with qtbot.waitSignal(w.view_changed, timeout=60_000):
        target.trigger()
    assert w.response.request.subgraph == pick
    assert f"subgraph {pick}" in w.chart.chart_data().title, w.chart.chart_data().title
    assert w.side.subgraph_combo.currentData() == pick
    assert [a.isChecked() for a in w.subgraph_menu.actions()].index(True) == pick
    # And back through the Summary's selector (the same list).
    with qtbot.waitSignal(w.view_changed, timeout=60_000):
        w.side.subgraph_combo.setCurrentIndex(0)
    assert w.response.request.subgraph == 0 and w.subgraph_menu.actions()[0].isChecked()


# --- #15: File > Export JSON, other subgraphs' arenas ---------------------------------------------


def test_json_export_labels_other_subgraphs_and_uses_the_measured_arenas(qtbot, settings, tmp_path,  # noqa: F811
                                                                          monkeypatch):
    import json

    from PySide6.QtWidgets import QFileDialog

    from viewer.ui.main_window import MainWindow

    w = MainWindow(settings=settings, measure=True)
    qtbot.addWidget(w)
    w.show()
    try:
        resp = open_and_wait(qtbot, w, shared_model("litert_testdata_nested_while.tflite"))
        fp = resp.footprint
        assert fp is not None and fp.other_subgraphs and {s.source for s in fp.other_subgraphs} == {"measured"}
        out = tmp_path / "r.json"
        (action,) = [a for a in w.menuBar().actions()[0].menu().actions() if a.text() == "Export &JSON…"]
        monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
        action.trigger()  # File > Export JSON…, the save dialog answered with ``out``
        r = json.loads(out.read_text())
        got = {e["subgraph"]: (e["arena_bytes"], e["source"]) for e in r["subgraphs_reached"]}
        assert got == {s.index: (s.arena_bytes, "measured") for s in fp.other_subgraphs}
        assert r["other_subgraphs_bytes"] == fp.other_subgraphs_bytes == sum(b for b, _ in got.values())
    finally:
        w.runner.shutdown()
        w.tiling.shutdown()


# --- #10: the budget while the tiled execution is shown ------------------------------------------


def test_budget_follows_the_tiled_footprint_as_check_tile_counts_it(qtbot, window, monkeypatch, capsys):
    import json

    from viewer.cli import main as cli

    w = window
    model = str(shared_model("mobilenet_v2_224_int8.tflite"))
    _quiet_tiling(monkeypatch, w)
    open_and_wait(qtbot, w, model)
    w.whatif.use_budget.setChecked(True)
    w.whatif.limit.unit.setCurrentText("MiB")
    w.whatif.limit.value.setValue(8.0)
    untiled = w.side.budget_label.text()
    assert "tiled" not in untiled
    _tick_show_tiled(qtbot, w)
    capsys.readouterr()
    cli(["check", model, "--budget", "8MiB", "--tile", "4x4@12", "--no-measure", "--json"])
    (arena,) = [t["bytes"] for t in json.loads(capsys.readouterr().out)["terms"] if t["name"] == "tensor arena"]
    text = w.side.budget_label.text()
    assert f"{arena:,}" in text and "tensor arena, tiled (" in text and "patches through operator #12" in text, text
    # Untiled again: the untiled footprint comes back.
    w.tiling.panel.show_tiled.setChecked(False)
    assert w.side.budget_label.text() == untiled


def test_best_split_draws_the_peak_vs_split_curves(qtbot, window, monkeypatch):
    w = window
    monkeypatch.setattr(w.tiling._confirm, "submit", lambda *a, **k: None)  # no LiteRT confirmation
    open_and_wait(qtbot, w, shared_model("mlperftiny_kws_dscnn_int8.tflite"))
    w.findChild(QDockWidget, "whatif_dock").raise_()
    panel = w.tiling.panel
    qtbot.waitUntil(panel.isVisible, timeout=5_000)
    assert panel.plot_stack.currentWidget() is panel.plot_placeholder  # nothing computed yet
    w.whatif_scroll.ensureWidgetVisible(panel.best)
    qtbot.mouseClick(panel.best, Qt.MouseButton.LeftButton)  # starts the search (a child process)
    qtbot.waitUntil(lambda: w.tiling.curve is not None, timeout=120_000)

    def drawn():
        curves = [c for c in panel.plot.getPlotItem().listDataItems() if c.getData()[0] is not None and len(c.getData()[0])]
        return panel.plot_stack.currentWidget() is panel.plot and curves

    curves = drawn()
    assert len(curves) >= 2, "one curve per grid"
    ys = [y for c in curves for y in c.getData()[1]]
    lo, hi = panel.plot.getPlotItem().getViewBox().viewRange()[1]
    assert min(ys) > 0 and lo < max(ys) <= hi and hi > 0  # not an empty -1..1 axis
    # Pressed again: the best split of the grid is shown tiled, the curves stay.
    grid = panel.settings()[0]
    qtbot.mouseClick(panel.best, Qt.MouseButton.LeftButton)
    assert panel.show_tiled.isChecked() and w.tiling.view is not None
    assert panel.split.value() == w.tiling.curve.best[grid].split
    assert len(drawn()) >= 2
