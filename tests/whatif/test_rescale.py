"""--rescale-fixed-sizes against the runtime: the same model re-exported at the new resolution.

The oracle is built independently of our rescaling: the test patches the model's baked-in sizes
by hand (each RESHAPE target's spatial dims, each RESIZE size, the global pooling window), writes
a copy to tmp_path, and lets LiteRT resize and allocate it.
"""

from __future__ import annotations

import flatbuffers
import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as S

from conftest import shared_model
from tests.whatif.test_shapes import runtime_shapes
from viewer.errors import WhatIfError
from viewer.model.reader import load_model
from viewer.whatif.apply import apply_edits
from viewer.whatif.edits import WhatIfEdits


def _builtin(m, op):
    c = m.operatorCodes[op.opcodeIndex]
    return max(c.builtinCode, c.deprecatedBuiltinCode)


def _set_int32(m, sg, t, values):
    m.buffers[sg.tensors[t].buffer].data = np.asarray(values, dtype="<i4").view(np.uint8).copy()


def reexport_unet(src, dst, factor):
    """Scale every RESHAPE target's middle (spatial) dims by ``factor``."""
    m = S.ModelT.InitFromPackedBuf(src.read_bytes(), 0)
    sg = m.subgraphs[0]
    for op in sg.operators:
        if _builtin(m, op) == S.BuiltinOperator.RESHAPE:
            t = op.inputs[1]
            v = np.frombuffer(bytes(m.buffers[sg.tensors[t].buffer].data), dtype="<i4").copy()
            v[1:-1] = [int(d * factor) if d > 1 else d for d in v[1:-1]]
            _set_int32(m, sg, t, v)
            if op.builtinOptions is not None and getattr(op.builtinOptions, "newShape", None) is not None:
                op.builtinOptions.newShape = [int(d) for d in v]
    _write(m, dst)


def reexport_deeplab(src, dst, feature, full):
    """RESIZE sizes 33 -> ``feature``, 513 -> ``full``; the 33x33 average pool -> feature x feature."""
    m = S.ModelT.InitFromPackedBuf(src.read_bytes(), 0)
    sg = m.subgraphs[0]
    done = set()
    for op in sg.operators:
        code = _builtin(m, op)
        if code == S.BuiltinOperator.RESIZE_BILINEAR and op.inputs[1] not in done:
            t = op.inputs[1]
            done.add(t)  # two RESIZEs share one size tensor
            v = np.frombuffer(bytes(m.buffers[sg.tensors[t].buffer].data), dtype="<i4")
            _set_int32(m, sg, t, [feature if d == 33 else full for d in v])
        elif code == S.BuiltinOperator.AVERAGE_POOL_2D and op.builtinOptions.filterHeight == 33:
            op.builtinOptions.filterHeight = op.builtinOptions.filterWidth = feature
    _write(m, dst)


def _write(m, dst):
    b = flatbuffers.Builder(1 << 20)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    dst.write_bytes(bytes(b.Output()))


def _check_against_runtime(path, oracle_path, side):
    m = load_model(path)
    sg = m.subgraphs[0]
    with pytest.raises(WhatIfError):  # as stored, the model cannot take the resize
        apply_edits(m, 0, WhatIfEdits(input_shapes={"": (side, side)}))
    e = apply_edits(m, 0, WhatIfEdits(input_shapes={"": (side, side)}, rescale_fixed_sizes=True))
    assert e.estimated and any("rescaled" in n for n in e.notes)
    rt, err = runtime_shapes(oracle_path, {sg.inputs[0]: (1, side, side, 3)})
    assert rt is not None, err
    bad = {x.index: (x.shape, rt[x.index]) for x in e.subgraph.tensors
           if not x.is_constant and x.index in rt and x.shape != rt[x.index]}
    assert not bad, bad
    return e


@pytest.mark.shared
@pytest.mark.parametrize("side, factor", [(512, 2), (128, 0.5)])
def test_unet_rescaled_equals_runtime_on_a_reexport(tmp_path, side, factor):
    src = shared_model("unet_256.tflite")
    dst = tmp_path / "unet_reexport.tflite"
    reexport_unet(src, dst, factor)
    e = _check_against_runtime(src, dst, side)
    assert sum("RESHAPE" in n for n in e.notes) == 12


@pytest.mark.shared
@pytest.mark.parametrize("side, feature", [(1026, 65), (257, 17)])
def test_deeplab_rescaled_equals_runtime_on_a_reexport(tmp_path, side, feature):
    src = shared_model("coral_deeplabv3_mnv2_pascal_quant.tflite")
    dst = tmp_path / "deeplab_reexport.tflite"
    reexport_deeplab(src, dst, feature, side)
    e = _check_against_runtime(src, dst, side)
    assert any("AVERAGE_POOL_2D" in n for n in e.notes)
