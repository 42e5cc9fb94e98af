"""The document compares the open model with a second one (issue 13: two models side by side)."""

from __future__ import annotations

import pytest

from conftest import shared_model
from tests.document.test_document import DEMO, SyncRunner
from tests.tflite_builder import add_chain, write
from viewer.document import Document


@pytest.fixture
def doc():
    d = Document(measure=False)
    d.runner = SyncRunner(d)
    return d


def test_other_model_is_compared_on_the_same_terms(doc, tmp_path):
    other = write(tmp_path, "chain.tflite", add_chain(4))
    doc.open(DEMO)
    assert doc.other is None
    base_sides = doc.compare_sides()
    assert base_sides[0][2].startswith("baseline:")  # no other model: the baseline
    doc.open_other(str(other))
    assert doc.runner.kinds == ["open", "other-model"]
    assert doc.other is not None and doc.other.model.path == str(other)
    assert ("other_changed", doc.other) in doc.runner.events
    (la, lp, ll), (ra, rp, rl), note = doc.compare_sides()
    assert ll == "demo_unet.tflite" and rl == "other: chain.tflite"
    assert lp is doc.response.plans[doc.planner]  # this side as shown
    assert rp.arena_bytes == doc.other.plans[rp.planner].arena_bytes
    assert la is doc.response.analysis and ra is doc.other.analysis
    # The document shown is still the first model: edits and planner apply to it.
    assert doc.response.model.path == DEMO
    doc.close_other()
    assert doc.other is None and ("other_changed", None) in doc.runner.events
    assert doc.compare_sides()[0][2].startswith("baseline:")


def test_a_bad_second_model_is_one_line_and_changes_nothing(doc, tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    doc.open(DEMO)
    shown = doc.response
    doc.open_other(str(bad))
    assert doc.other is None and doc.response is shown
    failed = [e for e in doc.runner.events if e[0] == "failed"]
    assert failed and str(bad) in failed[-1][2] and "\n" not in failed[-1][2]


@pytest.mark.shared
def test_measured_models_compare_with_their_kernel_temporaries(tmp_path):
    d = Document(measure=True)
    d.runner = SyncRunner(d)
    d.open(str(shared_model("mobilenet_v2_224.tflite")))
    d.open_other(str(shared_model("unet_256.tflite")))
    (_, lp, _), (ra, rp, _), note = d.compare_sides()
    assert note == ""
    assert ra.temporaries_ops  # unet's im2col buffers are in its side
    assert rp.arena_bytes > 100 * 2**20 > lp.arena_bytes  # 124.8 MiB against 6.3 MiB


@pytest.mark.shared
def test_storage_whatif_draws_the_estimated_kernel_temporaries_check_counts(tmp_path):
    # Issue 9: a float16 what-if keeps unet_256's im2col buffers (rescaled), in the chart too.
    from viewer.whatif.edits import WhatIfEdits

    d = Document(measure=True)
    d.runner = SyncRunner(d)
    d.open(str(shared_model("unet_256.tflite")))
    d.set_panel_edits(WhatIfEdits(activation_dtype="float16"))
    resp = d.response
    assert resp.request.edits.activation_dtype == "float16"
    assert resp.temporaries_shown and resp.temporaries_estimated
    assert resp.analysis.temporaries_ops  # the chart draws them
    assert resp.plans["litert"].arena_bytes == resp.footprint.arena_bytes == 65_404_928
    (_, lp, _), (_, rp, label), note = d.compare_sides()
    assert label == "what-if: activations float16 (kernel temporaries estimated)"  # on its title
    assert "kernel temporaries are estimated" in note
    assert lp.arena_bytes > rp.arena_bytes > 60 * 2**20  # 124.8 MiB -> 62.4 MiB, not 12.4 MiB
