"""Our analysis and plans against LiteRT 2.3 itself, on every shared model the runtime loads.

The runtime is the oracle: after ``allocate_tensors()`` (and one ``invoke()`` when LiteRT
deferred tensors to it) each tensor's data pointer and size are read from the interpreter (in process; kernel temporaries and tensors without a type are not
readable through the Python wrapper, so they are left out).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_model, shared_model_names
from viewer.analysis.intervals import analyze
from viewer.analysis.types import KIND_ALIAS, OUT_PERSISTENT, OUT_PERSISTENT_RO
from viewer.model.reader import load_model
from viewer.planning.litert import plan_litert
from viewer.planning.run import run_planners
from viewer.planning.verify import verify_plan

MODELS = shared_model_names(loads_in_litert=True)

#: Sub-byte types: the Python wrapper shows them one element per byte, not packed as stored.
_UNPACKED_IN_PYTHON = frozenset({"int4", "int2", "uint4"})

#: Models whose ``litert`` offsets differ from the runtime's, and why. Every one has kernel
#: temporaries (runtime tensors past the model's own: im2col, scratch) that take arena space
#: this analysis does not see yet (count measured with LiteRT 2.3). Strict xfail: a model that
#: starts to match (e.g. once measured temporaries are fed in) must leave this list.
EXACT_EXCEPTIONS: dict[str, str] = {
    name: f"{k} kernel temporaries in the arena, not modelled by analyze() without a probe"
    for name, k in {
        "coral_automl_traffic_model.tflite": 3,
        "coral_mobilenet_v1_0.25_128_quant.tflite": 1,
        "coral_mobilenet_v1_0.75_192_quant.tflite": 1,
        "coral_movenet_single_pose_lightning_ptq.tflite": 1,
        "coral_tf2_mobilenet_v2_1.0_224_ptq.tflite": 5,
        "litert_test_torchaudio_conformer.tflite": 90,
        "mlperftiny_ic_resnet8_int8.tflite": 15,
        "mlperftiny_kws_dscnn_float.tflite": 22,
        "mlperftiny_vww_mobilenet_float.tflite": 7,
        "mlperftiny_vww_mobilenet_int8.tflite": 7,
        "mp_face_detection_short_range.tflite": 1,
        "mp_palm_detection_full.tflite": 1,
        "mp_ssd_mobilenetv2_oidv4_fp16.tflite": 5,
        "tfmicro_dtln_noise_suppression.tflite": 30,
        "tfmicro_keyword_scrambled.tflite": 72,
        "tfmicro_pytorch_mobilenet_v2_int8_nchw.tflite": 11,
        "mobilenet_v2_224.tflite": 11,
        "mobilenet_v2_224_int8.tflite": 11,
        "unet_256.tflite": 17,
        "unet_256_int8.tflite": 17,
        "unet_256_fp16.tflite": 17,
        "dyn_hw.tflite": 2,  # im2col of CONV_2D #0 and #1 (at the file's 1x1 placeholder)
        "fixed_flatten.tflite": 1,  # im2col of CONV_2D #0
        "multi_out_sigs.tflite": 3,  # SUM #3's scratch (index, axis, resolved axis)
        "se_dynbatch.tflite": 7,  # after the invoke that places the deferred half (im2col x3)
    }.items()
}
EXACT_PARAMS = [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=EXACT_EXCEPTIONS[n]))
    if n in EXACT_EXCEPTIONS else n
    for n in MODELS
]


def _runtime_tensors(path, invoke: bool = True) -> tuple[dict[int, tuple[object, int]], int]:
    """``{tensor: (address or "null"/"scalar", bytes)}`` after ``allocate_tensors()``, and after
    one ``invoke()`` when LiteRT deferred tensors to it (``invoke=False``: never).

    Returns the map (readable tensors only) and the runtime's tensor count for subgraph 0
    (model tensors plus kernel temporaries).
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    ip = Interpreter(
        model_path=str(path),
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    ip.allocate_tensors()
    from viewer.runtime._child import _random_inputs, _unallocated

    if invoke and _unallocated(ip, 0, ip._interpreter.NumTensors(0)):
        # LiteRT deferred part of the arena to Invoke (dynamic outputs, RESHAPE with a computed
        # shape): compare with the arena after one invocation, the one the device holds.
        _random_inputs(ip)
        ip.invoke()
    n = ip._interpreter.NumTensors(0)
    out: dict[int, tuple[object, int]] = {}
    for i in range(n):
        try:  # a tensor without type or dims crashes ``tensor()``: ask these first
            ty = ip._interpreter.TensorType(i, 0)
            shape = ip._interpreter.TensorSize(i, 0)
        except ValueError:
            continue
        if ty in (np.bytes_, np.object_, np.str_):
            continue
        nbytes = int(np.prod(shape)) * np.dtype(ty).itemsize
        try:
            a = ip.tensor(i)()
        except ValueError:  # "Tensor data is null"
            out[i] = ("null", nbytes)
            continue
        if isinstance(a, np.ndarray):
            out[i] = (int(a.ctypes.data) if a.nbytes else 0, int(a.nbytes))
        else:  # 0-d tensors come back as numpy scalars: no address
            out[i] = ("scalar", nbytes)
    return out, n


def _setup(name):
    path = shared_model(name)
    rt, n_runtime = _runtime_tensors(path)
    model = load_model(path)
    sg = model.subgraph(0)
    an = analyze(sg, model=model)
    null = [u.tensor for u in an.usages if rt.get(u.tensor, (0,))[0] == "null" and u.nbytes]
    if null:
        pytest.skip(
            f"{name}: subgraph 0 is not allocated statically (tensors {null[:5]} have no data "
            "after allocate_tensors() and one invoke(); LiteRT sizes them while it runs)"
        )
    return sg, an, rt, n_runtime


def _addr(rt, t):
    v = rt.get(t)
    return v[0] if v is not None and isinstance(v[0], int) and v[0] else None


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_runtime_agreement(name):
    sg, an, rt, _ = _setup(name)
    # (a) every tensor's bytes equal the interpreter's. A rank-0 shape in the file is a
    # placeholder some converters leave for outputs that the kernel sizes in Prepare.
    wrong = [
        (t, rt[t][1], sg.tensors[t].nbytes)
        for t in range(len(sg.tensors))
        if t in rt and rt[t][1] != sg.tensors[t].nbytes and sg.tensors[t].shape != ()
        and sg.tensors[t].dtype not in _UNPACKED_IN_PYTHON
    ]
    assert not wrong, f"(tensor, runtime bytes, ours): {wrong[:5]}"
    # (b) every registered plan is valid, (c) and no smaller than the lower bound.
    problem = an.problem()
    plans = run_planners(problem)
    assert "litert" in plans and "naive" in plans
    for pname, plan in plans.items():
        verify_plan(problem, plan)
        assert plan.arena_bytes >= an.lower_bound_bytes, pname
    assert an.lower_bound_bytes == problem.lower_bound()


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_in_place_and_persistent_rules_match_runtime(name):
    """Aliases share their root's address exactly when the runtime shares it; folded
    (persistent) tensors are never inside the runtime's arena."""
    sg, an, rt, _ = _setup(name)
    ours = {u.tensor: u.alias_of for u in an.usages if u.kind == KIND_ALIAS}
    for t, root in ours.items():
        if _addr(rt, t) is not None:
            assert _addr(rt, t) == _addr(rt, root), f"tensor {t} should share {root}'s bytes"
    for op in sg.operators:
        if not op.outputs or op.outputs[0] < 0 or _addr(rt, op.outputs[0]) is None:
            continue
        out = op.outputs[0]
        same = [t for t in op.inputs if t >= 0 and _addr(rt, t) == _addr(rt, out)]
        if same:
            assert out in ours, f"runtime runs {op.op_name} (op {op.index}) in place; we do not"
    arena = [_addr(rt, u.tensor) for u in an.usages if u.alias_of is None]
    arena = [a for a in arena if a is not None]
    if arena:
        lo = min(arena)
        hi = max(_addr(rt, u.tensor) + u.nbytes for u in an.usages
                 if u.alias_of is None and _addr(rt, u.tensor) is not None)
        inside = [t for t, why in an.outside.items()
                  if why in (OUT_PERSISTENT, OUT_PERSISTENT_RO) and _addr(rt, t) is not None
                  and lo <= _addr(rt, t) < hi]
        assert not inside, f"persistent tensors inside the arena: {inside[:5]}"


@pytest.mark.shared
@pytest.mark.parametrize("name", EXACT_PARAMS)
def test_litert_offsets_equal_runtime(name):
    """Where kernel temporaries do not interfere, our ``litert`` offsets are the runtime's,
    byte for byte, and so is the arena's high-water mark."""
    sg, an, rt, n_runtime = _setup(name)
    plan = plan_litert(an.problem())
    placed = {u.tensor: _addr(rt, u.tensor) for u in an.usages if u.alias_of is None and u.nbytes}
    placed = {t: a for t, a in placed.items() if a is not None}
    if not placed:
        pytest.skip(f"{name}: no arena tensor has a readable address (scalars only)")
    base = min(placed.values())
    measured = {t: a - base for t, a in placed.items()}
    planned = {t: plan.offsets[t] for t in placed}
    assert planned == measured
    span = max(a + an.usage(t).nbytes for t, a in measured.items())
    if len(placed) == sum(1 for u in an.usages if u.alias_of is None and u.nbytes):
        assert plan.arena_bytes == span


@pytest.mark.shared
@pytest.mark.parametrize("name", MODELS)
def test_kernel_sized_flags_every_placeholder_the_runtime_resizes(name):
    """A tensor whose bytes LiteRT computes differently from the file's shape is flagged in
    ``kernel_sized`` (and so gets a note), never silently counted at the file's size."""
    path = shared_model(name)
    model = load_model(path)
    sg = model.subgraph(0)
    an = analyze(sg, model=model)
    rt, _ = _runtime_tensors(path, invoke=False)  # prepare-time sizes (not data-dependent ones)
    resized = [
        u.tensor for u in an.usages
        if u.alias_of is None and u.tensor in rt and rt[u.tensor][1] != u.nbytes
        and sg.tensors[u.tensor].dtype not in _UNPACKED_IN_PYTHON
    ]
    assert set(resized) <= set(an.kernel_sized), f"(runtime bytes differ, not flagged): {resized[:5]}"
    assert len(an.notes) == len(an.kernel_sized)
    assert set(an.kernel_sized) <= {u.tensor for u in an.usages}
    known = {"coral_automl_traffic_model.tflite": {316, 317, 318, 319}, "litert_testdata_lstm.tflite": {24}}
    assert set(an.kernel_sized) == known.get(name, set())
