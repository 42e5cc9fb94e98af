"""Pooling (AVERAGE/MAX/L2_POOL_2D) and reductions (MEAN, SUM, REDUCE_*).

Shapes follow tflite/kernels/pooling.cc and reduce.cc. MEAN's three temporaries (the input's
rank and the resolved axes as int32, and the accumulator of the output's size: float32 for a
float input, int32 otherwise) follow reduce.cc ``InitializeTemporaries``, checked against
LiteRT 2.3's measured temporaries.
"""

from __future__ import annotations

import numpy as np

from viewer.model.dtypes import nbytes
from viewer.ops.conv import window_region
from viewer.ops.types import (
    NotLocal,
    OpSpec,
    PersistentRoRule,
    ShapeError,
    TemporaryEstimate,
    axis,
    first_shape,
    opt,
    out_size,
    padding,
    value,
)

POOL_OPS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
REDUCE_OPS = ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL")


def _pool_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    ins = op.inputs
    if len(s0) != 4:
        raise ShapeError(f"input has rank {len(s0)}, expected 4 (NHWC)", ins[0])
    pad = padding(op)
    fh, fw = opt(op, "filter_height", 1), opt(op, "filter_width", 1)
    rescale = ctx.rescale
    if rescale is not None:
        o = rescale.orig[ins[0]]
        if len(o) == 4 and (fh, fw) == (o[1], o[2]) and (fh, fw) != (s0[1], s0[2]):
            rescale.note(op, "global pooling window", (fh, fw), (s0[1], s0[2]))
            fh, fw = s0[1], s0[2]
    oh = out_size(s0[1], fh, opt(op, "stride_h", 1), 1, pad)
    ow = out_size(s0[2], fw, opt(op, "stride_w", 1), 1, pad)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"input {list(s0)} is smaller than the fixed {fh}x{fw} pooling window", ins[0])
    return [(s0[0], oh, ow, s0[3])]


def _pool_receptive(op, ctx, out_region):
    s0 = first_shape(op, ctx.shapes)
    if len(s0) != 4:
        raise NotLocal(f"input has rank {len(s0)}, not NHWC")
    fh, fw = opt(op, "filter_height", 1), opt(op, "filter_width", 1)
    out = ctx.shapes[op.outputs[0]]
    if (fh, fw) == (s0[1], s0[2]) and out[1] == out[2] == 1 and s0[1] * s0[2] > 1:
        raise NotLocal("global pooling: every output reads the whole input")
    return [window_region(s0[1], s0[2], fh, fw, opt(op, "stride_h", 1), opt(op, "stride_w", 1), 1, 1,
                          padding(op), out_region)]


def _reduce_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    axes = {axis(a, len(s0)) for a in np.ravel(value(ctx.values, op.inputs[1], "axis"))}
    keep = bool(opt(op, "keep_dims", False))
    return [tuple((1 if k in axes else d) for k, d in enumerate(s0) if keep or k not in axes)]


def _mean_temporaries(op, shapes, dtypes):
    s0 = shapes[op.inputs[0]]
    n_axes = int(np.prod(shapes[op.inputs[1]], dtype=np.int64)) if len(op.inputs) > 1 else 0
    out = shapes[op.outputs[0]]
    acc = "float32" if dtypes.get(op.inputs[0]) == "float32" else "int32"
    return (
        TemporaryEstimate("index", (len(s0),), "int32", nbytes("int32", (len(s0),))),
        TemporaryEstimate("resolved_axis", (n_axes,), "int32", nbytes("int32", (n_axes,))),
        TemporaryEstimate("temp_sum", tuple(out), acc, nbytes(acc, tuple(out))),
    )


_REDUCE_WHY = "a reduction: each output reads every input position along its axes"

ENTRIES = [OpSpec(n, "pool", _pool_shapes, _pool_receptive) for n in POOL_OPS] + [
    OpSpec(n, "reduce", _reduce_shapes, not_local=_REDUCE_WHY,
           temporaries=_mean_temporaries if n == "MEAN" else None,
           # PrepareProd: noop = input and axis constant or persistent, and the output has at
           # most kMaxConstantOutputTensorSize (8) elements.
           persistent_ro=PersistentRoRule((0, 1), max_output_elements=8, source="reduce.cc (input, axis)")
           if n == "REDUCE_PROD" else None)
    for n in REDUCE_OPS
]
