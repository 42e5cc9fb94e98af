"""The document without Qt: state, callbacks and the work it asks for, run synchronously."""

from __future__ import annotations

import sys

import pytest

from viewer.document import EVENTS, Document
from viewer.errors import PlanCancelled, ViewerError
from viewer.resources import DEMO_MODEL, resource_path
from viewer.whatif.edits import WhatIfEdits

DEMO = str(resource_path(DEMO_MODEL))


class SyncRunner:
    """Runs what the document asks for at once, like the window's TaskRunner but on this thread."""

    def __init__(self, doc: Document):
        self.doc, self.kinds = doc, []
        self.events: list[tuple] = []
        doc.events.connect("work_requested", self.run)
        for name in EVENTS:
            if name != "work_requested":
                doc.events.connect(name, lambda *a, n=name: self.events.append((n, *a)))

    def run(self, request, fn, kind):
        self.kinds.append(kind)
        try:
            resp = fn(request, None, None)
        except PlanCancelled:
            self.doc.cancelled()
        except ViewerError as e:
            self.doc.fail(str(e))
        else:
            self.doc.receive(resp)

    def names(self):
        return [e[0] for e in self.events]


@pytest.fixture
def doc():
    d = Document(measure=False)
    d.runner = SyncRunner(d)
    return d


def test_document_imports_no_qt():
    assert "viewer.document" in sys.modules
    # The Qt-free tests may run after the GUI tests; the layering test checks a fresh process.
    import viewer.document.state as state

    assert not [n for n in vars(state) if n.startswith("Q")]


def test_open_shows_the_smallest_plan_and_says_so(doc):
    doc.open(DEMO)
    resp = doc.response
    assert resp is not None and doc.full_response is resp  # no temporaries: one view
    assert doc.baseline is resp and doc.planner == resp.best
    assert doc.pending is None and doc.runner.kinds == ["open"]
    names = doc.runner.names()
    assert names.index("model_changed") < names.index("shown")
    assert any(e[0] == "status" and "operators" in e[1] for e in doc.runner.events)


def test_planner_selection_and_unknown_names(doc):
    doc.open(DEMO)
    other = next(n for n in doc.response.plans if n != doc.planner)
    doc.set_planner(other)
    assert doc.planner == other and ("planner_changed", other) in doc.runner.events
    doc.set_planner("no-such-planner")
    assert doc.planner == other
    t = doc.response.analysis.usages[0].tensor
    doc.select(t)
    assert doc.selected == t
    doc.select(-1)
    assert doc.selected is None


def test_batch_edit_is_estimated_then_confirmed_and_compares_with_the_baseline(doc):
    doc.open(DEMO)
    base = doc.response
    doc.set_panel_edits(WhatIfEdits(batch=2))
    assert doc.runner.kinds == ["open", "what-if-estimate", "what-if"]
    resp = doc.response
    assert resp.request.edits.batch == 2 and resp.request.shape_source == "auto"
    assert resp.analysis.lower_bound_bytes == 2 * base.analysis.lower_bound_bytes
    assert doc.baseline is base
    left, right, note = doc.compare_sides()
    assert left[2].startswith("baseline: ") and right[2] == "what-if: batch 2" and note == ""


def test_reset_edits_drops_the_per_tensor_storage_whatifs_too(doc):
    doc.open(DEMO)
    base = doc.response
    t = max(base.analysis.usages, key=lambda u: u.nbytes).tensor
    doc.set_tensor_dtype(t, "bfloat16")
    assert dict(doc.response.request.edits.tensor_dtypes) == {t: "bfloat16"}
    doc.set_panel_edits(WhatIfEdits(batch=2))
    assert dict(doc.response.request.edits.tensor_dtypes) == {t: "bfloat16"}  # merged
    doc.reset_edits()
    assert doc.response.request.edits.is_empty() and doc.tensor_dtypes == {}
    assert ("edits_restored", None) in doc.runner.events
    assert doc.response.analysis.lower_bound_bytes == base.analysis.lower_bound_bytes


def test_rejected_whatif_restores_the_applied_edits(doc):
    doc.open(DEMO)
    doc.set_panel_edits(WhatIfEdits(batch=2))
    applied = doc.edits
    doc.runner.events.clear()
    doc.set_panel_edits(WhatIfEdits(input_shapes={0: (1, 2, 3)}))  # wrong rank: rejected
    failed = [e for e in doc.runner.events if e[0] == "failed"]
    assert failed and failed[0][1] in ("what-if", "what-if-estimate")
    assert ("edits_restored", applied) in doc.runner.events
    assert doc.edits is applied and doc.pending_edits is applied


def test_bad_file_fails_and_keeps_what_was_shown(doc, tmp_path):
    doc.open(DEMO)
    shown = doc.response
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    doc.open(str(bad))
    (failed,) = [e for e in doc.runner.events if e[0] == "failed"]
    assert failed[1] == "open" and failed[2].startswith(str(bad))
    assert doc.response is shown


def test_optimize_and_reorder_then_back_to_the_original_order(doc):
    doc.open(DEMO)
    doc.optimize(time_limit=5.0)
    assert doc.planner == "optimal" and "optimal" in doc.response.plans
    assert doc.baseline is doc.full_response  # the optimal plan joins the baseline
    doc.reorder(time_limit=2.0)
    assert doc.is_reordered and doc.before_reorder is not None
    doc.restore_original_order()
    assert not doc.is_reordered and doc.response.reorder is None


def test_a_failing_callback_rolls_back_and_reports(doc, monkeypatch):
    monkeypatch.delenv("ARENA_VIEWER_DEBUG", raising=False)
    doc.open(DEMO)
    shown = doc.response

    def boom():
        raise RuntimeError("render failed")

    doc.events.connect("shown", boom)
    doc.set_panel_edits(WhatIfEdits(activation_dtype="float16"))
    assert doc.response is shown
    assert any(e[0] == "failed" and e[1] == "show" and "render failed" in e[2] for e in doc.runner.events)


def test_unknown_event_name_is_refused(doc):
    with pytest.raises(KeyError, match="no such document event"):
        doc.events.connect("nope", print)


def test_reorder_that_keeps_the_order_keeps_the_plans(doc):
    """A reorder that finds no better order returns the shown plans (no re-planning of a
    16,000-operator graph after the search's time is up)."""
    from viewer.document.work import ReorderRequest, compute_reorder

    doc.open(DEMO)
    base = doc.response
    resp = compute_reorder(ReorderRequest(base.request.path, base, 0.0001))
    assert resp.reorder is not None and not resp.reorder.changed
    assert resp.plans is base.plans and resp.analysis is base.analysis


def test_progress_leaves_room_for_the_footprint_and_never_reaches_100_before_done():
    """The footprint (LiteRT probes, seconds on a big model) runs after the plans: progress must
    not sit at 97-100% while it works (a new user saw "100%" for ~10 s on unet_256)."""
    from viewer.document.work import AnalysisRequest, compute
    from viewer.resources import DEMO_MODEL, resource_path
    seen = []
    compute(AnalysisRequest(path=str(resource_path(DEMO_MODEL)), measure=False),
            progress=lambda f, m: seen.append((f, m)))
    assert seen[-1] == (1.0, "done")
    assert all(f < 0.9 for f, _ in seen[:-1]), seen
    fp = [f for f, m in seen if "footprint" in m]
    assert fp and max(fp) <= 0.9, seen
    assert [f for f, _ in seen] == sorted(f for f, _ in seen)
