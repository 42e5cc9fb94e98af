"""Newuser findings 25/26 in the window: the progress percentage beside the bar (never painted across
the fill), and the PNG pixel limit as one dialog line."""

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


def test_png_over_the_pixel_limit_is_one_dialog_line_naming_the_file_once(qtbot, window, dialogs_seen, tmp_path):
    """File > Export at 16000x16000 PNG: refused (64 Mi px limit) with the SVG hint, path said once."""
    from tests.ui.test_main_window import open_and_wait
    from viewer.resources import DEMO_MODEL, resource_path

    open_and_wait(qtbot, window, resource_path(DEMO_MODEL))
    out = tmp_path / "big.png"
    assert window.export_image(str(out), 16000, 16000) is None and not out.exists()
    (title, text), = dialogs_seen
    assert title == "Export failed" and text.count(str(out)) == 1 and "\n" not in text
    assert text.startswith(f"{out}: 16000x16000 px is") and text.endswith("use .svg for a larger chart")
