"""The probe that also measures the runtime overhead, and the totals-only probe.

Both must give the answers of the plain probe (the oracle is LiteRT through probe_model: the
same allocation, read back field by field); the overhead figure must be the one a fresh process
of its own measures (viewer.runtime.overhead, the previous method) within a few pages.
"""

from __future__ import annotations

import dataclasses

import pytest

from conftest import shared_model
from tests.tflite_builder import add_chain, write
from viewer.model.reader import load_model
from viewer.runtime.overhead import measure_overhead
from viewer.runtime.probe import probe_model, probe_totals
from viewer.runtime.worker import close_workers, probe_resident, totals_resident, worker_for
from viewer.whatif.verdict import overhead_margin

#: Models with in-place ops, im2col temporaries, fp16 weights dequantized at prepare (persistent),
#: and a dynamic batch.
MODELS = ["mobilenet_v2_224_int8.tflite", "mobilenet_v2_224_fp16.tflite",
          "mlperftiny_kws_dscnn_int8.tflite"]


@pytest.fixture(autouse=True)
def _no_workers_left():
    yield
    close_workers()


def _fields(p) -> dict:
    d = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    for k in ("arena_address", "overhead_grown_bytes", "overhead_error"):
        d.pop(k)
    d["node_temporaries"], d["inplace_aliases"] = dict(d["node_temporaries"]), dict(d["inplace_aliases"])
    return d


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_the_metered_probe_answers_as_the_plain_one_and_measures_as_a_process_of_its_own(name):
    p = shared_model(name)
    plain = probe_model(p, check=True)
    metered = probe_model(p, check=True, overhead=True)
    assert _fields(metered) == _fields(plain)
    assert plain.overhead_grown_bytes is None and not plain.overhead_error
    assert metered.overhead_grown_bytes is not None, metered.overhead_error
    alone = measure_overhead(p).grown_bytes
    # The same definition in both processes, within the margin check states for it.
    assert abs(metered.overhead_grown_bytes - alone) <= overhead_margin(alone), \
        (metered.overhead_grown_bytes, alone)
    assert metered.overhead_grown_bytes >= plain.arena_bytes  # the arena's pages are in it


def test_the_metered_probe_is_not_measured_at_other_shapes_or_in_a_used_process(tmp_path):
    p = write(tmp_path, "chain.tflite", add_chain(3))
    at = probe_model(p, input_shapes={0: (2, 8, 8, 3)}, overhead=True, check=True)
    assert at.overhead_grown_bytes is None and "file's shapes" in at.overhead_error
    w = worker_for(p)
    probe_resident(p, input_shapes={0: (3, 8, 8, 3)}, check=True)  # the worker has built one
    starts, requests = w.starts, w.requests
    got = probe_resident(p, overhead=True, check=True)  # so a fresh one-shot process answers
    assert got.overhead_grown_bytes is not None, got.overhead_error
    assert (w.starts, w.requests) == (starts, requests)


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_totals_are_the_full_probes_terms_at_batch_2(name):
    from viewer.runtime.probe_types import REGION_DYNAMIC, REGION_PERSISTENT, REGION_PERSISTENT_ARENA

    p = shared_model(name)
    sg = load_model(p).subgraph(0)
    shapes = {0: (2,) + tuple(sg.tensors[sg.inputs[0]].shape[1:])}
    full = probe_model(p, input_shapes=shapes, check=True)
    for got in (probe_totals(p, shapes), totals_resident(p, shapes)):
        assert got.ok, got.error
        assert got.arena_bytes == full.arena_bytes
        assert got.persistent_bytes == sum(t.nbytes for t in full.tensors
                                           if t.region in (REGION_PERSISTENT, REGION_PERSISTENT_ARENA))
        assert got.dynamic_bytes == sum(t.nbytes for t in full.tensors if t.region == REGION_DYNAMIC)
        assert got.unplaced == len(full.deferred) == 0
        assert got.num_model_tensors == full.num_model_tensors
        assert got.resized_inputs == full.resized_inputs


@pytest.mark.shared
def test_totals_of_a_batch_the_runtime_rejects_is_its_one_line():
    p = shared_model("unet_256_int8.tflite")  # a fixed RESHAPE: batch 2 fails to prepare
    shapes = {0: (2, 256, 256, 3)}
    got, full = probe_totals(p, shapes), probe_model(p, input_shapes=shapes)
    assert not got.ok and got.error == full.error and "RESHAPE" in got.error


@pytest.mark.shared
def test_deferred_tensors_are_counted_in_a_field_and_totals_defer_to_the_full_probe():
    p = shared_model("se_dynbatch.tflite")
    probe = probe_model(p, check=True)
    assert probe.invoked and probe.deferred_count > 0
    assert probe.invoke_reason.startswith(f"{probe.deferred_count} tensor(s)")
    assert probe_totals(p).unplaced > 0  # not placed by allocate_tensors(): a full probe answers


def test_totals_of_a_file_the_runtime_cannot_load_is_one_line(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\0" * 64)
    got = probe_totals(bad)
    assert not got.ok and str(bad) in got.error and "\n" not in got.error


def test_totals_asked_ahead_answer_the_later_question_without_the_worker(tmp_path):
    from viewer.runtime.worker import prefetch_totals

    p = write(tmp_path, "chain.tflite", add_chain(3))
    shapes = {0: (2, 8, 8, 3)}
    prefetch_totals(p, shapes, timeout=60).join(120)
    w = worker_for(p)
    got = totals_resident(p, shapes)
    assert got.ok and got.arena_bytes == probe_model(p, input_shapes=shapes, check=True).arena_bytes
    assert w.starts == 0 and w.requests == 0  # answered by the process asked ahead
    prefetch_totals(p, {0: (1, 8, 8, 4)}, timeout=60)  # still running: the question waits for it
    bad = totals_resident(p, {0: (1, 8, 8, 4)})
    assert bad.error == probe_totals(p, {0: (1, 8, 8, 4)}).error and w.starts == 0
