"""One LiteRT interpreter through a sequence of input shapes: what the runtime holds after each.

The oracle is LiteRT itself: its tensors' data pointers, the arena buffer's ``malloc_usable_size``
and the process's RSS, read in the session child. Our side is the ``litert`` planner replayed on
each step and the buffer rule of :func:`viewer.whatif.session.buffer_steps`.
"""

from __future__ import annotations

import pytest

from conftest import shared_model
from tests.session_models import dynamic_chain
from viewer.model.reader import load_model
from viewer.runtime.replay import replay
from viewer.runtime.session import measure_session
from viewer.whatif.session import aligned_request, buffer_steps

#: A usable size exceeds the request by the allocator's rounding: a chunk header for heap
#: blocks, up to a page for mmap'd ones.
ROUNDING = 4096 + 64


def _check_against_litert(model, run):
    """Per step: our replay == LiteRT's arena; our buffer rule == LiteRT's buffer."""
    assert run.ok and run.failed_step is None, run.error
    planned = [replay(model, s.probe) for s in run.steps]
    for s, r in zip(run.steps, planned):
        assert r.exact, (s.index, r.mismatched)
        assert r.arena_bytes == s.needed_bytes
    rule = buffer_steps([r.arena_bytes for r in planned])
    for k, (s, b) in enumerate(zip(run.steps, rule)):
        assert b.request <= s.held_bytes < b.request + ROUNDING, (k, b, s.held_bytes)
        if k:
            moved = s.buffer_address != run.steps[k - 1].buffer_address
            assert moved == b.grew, k  # a new block exactly when the plan outgrew the buffer
    return rule


def test_arena_grows_with_the_largest_step_and_never_shrinks(tmp_path):
    model_path = dynamic_chain(tmp_path)
    model = load_model(model_path)
    batches = [1, 16, 4, 64, 2]
    run = measure_session(model_path, [{0: (b, 8, 8, 3)} for b in batches])
    rule = _check_against_litert(model, run)
    held = [s.held_bytes for s in run.steps]
    assert held == sorted(held)  # measured: never shrinks
    assert [b.grew for b in rule] == [True, True, False, True, False]
    # the needed arena does shrink: a batch-4 plan is a quarter of the batch-16 one
    assert run.steps[2].needed_bytes * 4 == run.steps[1].needed_bytes
    assert run.steps[4].held_bytes == run.steps[3].held_bytes


def test_shared_dynamic_add_model(tmp_path):
    path = shared_model("litert_test_simple_add_dynamic_shape.tflite")
    steps = [{0: (b, 128, 4), 1: (b, 128, 4)} for b in (1, 64, 8, 512, 2)]
    run = measure_session(path, steps)
    _check_against_litert(load_model(path), run)
    assert [s.needed_bytes for s in run.steps] == [6144, 393216, 49152, 3145728, 12288]


def test_growth_copies_the_old_block_resident_beside_the_new(tmp_path):
    # 2048 -> 2560 rows of 8x8x3 floats: the old block (its tensors of 2048 rows) is copied into the
    # new one before it is freed, so the RSS peaks at about 2 old - new above the step's end.
    model_path = dynamic_chain(tmp_path, n_adds=2)
    run = measure_session(model_path, [{0: (2048, 8, 8, 3)}, {0: (2560, 8, 8, 3)}])
    first, second = run.steps
    assert second.buffer_address != first.buffer_address
    if second.peak_above_end_bytes is None:
        pytest.skip("VmHWM cannot be reset here (/proc/self/clear_refs)")
    expected = 2 * first.held_bytes - second.held_bytes
    assert expected > 1 << 20
    assert abs(second.peak_above_end_bytes - expected) < 0.25 * expected


def test_a_fixed_dimension_is_refused_by_the_runtime_and_ends_the_session(tmp_path):
    model_path = dynamic_chain(tmp_path)
    run = measure_session(model_path, [{0: (2, 8, 8, 3)}, {0: (2, 9, 8, 3)}, {0: (4, 8, 8, 3)}])
    assert run.ok and run.failed_step == 1 and len(run.steps) == 1
    assert str(model_path) in run.error and "step 2" in run.error and "\n" not in run.error


def test_tensors_deferred_to_invoke_grow_the_buffer_during_invoke():
    # Its shapes follow input values: LiteRT plans part of the arena at allocate_tensors() and
    # the rest in Invoke, which reallocates the buffer; its dynamic tensors are malloc'd.
    path = shared_model("litert_testdata_dynamic_shapes.tflite")
    model = load_model(path)
    run = measure_session(path, [{}, {}])
    _check_against_litert(model, run)
    first, second = run.steps
    assert first.needed_after_allocate_bytes < first.needed_bytes
    assert first.buffer_address_after_allocate != first.buffer_address
    assert second.buffer_address_after_allocate == second.buffer_address == first.buffer_address
    assert {d.id for d in first.dynamic} and all(d.held_bytes is not None for d in first.dynamic)


def test_missing_file_is_one_line(tmp_path):
    run = measure_session(tmp_path / "nope.tflite", [{0: (1,)}])
    assert not run.ok and "no such model file" in run.error


@pytest.mark.parametrize("name, shapes", [
    # im2col temporaries are 9.4 of se_dynbatch's 11.6 MB at batch 1, planned by LiteRT during Invoke
    ("se_dynbatch.tflite", [(1, 64, 64, 3), (2, 64, 64, 3), (1, 64, 64, 3)]),
    ("mlperftiny_ic_resnet8_int8.tflite", [(1, 32, 32, 3), (8, 32, 32, 3), (2, 32, 32, 3)]),
    ("litert_test_simple_add_dynamic_shape.tflite", [(1, 128, 4), (64, 128, 4), (8, 128, 4)]),
])
def test_prediction_without_the_runtime_matches_litert(name, shapes):
    from viewer.whatif.session_plan import plan_session, session_steps

    path = shared_model(name)
    model = load_model(path)
    steps = session_steps(model, 0, [{"*": s} for s in shapes])
    predicted = plan_session(model, 0, steps)
    run = measure_session(path, steps)
    assert [p.buffer.needed for p in predicted] == [s.needed_bytes for s in run.steps]
    for p, s in zip(predicted, run.steps):
        assert p.buffer.request <= s.held_bytes < p.buffer.request + ROUNDING


def test_prediction_without_the_runtime_on_a_built_chain(tmp_path):
    from viewer.whatif.session_plan import plan_session

    path = dynamic_chain(tmp_path)
    steps = [{0: (b, 8, 8, 3)} for b in (3, 1, 7)]
    predicted = plan_session(load_model(path), 0, steps)
    run = measure_session(path, steps)
    assert [p.buffer.needed for p in predicted] == [s.needed_bytes for s in run.steps]
    assert [p.buffer.grew for p in predicted] == [True, False, True]


def test_a_crash_keeps_the_steps_before_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_VIEWER_SESSION_HOOK", "segv@3")
    path = dynamic_chain(tmp_path)
    run = measure_session(path, [{0: (b, 8, 8, 3)} for b in (1, 2, 3, 4)])
    assert run.ok and run.failed_step == 2 and len(run.steps) == 2
    assert "crashed (SIGSEGV)" in run.error and "step 3" in run.error
