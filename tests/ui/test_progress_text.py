"""The status bar's progress: its percentage is beside the bar, never painted across the fill."""

from __future__ import annotations

from tests.ui.test_main_window import dialogs_seen, settings, window  # noqa: F401


def test_progress_percentage_sits_beside_the_bar(qtbot, window):
    window.runner.busy_changed.emit(True)
    window.runner.progressed.emit(0.59, "planning: greedy_by_size…")
    p = window.progress
    qtbot.waitUntil(p.isVisible, timeout=5_000)
    assert p.text() == "59%" and p.value() == 590
    assert not p.bar.isTextVisible()  # the style draws no text over the fill
    assert p.label.isVisible() and p.label.text() == "59%"
    assert not p.label.geometry().intersects(p.bar.geometry())
    # The label's text fits it: nothing elided or cut.
    assert p.label.fontMetrics().horizontalAdvance("100%") <= p.label.width()
    window.runner.busy_changed.emit(False)
    assert not p.isVisible()
