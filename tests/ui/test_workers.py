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
                          planners=("naive", "greedy_by_breadth"))
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
