"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV.

Shapes follow the Prepare of tflite/kernels/conv.cc, depthwise_conv.cc and transpose_conv.cc,
padding tflite/kernels/padding.h; the im2col temporary follows conv.cc
(``AllocateTemporaryTensorsIfRequired``: needed unless the filter is 1x1 with stride 1 and no
dilation), checked against LiteRT 2.3's measured temporaries in tests/ops/test_registry.py.
"""

from __future__ import annotations

from viewer.model.dtypes import nbytes
from viewer.ops.types import (
    SAME,
    NotLocal,
    OpSpec,
    ShapeError,
    TemporaryEstimate,
    first_shape,
    numel,
    opt,
    out_size,
    pad_before,
    padding,
)


def _conv_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    ins = op.inputs
    if len(s0) != 4:
        raise ShapeError(f"input has rank {len(s0)}, expected 4 (NHWC)", ins[0])
    f = ctx.shapes[ins[1]]
    pad = padding(op)
    oh = out_size(s0[1], f[1], opt(op, "stride_h", 1), opt(op, "dilation_h_factor", 1), pad)
    ow = out_size(s0[2], f[2], opt(op, "stride_w", 1), opt(op, "dilation_w_factor", 1), pad)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"input {list(s0)} is smaller than the {f[1]}x{f[2]} filter", ins[0])
    if op.op_name == "CONV_2D" and s0[3] % max(f[3], 1):
        raise ShapeError(f"input channels {s0[3]} do not match filter {list(f)}", ins[0])
    return [(s0[0], oh, ow, f[0] if op.op_name == "CONV_2D" else f[3])]


def window_region(size_h: int, size_w: int, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int,
                  pad: int, out_region):
    """Input region a sliding window (conv or pool) needs for ``out_region``, unclipped.

    Output row ``oy`` reads input rows ``oy * sh - pad_top + [0, (kh - 1) * dh]``
    (tflite/kernels/padding.h). Returns (y0, y1, x0, x1), half-open.
    """
    oy0, oy1, ox0, ox1 = out_region
    pt = pad_before(size_h, kh, sh, dh, pad)
    pl = pad_before(size_w, kw, sw, dw, pad)
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    return (oy0 * sh - pt, (oy1 - 1) * sh - pt + eh, ox0 * sw - pl, (ox1 - 1) * sw - pl + ew)


def _conv_receptive(op, ctx, out_region):
    shapes = ctx.shapes
    s0 = first_shape(op, shapes)
    if len(s0) != 4:
        raise NotLocal(f"input has rank {len(s0)}, not NHWC")
    f = shapes[op.inputs[1]]
    r = window_region(s0[1], s0[2], f[1], f[2], opt(op, "stride_h", 1), opt(op, "stride_w", 1),
                      opt(op, "dilation_h_factor", 1), opt(op, "dilation_w_factor", 1), padding(op), out_region)
    return [r] + [None] * (len(op.inputs) - 1)


def _conv_macs(op, shapes):
    out = shapes[op.outputs[0]]
    f = shapes[op.inputs[1]]
    if op.op_name == "CONV_2D":  # filter [OC, KH, KW, IC]
        return numel(out) * f[1] * f[2] * f[3]
    return numel(out) * f[1] * f[2]  # depthwise: filter [1, KH, KW, OC]


def _transpose_conv_shapes(op, ctx):
    # inputs: output_shape, weights [O, KH, KW, I], input
    ins = op.inputs
    x = ctx.shapes[ins[2]]
    w = ctx.shapes[ins[1]]
    s_h, s_w = opt(op, "stride_h", 1), opt(op, "stride_w", 1)
    if padding(op) == SAME:
        oh, ow = x[1] * s_h, x[2] * s_w
    else:
        oh, ow = (x[1] - 1) * s_h + w[1], (x[2] - 1) * s_w + w[2]
    return [(x[0], oh, ow, w[0])]


def _transpose_conv_macs(op, shapes):
    w = shapes[op.inputs[1]]
    return numel(shapes[op.inputs[2]]) * w[0] * w[1] * w[2]


def needs_im2col(op, filter_shape) -> bool:
    """conv.cc: im2col unless a 1x1 filter with stride 1 and no dilation."""
    dil = opt(op, "dilation_h_factor", 1) != 1 or opt(op, "dilation_w_factor", 1) != 1
    strided = opt(op, "stride_h", 1) != 1 or opt(op, "stride_w", 1) != 1
    return dil or strided or filter_shape[1] != 1 or filter_shape[2] != 1


def _conv_temporaries(op, shapes, dtypes):
    """im2col: [N, OH, OW, KH * KW * IC] of the input's type (conv.cc, non-hybrid kernels)."""
    x, w = op.inputs[0], op.inputs[1]
    in_t, f_t = dtypes.get(x), dtypes.get(w)
    if in_t == "float32" and f_t not in (None, "float32"):
        return ()  # hybrid kernels allocate other temporaries; not estimated
    f = shapes[w]
    if not needs_im2col(op, f):
        return ()
    out = shapes[op.outputs[0]]
    shape = (out[0], out[1], out[2], f[1] * f[2] * f[3])
    return (TemporaryEstimate("im2col", shape, in_t, nbytes(in_t, shape), follows_input=True),)


ENTRIES = [
    OpSpec("CONV_2D", "conv", _conv_shapes, _conv_receptive, macs=_conv_macs, temporaries=_conv_temporaries,
           temporaries_follow_input=True),
    OpSpec("DEPTHWISE_CONV_2D", "conv", _conv_shapes, _conv_receptive, macs=_conv_macs),
    OpSpec("TRANSPOSE_CONV", "conv", _transpose_conv_shapes,
           not_local="TRANSPOSE_CONV upsamples: its output rows interleave contributions of several inputs",
           macs=_transpose_conv_macs),
]

__all__ = ["ENTRIES", "window_region", "needs_im2col", "NotLocal"]
