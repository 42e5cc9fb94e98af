"""Element-wise operators: unary (activations, quantize/dequantize, casts) and broadcasting binaries.

Shapes: a unary output has its input's shape; binaries broadcast as
tflite/kernels/kernel_util.cc ``CalculateShapeForBroadcast`` (add.cc, mul.cc, ...). In-place:
the kernels of ADD, SUB, MUL, DIV and SOFTMAX set ``inplace_operator`` (see
:mod:`viewer.analysis.intervals` for ``InputTensorCanBeShared``'s conditions).
"""

from __future__ import annotations

from viewer.ops.types import InPlace, NotLocal, OpSpec, PersistentRoRule, broadcast, first_shape

UNARY_OPS = (
    "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH",
    "LEAKY_RELU", "ELU", "GELU", "QUANTIZE", "DEQUANTIZE", "ABS", "NEG", "EXP", "LOG", "SQRT",
    "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN", "CAST", "LOGICAL_NOT",
    "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "SOFTMAX", "LOG_SOFTMAX", "ZEROS_LIKE",
    "ONES_LIKE", "CUMSUM", "REVERSE_V2", "FAKE_QUANT", "IDENTITY", "PRELU_UNUSED",
)
BROADCAST_OPS = (
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "SQUARED_DIFFERENCE", "FLOOR_DIV",
    "FLOOR_MOD", "LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL", "GREATER_EQUAL",
    "LOGICAL_AND", "LOGICAL_OR", "PRELU", "SELECT", "SELECT_V2", "ATAN2", "ADD_N",
)
#: Unary ops that read along an axis (their output position depends on other positions).
_AXIS_OPS = {"CUMSUM": "CUMSUM accumulates along an axis", "REVERSE_V2": "REVERSE_V2 mirrors an axis"}


def _unary_shapes(op, ctx):
    return [first_shape(op, ctx.shapes)] * len(op.outputs)


def _unary_receptive(op, ctx, out_region):
    if len(first_shape(op, ctx.shapes)) != 4:
        raise NotLocal(f"input has rank {len(first_shape(op, ctx.shapes))}, not NHWC")
    return [out_region] + [None] * (len(op.inputs) - 1)


def _broadcast_shapes(op, ctx):
    return [broadcast(*[ctx.shapes[i] for i in op.inputs if i >= 0])]


def broadcast_region(shape, out_region):
    """The region of a broadcast input for an output region (NHWC output).

    A rank-4 input with H (or W) of 1 is read at row (column) 0 for every output row; an input
    without spatial extent (rank <= 2 with W of 1, e.g. a per-channel vector) is read whole
    (None). Raises :class:`NotLocal` for a lower-rank input that varies over H or W.
    """
    y0, y1, x0, x1 = out_region
    if len(shape) == 4:
        return ((0, 1) if shape[1] == 1 else (y0, y1)) + ((0, 1) if shape[2] == 1 else (x0, x1))
    spatial = list(shape[-3:-1]) if len(shape) >= 2 else []
    if all(d == 1 for d in spatial):
        return None
    raise NotLocal(f"a rank-{len(shape)} operand {list(shape)} varies over H or W")


def _broadcast_receptive(op, ctx, out_region):
    if len(ctx.shapes[op.outputs[0]]) != 4:
        raise NotLocal(f"output has rank {len(ctx.shapes[op.outputs[0]])}, not NHWC")
    return [None if i < 0 else broadcast_region(ctx.shapes[i], out_region) for i in op.inputs]


_INPLACE = {
    "ADD": InPlace((0, 1), False), "SUB": InPlace((0, 1), False), "MUL": InPlace((0, 1), False),
    "DIV": InPlace((0, 1), False), "SOFTMAX": InPlace((0,), False),
}
_MUL_RO = PersistentRoRule((0, 1), source="mul.cc (input1, input2)")

ENTRIES = [
    OpSpec(n, "unary", _unary_shapes, None if n in _AXIS_OPS else _unary_receptive,
           not_local=_AXIS_OPS.get(n, ""), inplace=_INPLACE.get(n),
           # DEQUANTIZE of a constant puts its output in the persistent arena at prepare time
           # (tflite/kernels/dequantize.cc, ``IsConstantTensor``).
           persistent_folding=n == "DEQUANTIZE")
    for n in UNARY_OPS
] + [
    OpSpec(n, "broadcast", _broadcast_shapes, _broadcast_receptive, inplace=_INPLACE.get(n),
           persistent_ro=_MUL_RO if n == "MUL" else None)
    for n in BROADCAST_OPS
]
