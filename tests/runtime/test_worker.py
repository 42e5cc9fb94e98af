"""The resident LiteRT worker: same answers as the one-shot probe; crashes and hangs are bounded."""

from __future__ import annotations

import dataclasses
import os
import signal
import time

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.runtime.probe import probe_model
from viewer.runtime.worker import RuntimeWorker, close_workers, probe_resident, worker_for


SMALL = {0: (1, 4, 4, 3)}  # a question not asked before (no answer kept)


@pytest.fixture(autouse=True)
def _no_workers_left():
    yield
    close_workers()


def _same(a, b) -> None:
    """Equal probes, except the arena's address (a pointer in another process)."""
    assert dataclasses.replace(a, arena_address=None) == dataclasses.replace(b, arena_address=None)


def test_worker_answers_equal_the_one_shot_probe(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    one = probe_model(p, check=True)
    first = probe_resident(p, check=True)
    _same(first, one)
    w = worker_for(p)
    w._answers.clear()
    w._probes.clear()
    again = probe_resident(p, check=True)  # the same process, a fresh Interpreter
    _same(again, one)
    assert w.starts == 1 and w.requests == 2 and w.pid is not None
    _same(probe_resident(p, check=True), one)  # the answer kept for the same question
    assert w.requests == 2
    # Parsed once: the same question gets the same (immutable) record, not a re-parse.
    assert probe_resident(p, check=True) is probe_resident(p, check=True)
    _same(probe_resident(p, input_shapes=SMALL, check=True), probe_model(p, input_shapes=SMALL))


def test_worker_answers_equal_the_one_shot_probe_at_a_new_resolution():
    m = shared_model("mobilenet_v2_224.tflite")
    for shapes in ({0: (1, 160, 160, 3)}, None, {0: (2, 224, 224, 3)}):
        _same(probe_resident(m, input_shapes=shapes, check=True),
              probe_model(m, input_shapes=shapes, check=True))
    # A shape the runtime rejects: the same one-line error either way.
    bad = {0: (1, 224, 224, 4)}
    assert probe_resident(m, input_shapes=bad).error == probe_model(m, input_shapes=bad).error


def test_sigkill_while_idle_is_one_note_and_the_next_request_works(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    probe_resident(p, check=True)
    w = worker_for(p)
    os.kill(w.pid, signal.SIGKILL)
    time.sleep(0.1)
    again = probe_resident(p, input_shapes=SMALL, check=True)
    assert w.starts == 2
    said = [n for n in again.notes if "SIGKILL" in n]
    assert len(said) == 1 and str(p) in said[0] and "\n" not in said[0]
    assert w.events == said


def test_worker_killed_during_a_request_is_one_line_then_a_new_worker(tmp_path, monkeypatch):
    p = write(tmp_path, "chain.tflite", add_chain(2))
    probe_resident(p, check=True)
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", "kill@loaded")
    dead = probe_resident(p)
    assert not dead.ok and "crashed (SIGKILL)" in dead.error and str(p) in dead.error
    assert "\n" not in dead.error and "next request starts a new worker" in dead.error
    monkeypatch.delenv("ARENA_VIEWER_CHILD_HOOK")
    ok = probe_resident(p, input_shapes=SMALL, check=True)
    assert worker_for(p).starts == 2
    _same(ok, probe_model(p, input_shapes=SMALL, check=True))


def test_a_hang_is_bounded_by_the_timeout(tmp_path, monkeypatch):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    probe_resident(p, check=True)
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", "hang")
    t0 = time.monotonic()
    hung = probe_resident(p, timeout=1.5)
    assert time.monotonic() - t0 < 10
    assert not hung.ok and "did not finish" in hung.error and "killed" in hung.error
    assert worker_for(p).pid is None
    monkeypatch.delenv("ARENA_VIEWER_CHILD_HOOK")
    assert probe_resident(p, input_shapes=SMALL).ok and worker_for(p).starts == 2


@pytest.mark.parametrize("hook, text", [("garbage", "not JSON"), ("raise", "simulated runtime failure")])
def test_a_bad_answer_is_one_line(tmp_path, monkeypatch, hook, text):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    monkeypatch.setenv("ARENA_VIEWER_CHILD_HOOK", hook)
    bad = probe_resident(p)
    assert not bad.ok and text in bad.error and str(p) in bad.error and "\n" not in bad.error


def test_a_busy_worker_does_not_make_a_request_wait(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(1))
    w = worker_for(p)
    with w._lock:  # another thread's request in flight
        probe = probe_resident(p, check=True)
    assert w.starts == 0 and probe.ok  # answered by a one-shot process


def test_at_most_max_workers_stay_alive(tmp_path):
    from viewer.runtime import worker as mod

    paths = [write(tmp_path, f"m{k}.tflite", add_chain(1)) for k in range(mod.MAX_WORKERS + 1)]
    workers = []
    for p in paths:
        probe_resident(p, check=True)
        workers.append(worker_for(p))
    assert workers[0].pid is None and all(w.pid for w in workers[1:])


def test_a_missing_file_is_one_line_without_a_worker(tmp_path):
    probe = probe_resident(tmp_path / "nope.tflite")
    assert not probe.ok and "no such model file" in probe.error
    assert isinstance(worker_for(tmp_path / "other.tflite"), RuntimeWorker)


def test_the_windows_runtime_confirmation_goes_through_the_worker(tmp_path):
    """The window's compute() (runtime shapes, then the arena): one worker, no process per ask."""
    from viewer.document.work import AnalysisRequest, compute
    from viewer.whatif.edits import WhatIfEdits

    p = write(tmp_path, "chain.tflite", add_chain(2))
    for side in (4, 6):
        resp = compute(AnalysisRequest(str(p), edits=WhatIfEdits(input_shapes={"": (side, side)})))
        assert resp.probe is not None and resp.probe.ok and not resp.estimated
        assert resp.probe.tensor(0).shape == (1, side, side, 3)
    w = worker_for(p)
    # per compute: one ask (the shapes' answer is kept for the arena's) and one for the footprint
    # at the next batch (check's largest batch, shown in the Budget box)
    assert w.starts == 1 and w.requests == 4


@pytest.mark.parametrize("name", ["se_dynbatch.tflite", "litert_testdata_multi_subgraphs_while.tflite"])
def test_worker_equals_one_shot_on_deferred_tensors_and_control_flow(name):
    """se_dynbatch: LiteRT defers tensors to Invoke (the probe invokes once); a WHILE model."""
    m = shared_model(name)
    _same(probe_resident(m, check=True), probe_model(m, check=True))
