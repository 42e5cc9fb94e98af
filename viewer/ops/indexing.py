"""Indexing and rearranging operators: SLICE, STRIDED_SLICE, TRANSPOSE, PACK, UNPACK, SPLIT,
SPLIT_V, TILE, SHAPE, ARG_MAX/ARG_MIN, GATHER, DEPTH_TO_SPACE, SPACE_TO_DEPTH, BROADCAST_TO;
and the dense ones: FULLY_CONNECTED, BATCH_MATMUL.

Shapes follow the Prepare of the matching tflite/kernels/*.cc. None of them is treated as
spatially local (they end a patchable prefix).
"""

from __future__ import annotations

import numpy as np

from viewer.ops.types import (
    OpSpec,
    PersistentRoRule,
    ShapeError,
    axis,
    broadcast,
    first_shape,
    numel,
    opt,
    value,
)


def _slice_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    begin = np.ravel(value(ctx.values, op.inputs[1], "begin"))
    size = np.ravel(value(ctx.values, op.inputs[2], "size"))
    out = []
    for k, d in enumerate(s0):
        b, z = int(begin[k]), int(size[k])
        z = d - b if z == -1 else z
        if b < 0 or z < 0 or b + z > d:
            raise ShapeError(f"slice begin {begin.tolist()} size {size.tolist()} is outside input {list(s0)}",
                             op.inputs[0])
        out.append(z)
    return [tuple(out)]


def strided_slice(op, shp, begin, end, strides):
    """tflite/kernels/strided_slice.cc output shape (no ellipsis or new-axis masks)."""
    if opt(op, "ellipsis_mask", 0) or opt(op, "new_axis_mask", 0):
        raise ShapeError("STRIDED_SLICE with ellipsis or new-axis masks is not inferred")
    bm, em, sm = opt(op, "begin_mask", 0), opt(op, "end_mask", 0), opt(op, "shrink_axis_mask", 0)
    offset = bool(opt(op, "offset", False))
    out = []
    for k, dim in enumerate(shp):
        if k >= len(begin):
            out.append(dim)
            continue
        b, e, s = int(begin[k]), int(end[k]), int(strides[k]) if k < len(strides) else 1
        if offset:
            e = b + e
        if sm >> k & 1:
            continue
        if s == 0:
            raise ShapeError("stride 0")
        sl = slice(None if bm >> k & 1 else b, None if em >> k & 1 else e, s)
        out.append(len(range(*sl.indices(dim))))
    return tuple(out)


def _strided_slice_shapes(op, ctx):
    ins = op.inputs
    begin = np.ravel(value(ctx.values, ins[1], "begin"))
    end = np.ravel(value(ctx.values, ins[2], "end"))
    strides = np.ravel(value(ctx.values, ins[3], "strides")) if len(ins) > 3 else np.ones(len(begin), np.int64)
    return [strided_slice(op, first_shape(op, ctx.shapes), begin, end, strides)]


def _transpose_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    perm = [axis(p, len(s0)) for p in np.ravel(value(ctx.values, op.inputs[1], "perm"))]
    return [tuple(s0[p] for p in perm)]


def _pack_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    a = int(opt(op, "axis", 0))
    a = a + len(s0) + 1 if a < 0 else a
    for i in op.inputs:
        if ctx.shapes[i] != s0:
            raise ShapeError(f"inputs {list(ctx.shapes[i])} and {list(s0)} differ", i)
    return [s0[:a] + (len([i for i in op.inputs if i >= 0]),) + s0[a:]]


def _unpack_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    a = axis(opt(op, "axis", 0), len(s0))
    return [s0[:a] + s0[a + 1:]] * len(op.outputs)


def _split_shapes(op, ctx):
    ins = op.inputs
    x = ctx.shapes[ins[1]]
    a = axis(np.ravel(value(ctx.values, ins[0], "axis"))[0], len(x))
    n = len(op.outputs)
    if x[a] % n:
        raise ShapeError(f"dimension {a} of {list(x)} does not split into {n} equal parts", ins[1])
    part = list(x)
    part[a] = x[a] // n
    return [tuple(part)] * n


def _split_v_shapes(op, ctx):
    ins = op.inputs
    x = first_shape(op, ctx.shapes)
    a = axis(np.ravel(value(ctx.values, ins[2], "axis"))[0], len(x))
    sizes = [int(v) for v in np.ravel(value(ctx.values, ins[1], "size_splits"))]
    if -1 in sizes:
        sizes[sizes.index(-1)] = x[a] - (sum(sizes) + 1)
    if sum(sizes) != x[a]:
        raise ShapeError(f"size_splits {sizes} do not add up to dimension {a} of {list(x)}", ins[0])
    return [x[:a] + (z,) + x[a + 1:] for z in sizes]


