"""The document's TFLite Micro target, run synchronously (TFLM measured in a subprocess)."""

from __future__ import annotations

import pytest

from tests.conftest import shared_model
from tests.document.test_document import SyncRunner
from viewer.document import Document
from viewer.runtime.tflm_probe import tflm_available


@pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")
def test_tflm_target_shows_tflms_own_plan_and_both_arenas():
    doc = Document(measure=True, runtime="tflm")
    SyncRunner(doc)
    doc.open(str(shared_model("tfmicro_person_detect_int8.tflite")))
    r = doc.response
    assert r.plans["tflm_measured"].arena_bytes == r.plans["tflm_greedy"].arena_bytes == 55296
    assert "tail 29,968 B" in r.measure_note and "LiteRT arena" in r.measure_note


def test_switching_runtime_replans_subgraph_0_without_measuring():
    doc = Document(measure=False)
    run = SyncRunner(doc)
    doc.open(str(shared_model("litert_testdata_multi_subgraphs_while.tflite")))
    assert "tflm_greedy" not in doc.response.plans
    doc.set_runtime("tflm")
    assert run.kinds[-1] == "open" and doc.response.request.runtime == "tflm"
    assert "tflm_greedy" in doc.response.plans and doc.response.request.subgraph == 0
    assert "scratch and persistent not measured" in doc.response.measure_note
    assert "LiteRT arena" in doc.response.measure_note
    doc.set_runtime("litert")
    assert "tflm_greedy" not in doc.response.plans


@pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")
def test_the_window_budget_under_tflm_counts_tensor_arena_size_like_check(capsys):
    # A new user's report: 80 KiB "fits" in the window (head 55,296 B alone) while check said no.
    from viewer.cli import main
    from viewer.ui.side_panel import budget_report
    from viewer.whatif.budget import BudgetSettings

    path = str(shared_model("tfmicro_person_detect_int8.tflite"))
    doc = Document(measure=True, runtime="tflm")
    SyncRunner(doc)
    doc.open(path)
    r = doc.response
    for limit, weights in ((80 * 1024, "mapped"), (290 * 1024, "copied")):
        rep = budget_report(BudgetSettings(limit, 0, weights), r, r.best)
        args = ["check", path, "--runtime", "tflm", "--budget", f"{limit}B"]
        rc = main(args + (["--weights", "copied"] if weights == "copied" else []))
        out = capsys.readouterr().out
        assert rc == 1 and "DOES NOT FIT" in out, out
        assert not rep.fits, rep  # the same verdict as check
    rep = budget_report(BudgetSettings(90 * 1024, 0, "mapped"), r, r.best)
    assert rep.fits  # 85,280 B tensor_arena_size fits 92,160 B
