"""TFLite Micro is the oracle: its planner's own inputs and offsets, read from the runtime.

On every model here our TFLM rules give exactly the buffers TFLM's ``CreatePlan`` hands its
planner (size, first and last scope, in order), and ``tflm_greedy`` fed them (with the measured
scratch buffers) gives every offset TFLM chose, so the head to the byte; head + tail is the
recording allocator's total. The whole shared set runs in tools/tflm_acceptance.py.
"""

from __future__ import annotations

import pytest

from tests.conftest import shared_model
from viewer.analysis.tflm import analyze_tflm, tflm_problem
from viewer.model.reader import load_model
from viewer.planning.tflm import plan_tflm_greedy
from viewer.runtime.tflm_probe import measure_tflm, tflm_available

pytestmark = pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed")

#: Small ones covering scratch buffers, control flow, resource variables, MCU models.
MODELS = [
    "tfmicro_micro_speech_int8", "mlperftiny_ic_resnet8_int8", "tfmicro_keyword_scrambled",
    "tfmicro_dtln_noise_suppression", "litert_testdata_multi_subgraphs_while",
    "litert_testdata_nested_while", "litert_testdata_call_once_mul", "tfmicro_person_detect_int8",
]


@pytest.mark.parametrize("name", MODELS)
def test_replay_equals_the_runtime(name):
    m = load_model(shared_model(f"{name}.tflite"))
    r = measure_tflm(m, timeout=120)
    assert r.ok, r.error
    assert r.hooks
    p = tflm_problem(m, r.scratch)
    assert [(b.size, b.first - 1, b.last - 1) for b in p.buffers] == [tuple(b[:3]) for b in r.planner_buffers]
    plan = plan_tflm_greedy(p)
    assert [plan.offsets[b.id] for b in p.buffers] == list(r.planner_offsets)
    assert plan.arena_bytes == r.head_bytes
    assert r.head_bytes + r.tail_bytes == r.total_bytes
    # the lower bound shown (per operator, over its scopes) is one for TFLM's own head: it was
    # above it on the WHILE models (224 vs 128 B, 192 vs 112 B) when scopes were merged per operator
    assert analyze_tflm(m, r.scratch, problem=p).lower_bound_bytes <= r.head_bytes


def test_issue_table_numbers():
    """The numbers issue 11 measured, for two of its models."""
    for name, head, tail in (("mlperftiny_vww_mobilenet_int8", 73728, 29952),
                             ("tfmicro_micro_speech_int8", 5968, 1616)):
        r = measure_tflm(load_model(shared_model(f"{name}.tflite")))
        assert (r.head_bytes, r.tail_bytes) == (head, tail)


@pytest.mark.parametrize("name, says", [
    ("coral_split_concat", "operator #0 CONCATENATION failed to prepare"),
    ("mp_face_detection_short_range", "operator #0 DEQUANTIZE failed to prepare"),
    ("tfmicro_person_detect_vela", "ethos-u"),
])
def test_unloadable_model_is_one_line_naming_the_operator(name, says):
    r = measure_tflm(load_model(shared_model(f"{name}.tflite")))
    assert not r.ok and says in r.error and "\n" not in r.error
