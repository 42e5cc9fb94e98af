"""CompareView and the window's compare dock / per-tensor storage menu."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.conftest import shared_model
from tests.export.test_chart_data import plan_of, synthetic_analysis
from tests.export.test_compare_export import doubled_analysis
from tests.export.test_image import png_size
from tests.ui.test_main_window import SMALL, dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.errors import UsageError
from viewer.export.chart_data import compare_text
from viewer.ui.compare import CompareView


@pytest.fixture
def view(qtbot):
    w = CompareView()
    qtbot.addWidget(w)
    w.resize(1400, 650)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_two_charts_on_one_y_scale_titled_with_label_arena_and_bound(view, tmp_path):
    a, b = synthetic_analysis(), doubled_analysis()
    pa, pb = plan_of(a, "greedy_by_size"), plan_of(b, "greedy_by_size")
    assert pb.arena_bytes > pa.arena_bytes
    view.set_views((a, pa, "baseline: s.tflite"), (b, pb, "what-if: tensor 1 x2"))
    left_top, right_top = view.y_tops()
    assert left_top == pytest.approx(right_top) and left_top >= pb.arena_bytes
    lt, rt = view.left.chart_plot().title.text(), view.right.chart_plot().title.text()
    assert lt.startswith("baseline: s.tflite — subgraph 0 — greedy_by_size: arena")
    assert rt.startswith("what-if: tensor 1 x2") and "lower bound" in rt
    assert view.delta_text() == compare_text(view.left.chart_data(), view.right.chart_data())
    assert view.delta_label.text() == view.delta_text()
    view.set_views((a, pa, "l"), (b, pb, "r"), note="both without kernel temporaries")
    assert view.delta_label.text() == view.delta_text() + " — both without kernel temporaries"
    view.set_views((a, pa, "baseline: s.tflite"), (b, pb, "what-if: tensor 1 x2"))
    assert "lower bound" in view.delta_text() and "widest operator" in view.delta_text()
    # Switching colour mode rebuilds both charts and keeps the shared scale.
    view.set_color_mode("op")
    assert view.y_tops()[0] == pytest.approx(view.y_tops()[1])
    view.export(str(tmp_path / "pair.png"), 1200, 600)
    assert png_size(tmp_path / "pair.png") == (1200, 600)
    assert view.export_dialog(str(tmp_path / "pair.svg")) == str(tmp_path / "pair.svg")
    assert "what-if: tensor 1 x2" in (tmp_path / "pair.svg").read_text()


def test_both_packing_plots_get_the_same_pixel_height(view, qtbot):
    """Different legends (one side has a kernel temporary, one not) and titles still leave
    both packing plots the same height on screen, so one y range means one scale."""
    from viewer.analysis.intervals import analyze

    from tests.export.test_chart_data import synthetic_subgraph

    a = synthetic_analysis()
    b = analyze(synthetic_subgraph())  # no kernel temporary: one legend entry fewer
    view.set_views((a, plan_of(a, "greedy_by_size"), "baseline: a long label to wrap the title"),
                   (b, plan_of(b, "naive"), "b"))
    for width in (1400, 900):
        view.resize(width, 650)
        qtbot.wait(30)
        heights = [c.chart_plot().packing.getViewBox().sceneBoundingRect().height()
                   for c in (view.left, view.right)]
        assert heights[0] == pytest.approx(heights[1], abs=1.0) and heights[0] > 150


def test_empty_view_cannot_export_and_bad_side_is_refused(view, tmp_path):
    with pytest.raises(UsageError, match="nothing to compare"):
        view.export(str(tmp_path / "x.png"))
    a = synthetic_analysis()
    with pytest.raises(UsageError, match="compare side"):
        view.set_views((a, plan_of(a)), (a, plan_of(a), "r"))
    view.set_views((a, plan_of(a), "l"), (a, plan_of(a), "r"))
    view.clear("nothing")
    assert view.delta_text() == "" and view.left.rect_count() == 0


@pytest.mark.shared
def test_window_storage_menu_replans_and_compare_dock_shows_the_delta(qtbot, window):
    resp = open_and_wait(qtbot, window, shared_model(SMALL))
    a = resp.analysis
    # The largest uint8 intermediate: store it as float32, four bytes per element.
    u = max((u for u in a.usages if u.kind == "intermediate" and u.alias_of is None
             and a.subgraph.tensors[u.tensor].dtype == "uint8"), key=lambda u: u.nbytes)
    window.compare_action.trigger()
    assert window.compare.isVisible()
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    window.chart.tensor_dtype_requested.emit(u.tensor, "float32")
    qtbot.waitUntil(lambda: bool(shown) and window.response.request.edits is not None, timeout=60_000)
    edited = window.response
    assert dict(edited.request.edits.tensor_dtypes) == {u.tensor: "float32"}
    assert edited.analysis.usage(u.tensor).nbytes == 4 * u.nbytes
    assert edited.analysis.lower_bound_bytes > a.lower_bound_bytes
    plan = edited.plans[window.planner]
    assert plan.arena_bytes >= edited.analysis.lower_bound_bytes
    assert window.chart.chart_data().nbytes[window.chart.chart_data().row_of(u.tensor)] == 4 * u.nbytes
    # The compare dock: baseline left, this what-if right, one y scale, the delta line.
    cmp = window.compare
    assert cmp.left.chart_data().arena_bytes == resp.plans[window.planner].arena_bytes
    assert cmp.right.chart_data().arena_bytes == plan.arena_bytes
    assert cmp.y_tops()[0] == pytest.approx(cmp.y_tops()[1])
    assert f"tensor {u.tensor} float32" in cmp.right.chart_plot().title.text()
    assert cmp.delta_text().startswith("arena ")
    # The what-if panel's edits merge with the per-tensor one; reset drops it again.
    shown.clear()
    window.chart.tensor_dtype_requested.emit(u.tensor, "")
    qtbot.waitUntil(lambda: bool(shown), timeout=60_000)
    edits = window.response.request.edits
    assert edits is None or not edits.tensor_dtypes
    assert window.response.analysis.usage(u.tensor).nbytes == u.nbytes


def test_compare_charts_click_selects_and_store_as_edits_like_the_main_chart(qtbot, window):
    """A click in either compare chart selects the tensor in the table and the main chart; its
    right-click "Store as float16" re-plans, as on the main chart (they were connected to nothing)."""
    from PySide6.QtCore import Qt

    resp = open_and_wait(qtbot, window, shared_model(SMALL))
    a = resp.analysis
    window.compare_action.trigger()
    window.resize(1400, 900)
    cmp = window.compare
    qtbot.waitUntil(lambda: cmp.right.chart_data() is not None, timeout=10_000)
    qtbot.wait(50)
    plan = resp.plans[window.planner]
    u = max((u for u in a.usages if u.alias_of is None and u.kind == "intermediate"),
            key=lambda u: u.nbytes * (u.last_op - u.first_op + 1))
    x, y = (u.first_op + u.last_op + 1) / 2, plan.offsets[u.tensor] + u.nbytes / 2
    assert cmp.right.tensor_at(x, y) == u.tensor
    pos = cmp.right.view.mapFromScene(cmp.right.scene_pos_of(x, y))
    qtbot.mouseClick(cmp.right.view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert window.document.selected == u.tensor
    assert window.table.selected_tensor() == u.tensor and window.chart.selected_tensor() == u.tensor
    assert cmp.left.selected_tensor() == u.tensor
    shown = []
    window.view_changed.connect(lambda: shown.append(1))
    menu = cmp.left.context_menu(u.tensor)
    next(act for act in menu.actions() if act.data() == "float16").trigger()
    qtbot.waitUntil(lambda: bool(shown) and window.response.request.edits is not None, timeout=60_000)
    assert dict(window.response.request.edits.tensor_dtypes) == {u.tensor: "float16"}


@pytest.mark.shared
def test_compare_titles_a_storage_whatif_with_estimated_temporaries_as_estimated(qtbot, settings):
    """Compare view, unet_256 measured, float16 activations: the runtime cannot store them, so
    the what-if's kernel temporaries are rescaled estimates; its chart's title says so, as the
    main chart's does (it said "what-if: float16 activations" alone)."""
    from viewer.ui.main_window import MainWindow

    w = MainWindow(settings=settings, measure=True)
    qtbot.addWidget(w)
    w.show()
    try:
        open_and_wait(qtbot, w, shared_model("unet_256.tflite"))
        qtbot.keyClick(w, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)  # View > Compare with baseline
        assert w.compare.isVisible()
        with qtbot.waitSignal(w.view_changed, timeout=120_000):
            w.whatif.dtype.setCurrentIndex(w.whatif.dtype.findData("float16"))
        assert w.response.temporaries_estimated
        right = w.compare.right.chart_plot().title.text()
        left = w.compare.left.chart_plot().title.text()
        assert "what-if: activations float16" in right and "(kernel temporaries estimated)" in right, right
        assert "estimated" not in left, left  # the baseline's were measured
        assert "kernel temporaries included (estimated)" in w.chart.chart_data().title  # export's words
    finally:
        w.runner.shutdown()
