"""Background work: the plain compute function, and the runner keeping the GUI responsive."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QTimer

from viewer.errors import ModelFormatError, PlanCancelled, SubgraphError
from viewer.model.types import Model, Operator, Subgraph, Tensor
from viewer.planning.run import default_planner_names
from viewer.planning.verify import verify_plan
from viewer.resources import DEMO_MODEL, resource_path
from viewer.ui.workers import MEASURED, AnalysisRequest, TaskRunner, compute


def synthetic_model(n: int = 20_000, skip: int = 3) -> Model:
    """A chain of ``n`` float32 tensors; operator k also reads tensor k-skip (a skip connection)."""
    sizes = [4 * 16 * (16 + (i * 7919) % 64) for i in range(n)]
    tensors = tuple(
        Tensor(i, f"t{i}", (16, sizes[i] // 64), (16, sizes[i] // 64), "float32", sizes[i])
        for i in range(n)
    )
    ops = tuple(
        Operator(k, "ADD", 0, None, 1, (k,) if k < skip else (k, k - skip), (k + 1,))
        for k in range(n - 1)
    )
    sg = Subgraph(0, "synthetic", tensors, ops, (0,), (n - 1,))
    return Model("synthetic.tflite", 0, 3, "synthetic chain", (sg,), 0)


def demo() -> str:
    return str(resource_path(DEMO_MODEL))


# --- compute(): no Qt ---------------------------------------------------------------------


def test_compute_demo_runs_every_default_planner_and_picks_the_smallest():
    seen = []
    r = compute(AnalysisRequest(demo(), measure=False), lambda f, m: seen.append((f, m)))
    assert list(r.plans) == default_planner_names()
    assert r.best == min(r.plans, key=lambda n: (r.plans[n].arena_bytes, list(r.plans).index(n)))
    problem = r.analysis.problem()
    for plan in r.plans.values():
        verify_plan(problem, plan)
        assert plan.arena_bytes >= r.analysis.lower_bound_bytes
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert MEASURED not in r.plans and "measurement is off" in r.measure_note


def test_compute_reuses_a_given_model_and_checks_subgraph():
    m = synthetic_model(50)
    r = compute(AnalysisRequest("synthetic.tflite", model=m, measure=False, planners=("naive",)))
    assert r.model is m and list(r.plans) == ["naive"]
    with pytest.raises(SubgraphError, match="no subgraph 3"):
        compute(AnalysisRequest("synthetic.tflite", 3, model=m, measure=False))


def test_compute_bad_file_raises_one_line_format_error(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"this is not a flatbuffer at all")
    with pytest.raises(ModelFormatError) as e:
        compute(AnalysisRequest(str(bad), measure=False))
    assert str(bad) in str(e.value) and "\n" not in str(e.value)


def test_compute_cancelled_stops():
    with pytest.raises(PlanCancelled):
        compute(AnalysisRequest(demo(), measure=False), cancelled=lambda: True)


# --- TaskRunner: Qt -----------------------------------------------------------------------


@pytest.mark.slow
def test_event_loop_keeps_ticking_while_20k_tensors_are_planned(qtbot):
    """Planning a 20,000-tensor graph runs off the GUI thread: a QTimer keeps firing."""
    model = synthetic_model(20_000)
    runner = TaskRunner()
    ticks = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(runner.busy))
    progress = []
    runner.progressed.connect(lambda f, m: progress.append((len(ticks), f, m)))
    req = AnalysisRequest("synthetic.tflite", model=model, measure=False,
                          planners=("naive", "greedy_by_breadth", "strip_packing", "litert"))
    timer.start()
    with qtbot.waitSignal(runner.response_ready, timeout=120_000) as blocker:
        runner.submit(req)
    timer.stop()
    resp = blocker.args[0]
    assert len(resp.analysis.usages) == 20_000
    for plan in resp.plans.values():
        verify_plan(resp.analysis.problem(), plan)
    # The timer fired while the worker was busy, and progress arrived between ticks.
    busy_ticks = sum(1 for b in ticks if b)
    assert busy_ticks >= 3, f"timer ticked only {busy_ticks} times while planning"
    assert len({t for t, _, _ in progress}) >= 2
    assert not runner.busy
    runner.shutdown()


def test_new_request_cancels_the_stale_one(qtbot):
    started = threading.Event()
    saw_cancel = threading.Event()

    def slow(request, progress, cancelled):
        if request.path == "first":
            started.set()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if cancelled():
                    saw_cancel.set()
                    raise PlanCancelled("stale")
                time.sleep(0.005)
            raise AssertionError("the stale request was never cancelled")
        return request.path

    runner = TaskRunner(fn=slow)
    got = []
    runner.response_ready.connect(got.append)
    runner.submit(AnalysisRequest("first"))
    assert started.wait(10)
    with qtbot.waitSignal(runner.response_ready, timeout=10_000):
        second = runner.submit(AnalysisRequest("second"))
    assert saw_cancel.wait(10)
    assert got == ["second"] and second.serial == 2
    runner.wait(10_000)
    qtbot.wait(20)
    assert got == ["second"]  # the stale task's end never reaches the GUI
    runner.shutdown()


def test_runner_reports_failure_as_one_line(qtbot, tmp_path):
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"\x00" * 3)
    runner = TaskRunner()
    with qtbot.waitSignal(runner.failed, timeout=10_000) as blocker:
        runner.submit(AnalysisRequest(str(bad), measure=False))
    msg = blocker.args[0]
    assert str(bad) in msg and "\n" not in msg
    assert not runner.busy
    runner.shutdown()


def test_resized_whatif_is_measured_and_litert_plan_matches_the_runtime():
    """Batch 2 of the demo: the runtime is probed at the new shapes; our LiteRT plan equals it."""
    from viewer.whatif.edits import WhatIfEdits

    base = compute(AnalysisRequest(demo()))
    r = compute(AnalysisRequest(demo(), edits=WhatIfEdits(batch=2)))
    assert MEASURED in r.plans and r.measure_note == ""
    inp = r.analysis.subgraph.tensors[r.analysis.subgraph.inputs[0]]
    assert inp.shape[0] == 2
    assert r.analysis.temporaries_ops  # kernel temporaries measured at batch 2
    measured = r.analysis.resolve_alias_offsets(r.plans[MEASURED].offsets)
    ours = r.analysis.resolve_alias_offsets(r.plans["litert"].offsets)
    assert {t: ours[t] for t in measured} == measured
    assert r.plans["litert"].arena_bytes == r.plans[MEASURED].arena_bytes == r.probe.arena_bytes
    assert r.plans[MEASURED].arena_bytes > base.plans[MEASURED].arena_bytes
    # A storage-dtype what-if cannot be measured: planned only, with the reason.
    r16 = compute(AnalysisRequest(demo(), edits=WhatIfEdits(activation_dtype="float16")))
    assert MEASURED not in r16.plans and "dtype" in r16.measure_note


# --- both analyses, optimize, reorder, quick estimates --------------------------------------


def test_measured_response_has_both_views_and_named_temporaries():
    """With the runtime probed: one view with its kernel temporaries, one with the tensors alone."""
    from viewer.analysis.intervals import analyze
    from viewer.runtime.probe import runtime_subgraph

    r = compute(AnalysisRequest(demo()))
    assert r.has_temporaries and r.temporaries_shown
    at, plans_t, _ = r.tensor_view
    aw, plans_w, _ = r.temporaries_view
    assert r.analysis is aw and r.plans is plans_w
    # The tensor-only view is exactly the runtime's tensors without temporaries.
    assert at.lower_bound_bytes == analyze(runtime_subgraph(r.model, r.probe), model=r.model).lower_bound_bytes
    assert not at.temporaries_ops
    # The temporaries are the runtime's tensors beyond the file's, named after their operator;
    # with them our LiteRT planner lands exactly on the runtime's arena (the oracle).
    temps = {u.tensor: u.nbytes for u in aw.usages if u.tensor in aw.temporaries_ops}
    assert temps and min(temps) >= len(r.model.subgraph(0).tensors)
    assert plans_w["litert"].arena_bytes == r.probe.arena_bytes
    for t in temps:
        u = aw.usage(t)
        assert aw.tensor_name(t).startswith(f"#{u.first_op} {aw.op_name(u.first_op)} kernel temporary")
    assert aw.lower_bound_bytes > at.lower_bound_bytes
    # Each view's plans are valid for its own problem; the measured arena is in both.
    for a, plans in ((at, plans_t), (aw, plans_w)):
        for name, plan in plans.items():
            if name != MEASURED:
                verify_plan(a.problem(), plan)
                assert plan.arena_bytes >= a.lower_bound_bytes
        assert plans[MEASURED].arena_bytes == r.probe.arena_bytes
    off = r.showing(False)
    assert off.analysis is at and off.plans is plans_t and not off.temporaries_shown
    assert off.showing(True).analysis is aw


def test_unmeasured_response_has_one_view():
    r = compute(AnalysisRequest(demo(), measure=False))
    assert not r.has_temporaries and r.showing(False) is r and r.showing(True) is r


def test_compute_optimal_proves_or_bounds_and_cancels():
    from viewer.ui.workers import OptimizeRequest, compute_optimal, optimal_summary

    r = compute(AnalysisRequest(demo(), measure=False))
    out = compute_optimal(OptimizeRequest(demo(), r.analysis, time_limit=20))
    p = out.plan
    verify_plan(r.analysis.problem(), p)
    assert r.analysis.lower_bound_bytes <= (p.bound_bytes or 0) <= p.arena_bytes
    assert p.arena_bytes <= min(x.arena_bytes for x in r.plans.values())
    s = optimal_summary(p)
    assert s == "proven optimal" if p.proven_optimal else s.startswith("within ")
    with pytest.raises(PlanCancelled):
        compute_optimal(OptimizeRequest(demo(), r.analysis), cancelled=lambda: True)


def test_compute_reorder_lowers_the_bound_of_a_fork(tmp_path):
    from tests.cli.test_reorder_cli import fork_model
    from tests.tflite_builder import write
    from viewer.ui.workers import ReorderRequest, compute_reorder

    path = str(write(tmp_path, "fork.tflite", fork_model()))
    base = compute(AnalysisRequest(path, measure=False))
    r = compute_reorder(ReorderRequest(path, base, time_limit=5))
    assert r.reorder is not None and r.reorder.changed and r.reorder.exact
    assert r.analysis.lower_bound_bytes == r.reorder.lower_bound_after < base.analysis.lower_bound_bytes
    assert [op.index for op in r.analysis.subgraph.operators] == list(range(5))
    assert r.request.edits is None and MEASURED not in r.plans
    for plan in r.plans.values():
        verify_plan(r.analysis.problem(), plan)


def test_inferred_shape_source_is_an_unmeasured_estimate():
    from viewer.whatif.edits import WhatIfEdits

    quick = compute(AnalysisRequest(demo(), edits=WhatIfEdits(batch=2), shape_source="inferred"))
    full = compute(AnalysisRequest(demo(), edits=WhatIfEdits(batch=2)))
    assert quick.probe is None and MEASURED not in quick.plans and "estimate" in quick.measure_note
    assert MEASURED in full.plans
    # Our inference gets the same tensors as the runtime here (no temporaries in the estimate).
    assert quick.analysis.lower_bound_bytes == full.tensor_view[0].lower_bound_bytes
