"""Layout operators: CONCATENATION, PAD, RESIZE, RESHAPE, SQUEEZE, EXPAND_DIMS.

Shapes follow tflite/kernels/concatenation.cc, pad.cc, resize_bilinear.cc /
resize_nearest_neighbor.cc, reshape.cc, squeeze.cc, expand_dims.cc. RESHAPE, SQUEEZE and
EXPAND_DIMS share their input's bytes in place (``kTfLiteInplaceOpInput0Shared |
kTfLiteInplaceOpDataUnmodified``).
"""

from __future__ import annotations

import numpy as np

from viewer.ops.types import (
    InPlace,
    NotLocal,
    OpSpec,
    PersistentRoRule,
    ShapeError,
    axis,
    first_shape,
    numel,
    opt,
    value,
)

RESIZE_OPS = ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
_SHARED = InPlace((0,), True)


def _concat_shapes(op, ctx):
    parts = [ctx.shapes[i] for i in op.inputs if i >= 0]
    out0 = op.outputs[0] if op.outputs else -1
    ax = axis(opt(op, "axis", 0), len(parts[0]))
    for p in parts[1:]:
        if len(p) != len(parts[0]) or any(a != b for k, (a, b) in enumerate(zip(p, parts[0])) if k != ax):
            raise ShapeError(f"inputs {[list(q) for q in parts]} differ outside the concatenation axis {ax}", out0)
    out = list(parts[0])
    out[ax] = sum(p[ax] for p in parts)
    return [tuple(out)]


def _concat_receptive(op, ctx, out_region):
    out = ctx.shapes[op.outputs[0]]
    ax = int(opt(op, "axis", 0))
    if len(out) != 4 or ax not in (3, -1):
        raise NotLocal(f"CONCATENATION on axis {ax} of a rank-{len(out)} tensor (only channels are local)")
    return [out_region if i >= 0 else None for i in op.inputs]


def paddings(op, ctx) -> np.ndarray:
    """The op's paddings as an array of shape (rank, 2): (before, after) per dimension."""
    return np.asarray(value(ctx.values, op.inputs[1], "paddings")).reshape(-1, 2)


def _pad_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    pads = paddings(op, ctx)
    if len(pads) != len(s0):
        raise ShapeError(f"paddings for rank {len(pads)} but input rank {len(s0)}")
    return [tuple(int(d + a + b) for d, (a, b) in zip(s0, pads))]


def _pad_receptive(op, ctx, out_region):
    s0 = first_shape(op, ctx.shapes)
    try:
        pads = paddings(op, ctx)
    except ShapeError as e:
        raise NotLocal(str(e)) from None
    if len(s0) != 4 or len(pads) != 4 or pads[0].any() or pads[3].any():
        raise NotLocal("PAD of the batch or channel dimension")
    y0, y1, x0, x1 = out_region
    pt, pl = int(pads[1][0]), int(pads[2][0])
    return [(y0 - pt, y1 - pt, x0 - pl, x1 - pl)] + [None] * (len(op.inputs) - 1)


def _resize_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    size = np.ravel(value(ctx.values, op.inputs[1], "size"))
    if ctx.rescale is not None:
        new_size = [ctx.rescale.map(d) for d in size[:2]]
        ctx.rescale.note(op, "size", size[:2].tolist(), new_size)
        size = new_size
    return [(s0[0], int(size[0]), int(size[1]), s0[3])]


def reshape(in_shape, target, t_out: int):
    """tflite/kernels/reshape.cc: one -1 is inferred; otherwise element counts must match."""
    target = [int(d) for d in target]
    n_in = numel(in_shape)
    if target.count(-1) > 1:
        raise ShapeError(f"new shape {target} has more than one -1", t_out)
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1])) if len(target) > 1 else 1
        if known == 0 or n_in % known:
            raise ShapeError(f"{n_in} elements of input {list(in_shape)} do not divide into new shape {target}", t_out)
        target[target.index(-1)] = n_in // known
    n_out = numel(target)
    if n_out != n_in:
        raise ShapeError(
            f"fixed new shape {target} has {n_out} elements but the input {list(in_shape)} now has {n_in}", t_out)
    return tuple(target)


def _reshape_shapes(op, ctx):
    ins = op.inputs
    s0 = first_shape(op, ctx.shapes)
    target = None
    if len(ins) > 1 and ins[1] >= 0 and ins[1] in ctx.values:
        target = np.ravel(ctx.values[ins[1]]).tolist()
    if target is None:
        ns = opt(op, "new_shape", None)
        if ns is None:
            raise ShapeError(f"the value of its shape input (tensor {ins[1] if len(ins) > 1 else -1}) is not known")
        target = list(ns)
    rescale = ctx.rescale
    if rescale is not None and -1 not in target and numel(target) != numel(s0):
        new_t = [d if k in (0, len(target) - 1) else rescale.map(d) for k, d in enumerate(target)]
        rescale.note(op, "new shape", target, new_t)
        target = new_t
    return [reshape(s0, target, op.outputs[0] if op.outputs else -1)]


def _squeeze_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    dims = opt(op, "squeeze_dims", ()) or ()
    axes = {axis(a, len(s0)) for a in dims} if dims else {k for k, d in enumerate(s0) if d == 1}
    for a in axes:
        if s0[a] != 1:
            raise ShapeError(f"cannot squeeze dimension {a} of size {s0[a]}", op.inputs[0])
    return [tuple(d for k, d in enumerate(s0) if k not in axes)]


def _expand_dims_shapes(op, ctx):
    s0 = first_shape(op, ctx.shapes)
    a = int(np.ravel(value(ctx.values, op.inputs[1], "axis"))[0])
    a = a + len(s0) + 1 if a < 0 else a
    return [s0[:a] + (1,) + s0[a:]]


_RESHAPE_WHY = "changes the layout: an output row is not a fixed window of input rows"

ENTRIES = [
    OpSpec("CONCATENATION", "layout", _concat_shapes, _concat_receptive,
           persistent_ro=PersistentRoRule(None, source="concatenation.cc (every input)")),
    OpSpec("PAD", "layout", _pad_shapes, _pad_receptive),
    OpSpec("PADV2", "layout", _pad_shapes, _pad_receptive),
    OpSpec("MIRROR_PAD", "layout", _pad_shapes, not_local="MIRROR_PAD reflects the content at the border"),
    *[OpSpec(n, "layout", _resize_shapes, not_local=f"{n} rescales: a patch's output rows map to fractional input rows")
      for n in RESIZE_OPS],
    OpSpec("RESHAPE", "layout", _reshape_shapes, not_local=f"RESHAPE {_RESHAPE_WHY}", inplace=_SHARED,
           persistent_ro=PersistentRoRule((0, 1), source="reshape.cc (input, and the shape input if any; not STRING)")),
    OpSpec("SQUEEZE", "layout", _squeeze_shapes, not_local=f"SQUEEZE {_RESHAPE_WHY}", inplace=_SHARED),
    OpSpec("EXPAND_DIMS", "layout", _expand_dims_shapes, not_local=f"EXPAND_DIMS {_RESHAPE_WHY}", inplace=_SHARED),
]
