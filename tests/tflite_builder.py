"""Build tiny .tflite files in code (LiteRT's schema object API), for reader and CLI tests."""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S


def tensor(name, shape, ttype=S.TensorType.FLOAT32, buffer=0, signature=None, variable=False):
    t = S.TensorT()
    t.name = name
    t.shape = list(shape)
    if signature is not None:
        t.shapeSignature = list(signature)
    t.type = ttype
    t.buffer = buffer
    t.isVariable = variable
    return t


def build(tensors, ops, inputs, outputs, *, opcodes=None, buffers=None, extra_subgraphs=()) -> bytes:
    """``ops``: list of (opcode_index, inputs, outputs); ``opcodes``: list of (builtin, deprecated, custom)."""
    m = S.ModelT()
    m.version = 3
    m.description = "test"
    codes = []
    for builtin, deprecated, custom in opcodes or [(S.BuiltinOperator.ADD, S.BuiltinOperator.ADD, None)]:
        c = S.OperatorCodeT()
        c.builtinCode = builtin
        c.deprecatedBuiltinCode = deprecated
        c.version = 1
        if custom is not None:
            c.customCode = custom
        codes.append(c)
    m.operatorCodes = codes
    bufs = []
    for data in buffers or [None]:
        b = S.BufferT()
        if isinstance(data, tuple):  # (offset, size): stored after the flatbuffer
            b.offset, b.size = data
        elif data is not None:
            b.data = np.frombuffer(data, dtype=np.uint8).copy()
        bufs.append(b)
    m.buffers = bufs

    def sg(ts, os_, ins, outs):
        g = S.SubGraphT()
        g.tensors = ts
        g.inputs = list(ins)
        g.outputs = list(outs)
        g.name = "main"
        g.operators = []
        for oi, oin, oout in os_:
            o = S.OperatorT()
            o.opcodeIndex = oi
            o.inputs = list(oin)
            o.outputs = list(oout)
            g.operators.append(o)
        return g

    m.subgraphs = [sg(tensors, ops, inputs, outputs)] + [sg(*x) for x in extra_subgraphs]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def add_chain(n_adds: int = 2, shape=(1, 8, 8, 3)) -> bytes:
    """input -> ADD(x, x) -> ... : n_adds operators, float32."""
    ts = [tensor(f"t{i}", shape) for i in range(n_adds + 1)]
    ops = [(0, [i, i], [i + 1]) for i in range(n_adds)]
    return build(ts, ops, [0], [n_adds])


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p
