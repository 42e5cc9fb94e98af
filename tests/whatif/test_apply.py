"""apply_edits: input shapes, batch, activation precision; the runtime is the oracle for shapes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import shared_model, shared_model_names
from tests.whatif._graphs import model, op, subgraph, t
from tests.whatif.test_shapes import _edited_inputs, runtime_shapes
from viewer.errors import WhatIfError
from viewer.whatif.apply import apply_edits
from viewer.whatif.edits import WhatIfEdits
from viewer.whatif.edits import apply_edits as apply_edits_entry


def two_input_model():
    # image [1,8,8,3] -> RELU -> [1,8,8,3] ; vec [1,4] -> RELU ; a constant float weight
    tensors = [t(0, (1, 8, 8, 3), name="image"), t(1, (1, 8, 8, 3)), t(2, (1, 4), name="vec"),
               t(3, (1, 4)), t(4, (4,), const=True, name="w"), t(5, (1, 4), "int32")]
    ops = [op(0, "RELU", (0,), (1,)), op(1, "RELU", (2,), (3,)), op(2, "CAST", (3,), (5,))]
    return model(subgraph(tensors, ops, (0, 2), (1, 5)), weights=16)


def shapes_of(edited):
    return {x.index: x.shape for x in edited.subgraph.tensors}


@pytest.mark.parametrize("key", ["image", 0, ""])
def test_input_by_name_position_or_the_only_image_input(key):
    e = apply_edits(two_input_model(), 0, WhatIfEdits(input_shapes={key: (1, 16, 12, 3)}), shape_source="inferred")
    s = shapes_of(e)
    assert s[0] == s[1] == (1, 16, 12, 3)
    assert e.subgraph.tensors[1].nbytes == 16 * 12 * 3 * 4
    assert s[2] == (1, 4)
    assert e.estimated and e.input_shapes == {0: (1, 16, 12, 3), 2: (1, 4)}


def test_hw_shorthand_and_batch_apply_to_every_input():
    e = apply_edits(two_input_model(), 0, WhatIfEdits(input_shapes={"": (5, 7)}, batch=3), shape_source="inferred")
    s = shapes_of(e)
    assert s[1] == (3, 5, 7, 3) and s[3] == (3, 4) and s[5] == (3, 4)
    assert e.subgraph.tensors[5].nbytes == 3 * 4 * 4  # int32
    assert s[4] == (4,)


@pytest.mark.parametrize(
    "edits, pattern",
    [
        (WhatIfEdits(input_shapes={"nope": (1, 2)}), r"no input named 'nope'; inputs are 0:'image'"),
        (WhatIfEdits(input_shapes={5: (1, 2)}), r"no input 5"),
        (WhatIfEdits(input_shapes={"vec": (1, 2, 3)}), r"input 'vec' has rank 2 \(1x4\); the new shape 1x2x3 has rank 3"),
        (WhatIfEdits(input_shapes={"vec": (0, 4)}), r"every dimension must be >= 1"),
        (WhatIfEdits(batch=0), r"batch must be an integer >= 1"),
        (WhatIfEdits(activation_dtype="int3"), r"unknown activation dtype 'int3'"),
        (WhatIfEdits(tensor_dtypes={4: "float16"}), r"tensor 4 'w' is constant"),
        (WhatIfEdits(tensor_dtypes={99: "float16"}), r"no tensor 99"),
    ],
)
def test_bad_edits_are_whatif_errors_naming_the_file(edits, pattern):
    with pytest.raises(WhatIfError, match=r"^hand-made\.tflite: .*" + pattern):
        apply_edits(two_input_model(), 0, edits, shape_source="inferred")


def test_empty_edits_return_the_subgraph_untouched():
    m = two_input_model()
    assert apply_edits_entry(m, 0, WhatIfEdits()).subgraph is m.subgraphs[0]
    assert apply_edits_entry(m, 0, None).subgraph is m.subgraphs[0]


def test_int8_activations_quarter_float_bytes_and_leave_weights():
    m = two_input_model()
    e = apply_edits(m, 0, WhatIfEdits(activation_dtype="int8"))
    before, after = m.subgraphs[0].tensors, e.subgraph.tensors
    for b, a in zip(before, after):
        if b.dtype == "float32" and not b.is_constant:
            assert (a.dtype, a.nbytes * 4) == ("int8", b.nbytes)
        else:
            assert a == b
    assert any("not an accuracy claim" in n for n in e.notes)


def test_per_tensor_override_after_the_global_dtype():
    e = apply_edits(two_input_model(), 0, WhatIfEdits(activation_dtype="float16", tensor_dtypes={1: "float32", 5: "int8"}))
    ts = e.subgraph.tensors
    assert (ts[0].dtype, ts[0].nbytes) == ("float16", 8 * 8 * 3 * 2)
    assert (ts[1].dtype, ts[1].nbytes) == ("float32", 8 * 8 * 3 * 4)
    assert (ts[5].dtype, ts[5].nbytes) == ("int8", 4)  # an int tensor can be overridden explicitly
    assert ts[4].dtype == "float32"  # the constant


# -- real models -------------------------------------------------------------------------------
@pytest.mark.shared
@pytest.mark.parametrize("dtype, factor", [("int8", 4), ("float16", 2), ("bfloat16", 2)])
def test_activation_dtype_on_a_float_model_is_exact(dtype, factor):
    from viewer.model.reader import load_model

    m = load_model(shared_model("mobilenet_v2_224.tflite"))
    sg = m.subgraphs[0]
    e = apply_edits(m, 0, WhatIfEdits(activation_dtype=dtype))
    acts = [x.index for x in sg.tensors if not x.is_constant and x.dtype == "float32"]
    assert len(acts) > 50
    before = sum(sg.tensors[i].nbytes for i in acts)
    after = sum(e.subgraph.tensors[i].nbytes for i in acts)
    assert after * factor == before
    assert sum(x.nbytes for x in e.subgraph.tensors if x.is_constant) == sum(
        x.nbytes for x in sg.tensors if x.is_constant)


@pytest.mark.shared
def test_mobilenet_at_512_matches_runtime_and_is_not_estimated():
    from viewer.model.reader import load_model

    path = shared_model("mobilenet_v2_224.tflite")
    m = load_model(path)
    e = apply_edits(m, 0, WhatIfEdits(input_shapes={"": (1, 512, 512, 3)}))
    rt, err = runtime_shapes(path, {m.subgraphs[0].inputs[0]: (1, 512, 512, 3)})
    assert not e.estimated and rt is not None, err
    for x in e.subgraph.tensors:
        if not x.is_constant and x.index in rt:
            assert x.shape == rt[x.index], x
    assert any("LiteRT runtime" in n for n in e.notes)


@pytest.mark.shared
def test_unet_resize_rejected_at_the_fixed_reshape():
    from viewer.model.reader import load_model

    m = load_model(shared_model("unet_256.tflite"))
    with pytest.raises(WhatIfError, match=r"unet_256\.tflite: operator 13 \(RESHAPE\) tensor 52 .*num_input_elements"):
        apply_edits(m, 0, WhatIfEdits(input_shapes={"": (512, 512)}))


@pytest.mark.shared
def test_runtime_that_cannot_run_the_model_falls_back_to_estimated_shapes():
    from viewer.model.reader import load_model

    # LiteRT 2.3 refuses this model (a tensor both input and output), our inference does not;
    # load_model refuses it too (graph rules) unless asked to read it anyway.
    m = load_model(shared_model("litert_testdata_add_shared_tensors.tflite"), graph_rules=False)
    e = apply_edits(m, 0, WhatIfEdits(batch=2))
    assert e.estimated
    assert any("runtime could not run the model" in n for n in e.notes)
    ts = e.subgraph.tensors
    assert ts[1].shape == ts[2].shape == (2, 8, 8, 3)  # input, and ADD's broadcast output
    assert ts[2].nbytes == 2 * 8 * 8 * 3 * 4


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["batch2", "hw1.5"])
@pytest.mark.parametrize("name", shared_model_names(loads_in_litert=True))
def test_resized_shapes_equal_the_runtime(name, mode):
    """apply_edits (runtime in a subprocess) gives every tensor the shape LiteRT gives it in
    this process; where LiteRT rejects the resize, a WhatIfError names the same operator."""
    from viewer.model.reader import load_model

    path = shared_model(name)
    m = load_model(path)
    sg = m.subgraphs[0]
    inputs = _edited_inputs(sg, mode)
    if not inputs or all(inputs[i] == sg.tensors[i].shape for i in inputs):
        pytest.skip(f"{name}: no input to {mode}")
    pos = {ti: k for k, ti in enumerate(sg.inputs)}
    edits = WhatIfEdits(input_shapes={pos[i]: s for i, s in inputs.items()})
    rt, err = runtime_shapes(path, inputs)
    if rt is None:
        m_op = re.search(r"Node number (\d+) \((\w+)\) failed to prepare", err)
        with pytest.raises(WhatIfError) as e:
            apply_edits(m, 0, edits)
        if m_op:
            assert f"operator {m_op.group(1)} ({m_op.group(2)})" in str(e.value)
        return
    e = apply_edits(m, 0, edits)
    assert not e.estimated
    bad = {x.index: (x.shape, rt[x.index]) for x in e.subgraph.tensors
           if not x.is_constant and x.index in rt and x.shape != rt[x.index]}
    assert not bad, bad
    from viewer.model import dtypes

    for x in e.subgraph.tensors:
        if x.dtype in dtypes.BITS:
            assert x.nbytes == dtypes.nbytes(x.dtype, x.shape)
    assert np.all([e.subgraph.tensors[i].shape == s for i, s in inputs.items()])
