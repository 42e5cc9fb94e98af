"""Tiny models for the prepare-time folding rules, built in code (LiteRT's schema object API).

Each case is one operator whose inputs are constant (or the output of an operator LiteRT makes
persistent), so the runtime's allocation type of its output says whether its kernel folds it.
Several cases go into one model so that one runtime probe answers them all.
"""

from __future__ import annotations

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

from tests.tflite_builder import tensor

_T = S.TensorType
_NP = {_T.FLOAT32: np.float32, _T.INT32: np.int32, _T.INT8: np.int8, _T.BOOL: np.bool_}


class ModelBuilder:
    """Collect tensors, constant buffers and operators; ``build()`` gives the .tflite bytes."""

    def __init__(self):
        self.tensors = []
        self.buffers = [None]
        self.ops = []  # (opcode index, inputs, outputs, options type, options)
        self.opcodes: list[int] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.names: dict[str, int] = {}

    def add(self, name, shape, ttype=_T.FLOAT32, data=None, *, quant=None) -> int:
        buf = 0
        if data is not None:
            arr = np.asarray(data, dtype=_NP[ttype]).reshape(shape)
            self.buffers.append(arr.tobytes())
            buf = len(self.buffers) - 1
        t = tensor(name, shape, ttype, buffer=buf)
        if quant is not None:
            q = S.QuantizationParametersT()
            q.scale, q.zeroPoint = [quant[0]], [quant[1]]
            t.quantization = q
        self.tensors.append(t)
        self.names[name] = len(self.tensors) - 1
        return len(self.tensors) - 1

    def const(self, name, values, ttype=_T.FLOAT32, shape=None) -> int:
        values = np.asarray(values)
        return self.add(name, values.shape if shape is None else shape, ttype, values)

    def op(self, builtin: int, inputs, outputs, options_type=0, options=None) -> None:
        if builtin not in self.opcodes:
            self.opcodes.append(builtin)
        self.ops.append((self.opcodes.index(builtin), list(inputs), list(outputs), options_type, options))

    def build(self) -> bytes:
        m = S.ModelT()
        m.version = 3
        m.description = "fold test"
        m.operatorCodes = []
        for code in self.opcodes:
            c = S.OperatorCodeT()
            c.builtinCode = code
            c.deprecatedBuiltinCode = min(code, 127)
            c.version = 1
            m.operatorCodes.append(c)
        m.buffers = []
        for data in self.buffers:
            b = S.BufferT()
            if data is not None:
                b.data = np.frombuffer(data, dtype=np.uint8).copy()
            m.buffers.append(b)
        g = S.SubGraphT()
        g.name = "main"
        g.tensors = self.tensors
        g.inputs, g.outputs = list(self.inputs), list(self.outputs)
        g.operators = []
        for oi, ins, outs, otype, opts in self.ops:
            o = S.OperatorT()
            o.opcodeIndex, o.inputs, o.outputs = oi, ins, outs
            if otype:
                o.builtinOptionsType, o.builtinOptions = otype, opts
            g.operators.append(o)
        m.subgraphs = [g]
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _opts(cls, **fields):
    o = cls()
    for k, v in fields.items():
        setattr(o, k, v)
    return o


B = S.BuiltinOperator
O = S.BuiltinOptions


