"""The window's JSON export carries the budget verdict the window shows, and it is
``arena-viewer check --json``'s for the same settings (stops.txt: "the window's JSON export has
no budget verdict"). The budget is typed into the What-if panel, the export goes through
File > Export JSON, and check runs in-process on the command the export names."""

from __future__ import annotations

import io
import json
import shlex
from contextlib import redirect_stdout

import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtWidgets import QDockWidget, QFileDialog

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait  # noqa: F401
from viewer.ui.main_window import MainWindow

pytestmark = pytest.mark.shared

#: check --json's keys that depend on the budget (the export's "budget" object has them all).
KEYS = ("verdict", "fits", "verdict_text", "estimated", "dynamic_batch", "configuration", "unknowns",
        "terms", "limit_bytes", "measured", "counted_arena", "arena_bytes", "used_bytes",
        "headroom_bytes", "batch", "largest_batch", "largest_batch_note", "runtime_bytes",
        "weights_counted", "persistent_bytes", "other_subgraphs_bytes", "sized_at_invoke",
        "temporaries_included", "temporaries_count", "temporaries_bytes", "measured_arena_bytes",
        "lower_bound_bytes", "widest_op", "weights_bytes", "arena_source", "other_subgraphs")


@pytest.fixture
def measured(qtbot, tmp_path):
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), measure=True)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.runner.shutdown()


def _type_size(qtbot, editor, text: str, unit: str) -> None:
    editor.unit.setCurrentText(unit)
    box = editor.value
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, text)
    qtbot.keyClick(box, Qt.Key.Key_Return)


def _set_budget(qtbot, w, limit: str, unit: str, overhead_kib: str, weights: str) -> None:
    w.findChild(QDockWidget, "whatif_dock").raise_()
    p = w.whatif
    box = p.use_budget
    w.whatif_scroll.ensureWidgetVisible(box)
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))
    assert box.isChecked()
    _type_size(qtbot, p.limit, limit, unit)
    _type_size(qtbot, p.runtime, overhead_kib, "KiB")
    p.weights.setCurrentIndex(p.weights.findData(weights))


def _plain(label) -> str:
    """The label's text as the user reads it (rich text rendered, word joiners dropped)."""
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText().replace("\u2060", "").replace("\xa0", " ")


def _export(qtbot, w, monkeypatch, path) -> dict:
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(path), "")))
    action = next(a for a in w.findChildren(type(w.open_action)) if "JSON" in a.text())
    action.trigger()
    return json.loads(path.read_text())


def _check(command: str) -> dict:
    from viewer.cli import main

    argv = shlex.split(command)[1:]
    assert argv[0] == "check"
    out = io.StringIO()
    with redirect_stdout(out):
        main(argv + ["--json"])
    return json.loads(out.getvalue())


@pytest.mark.parametrize("name,limit,unit,verdict", [
    ("mobilenet_v2_224_int8.tflite", "8", "MiB", "fits"),  # fits at batch 1 (dynamic batch)
    ("multi_out_sigs.tflite", "1", "MiB", "cannot_tell"),   # other signatures, as check says
])
def test_json_export_carries_checks_verdict_for_the_same_settings(qtbot, measured, monkeypatch, tmp_path,
                                                                  name, limit, unit, verdict):
    w = measured
    open_and_wait(qtbot, w, shared_model(name))
    _set_budget(qtbot, w, limit, unit, "512", "mapped")
    shown = _plain(w.whatif.verdict)
    report = _export(qtbot, w, monkeypatch, tmp_path / "report.json")
    b = report["budget"]
    assert b["verdict"] == verdict
    assert "--runtime-overhead 524288" in b["check_command"] and "--weights mapped" in b["check_command"]
    cli = _check(b["check_command"])
    for k in KEYS:
        assert b[k] == cli[k], (k, b[k], cli[k])
    # What the window shows says the same: check's words, check's first unknown.
    if verdict == "fits":
        assert shown.startswith(cli["verdict_text"] + ", headroom"), shown
        assert "dynamic batch" in shown and shown in _plain(w.side.budget_label)
    else:
        assert shown == "cannot tell: " + cli["unknowns"][0], shown
        assert shown in _plain(w.side.budget_label)  # the Summary's headline too
