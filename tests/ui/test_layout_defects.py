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