def folding_cases() -> tuple[bytes, dict[str, str]]:
    """One model with a case per rule: ``(bytes, {output tensor name: expected LiteRT allocation})``.

    Expected allocations are LiteRT 2.3's, as measured (``"persistent-ro"`` = folded at prepare
    time, ``"arena-rw"`` = in the tensor arena).
    """
    mb = ModelBuilder()
    x = mb.add("x", (2, 3))
    mb.inputs = [x]
    expect: dict[str, str] = {}

    def case(name, builtin, ins, shape, ttype=_T.FLOAT32, otype=0, opts=None, where="persistent-ro"):
        """One operator; ``where`` is the allocation LiteRT 2.3 gives its output."""
        out = mb.add(name, shape, ttype)
        mb.op(builtin, ins, [out], otype, opts)
        expect[name] = where
        return out

    # SHAPE and RANK: always (the input's shape is known at prepare), even of a graph input.
    s = case("shape", B.SHAPE, [x], (2,), _T.INT32, O.ShapeOptions, _opts(S.ShapeOptionsT, outType=_T.INT32))
    case("rank", B.RANK, [x], (), _T.INT32)
    # Propagation: STRIDED_SLICE of the folded shape, then MUL of that.
    b0, e1, s1 = (mb.const(n, [v], _T.INT32) for n, v in (("b0", 0), ("e1", 1), ("s1", 1)))
    ss = case("strided_slice", B.STRIDED_SLICE, [s, b0, e1, s1], (1,), _T.INT32)
    two = mb.const("two_i", [2], _T.INT32)
    case("mul_of_folded", B.MUL, [ss, two], (1,), _T.INT32)
    # Not folded: an input that is neither constant nor persistent.
    case("mul_of_input", B.MUL, [x, x], (2, 3), where="arena-rw")

    ca = mb.const("ca", [1.0, 2.0, 3.0, 4.0])
    cb = mb.const("cb", [5.0, 6.0, 7.0, 8.0])
    case("mul", B.MUL, [ca, cb], (4,))
    for nm, code in (("add", B.ADD), ("sub", B.SUB), ("div", B.DIV), ("maximum", B.MAXIMUM),
                     ("squared_difference", B.SQUARED_DIFFERENCE)):
        case(nm, code, [ca, cb], (4,), where="arena-rw")
    idx = mb.const("idx", [0, 2], _T.INT32)
    case("gather", B.GATHER, [ca, idx], (2,))
    case("concatenation", B.CONCATENATION, [ca, cb], (8,))
    r0, r5, r1 = (mb.const(n, v, _T.INT32, shape=()) for n, v in (("r0", 0), ("r5", 5), ("r1", 1)))
    case("range", B.RANGE, [r0, r5, r1], (5,), _T.INT32)
    sh1, sh2 = mb.const("sh1", [2, 1], _T.INT32), mb.const("sh2", [1, 3], _T.INT32)
    case("broadcast_args", B.BROADCAST_ARGS, [sh1, sh2], (2,), _T.INT32)
    ax0 = mb.const("ax0", [0], _T.INT32)
    case("reduce_prod", B.REDUCE_PROD, [ca, ax0], ())
    # REDUCE_PROD folds only outputs of at most kMaxConstantOutputTensorSize (8) elements.
    c29 = mb.const("c29", np.arange(18, dtype=np.int32).reshape(2, 9), _T.INT32)
    case("reduce_prod_9", B.REDUCE_PROD, [c29, ax0], (9,), _T.INT32, where="arena-rw")
    for nm, code in (("sum", B.SUM), ("mean", B.MEAN), ("reduce_max", B.REDUCE_MAX)):
        case(nm, code, [ca, ax0], (), where="arena-rw")
    shp = mb.const("shp", [2, 2], _T.INT32)
    case("reshape", B.RESHAPE, [ca, shp], (2, 2))
    ci = mb.const("ci", [1, 2, 3, 4], _T.INT32)
    case("cast", B.CAST, [ci], (4,), where="arena-rw")
    case("pack", B.PACK, [ca, cb], (2, 4), otype=O.PackOptions,
         opts=_opts(S.PackOptionsT, valuesCount=2, axis=0), where="arena-rw")
    case("expand_dims", B.EXPAND_DIMS, [ca, ax0], (1, 4), where="arena-rw")
    c14 = mb.const("c14", [[1.0, 2.0, 3.0, 4.0]])
    case("squeeze", B.SQUEEZE, [c14], (4,), where="arena-rw")
    dims, val = mb.const("dims", [4], _T.INT32), mb.const("val", 1.5, shape=())
    case("fill", B.FILL, [dims, val], (4,), where="arena-rw")
    sz2 = mb.const("sz2", [2], _T.INT32)
    case("slice", B.SLICE, [ca, ax0, sz2], (2,), where="arena-rw")
    case("tile", B.TILE, [ca, sz2], (8,))
    c22 = mb.const("c22", [[1.0, 2.0], [3.0, 4.0]])
    perm = mb.const("perm", [1, 0], _T.INT32)
    case("transpose", B.TRANSPOSE, [c22, perm], (2, 2), where="arena-rw")
    case("neg", B.NEG, [ca], (4,), where="arena-rw")
    case("zeros_like", B.ZEROS_LIKE, [ca], (4,), where="arena-rw")
    case("equal", B.EQUAL, [ca, cb], (4,), _T.BOOL, where="arena-rw")
    case("arg_max", B.ARG_MAX, [ca, ax0], (), _T.INT32, O.ArgMaxOptions,
         _opts(S.ArgMaxOptionsT, outputType=_T.INT32), where="arena-rw")
    # DEQUANTIZE of a file constant goes to the persistent arena (kTfLiteArenaRwPersistent),
    # which is not "constant or persistent" for its readers; of a folded tensor, to the arena.
    q = mb.add("q8", (4,), _T.INT8, [1, 2, 3, 4], quant=(0.5, 0))
    deq = case("dequantize", B.DEQUANTIZE, [q], (4,), where="arena-rw-persistent")
    case("mul_of_dequantized", B.MUL, [deq, ca], (4,), where="arena-rw")
    q22 = mb.add("q22", (2, 2), _T.INT8, None, quant=(0.5, 0))
    mb.op(B.RESHAPE, [q, shp], [q22])
    expect["q22"] = "persistent-ro"
    case("dequantize_of_folded", B.DEQUANTIZE, [q22], (2, 2), where="arena-rw")
    mb.outputs = [mb.names["mul_of_input"]]
    return mb.build(), expect


def unread_output_model() -> bytes:
    """SPLIT_V at operator 0 with an output nothing reads: LiteRT never frees it, and as a tensor
    allocated at node 0 and never freed it is placed first (``CreateTensorAllocationVector``)."""
    mb = ModelBuilder()
    x = mb.add("x", (1, 64))
    mb.inputs = [x]
    sizes = mb.const("sizes", [16, 48], _T.INT32)
    axis = mb.const("axis", 1, _T.INT32, shape=())
    a, b = mb.add("unread", (1, 16)), mb.add("read", (1, 48))
    mb.op(B.SPLIT_V, [x, sizes, axis], [a, b], O.SplitVOptions, _opts(S.SplitVOptionsT, numSplits=2))
    c = mb.add("y", (1, 48))
    mb.op(B.ADD, [b, b], [c])
    d = mb.add("z", (1, 48))
    mb.op(B.ADD, [c, c], [d])
    mb.outputs = [d]
    return mb.build()
