"""File > Open: title, chart and panels change together (newuser F-c, first half), and a failed
open leaves the previous model's title and content. Driven with Ctrl+O offscreen; what the user
sees is read from the window's painted backing store (``QScreen.grabWindow``)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QFileDialog

from tests.conftest import shared_model
from tests.ui.test_main_window import SMALL, dialogs_seen, open_and_wait, settings, window  # noqa: F401
from viewer.resources import DEMO_MODEL, resource_path

pytestmark = pytest.mark.shared


def _painted(w):
    """What is on screen now: the window's backing store, as the user sees it."""
    return w.screen().grabWindow(w.winId()).toImage()


def _rect(w, widget) -> QRect:
    return QRect(widget.mapTo(w, widget.rect().topLeft()), widget.size())


def _first_paint_regions(w) -> dict[str, QRect]:
    """What the first paint of a new model shows as it will stay, in window coordinates: the
    chart and the Summary's File line (the rows below it may settle a layout pass later, when a
    longer text wraps to a second line or the status bar grows; the table's columns widen to
    their new content a moment later, so its cells are compared as text: :func:`_cells`)."""
    return {"chart": _rect(w, w.chart), "summary file line": _rect(w, w.side.file_label)}


def _cells(w, rows: int = 8) -> list[list[str]]:
    """The text of the table's first ``rows`` rows, as shown (sorted, filtered)."""
    m = w.table.view.model()
    return [[str(m.index(r, c).data() or "") for c in range(m.columnCount())]
            for r in range(min(rows, m.rowCount()))]


def _same(a, b, r: QRect) -> bool:
    return a.copy(r) == b.copy(r)


def _ctrl_o(qtbot, w, monkeypatch, path) -> None:
    """Ctrl+O, and the file dialog answers ``path``."""
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    w.activateWindow()
    qtbot.keyClick(w, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)


def _settle(qtbot, w, title_prefix: str | None = None) -> None:
    """Until the work is done, the title names ``title_prefix`` and the screen stays still."""
    qtbot.waitUntil(lambda: not w.runner.busy and w.windowTitle().startswith(title_prefix or ""),
                    timeout=60_000)
    last = [_painted(w)]

    def still() -> bool:
        now = _painted(w)
        same, last[0] = now == last[0], now
        return same

    qtbot.waitUntil(still, timeout=10_000)


def test_the_title_names_the_new_model_only_once_its_content_is_on_screen(qtbot, window, monkeypatch):
    w = window
    open_and_wait(qtbot, w, resource_path(DEMO_MODEL))
    _settle(qtbot, w, "demo_unet")
    before, before_cells = _painted(w), _cells(w)
    at_title = []
    w.windowTitleChanged.connect(lambda t: at_title.append((t, _painted(w), _cells(w))))
    _ctrl_o(qtbot, w, monkeypatch, shared_model(SMALL))
    _settle(qtbot, w, SMALL)
    final = _painted(w)
    assert [t for t, _, _ in at_title] == [f"{SMALL} — Arena Viewer"]
    shown_then, cells_then = at_title[0][1], at_title[0][2]
    assert before_cells != _cells(w)  # the table shows the new model's tensors ...
    assert cells_then == _cells(w), "the table still listed the previous model under the new title"
    for name, r in _first_paint_regions(w).items():
        assert not _same(before, final, r), f"{name}: the new model did not change it"
        # When the title bar named the new model, its chart and panels were on screen already
        # (before: the demo's chart and table under the new title, status "… next batch" 100%).
        assert _same(shown_then, final, r), f"{name} still showed the previous model under the new title"
    assert w.chart.chart_data().title.startswith(SMALL)


def test_a_failed_open_leaves_the_title_and_content_as_they_were(qtbot, window, monkeypatch, tmp_path,
                                                                 dialogs_seen):
    w = window
    open_and_wait(qtbot, w, shared_model(SMALL))
    _settle(qtbot, w, SMALL)
    before, before_cells = _painted(w), _cells(w)
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"\x1c\x00\x00\x00NOPE" + b"\x00" * 40)
    with qtbot.waitSignal(w.open_failed, timeout=30_000):
        _ctrl_o(qtbot, w, monkeypatch, bad)
    _settle(qtbot, w)
    after = _painted(w)
    assert dialogs_seen and dialogs_seen[0][0] == "Cannot open model" and str(bad) in dialogs_seen[0][1]
    assert w.windowTitle() == f"{SMALL} — Arena Viewer"
    for name, r in _first_paint_regions(w).items():
        assert _same(before, after, r), f"{name} changed on a failed open"
    assert _cells(w) == before_cells


def test_a_model_that_cannot_be_drawn_leaves_the_previous_model_everywhere(qtbot, window, monkeypatch,
                                                                           dialogs_seen):
    """Showing the new model raised part-way (after its Summary and what-if inputs were filled):
    the previous model's title, chart, Summary and what-if inputs are all back."""
    w = window
    open_and_wait(qtbot, w, shared_model(SMALL))
    _settle(qtbot, w, SMALL)
    shapes = [ed.shape_edit.text() for ed in w.whatif._inputs]
    before, before_cells = _painted(w), _cells(w)
    draw = w.chart.set_view

    def failing_set_view(analysis, plan, *, model_name="model", **kw):
        if model_name.startswith("unet_256"):
            raise RuntimeError("cannot draw this one")
        return draw(analysis, plan, model_name=model_name, **kw)

    monkeypatch.setattr(w.chart, "set_view", failing_set_view)
    with qtbot.waitSignal(w.open_failed, timeout=60_000):
        _ctrl_o(qtbot, w, monkeypatch, shared_model("unet_256.tflite"))
    _settle(qtbot, w)
    after = _painted(w)
    assert dialogs_seen and dialogs_seen[-1][0] == "Cannot show model"
    assert "cannot draw this one" in dialogs_seen[-1][1]
    assert w.windowTitle() == f"{SMALL} — Arena Viewer"
    assert w.document.response.model.path.endswith(SMALL)
    assert w.chart.chart_data().title.startswith(SMALL)
    assert [ed.shape_edit.text() for ed in w.whatif._inputs] == shapes  # not unet's 1x256x256x3
    for name, r in _first_paint_regions(w).items():
        assert _same(before, after, r), f"{name} shows the model that could not be drawn"
    assert _cells(w) == before_cells
