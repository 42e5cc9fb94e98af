"""Issue 12, the layout and consistency defects a new user still found (newuser.md item 12 and
8): one test each, driving the window offscreen and asserting what the user sees."""

from __future__ import annotations

import json
import re

import pytest
from PySide6.QtCore import Qt

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.ui.main_window import MainWindow
from viewer.ui.workers import MEASURED

NESTED_WHILE = "litert_testdata_nested_while.tflite"


@pytest.fixture
def measured_window(qtbot, settings):  # noqa: F811
    w = MainWindow(settings=settings, measure=True)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.runner.shutdown()


def _table_gaps(w) -> dict[str, str]:
    t = w.side.planner_table
    return {t.item(r, 0).data(Qt.ItemDataRole.UserRole): t.item(r, 2).text() for r in range(t.rowCount())}


# --- gap figures: one definition in the chart label, the Measured box, the table, CLI, JSON ----


def test_gap_figures_agree_in_the_chart_the_measured_box_and_the_planner_table(
        qtbot, measured_window, tmp_path, capsys):
    w = measured_window
    resp = open_and_wait(qtbot, w, shared_model(NESTED_WHILE))
    a = resp.analysis
    assert a.lower_bound_bytes == 8  # the tiny WHILE graph: 64-byte alignment dominates
    label = w.chart.chart_plot().arena_line.label.toPlainText()
    gaps = _table_gaps(w)
    assert set(gaps.values()) == {"+0.0 %"}, gaps
    # Chart label: the same +0.0 % and says which bound it is.
    assert "+0 B (0.0%) over the 64-byte-aligned bound 68 B (lower bound 8 B)" in label, label
    assert "750" not in label
    if resp.probe is not None and resp.probe.ok:  # the Measured box says it the same way
        text = w.side.measured_label.text()
        assert "over the 64-byte-aligned bound 68 B (lower bound 8 B)" in text, text
        assert "750" not in text
        assert gaps.get(MEASURED, "+0.0 %") == "+0.0 %"
    assert "aligned bound" in w.side.best_label.text()
    # The CLI's plan table and JSON: the same figure.
    from viewer.cli import main

    assert main(["plan", str(shared_model(NESTED_WHILE)), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {p["gap_pct"] for p in report["plans"].values()} == {0.0}
    assert report["aligned_lower_bound_bytes"] == 68


# --- the window's JSON export is the report plan --json prints ---------------------------------


def test_window_json_export_has_the_fields_plan_json_has(qtbot, window, tmp_path, capsys):  # noqa: F811
    path = shared_model(NESTED_WHILE)
    open_and_wait(qtbot, window, path)
    out = tmp_path / "w.json"
    assert window.export_json(str(out)) == str(out)
    got = json.loads(out.read_text())
    from viewer.cli import main

    assert main(["plan", str(path), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for key in ("persistent_bytes", "aligned_lower_bound_bytes", "subgraphs_reached"):
        assert key in got, key
        assert got[key] == cli[key], key
    assert got["aligned_lower_bound_bytes"] == 68 and got["persistent_bytes"] == cli["persistent_bytes"]


# --- kernel temporaries: the sum and the raise of the lower bound, worded like the CLI --------


def test_kernel_temporaries_sum_and_raise_are_worded_like_the_cli(qtbot, measured_window, capsys):
    w = measured_window
    open_and_wait(qtbot, w, shared_model("unet_256.tflite"))
    text = w.side.lower_label.text()
    assert "kernel temporaries add" not in text  # a "sum" smaller than its largest part
    m = re.search(r"kernel temporaries: (\d+) tensors, ([\d.]+ MiB) in all, largest ([\d.]+ MiB)", text)
    assert m, text
    assert "they raise the lower bound by 100.0 MiB" in text
    from viewer.cli import main

    assert main(["plan", str(shared_model("unet_256.tflite")), "--measure"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "kernel temporaries, in all" in ln)
    assert m.group(2) in line and f"{m.group(1)} measured, largest {m.group(3)}" in line, line
    assert "raise the lower bound by 100.0 MiB" in line


# --- chart geometry: titles with their figures, labels inside the plot and apart -------------


def _label_rects(plot):
    """(plot area, band label, arena label) scene rectangles of a ChartPlot."""
    vb = plot.packing.getViewBox().sceneBoundingRect()
    return vb, plot.band_label.sceneBoundingRect(), plot.arena_line.label.sceneBoundingRect()


def _assert_labels_inside_and_apart(plot):
    vb, band, arena = _label_rects(plot)
    assert plot.band_label.isVisible()
    assert band.left() >= vb.left() + 2 and band.right() <= vb.right() - 2, (band, vb)
    assert arena.left() >= vb.left() and arena.right() <= vb.right(), (arena, vb)
    assert band.top() >= vb.top() - 1 and arena.top() >= vb.top() - 1, (band, arena, vb)
    assert not band.intersects(arena), (band, arena)


def test_compare_at_the_default_size_shows_the_figures_and_keeps_labels_inside(qtbot, window):  # noqa: F811
    window.resize(1400, 860)
    open_and_wait(qtbot, window, shared_model("mobilenet_v2_224.tflite"))
    window.compare_action.trigger()
    qtbot.wait(50)
    for chart in (window.compare.left, window.compare.right):
        p = chart.chart_plot()
        shown = p.title.shown_text()
        # The figures are on whole lines: only the file name may be elided.
        last = shown.splitlines()[-1]
        assert "…" not in last and "arena 6.3 MiB, lower bound 6.3 MiB" in last, shown
        assert "…" not in shown.replace(shown.splitlines()[0], ""), shown
        _assert_labels_inside_and_apart(p)


def test_widest_operator_label_keeps_a_margin_from_the_left_border(qtbot, window):  # noqa: F811
    window.resize(1400, 860)
    open_and_wait(qtbot, window, shared_model("tfmicro_person_detect_int8.tflite"))
    qtbot.wait(20)
    p = window.chart.chart_plot()
    assert p.data.widest_op == 2  # near the start: the label is pushed to the left border
    vb, band, _ = _label_rects(p)
    assert band.left() >= vb.left() + 3, (band, vb)  # was flush (or cut) against it
    _assert_labels_inside_and_apart(p)


def test_small_window_keeps_a_usable_plot_and_separate_axis_titles(qtbot, window):  # noqa: F811
    window.resize(800, 500)
    open_and_wait(qtbot, window, shared_model("unet_256.tflite"))
    qtbot.waitUntil(lambda: window.chart.view.viewport().height() >= 250, timeout=5000)
    qtbot.wait(20)
    p = window.chart.chart_plot()
    vp = window.chart.view.sceneRect() if False else window.chart.view.mapToScene(
        window.chart.view.viewport().rect()).boundingRect()
    vb = p.packing.getViewBox().sceneBoundingRect()
    assert vb.height() >= 120 and vb.width() >= 200, vb  # was 0.5 px tall: legend only
    assert vp.contains(vb), (vb, vp)
    assert "lower bound 24.8 MiB" in p.title.shown_text().splitlines()[-1]
    titles = [p.packing.getAxis("left").label]
    if p.breadth_shown:
        titles.append(p.breadth.getAxis("left").label)
        assert not titles[0].sceneBoundingRect().intersects(titles[1].sceneBoundingRect())
    for t in titles:  # each title within its own plot's height
        r, ax = t.sceneBoundingRect(), t.parentItem().sceneBoundingRect()
        assert not t.isVisible() or (r.top() >= ax.top() - 1 and r.bottom() <= ax.bottom() + 1), (r, ax)
    _assert_labels_inside_and_apart(p)
    # Back to a large window: the legend and the breadth curve come back.
    window.resize(1600, 1000)
    qtbot.waitUntil(lambda: window.chart.chart_plot().rows == (True, True, True), timeout=5000)


def _visible_rows(w) -> float:
    v = w.table.view
    return v.viewport().height() / v.verticalHeader().defaultSectionSize()


def test_tensors_dock_shows_eight_rows_at_1600x1000_even_after_a_small_session(qtbot, settings):  # noqa: F811
    from PySide6.QtWidgets import QDockWidget

    first = MainWindow(settings=settings, measure=False)
    qtbot.addWidget(first)
    first.resize(1600, 1000)
    first.show()
    qtbot.waitExposed(first)
    dock = first.findChild(QDockWidget, "table_dock")
    first.resizeDocks([dock], [90], Qt.Orientation.Vertical)  # the user made it small
    qtbot.wait(20)
    first.close()  # stores the dock layout
    w = MainWindow(settings=settings, measure=False)
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    try:
        open_and_wait(qtbot, w, shared_model("mobilenet_v2_224.tflite"))
        qtbot.waitUntil(lambda: _visible_rows(w) >= 8, timeout=3000)
        assert w.chart.view.viewport().height() >= 300
    finally:
        w.runner.shutdown()


# --- small exports draw the rectangles ---------------------------------------------------------


def _tensor_pixels(path) -> int:
    """Pixels of the image in a tensor kind's colour (the legend's squares are ~80 each)."""
    from PySide6.QtGui import QImage

    from viewer.export.chart_data import KIND_COLORS

    img = QImage(str(path))
    colours = set(KIND_COLORS.values())
    return sum((c.red(), c.green(), c.blue()) in colours
               for c in (img.pixelColor(x, y) for y in range(img.height()) for x in range(img.width())))


@pytest.mark.parametrize("size", [(400, 300), (300, 250)])
def test_small_png_export_draws_the_rectangles(tmp_path, size):
    from viewer.cli import main

    out = tmp_path / "small.png"
    model = shared_model("unet_256.tflite")
    assert main(["export", str(model), "-o", str(out), "--width", str(size[0]),
                 "--height", str(size[1]), "--no-measure"]) == 0
    # Was: the legend's squares over empty axes (a few hundred pixels in tensor colours).
    assert _tensor_pixels(out) > 3000


# --- the status bar: one line, elided, the whole text in its tooltip (TFLM too) --------------


def test_status_bar_stays_one_elided_line_in_tflm_mode(qtbot, window):  # noqa: F811
    window.resize(1400, 860)
    open_and_wait(qtbot, window, shared_model("tfmicro_person_detect_int8.tflite"))
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    window.runtime_combo.setFocus()
    qtbot.keyClick(window.runtime_combo, Qt.Key.Key_Down)  # LiteRT -> TFLite Micro
    qtbot.waitUntil(lambda: bool(shown) and window.document.runtime == "tflm", timeout=60_000)
    qtbot.wait(20)
    lab = window.status_label
    full = lab.text()
    assert "TFLite Micro" in full and "\n" not in full  # one line (the Measured box keeps the note's lines)
    line = lab.fontMetrics().height()
    assert lab.height() <= line + 6, (lab.height(), line)  # was two lines (42 px)
    assert window.statusBar().height() <= line + 16
    assert "\n" not in lab.shown_text() and lab.shown_text().endswith("…")
    assert lab.toolTip() == full


# --- tiling: a sentence, not empty black 0..1 axes, before any search ---------------------------


def test_tiling_section_shows_a_placeholder_until_a_search_drew_the_curve(qtbot, window):  # noqa: F811
    from PySide6.QtWidgets import QDockWidget

    open_and_wait(qtbot, window, shared_model("coral_mobilenet_v1_0.25_128_quant.tflite"))
    window.findChild(QDockWidget, "whatif_dock").raise_()
    panel = window.tiling.panel
    panel.rows.setValue(2)  # one small grid: a short search
    panel.cols.setValue(2)
    window.whatif_scroll.ensureWidgetVisible(panel.best)
    qtbot.wait(20)
    assert not panel.plot.isVisible()  # was: an empty plot with 0..1 axes
    assert panel.plot_placeholder.isVisible() and "best split" in panel.plot_placeholder.text()
    assert panel.plot_stack.height() < 120  # no empty plot-sized hole either
    qtbot.mouseClick(panel.best, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.tiling.curve is not None, timeout=120_000)
    qtbot.waitUntil(panel.plot.isVisible, timeout=5000)
    assert not panel.plot_placeholder.isVisible() and panel.plot.height() >= 150


# --- a float16 what-if keeps the kernel temporaries' shapes in the table -------------------------


def test_float16_whatif_keeps_the_temporaries_shape_and_says_the_dtype_is_estimated(qtbot, measured_window):
    from viewer.ui.tensor_table import COLUMNS

    w = measured_window
    resp = open_and_wait(qtbot, w, shared_model("unet_256.tflite"))
    big = max((u for u in resp.analysis.usages if u.tensor in resp.analysis.temporaries_ops),
              key=lambda u: u.nbytes)
    m = w.table.model

    def cell(t, col):
        return m.index(m.row_of(t), COLUMNS.index(col)).data()

    assert (cell(big.tensor, "shape"), cell(big.tensor, "dtype")) == ("1x256x256x432", "float32")
    with qtbot.waitSignal(w.view_changed, timeout=120_000):
        w.whatif.dtype.setCurrentIndex(w.whatif.dtype.findData("float16"))
    qtbot.waitUntil(lambda: w.response.request.edits is not None
                    and w.response.request.shape_source != "inferred", timeout=120_000)
    a = w.response.analysis
    assert big.tensor in a.temporaries_ops and a.usage(big.tensor).nbytes == big.nbytes // 2
    # Was "-" and "-": the shape the runtime measured, and the rescaled dtype, marked estimated.
    assert cell(big.tensor, "shape") == "1x256x256x432"
    assert cell(big.tensor, "dtype") == "float16 (estimated)"


# --- wrapped labels never break inside a flag or a shape -----------------------------------------


def _wrapped_lines(label, width: int) -> list[str]:
    """The lines a word-wrapped rich-text label lays its text out in at ``width`` px (Qt's
    own text layout, as QLabel uses it)."""
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    doc.setDocumentMargin(0)
    text = label.text()
    doc.setHtml(text) if "<" in text else doc.setPlainText(text)
    doc.setTextWidth(width)
    doc.documentLayout().documentSize()  # lays the text out
    lines = []
    block = doc.begin()
    while block.isValid():
        lay = block.layout()
        for i in range(lay.lineCount()):
            ln = lay.lineAt(i)
            lines.append(block.text()[ln.textStart():ln.textStart() + ln.textLength()])
        block = block.next()
    return lines


def test_cannot_tell_never_wraps_inside_the_flag_or_the_shape(qtbot, window):  # noqa: F811
    from PySide6.QtWidgets import QDockWidget

    open_and_wait(qtbot, window, shared_model("dyn_hw.tflite"))
    window.findChild(QDockWidget, "whatif_dock").raise_()
    panel = window.whatif
    panel.use_budget.setChecked(True)
    panel.limit.unit.setCurrentText("MiB")
    panel.limit.value.setValue(3)
    qtbot.waitUntil(lambda: "cannot tell" in panel.verdict.text(), timeout=10_000)
    flag = "--input-shape 1x?x?x3"
    texts = {"verdict": panel.verdict, "summary": window.side.budget_label}
    for name, label in texts.items():
        assert "input-shape" in label.text().replace("\u2060", ""), (name, label.text())
        for width in range(180, 420, 7):  # wider than the flag itself (~150 px)
            lines = [ln.replace("\u2060", "").replace("\xa0", " ") for ln in _wrapped_lines(label, width)]
            assert any(flag in ln for ln in lines), (name, width, lines)
            for ln in lines:  # a line never ends inside the flag or the shape
                assert not ln.rstrip().endswith(("--", "give --", "1x?x")), (name, width, lines)
                assert ln.strip() != "input-shape 1x?x?x3", (name, width, lines)


# --- comparing with another model after a what-if says the edit is on one side only ------------


def test_compare_with_another_model_after_a_whatif_says_so_and_unticks_the_baseline(qtbot, window):  # noqa: F811
    window.resize(1600, 1000)
    open_and_wait(qtbot, window, shared_model("mobilenet_v2_224.tflite"))
    window.set_compare_visible(True)
    assert window.compare_action.isChecked()
    with qtbot.waitSignal(window.view_changed, timeout=60_000):
        window.whatif.batch.setValue(2)
    other = shared_model("mobilenet_v2_224_int8.tflite")
    window.compare_with_model(str(other))
    cv = window.compare
    qtbot.waitUntil(lambda: cv.sides() is not None and "other:" in cv.right.chart_plot().title.text(),
                    timeout=60_000)
    text = cv.delta_label.text()
    assert ("the what-if (batch 2) is applied to mobilenet_v2_224.tflite only; "
            "mobilenet_v2_224_int8.tflite is as stored") in text, text
    assert cv.isVisible() and not window.compare_action.isChecked()  # was: still ticked
    # Ticking "Compare with baseline" now compares with the baseline again.
    window.compare_action.trigger()
    qtbot.waitUntil(lambda: cv.sides() is not None and "baseline:" in cv.left.chart_plot().title.text(),
                    timeout=10_000)
    assert window.document.other is None and window.compare_action.isChecked()
