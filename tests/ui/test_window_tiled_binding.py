"""In the tiled execution the budget no longer names the untiled model's widest operator as
binding (stops.txt): it says what ``check --tile`` says, the untiled lower bound, and no binding
operator (every stage's arena is resident; their sum is counted, no one operator binds it)."""

from __future__ import annotations

import pytest

from tests.conftest import shared_model
from tests.ui.test_main_window import dialogs_seen, open_and_wait, settings, window  # noqa: F401
from tests.ui.test_window_budget_export import _plain, _set_budget
from tests.ui.test_window_newuser import _quiet_tiling, _tick_show_tiled

pytestmark = pytest.mark.shared


def test_tiled_budget_names_no_untiled_binding_operator_as_check_tile(qtbot, window, monkeypatch, capsys):
    from viewer.cli import main as cli

    w = window
    model = str(shared_model("mobilenet_v2_224_int8.tflite"))
    _quiet_tiling(monkeypatch, w)
    open_and_wait(qtbot, w, model)
    _set_budget(qtbot, w, "400", "KiB", "0", "copied")
    untiled = _plain(w.side.budget_label)
    assert "binding (widest) operator: 4 DEPTHWISE_CONV_2D" in untiled, untiled  # untiled: it binds
    assert "binding operator #4" in _plain(w.whatif.verdict)
    _tick_show_tiled(qtbot, w)
    capsys.readouterr()
    code = cli(["check", model, "--budget", "400KiB", "--runtime-overhead", "0", "--tile", "4x4@12",
                "--no-measure"])
    out = capsys.readouterr().out
    assert code == 1 and "DOES NOT FIT" in out
    (bound,) = [ln.strip() for ln in out.splitlines() if "untiled lower bound" in ln]
    summary, verdict = _plain(w.side.budget_label), _plain(w.whatif.verdict)
    assert "binding" not in out  # check --tile names no binding operator ...
    assert "binding" not in summary and "binding" not in verdict, (summary, verdict)  # ... nor the window
    assert bound in summary, (bound, summary)  # its line, word for word
    assert verdict.startswith("over budget by"), verdict
    w.tiling.panel.show_tiled.setChecked(False)  # untiled again: the widest operator binds again
    assert "binding (widest) operator: 4 DEPTHWISE_CONV_2D" in _plain(w.side.budget_label)
