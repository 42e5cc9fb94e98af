"""Our own shape inference, used when the LiteRT runtime cannot propagate a resize.

Follows the ``Prepare`` step of LiteRT's builtin kernels (tflite/kernels/conv.cc,
depthwise_conv.cc, transpose_conv.cc, pooling.cc, reduce.cc, add.cc and the other binary
kernels with ``ProcessBroadcastShapes``, concatenation.cc, pad.cc, resize_bilinear.cc,
reshape.cc, fully_connected.cc, softmax.cc (activations.cc), slice.cc, strided_slice.cc,
transpose.cc) and the padding rule of tflite/kernels/padding.h. Layout is NHWC throughout.

Only operators whose inputs changed shape are recomputed; every other tensor keeps the shape
stored in the model, so an operator we do not know only matters when a resize reaches it.
Small integer tensors that carry shapes (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE) have their
values propagated too.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from viewer.errors import WhatIfError
from viewer.model.types import Operator, Subgraph

Shape = tuple[int, ...]

#: Operators whose output has the shape of their first input.
UNARY_OPS = frozenset({
    "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
    "LEAKY_RELU", "ELU", "GELU", "QUANTIZE", "DEQUANTIZE", "ABS", "NEG", "EXP", "LOG", "SQRT",
    "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN", "CAST", "LOGICAL_NOT",
    "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "SOFTMAX", "LOG_SOFTMAX", "ZEROS_LIKE",
    "ONES_LIKE", "CUMSUM", "REVERSE_V2", "FAKE_QUANT", "IDENTITY", "PRELU_UNUSED",
})
#: Element-wise operators with NumPy-style broadcasting of all their inputs.
BROADCAST_OPS = frozenset({
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "SQUARED_DIFFERENCE", "FLOOR_DIV",
    "FLOOR_MOD", "LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL", "GREATER_EQUAL",
    "LOGICAL_AND", "LOGICAL_OR", "PRELU", "SELECT", "SELECT_V2", "ATAN2", "ADD_N",
})
POOL_OPS = frozenset({"AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"})
REDUCE_OPS = frozenset({"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL"})
RESIZE_OPS = frozenset({"RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"})

#: Every operator :func:`infer_shapes` knows, for messages and the GUI.
SUPPORTED_OPS = frozenset(
    UNARY_OPS | BROADCAST_OPS | POOL_OPS | REDUCE_OPS | RESIZE_OPS
    | {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "CONCATENATION", "PAD", "PADV2",
       "MIRROR_PAD", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "FULLY_CONNECTED", "SLICE",
       "STRIDED_SLICE", "TRANSPOSE", "PACK", "UNPACK", "SPLIT", "SPLIT_V", "TILE", "SHAPE",
       "ARG_MAX", "ARG_MIN", "BATCH_MATMUL", "GATHER", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH",
       "BROADCAST_TO"}
)

_SAME, _VALID = 0, 1


class _Fail(Exception):
    """Internal: why one operator cannot take the new shapes (wrapped into WhatIfError)."""

    def __init__(self, why: str, tensor: int | None = None):
        super().__init__(why)
        self.tensor = tensor


def infer_shapes(
    subgraph: Subgraph,
    input_shapes: Mapping[int, Shape],
    *,
    constants: Mapping[int, np.ndarray] | None = None,
    source: str = "",
    rescale_fixed_sizes: bool = False,
    report: list[str] | None = None,
) -> dict[int, Shape]:
    """Propagate new graph-input shapes through ``subgraph``.

    Parameters
    ----------
    subgraph : Subgraph
        Operators in execution order.
    input_shapes : Mapping[int, tuple of int]
        Tensor index (a graph input) -> its new shape.
    constants : Mapping[int, numpy.ndarray], optional
        Values of small integer constant tensors (tensor index -> array), e.g. from
        :func:`viewer.model.constants.small_int_constants`. Needed for RESHAPE's shape input,
        PAD's paddings, RESIZE's size, MEAN's axes, SLICE/STRIDED_SLICE bounds, TRANSPOSE's perm.
    source : str
        The model file, put at the start of error messages.
    rescale_fixed_sizes : bool
        Also rescale spatial sizes baked into the model at its original resolution, as a
        converter re-exporting the model at the new resolution would: a RESHAPE's fixed target,
        a RESIZE's constant size (each dimension mapped through the old -> new spatial sizes
        already seen, e.g. 16 -> 32), and a pooling window that covered its whole input (a
        global pool). Off by default: the model as it is rejects such a resize.
    report : list of str, optional
        When given, one line is appended per operator whose fixed sizes were rescaled.

    Returns
    -------
    dict
        Tensor index -> shape, for every tensor of the subgraph (unchanged ones included).

    Raises
    ------
    viewer.errors.WhatIfError
        When an operator cannot take its new input shapes (e.g. a RESHAPE whose fixed target
        no longer matches the element count, a CONCATENATION of mismatched sizes) or when a
        resized tensor reaches an operator this inference does not know. The message names
        the operator (index and op name), the tensor, and why.
    """
    shapes: dict[int, Shape] = {t.index: tuple(t.shape) for t in subgraph.tensors}
    values: dict[int, np.ndarray] = {k: np.asarray(v, dtype=np.int64) for k, v in (constants or {}).items()}
    changed: set[int] = set()
    for t, s in input_shapes.items():
        s = tuple(int(d) for d in s)
        if s != shapes[t]:
            changed.add(t)
        shapes[t] = s
    prefix = f"{source}: " if source else ""
    rescale = _Rescale(subgraph, report) if rescale_fixed_sizes else None
    if rescale is not None:
        for t in input_shapes:
            rescale.learn(t, shapes[t])
    for op in subgraph.operators:
        ins = [i for i in op.inputs if i >= 0]
        touched = any(i in changed for i in ins)
        if rescale is not None and op.op_name in RESIZE_OPS:
            touched = True  # a constant size may need rescaling though its input kept its shape
        try:
            if not touched:
                _propagate_values(op, shapes, values, changed)
                continue
            new = _infer_op(op, shapes, values, rescale)
        except _Fail as e:
            t = e.tensor if e.tensor is not None else (op.outputs[0] if op.outputs else None)
            tname = f" tensor {t} '{subgraph.tensors[t].name}'" if t is not None and t >= 0 else ""
            dyn = [i for i in ins if i not in changed and subgraph.tensors[i].is_dynamic
                   and not subgraph.tensors[i].is_constant]
            hint = (f" (input tensor {dyn[0]} has a data-dependent shape, known only when the model runs)"
                    if dyn else "")
            raise WhatIfError(
                f"{prefix}operator {op.index} ({op.op_name}){tname} cannot take the new input shape: {e}{hint}"
            ) from None
        for t, s in zip(op.outputs, new):
            if t < 0:
                continue
            s = tuple(int(d) for d in s)
            if any(d < 0 for d in s):
                raise WhatIfError(
                    f"{prefix}operator {op.index} ({op.op_name}) tensor {t} "
                    f"'{subgraph.tensors[t].name}': inferred a negative dimension {list(s)}"
                )
            if s != shapes[t]:
                changed.add(t)
                values.pop(t, None)
            shapes[t] = s
            if rescale is not None:
                rescale.learn(t, s)
        _propagate_values(op, shapes, values, changed)
    return shapes


# -- helpers ---------------------------------------------------------------------------------
def _opt(op: Operator, key: str, default=None):
    v = op.options.get(key, default) if op.options else default
    return default if v is None else v


def _padding(op: Operator) -> int:
    p = _opt(op, "padding", _SAME)
    if isinstance(p, str):
        return _VALID if p.upper() == "VALID" else _SAME
    return int(p)


def _out_size(size: int, k: int, stride: int, dilation: int, padding: int) -> int:
    """tflite/kernels/padding.h ``ComputeOutSize``."""
    eff = (k - 1) * dilation + 1
    stride = max(stride, 1)
    if padding == _SAME:
        return (size + stride - 1) // stride
    return (size + stride - eff) // stride


def _value(values: Mapping[int, np.ndarray], t: int, what: str) -> np.ndarray:
    if t < 0 or t not in values:
        raise _Fail(f"the value of its {what} (tensor {t}) is not known before running the model", t)
    return values[t]


def _axis(a: int, rank: int) -> int:
    a = int(a)
    if a < 0:
        a += rank
    if not 0 <= a < rank:
        raise _Fail(f"axis {a} is out of range for rank {rank}")
    return a


def broadcast(*shapes: Shape) -> Shape:
    """NumPy broadcasting of ``shapes`` (tflite/kernels/kernel_util.cc ``CalculateShapeForBroadcast``).

    Raises
    ------
    _Fail
        When two dimensions differ and neither is 1.
    """
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise _Fail(f"cannot broadcast shapes {[list(s) for s in shapes]}")
        out.append(big.pop() if big else (0 if 0 in dims else 1))
    return tuple(out)


def _reshape(in_shape: Shape, target, t_out: int) -> Shape:
    """tflite/kernels/reshape.cc: one -1 is inferred; otherwise element counts must match."""
    target = [int(d) for d in target]
    n_in = int(np.prod(in_shape)) if in_shape else 1
    if target.count(-1) > 1:
        raise _Fail(f"new shape {target} has more than one -1", t_out)
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1])) if len(target) > 1 else 1
        if known == 0 or n_in % known:
            raise _Fail(f"{n_in} elements of input {list(in_shape)} do not divide into new shape {target}", t_out)
        target[target.index(-1)] = n_in // known
    n_out = int(np.prod(target)) if target else 1
    if n_out != n_in:
        raise _Fail(
            f"fixed new shape {target} has {n_out} elements but the input {list(in_shape)} now has {n_in}",
            t_out,
        )
    return tuple(target)


def _strided_slice(op: Operator, shp: Shape, begin, end, strides) -> Shape:
    if _opt(op, "ellipsis_mask", 0) or _opt(op, "new_axis_mask", 0):
        raise _Fail("STRIDED_SLICE with ellipsis or new-axis masks is not inferred")
    bm, em, sm = _opt(op, "begin_mask", 0), _opt(op, "end_mask", 0), _opt(op, "shrink_axis_mask", 0)
    offset = bool(_opt(op, "offset", False))
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
            raise _Fail("stride 0")
        sl = slice(None if bm >> k & 1 else b, None if em >> k & 1 else e, s)
        out.append(len(range(*sl.indices(dim))))
    return tuple(out)


class _Rescale:
    """Old -> new spatial sizes seen so far (H and W of rank-4 tensors), for rescaling fixed sizes."""

    def __init__(self, subgraph: Subgraph, report: list[str] | None):
        self.orig = {t.index: tuple(t.shape) for t in subgraph.tensors}
        self.size_map: dict[int, int] = {}
        self.ambiguous: set[int] = set()
        self.report = report

    def learn(self, t: int, new: Shape) -> None:
        old = self.orig[t]
        if len(old) != 4 or len(new) != 4:
            return
        for k in (1, 2):
            o, n = int(old[k]), int(new[k])
            if o <= 1 or o == n:
                continue
            if self.size_map.setdefault(o, n) != n:
                self.ambiguous.add(o)

    def map(self, d: int) -> int:
        d = int(d)
        if d in self.ambiguous:
            raise _Fail(f"fixed size {d} maps to several new sizes; cannot rescale it")
        return self.size_map.get(d, d)

    def note(self, op: Operator, what: str, old, new) -> None:
        if self.report is not None and list(old) != list(new):
            self.report.append(f"operator {op.index} ({op.op_name}): fixed {what} {list(old)} rescaled to {list(new)}")


def _infer_op(
    op: Operator, shapes: Mapping[int, Shape], values: Mapping[int, np.ndarray], rescale: _Rescale | None = None
) -> list[Shape]:
    """Output shapes of ``op`` given the current ``shapes``; raises _Fail."""
    name = op.op_name
    ins = op.inputs
    s0 = shapes[ins[0]] if ins and ins[0] >= 0 else ()
    out0 = op.outputs[0] if op.outputs else -1

    if name in UNARY_OPS:
        return [s0] * len(op.outputs)
    if name in BROADCAST_OPS:
        return [broadcast(*[shapes[i] for i in ins if i >= 0])]
    if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        if len(s0) != 4:
            raise _Fail(f"input has rank {len(s0)}, expected 4 (NHWC)", ins[0])
        f = shapes[ins[1]]
        pad = _padding(op)
        oh = _out_size(s0[1], f[1], _opt(op, "stride_h", 1), _opt(op, "dilation_h_factor", 1), pad)
        ow = _out_size(s0[2], f[2], _opt(op, "stride_w", 1), _opt(op, "dilation_w_factor", 1), pad)
        if oh <= 0 or ow <= 0:
            raise _Fail(f"input {list(s0)} is smaller than the {f[1]}x{f[2]} filter", ins[0])
        if name == "CONV_2D" and s0[3] % max(f[3], 1):
            raise _Fail(f"input channels {s0[3]} do not match filter {list(f)}", ins[0])
        return [(s0[0], oh, ow, f[0] if name == "CONV_2D" else f[3])]
    if name == "TRANSPOSE_CONV":
        # inputs: output_shape, weights [O, KH, KW, I], input
        x = shapes[ins[2]]
        w = shapes[ins[1]]
        s_h, s_w = _opt(op, "stride_h", 1), _opt(op, "stride_w", 1)
        if _padding(op) == _SAME:
            oh, ow = x[1] * s_h, x[2] * s_w
        else:
            oh, ow = (x[1] - 1) * s_h + w[1], (x[2] - 1) * s_w + w[2]
        return [(x[0], oh, ow, w[0])]
    if name in POOL_OPS:
        if len(s0) != 4:
            raise _Fail(f"input has rank {len(s0)}, expected 4 (NHWC)", ins[0])
        pad = _padding(op)
        fh, fw = _opt(op, "filter_height", 1), _opt(op, "filter_width", 1)
        if rescale is not None:
            o = rescale.orig[ins[0]]
            if len(o) == 4 and (fh, fw) == (o[1], o[2]) and (fh, fw) != (s0[1], s0[2]):
                rescale.note(op, "global pooling window", (fh, fw), (s0[1], s0[2]))
                fh, fw = s0[1], s0[2]
        oh = _out_size(s0[1], fh, _opt(op, "stride_h", 1), 1, pad)
        ow = _out_size(s0[2], fw, _opt(op, "stride_w", 1), 1, pad)
        if oh <= 0 or ow <= 0:
            raise _Fail(f"input {list(s0)} is smaller than the fixed {fh}x{fw} pooling window", ins[0])
        return [(s0[0], oh, ow, s0[3])]
    if name in REDUCE_OPS:
        axes = {_axis(a, len(s0)) for a in np.ravel(_value(values, ins[1], "axis"))}
        keep = bool(_opt(op, "keep_dims", False))
        return [tuple((1 if k in axes else d) for k, d in enumerate(s0) if keep or k not in axes)]
    if name == "CONCATENATION":
        parts = [shapes[i] for i in ins if i >= 0]
        axis = _axis(_opt(op, "axis", 0), len(parts[0]))
        for p in parts[1:]:
            if len(p) != len(parts[0]) or any(a != b for k, (a, b) in enumerate(zip(p, parts[0])) if k != axis):
                raise _Fail(
                    f"inputs {[list(q) for q in parts]} differ outside the concatenation axis {axis}", out0
                )
        out = list(parts[0])
        out[axis] = sum(p[axis] for p in parts)
        return [tuple(out)]
    if name in ("PAD", "PADV2", "MIRROR_PAD"):
        pads = np.asarray(_value(values, ins[1], "paddings")).reshape(-1, 2)
        if len(pads) != len(s0):
            raise _Fail(f"paddings for rank {len(pads)} but input rank {len(s0)}")
        return [tuple(int(d + a + b) for d, (a, b) in zip(s0, pads))]
    if name in RESIZE_OPS:
        size = np.ravel(_value(values, ins[1], "size"))
        if rescale is not None:
            new_size = [rescale.map(d) for d in size[:2]]
            rescale.note(op, "size", size[:2].tolist(), new_size)
            size = new_size
        return [(s0[0], int(size[0]), int(size[1]), s0[3])]
    if name == "RESHAPE":
        target = None
        if len(ins) > 1 and ins[1] >= 0:
            if ins[1] in values:
                v = np.ravel(values[ins[1]])
                target = v.tolist()
        if target is None:
            ns = _opt(op, "new_shape", None)
            if ns is None:
                raise _Fail(f"the value of its shape input (tensor {ins[1] if len(ins) > 1 else -1}) is not known")
            target = list(ns)
        n_in = int(np.prod(s0)) if s0 else 1
        if rescale is not None and -1 not in target and int(np.prod(target) if target else 1) != n_in:
            new_t = [d if k in (0, len(target) - 1) else rescale.map(d) for k, d in enumerate(target)]
            rescale.note(op, "new shape", target, new_t)
            target = new_t
        return [_reshape(s0, target, out0)]
    if name == "SQUEEZE":
        dims = _opt(op, "squeeze_dims", ()) or ()
        axes = {_axis(a, len(s0)) for a in dims} if dims else {k for k, d in enumerate(s0) if d == 1}
        for a in axes:
            if s0[a] != 1:
                raise _Fail(f"cannot squeeze dimension {a} of size {s0[a]}", ins[0])
        return [tuple(d for k, d in enumerate(s0) if k not in axes)]
    if name == "EXPAND_DIMS":
        a = int(np.ravel(_value(values, ins[1], "axis"))[0])
        a = a + len(s0) + 1 if a < 0 else a
        return [s0[:a] + (1,) + s0[a:]]
    if name == "FULLY_CONNECTED":
        w = shapes[ins[1]]
        units, depth = w[0], w[1]
        n = int(np.prod(s0)) if s0 else 1
        if _opt(op, "keep_num_dims", False):
            if s0[-1] != depth:
                raise _Fail(f"input's last dimension {s0[-1]} does not match weights {list(w)}", ins[0])
            return [s0[:-1] + (units,)]
        if depth == 0 or n % depth:
            raise _Fail(f"input {list(s0)} ({n} elements) is not a whole number of rows of {depth}", ins[0])
        return [(n // depth, units)]
    if name == "SLICE":
        begin = np.ravel(_value(values, ins[1], "begin"))
        size = np.ravel(_value(values, ins[2], "size"))
        out = []
        for k, d in enumerate(s0):
            b, z = int(begin[k]), int(size[k])
            z = d - b if z == -1 else z
            if b < 0 or z < 0 or b + z > d:
                raise _Fail(f"slice begin {begin.tolist()} size {size.tolist()} is outside input {list(s0)}", ins[0])
            out.append(z)
        return [tuple(out)]
    if name == "STRIDED_SLICE":
        begin = np.ravel(_value(values, ins[1], "begin"))
        end = np.ravel(_value(values, ins[2], "end"))
        strides = np.ravel(_value(values, ins[3], "strides")) if len(ins) > 3 else np.ones(len(begin), np.int64)
        return [_strided_slice(op, s0, begin, end, strides)]
    if name == "TRANSPOSE":
        perm = [_axis(p, len(s0)) for p in np.ravel(_value(values, ins[1], "perm"))]
        return [tuple(s0[p] for p in perm)]
    if name == "PACK":
        axis = int(_opt(op, "axis", 0))
        axis = axis + len(s0) + 1 if axis < 0 else axis
        for i in ins:
            if shapes[i] != s0:
                raise _Fail(f"inputs {list(shapes[i])} and {list(s0)} differ", i)
        return [s0[:axis] + (len([i for i in ins if i >= 0]),) + s0[axis:]]
    if name == "UNPACK":
        axis = _axis(_opt(op, "axis", 0), len(s0))
        return [s0[:axis] + s0[axis + 1:]] * len(op.outputs)
    if name in ("SPLIT", "SPLIT_V"):
        if name == "SPLIT":
            x = shapes[ins[1]]
            axis = _axis(np.ravel(_value(values, ins[0], "axis"))[0], len(x))
            n = len(op.outputs)
            if x[axis] % n:
                raise _Fail(f"dimension {axis} of {list(x)} does not split into {n} equal parts", ins[1])
            part = list(x)
            part[axis] = x[axis] // n
            return [tuple(part)] * n
        x = s0
        axis = _axis(np.ravel(_value(values, ins[2], "axis"))[0], len(x))
        sizes = [int(v) for v in np.ravel(_value(values, ins[1], "size_splits"))]
        if -1 in sizes:
            sizes[sizes.index(-1)] = x[axis] - (sum(sizes) + 1)
        if sum(sizes) != x[axis]:
            raise _Fail(f"size_splits {sizes} do not add up to dimension {axis} of {list(x)}", ins[0])
        return [x[:axis] + (z,) + x[axis + 1:] for z in sizes]
    if name == "TILE":
        mult = np.ravel(_value(values, ins[1], "multiples"))
        return [tuple(int(d * m) for d, m in zip(s0, mult))]
    if name == "SHAPE":
        return [(len(s0),)]
    if name in ("ARG_MAX", "ARG_MIN"):
        a = _axis(np.ravel(_value(values, ins[1], "axis"))[0], len(s0))
        return [s0[:a] + s0[a + 1:]]
    if name == "BATCH_MATMUL":
        a, b = s0, shapes[ins[1]]
        if _opt(op, "adj_x", False):
            a = a[:-2] + (a[-1], a[-2])
        if _opt(op, "adj_y", False):
            b = b[:-2] + (b[-1], b[-2])
        if a[-1] != b[-2]:
            raise _Fail(f"inner dimensions of {list(a)} and {list(b)} differ")
        return [broadcast(a[:-2], b[:-2]) + (a[-2], b[-1])]
    if name == "GATHER":
        idx = shapes[ins[1]]
        axis = _axis(_opt(op, "axis", 0), len(s0))
        bd = int(_opt(op, "batch_dims", 0))
        return [s0[:axis] + idx[bd:] + s0[axis + 1:]]
    if name in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH"):
        b = int(_opt(op, "block_size", 1))
        n, h, w, c = s0
        if name == "DEPTH_TO_SPACE":
            if c % (b * b):
                raise _Fail(f"depth {c} is not a multiple of block_size^2 = {b * b}", ins[0])
            return [(n, h * b, w * b, c // (b * b))]
        if h % b or w % b:
            raise _Fail(f"height/width {h}x{w} not a multiple of block_size {b}", ins[0])
        return [(n, h // b, w // b, c * b * b)]
    if name == "BROADCAST_TO":
        target = tuple(int(v) for v in np.ravel(_value(values, ins[1], "shape")))
        return [broadcast(s0, target)]
    raise _Fail(
        f"the resized tensor reaches {name}, whose shape rule this fallback does not know "
        "(the runtime could not propagate it either)"
    )


def _propagate_values(
    op: Operator, shapes: Mapping[int, Shape], values: dict[int, np.ndarray], changed: set[int]
) -> None:
    """Follow small integer shape values through SHAPE/PACK/STRIDED_SLICE/CONCATENATION/CAST/GATHER.

    A tensor whose value changes is added to ``changed``, so that its consumers are recomputed.
    """
    if not op.outputs or op.outputs[0] < 0:
        return
    out = op.outputs[0]
    _compute_value(op, shapes, values)
    if out in values and any(i in changed for i in op.inputs if i >= 0):
        changed.add(out)


def _compute_value(op: Operator, shapes: Mapping[int, Shape], values: dict[int, np.ndarray]) -> None:
    name = op.op_name
    ins = list(op.inputs)
    out = op.outputs[0]
    try:
        if name == "SHAPE":
            values[out] = np.array(shapes[ins[0]], dtype=np.int64)
        elif name in ("CAST", "IDENTITY", "RESHAPE", "SQUEEZE", "EXPAND_DIMS") and ins[0] in values:
            values[out] = np.asarray(values[ins[0]]).reshape(shapes[out]) if shapes[out] else np.ravel(values[ins[0]])[:1].reshape(())
        elif name == "PACK" and all(i in values for i in ins):
            values[out] = np.stack([values[i] for i in ins], axis=int(_opt(op, "axis", 0)))
        elif name == "CONCATENATION" and all(i in values for i in ins):
            values[out] = np.concatenate([np.atleast_1d(values[i]) for i in ins], axis=int(_opt(op, "axis", 0)))
        elif name == "STRIDED_SLICE" and all(i in values for i in ins[:4]) and np.ndim(values[ins[0]]) == 1:
            v = values[ins[0]]
            b, e = int(np.ravel(values[ins[1]])[0]), int(np.ravel(values[ins[2]])[0])
            s = int(np.ravel(values[ins[3]])[0]) if len(ins) > 3 else 1
            if _opt(op, "offset", False):
                e = b + e
            sl = slice(None if _opt(op, "begin_mask", 0) & 1 else b, None if _opt(op, "end_mask", 0) & 1 else e, s)
            r = v[sl]
            values[out] = r[0] if _opt(op, "shrink_axis_mask", 0) & 1 and len(r) else r
        elif name == "GATHER" and ins[0] in values and ins[1] in values and np.ndim(values[ins[0]]) == 1:
            values[out] = np.asarray(values[ins[0]])[np.asarray(values[ins[1]])]
        elif name in ("MUL", "ADD", "SUB", "FLOOR_DIV") and all(i in values for i in ins):
            a, b = values[ins[0]], values[ins[1]]
            values[out] = {"MUL": a * b, "ADD": a + b, "SUB": a - b, "FLOOR_DIV": a // np.where(b == 0, 1, b)}[name]
        elif name in ("REDUCE_PROD",) and ins[0] in values:
            values[out] = np.prod(values[ins[0]])
    except (IndexError, ValueError, TypeError, KeyError):
        values.pop(out, None)
