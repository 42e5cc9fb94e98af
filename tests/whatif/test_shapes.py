"""Our own shape inference: hand-worked graphs, and equality with LiteRT's on real models."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import MODELS, shared_model, shared_model_names
from tests.whatif._graphs import op, subgraph, t
from viewer.errors import WhatIfError
from viewer.whatif.shapes import infer_shapes

SAME, VALID = 0, 1


def conv_net():
    # 0 input [1,32,32,3] -> CONV 3x3 s2 SAME (filter 1) -> 2 -> DW 3x3 VALID (filter 3) -> 4
    # -> MAX_POOL 2x2 s2 -> 5 -> MEAN axes (1,2) keep_dims -> 7 -> RESHAPE [-1, 8] -> 9 -> FC (w 10) -> 11
    tensors = [
        t(0, (1, 32, 32, 3)), t(1, (8, 3, 3, 3), const=True), t(2, (1, 16, 16, 8)),
        t(3, (1, 3, 3, 8), const=True), t(4, (1, 14, 14, 8)), t(5, (1, 7, 7, 8)),
        t(6, (2,), "int32", const=True), t(7, (1, 1, 1, 8)), t(8, (2,), "int32", const=True),
        t(9, (1, 8)), t(10, (4, 8), const=True), t(11, (1, 4)),
    ]
    ops = [
        op(0, "CONV_2D", (0, 1, -1), (2,), padding=SAME, stride_h=2, stride_w=2),
        op(1, "DEPTHWISE_CONV_2D", (2, 3, -1), (4,), padding=VALID, stride_h=1, stride_w=1, depth_multiplier=1),
        op(2, "MAX_POOL_2D", (4,), (5,), padding=VALID, stride_h=2, stride_w=2, filter_height=2, filter_width=2),
        op(3, "MEAN", (5, 6), (7,), keep_dims=True),
        op(4, "RESHAPE", (7, 8), (9,)),
        op(5, "FULLY_CONNECTED", (9, 10, -1), (11,)),
    ]
    consts = {6: np.array([1, 2]), 8: np.array([-1, 8])}
    return subgraph(tensors, ops, (0,), (11,)), consts


def test_unchanged_input_keeps_every_stored_shape():
    sg, consts = conv_net()
    out = infer_shapes(sg, {0: (1, 32, 32, 3)}, constants=consts)
    assert out == {x.index: x.shape for x in sg.tensors}


def test_conv_pool_mean_reshape_fc_hand_worked():
    sg, consts = conv_net()
    out = infer_shapes(sg, {0: (3, 65, 40, 3)}, constants=consts)
    assert out[2] == (3, 33, 20, 8)  # SAME, stride 2: ceil(65/2), ceil(40/2)
    assert out[4] == (3, 31, 18, 8)  # VALID 3x3: 33-2, 20-2
    assert out[5] == (3, 15, 9, 8)  # 2x2 s2 VALID: floor(31/2), floor(18/2)
    assert out[7] == (3, 1, 1, 8)
    assert out[9] == (3, 8)  # -1 inferred
    assert out[11] == (3, 4)
    assert out[1] == (8, 3, 3, 3)  # weights untouched


def test_fixed_reshape_names_operator_and_tensor():
    sg, consts = conv_net()
    consts[8] = np.array([1, 8])  # a fixed batch of 1
    with pytest.raises(WhatIfError) as e:
        infer_shapes(sg, {0: (2, 32, 32, 3)}, constants=consts, source="m.tflite")
    msg = str(e.value)
    assert msg.startswith("m.tflite: operator 4 (RESHAPE) tensor 9 't9'")
    assert "[1, 8] has 8 elements" in msg and "16" in msg


def test_broadcast_concat_pad_resize_slice_transpose():
    tensors = [
        t(0, (1, 4, 4, 2)), t(1, (1, 1, 1, 2), const=True), t(2, (1, 4, 4, 2)),  # ADD bcast
        t(3, (1, 4, 4, 4)),  # CONCAT axis -1 of 0 and 2
        t(4, (4, 2), "int32", const=True), t(5, (1, 6, 6, 4)),  # PAD 1 each side of H, W
        t(6, (2,), "int32", const=True), t(7, (1, 12, 12, 4)),  # RESIZE to fixed 12x12
        t(8, (4,), "int32", const=True), t(9, (4,), "int32", const=True), t(10, (1, 4, 12, 4)),  # SLICE
        t(11, (4,), "int32", const=True), t(12, (1, 4, 4, 12)),  # TRANSPOSE 0,3,1,2
        t(13, (4,), "int32", const=True), t(14, (4,), "int32", const=True), t(15, (4,), "int32", const=True),
        t(16, (1, 2, 4, 12)),  # STRIDED_SLICE stride 2 on dim 1
        t(17, (1, 2, 4, 12)),  # SOFTMAX
    ]
    ops = [
        op(0, "ADD", (0, 1), (2,)),
        op(1, "CONCATENATION", (0, 2), (3,), axis=-1),
        op(2, "PAD", (3, 4), (5,)),
        op(3, "RESIZE_BILINEAR", (5, 6), (7,)),
        op(4, "SLICE", (7, 8, 9), (10,)),
        op(5, "TRANSPOSE", (10, 11), (12,)),
        op(6, "STRIDED_SLICE", (12, 13, 14, 15), (16,), begin_mask=0b1111, end_mask=0b1111),
        op(7, "SOFTMAX", (16,), (17,)),
    ]
    consts = {4: np.array([[0, 0], [1, 1], [1, 1], [0, 0]]), 6: np.array([12, 12]),
              8: np.array([0, 0, 0, 0]), 9: np.array([-1, 4, -1, -1]), 11: np.array([0, 3, 1, 2]),
              13: np.zeros(4), 14: np.zeros(4), 15: np.array([1, 2, 1, 1])}
    sg = subgraph(tensors, ops, (0,), (17,))
    assert infer_shapes(sg, {0: (1, 4, 4, 2)}, constants=consts)[17] == (1, 2, 4, 12)
    out = infer_shapes(sg, {0: (2, 6, 5, 2)}, constants=consts)
    assert out[2] == (2, 6, 5, 2)
    assert out[3] == (2, 6, 5, 4)
    assert out[5] == (2, 8, 7, 4)
    assert out[7] == (2, 12, 12, 4)  # a constant size stays the same
    assert out[10] == (2, 4, 12, 4)
    assert out[12] == (2, 4, 4, 12)
    assert out[16] == (2, 2, 4, 12)
    assert out[17] == (2, 2, 4, 12)


def test_broadcast_mismatch_is_a_whatif_error():
    tensors = [t(0, (1, 4, 4, 2)), t(1, (1, 4, 4, 2)), t(2, (1, 4, 4, 2))]
    sg = subgraph(tensors, [op(0, "MUL", (0, 1), (2,))], (0, 1), (2,))
    with pytest.raises(WhatIfError, match=r"operator 0 \(MUL\).*cannot broadcast"):
        infer_shapes(sg, {0: (1, 8, 8, 2)})


def test_unknown_operator_on_the_resized_path_is_named():
    tensors = [t(0, (1, 4)), t(1, (1, 4)), t(2, (1, 4)), t(3, (1, 4))]
    ops = [op(0, "RELU", (0,), (1,)), op(1, "MY_CUSTOM", (1,), (2,)), op(2, "RELU", (2,), (3,))]
    sg = subgraph(tensors, ops, (0,), (3,))
    with pytest.raises(WhatIfError, match=r"operator 1 \(MY_CUSTOM\) tensor 2 't2'.*does not know"):
        infer_shapes(sg, {0: (2, 4)})
    # Off the resized path an unknown operator is harmless.
    ops2 = [op(0, "MY_CUSTOM", (1,), (2,)), op(1, "RELU", (0,), (3,))]
    assert infer_shapes(subgraph(tensors, ops2, (0, 1), (2, 3)), {0: (5, 4)})[3] == (5, 4)


def test_shape_values_flow_through_shape_stridedslice_pack_reshape():
    # SHAPE(x) -> [N,H,W,C]; STRIDED_SLICE [0:1] shrink -> N; PACK(N, -1) -> RESHAPE(x, [N, -1])
    tensors = [t(0, (1, 2, 2, 3)), t(1, (4,), "int32"), t(2, (1,), "int32", const=True),
               t(3, (1,), "int32", const=True), t(4, (), "int32"), t(5, (), "int32", const=True),
               t(6, (2,), "int32"), t(7, (1, 12))]
    ops = [op(0, "SHAPE", (0,), (1,)),
           op(1, "STRIDED_SLICE", (1, 2, 3, 3), (4,), shrink_axis_mask=1),
           op(2, "PACK", (4, 5), (6,), axis=0, values_count=2),
           op(3, "RESHAPE", (0, 6), (7,))]
    consts = {2: np.array([0]), 3: np.array([1]), 5: np.array(-1)}
    sg = subgraph(tensors, ops, (0,), (7,))
    assert infer_shapes(sg, {0: (5, 4, 4, 3)}, constants=consts)[7] == (5, 48)


# -- the runtime is the oracle -----------------------------------------------------------------
def _edited_inputs(sg, mode):
    out = {}
    for i in sg.inputs:
        s = list(sg.tensors[i].shape)
        if mode == "batch2" and s:
            s[0] = 2
        elif mode == "hw1.5" and len(s) == 4:
            s[1], s[2] = s[1] * 3 // 2, s[2] * 3 // 2
        else:
            continue
        out[i] = tuple(s)
    return out


def runtime_shapes(path, inputs):
    """Shapes after LiteRT's own resize + allocate (in this process), or the error text.

    When ``allocate_tensors()`` left tensors without memory (LiteRT sizes them during
    ``Invoke``: dynamic outputs, RESHAPE with a computed shape), the shapes are read after one
    invocation on synthetic inputs, as the probe does.
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from viewer.runtime._child import _random_inputs, _unallocated

    try:
        it = Interpreter(model_path=str(path),
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        for i, s in inputs.items():
            it.resize_tensor_input(i, list(s), strict=False)
        it.allocate_tensors()
        if _unallocated(it, 0, it._interpreter.NumTensors(0)):
            _random_inputs(it)
            it.invoke()
    except (RuntimeError, ValueError) as e:
        return None, str(e)
    ii = it._interpreter
    out = {}
    for i in range(ii.NumTensors(0)):
        try:
            out[i] = tuple(int(d) for d in ii.TensorSize(i, 0))
        except ValueError:  # "Tensor with no shape found"
            pass
    return out, ""


@pytest.mark.shared
@pytest.mark.parametrize("mode", ["batch2", "hw1.5"])
@pytest.mark.parametrize("name", shared_model_names(loads_in_litert=True))
def test_fallback_inference_equals_runtime(name, mode):
    """Where both run, every non-constant tensor's inferred shape is the runtime's; where the
    runtime rejects the resize at an operator, our inference rejects it at the same operator."""
    import re

    from viewer.model.constants import small_int_constants
    from viewer.model.reader import load_model

    path = shared_model(name)
    sg = load_model(path).subgraphs[0]
    inputs = _edited_inputs(sg, mode)
    if not inputs or all(inputs[i] == sg.tensors[i].shape for i in inputs):
        pytest.skip(f"{name}: no input to {mode}")
    rt, err = runtime_shapes(path, inputs)
    try:
        ours, why = infer_shapes(sg, inputs, constants=small_int_constants(path, 0)), ""
    except WhatIfError as e:
        ours, why = None, str(e)
    if rt is not None and ours is not None:
        bad = {i: (ours[i], rt[i]) for i in ours if i in rt and not sg.tensors[i].is_constant and ours[i] != rt[i]}
        assert not bad, f"{name} {mode}: inferred != runtime for {dict(list(bad.items())[:5])}"
    elif rt is None and ours is None:
        m = re.search(r"Node number (\d+) \((\w+)\) failed to prepare", err)
        if m and "does not know" not in why and "not known" not in why:
            assert f"operator {m.group(1)} ({m.group(2)})" in why, (err, why)
    elif ours is None:
        # The runtime took it; we may only refuse for want of a rule or a value, never by a wrong rule.
        assert "does not know" in why or "not known" in why or "data-dependent" in why, why
    else:
        pytest.fail(f"{name} {mode}: runtime rejected ({err}) but inference accepted")


# --- the file's stored shapes against what LiteRT computes at prepare (plan without --measure) ---


def _litert_shapes(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    ip = Interpreter(model_path=str(path),
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    ip.allocate_tensors()
    return {d["index"]: tuple(int(x) for x in d["shape"]) for d in ip.get_tensor_details()}


@pytest.mark.shared
@pytest.mark.parametrize("name", shared_model_names(loads_in_litert=True))
def test_stored_shape_check_claims_only_what_litert_computes(name):
    """Every difference our rules claim, LiteRT has (same shape); every shape LiteRT changes at
    prepare is either claimed or left unconfirmed (kernel-sized), never silently passed."""
    from viewer.analysis.intervals import analyze
    from viewer.model.constants import small_int_constants
    from viewer.model.reader import load_model
    from viewer.whatif.shapes import check_stored_shapes

    path = shared_model(name)
    sg = load_model(path).subgraph(0)
    check = check_stored_shapes(sg, small_int_constants(path, 0), analyze(sg).kernel_sized)
    rt = _litert_shapes(path)
    for t, _stored, computed, _op in check.differs:
        assert rt[t] == computed, (t, rt[t], computed)
    claimed = {t for t, *_ in check.differs} | {t for t, _ in check.unconfirmed}
    changed = {t.index for t in sg.tensors
               if t.index in rt and rt[t.index] != tuple(t.shape) and not t.is_dynamic}
    assert changed <= claimed, sorted(changed - claimed)[:5]
