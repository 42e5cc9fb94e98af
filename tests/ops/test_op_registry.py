"""One table row per registry entry: output shapes, receptive field, MACs, in-place, temporaries.

Every entry of :data:`viewer.ops.REGISTRY` must have a row here (``test_every_entry_has_a_row``);
adding an operator means adding its entry and its row. The temporaries estimate is checked
against LiteRT's measured kernel temporaries at the end.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_model
from viewer import ops
from viewer.model.types import Operator

NHWC = (1, 8, 8, 4)
R = (2, 4, 1, 3)  # an output region (y0, y1, x0, x1)
NL = "not local"

# name: (input shapes, {input position: value}, options, output shapes, receptive, macs)
#   receptive: the expected per-input regions for output region R, or NL
ROWS = {}


def row(name, ins, out, *, vals=None, opts=None, rf=NL, macs=0, nout=None):
    ROWS[name] = dict(ins=ins, vals=vals or {}, opts=opts or {}, out=out, rf=rf, macs=macs)


for n in ops.elementwise.UNARY_OPS:
    row(n, [NHWC], [NHWC], rf=NL if n in ("CUMSUM", "REVERSE_V2") else [R])
for n in ops.elementwise.BROADCAST_OPS:
    if n in ("SELECT", "SELECT_V2"):
        row(n, [NHWC, (1, 1, 8, 4), (4,)], [NHWC], rf=[R, (0, 1, 1, 3), None])
    else:
        row(n, [NHWC, (1, 8, 1, 4)], [NHWC], rf=[R, (2, 4, 0, 1)])
# 3x3 stride 2 SAME on 8x8: out 4x4, pad_before = ((4-1)*2+3-8)//2 = 0
row("CONV_2D", [NHWC, (6, 3, 3, 4), (6,)], [(1, 4, 4, 6)], opts=dict(padding=0, stride_h=2, stride_w=2),
    rf=[(4, 9, 2, 7), None, None], macs=1 * 4 * 4 * 6 * 3 * 3 * 4)
# 3x3 stride 1 SAME dilation 2 (window 5): pad_before = (7 + 5 - 8) // 2 = 2; rows 2..3 read 0..5
row("DEPTHWISE_CONV_2D", [NHWC, (1, 3, 3, 4), (4,)], [NHWC],
    opts=dict(padding=0, stride_h=1, stride_w=1, dilation_h_factor=2, dilation_w_factor=2),
    rf=[(0, 6, -1, 5), None, None], macs=8 * 8 * 4 * 9)
row("TRANSPOSE_CONV", [(4,), (6, 3, 3, 4), NHWC], [(1, 16, 16, 6)], opts=dict(padding=0, stride_h=2, stride_w=2),
    macs=8 * 8 * 4 * 6 * 9)
for n in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
    # 2x2 stride 2 VALID on 8x8: out 4x4
    row(n, [NHWC], [(1, 4, 4, 4)], opts=dict(padding=1, filter_height=2, filter_width=2, stride_h=2, stride_w=2),
        rf=[(4, 8, 2, 6)])
for n in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL"):
    row(n, [NHWC, (2,)], [(1, 4)], vals={1: [1, 2]})
row("CONCATENATION", [NHWC, (1, 8, 8, 2)], [(1, 8, 8, 6)], opts=dict(axis=3), rf=[R, R])
row("PAD", [NHWC, (4, 2)], [(1, 10, 11, 4)], vals={1: [[0, 0], [1, 1], [2, 1], [0, 0]]}, rf=[(1, 3, -1, 1), None])
row("PADV2", [NHWC, (4, 2), ()], [(1, 10, 11, 4)], vals={1: [[0, 0], [1, 1], [2, 1], [0, 0]]},
    rf=[(1, 3, -1, 1), None, None])
row("MIRROR_PAD", [NHWC, (4, 2)], [(1, 10, 11, 4)], vals={1: [[0, 0], [1, 1], [2, 1], [0, 0]]})
row("RESIZE_BILINEAR", [NHWC, (2,)], [(1, 16, 16, 4)], vals={1: [16, 16]})
row("RESIZE_NEAREST_NEIGHBOR", [NHWC, (2,)], [(1, 16, 16, 4)], vals={1: [16, 16]})
row("RESHAPE", [NHWC, (2,)], [(1, 256)], vals={1: [1, -1]})
row("SQUEEZE", [(1, 1, 8, 4)], [(8, 4)])
row("EXPAND_DIMS", [(8, 4), ()], [(1, 8, 4)], vals={1: 0})
row("SLICE", [NHWC, (4,), (4,)], [(1, 2, 8, 4)], vals={1: [0, 1, 0, 0], 2: [-1, 2, -1, -1]})
row("STRIDED_SLICE", [NHWC, (4,), (4,), (4,)], [(1, 4, 8, 4)],
    vals={1: [0, 0, 0, 0], 2: [1, 8, 8, 4], 3: [1, 2, 1, 1]})
row("TRANSPOSE", [NHWC, (4,)], [(1, 4, 8, 8)], vals={1: [0, 3, 1, 2]})
row("PACK", [(8, 4), (8, 4)], [(2, 8, 4)])
row("UNPACK", [(2, 8, 4)], [(8, 4), (8, 4)])
row("SPLIT", [(), NHWC], [(1, 8, 8, 2), (1, 8, 8, 2)], vals={0: 3})
row("SPLIT_V", [NHWC, (2,), ()], [(1, 8, 8, 1), (1, 8, 8, 3)], vals={1: [1, -1], 2: 3})
row("TILE", [NHWC, (4,)], [(2, 8, 16, 4)], vals={1: [2, 1, 2, 1]})
row("SHAPE", [NHWC], [(4,)])
row("ARG_MAX", [NHWC, ()], [(1, 8, 8)], vals={1: 3})
row("ARG_MIN", [NHWC, ()], [(1, 8, 8)], vals={1: 3})
row("GATHER", [(10, 4), (3,)], [(3, 4)])
row("DEPTH_TO_SPACE", [NHWC], [(1, 16, 16, 1)], opts=dict(block_size=2))
row("SPACE_TO_DEPTH", [NHWC], [(1, 4, 4, 16)], opts=dict(block_size=2))
row("BROADCAST_TO", [(1, 1, 4), (3,)], [(2, 3, 4)], vals={1: [2, 3, 4]})
row("FULLY_CONNECTED", [(1, 256), (10, 256), (10,)], [(1, 10)], macs=2560)
row("BATCH_MATMUL", [(2, 3, 4), (2, 4, 5)], [(2, 3, 5)], macs=2 * 3 * 5 * 4)
RUNTIME_ONLY = {"RANK", "RANGE", "BROADCAST_ARGS", "DENSIFY", "BITCAST", "DYNAMIC_UPDATE_SLICE", "READ_VARIABLE"}


def _op(name, n_in, n_out, opts):
    return Operator(0, name, 1, None, 1, tuple(range(n_in)), tuple(range(n_in, n_in + n_out)), options=opts)


def _case(name):
    r = ROWS[name]
    op = _op(name, len(r["ins"]), len(r["out"]), r["opts"])
    shapes = {i: tuple(s) for i, s in enumerate(r["ins"])}
    values = {i: np.asarray(v, dtype=np.int64) for i, v in r["vals"].items()}
    return op, shapes, values, r


def test_every_entry_has_a_row():
    missing = set(ops.REGISTRY) - set(ROWS) - RUNTIME_ONLY
    assert not missing, f"registry entries without a table row: {sorted(missing)}"
    assert RUNTIME_ONLY <= set(ops.REGISTRY)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_entry(name):
    op, shapes, values, r = _case(name)
    spec = ops.get(name)
    got = spec.shapes(op, ops.ShapeContext(shapes, values))
    assert [tuple(s) for s in got] == [tuple(s) for s in r["out"]]
    shapes.update({t: tuple(s) for t, s in zip(op.outputs, got)})
    if r["rf"] == NL:
        with pytest.raises(ops.NotLocal):
            ops.receptive_field(op, shapes, R, values)
        assert spec.not_local
    else:
        assert ops.receptive_field(op, shapes, R, values) == r["rf"]
    assert ops.macs(op, shapes) == r["macs"]


def test_inplace_and_folding_rules():
    assert ops.get("ADD").inplace == ops.InPlace((0, 1), False)
    assert ops.get("RESHAPE").inplace == ops.InPlace((0,), True)
    assert ops.get("MAXIMUM").inplace is None
    assert ops.get("SHAPE").persistent_ro.inputs == ()
    assert ops.get("CONCATENATION").persistent_ro.inputs is None
    assert ops.get("DEQUANTIZE").persistent_folding and ops.get("DENSIFY").persistent_folding
    assert ops.get("READ_VARIABLE").dynamic_output
    unknown = ops.get("MyCustomOp")
    assert unknown.family == "unknown" and unknown.shapes is None and unknown.not_local


def test_custom_op_is_not_local():
    op = Operator(0, "MyCustomOp", None, "MyCustomOp", 1, (0,), (1,))
    with pytest.raises(ops.NotLocal, match="custom"):
        ops.receptive_field(op, {0: NHWC, 1: NHWC}, R)


def test_global_pool_and_batch_pad_are_not_local():
    op = _op("AVERAGE_POOL_2D", 1, 1, dict(padding=1, filter_height=8, filter_width=8, stride_h=1, stride_w=1))
    with pytest.raises(ops.NotLocal, match="global"):
        ops.receptive_field(op, {0: NHWC, 1: (1, 1, 1, 4)}, (0, 1, 0, 1))
    pad = _op("PAD", 2, 1, {})
    with pytest.raises(ops.NotLocal, match="batch or channel"):
        ops.receptive_field(pad, {0: NHWC, 1: (4, 2), 2: (1, 8, 8, 6)}, R,
                            {1: np.array([[0, 0], [0, 0], [0, 0], [1, 1]])})


@pytest.mark.parametrize("dtype,itemsize", [("float32", 4), ("int8", 1)])
def test_im2col_estimate_and_scaling(dtype, itemsize):
    op, shapes, _, r = _case("CONV_2D")
    shapes[op.outputs[0]] = r["out"][0]
    dtypes = {0: dtype, 1: dtype, 2: "int32", 3: dtype}
    (e,) = ops.estimate_temporaries(op, shapes, dtypes)
    assert (e.name, e.shape, e.nbytes) == ("im2col", (1, 4, 4, 36), 4 * 4 * 36 * itemsize)
    assert ops.scale_temporary(op, dtype, e.nbytes, dtype, 8 * itemsize, 16) == 4 * 4 * 36 * 2
    one_by_one = _op("CONV_2D", 3, 1, dict(padding=0, stride_h=1, stride_w=1))
    assert ops.estimate_temporaries(one_by_one, {0: NHWC, 1: (6, 1, 1, 4), 2: (6,), 3: (1, 8, 8, 6)}, dtypes) == ()
    mean = _op("MEAN", 2, 1, {})
    assert ops.scale_temporary(mean, "int32", 5120, "int8", 8, 16) == 5120


@pytest.mark.parametrize("model", ["mobilenet_v2_224_int8.tflite", "mobilenet_v2_224.tflite",
                                   "mlperftiny_ic_resnet8_int8.tflite"])
def test_temporaries_estimate_equals_runtime(model):
    """The estimate equals LiteRT's measured kernel temporaries, operator by operator."""
    from viewer.model.reader import load_model
    from viewer.runtime.probe import probe_model

    path = shared_model(model)
    sg = load_model(path).subgraphs[0]
    probe = probe_model(path, check=True)
    measured = sorted((tp.op, tp.nbytes) for tp in probe.temporaries)
    estimated = sorted((op, e.nbytes) for op, e in ops.subgraph_temporaries(sg) if e.nbytes)
    assert estimated == measured