def _tile_shapes(op, ctx):
    mult = np.ravel(value(ctx.values, op.inputs[1], "multiples"))
    return [tuple(int(d * m) for d, m in zip(first_shape(op, ctx.shapes), mult))]


def _shape_shapes(op, ctx):
    return [(len(first_shape(op, ctx.shapes)),)]


def _arg_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    a = axis(np.ravel(value(ctx.values, op.inputs[1], "axis"))[0], len(s0))
    return [s0[:a] + s0[a + 1:]]


def _gather_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    idx = ctx.shapes[op.inputs[1]]
    a = axis(opt(op, "axis", 0), len(s0))
    bd = int(opt(op, "batch_dims", 0))
    return [s0[:a] + idx[bd:] + s0[a + 1:]]


def _depth_space_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    b = int(opt(op, "block_size", 1))
    n, h, w, c = s0
    if op.op_name == "DEPTH_TO_SPACE":
        if c % (b * b):
            raise ShapeError(f"depth {c} is not a multiple of block_size^2 = {b * b}", op.inputs[0])
        return [(n, h * b, w * b, c // (b * b))]
    if h % b or w % b:
        raise ShapeError(f"height/width {h}x{w} not a multiple of block_size {b}", op.inputs[0])
    return [(n, h // b, w // b, c * b * b)]


def _broadcast_to_shapes(op, ctx):
    target = tuple(int(v) for v in np.ravel(value(ctx.values, op.inputs[1], "shape")))
    return [broadcast(first_shape(op, ctx.shapes), target)]


def _fc_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    w = ctx.shapes[op.inputs[1]]
    units, depth = w[0], w[1]
    n = numel(s0) if s0 else 1
    if opt(op, "keep_num_dims", False):
        if s0[-1] != depth:
            raise ShapeError(f"input's last dimension {s0[-1]} does not match weights {list(w)}", op.inputs[0])
        return [s0[:-1] + (units,)]
    if depth == 0 or n % depth:
        raise ShapeError(f"input {list(s0)} ({n} elements) is not a whole number of rows of {depth}", op.inputs[0])
    return [(n // depth, units)]


def _fc_macs(op, shapes):
    return numel(shapes[op.outputs[0]]) * shapes[op.inputs[1]][1]


def _bmm_operands(op, shapes):
    a, b = first_shape(op, shapes), shapes[op.inputs[1]]
    if opt(op, "adj_x", False):
        a = a[:-2] + (a[-1], a[-2])
    if opt(op, "adj_y", False):
        b = b[:-2] + (b[-1], b[-2])
    return a, b


def _bmm_shapes(op, ctx):
    a, b = _bmm_operands(op, ctx.shapes)
    if a[-1] != b[-2]:
        raise ShapeError(f"inner dimensions of {list(a)} and {list(b)} differ")
    return [broadcast(a[:-2], b[:-2]) + (a[-2], b[-1])]


def _bmm_macs(op, shapes):
    a, _ = _bmm_operands(op, shapes)
    return numel(shapes[op.outputs[0]]) * a[-1]


_WHY = "is not spatially local (an output position is not a fixed window of input rows and columns)"


def _e(name, shapes, **kw):
    return OpSpec(name, "indexing", shapes, not_local=kw.pop("not_local", f"{name} {_WHY}"), **kw)


ENTRIES = [
    _e("SLICE", _slice_shapes),
    _e("STRIDED_SLICE", _strided_slice_shapes,
       persistent_ro=PersistentRoRule((0, 1, 2), source="strided_slice.cc (input, begin, end)")),
    _e("TRANSPOSE", _transpose_shapes),
    _e("PACK", _pack_shapes),
    _e("UNPACK", _unpack_shapes),
    _e("SPLIT", _split_shapes),
    _e("SPLIT_V", _split_v_shapes),
    _e("TILE", _tile_shapes, persistent_ro=PersistentRoRule((0, 1), source="tile.cc (input, multipliers)")),
    # "the input shape is always known at the time of Prepare": always folded.
    _e("SHAPE", _shape_shapes, persistent_ro=PersistentRoRule((), source="shape.cc")),
    _e("ARG_MAX", _arg_shapes),
    _e("ARG_MIN", _arg_shapes),
    _e("GATHER", _gather_shapes, persistent_ro=PersistentRoRule((0, 1), source="gather.cc (input, positions)")),
    _e("DEPTH_TO_SPACE", _depth_space_shapes),
    _e("SPACE_TO_DEPTH", _depth_space_shapes),
    _e("BROADCAST_TO", _broadcast_to_shapes),
    _e("FULLY_CONNECTED", _fc_shapes, macs=_fc_macs,
       not_local="FULLY_CONNECTED reads every input element for each output"),
    _e("BATCH_MATMUL", _bmm_shapes, macs=_bmm_macs),
]
