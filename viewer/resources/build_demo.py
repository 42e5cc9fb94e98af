"""Build the demo model ``demo_unet.tflite``: a small U-Net-like float32 graph.

Run ``python -m viewer.resources.build_demo`` to rewrite ``viewer/resources/demo_unet.tflite``.
The build is deterministic: weights come from a fixed-seed generator and the flatbuffer is
written with LiteRT's own schema (``ai_edge_litert.schema_py_generated`` object API), so a
rebuild gives identical bytes.

Graph (NHWC, float32)::

    input 1x64x64x3
    enc1  CONV_2D 3x3 -> 64x64x8 (relu)          ---------------------------.
    pool1 MAX_POOL_2D 2x2 -> 32x32x8                                          |
    enc2  CONV_2D 3x3 -> 32x32x16 (relu)         ------------.                |
    pool2 MAX_POOL_2D 2x2 -> 16x16x16                          |  skip        |  skip
    mid   CONV_2D 3x3 -> 16x16x32 (relu)                       |              |
    up2   RESIZE_NEAREST_NEIGHBOR -> 32x32x32                  |              |
    cat2  CONCATENATION (up2, enc2) -> 32x32x48  <-------------'              |
    dec2  CONV_2D 3x3 -> 32x32x16 (relu)                                      |
    up1   RESIZE_NEAREST_NEIGHBOR -> 64x64x16                                 |
    cat1  CONCATENATION (up1, enc1) -> 64x64x24  <----------------------------'
    dec1  CONV_2D 3x3 -> 64x64x8 (relu)
    head  CONV_2D 1x1 -> 64x64x1
    out   LOGISTIC -> 1x64x64x1

The skip connections keep ``enc1`` and ``enc2`` live across most of the graph, which is what
the packing chart is meant to show.
"""

from __future__ import annotations

import sys
from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

#: Where the built model goes (beside this file).
OUTPUT = Path(__file__).with_name("demo_unet.tflite")
SEED = 20261129


class _Graph:
    """Collects tensors, buffers, operator codes and operators for one subgraph."""

    def __init__(self) -> None:
        self.tensors: list[S.TensorT] = []
        self.buffers: list[S.BufferT] = [S.BufferT()]  # buffer 0: the empty sentinel
        self.opcodes: list[int] = []
        self.operators: list[S.OperatorT] = []
        self.rng = np.random.default_rng(SEED)

    def tensor(self, name: str, shape, dtype=S.TensorType.FLOAT32, data=None) -> int:
        t = S.TensorT()
        t.name = name
        t.shape = list(shape)
        t.type = dtype
        t.buffer = 0
        if data is not None:
            b = S.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, code: int, inputs, outputs, options_type=0, options=None) -> None:
        if code not in self.opcodes:
            self.opcodes.append(code)
        o = S.OperatorT()
        o.opcodeIndex = self.opcodes.index(code)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        o.builtinOptionsType = options_type
        o.builtinOptions = options
        self.operators.append(o)

    # --- layers -------------------------------------------------------------------------

    def conv(self, name: str, x: int, cin: int, cout: int, k: int, hw: int, relu: bool) -> int:
        fan_in = k * k * cin
        w = (self.rng.standard_normal((cout, k, k, cin)) * np.sqrt(2.0 / fan_in)).astype("<f4")
        b = (self.rng.standard_normal(cout) * 0.01).astype("<f4")
        wt = self.tensor(f"{name}/weights", w.shape, data=w)
        bt = self.tensor(f"{name}/bias", b.shape, data=b)
        y = self.tensor(f"{name}/{'Relu' if relu else 'BiasAdd'}", (1, hw, hw, cout))
        opt = S.Conv2DOptionsT()
        opt.padding = S.Padding.SAME
        opt.strideH = opt.strideW = 1
        opt.fusedActivationFunction = (
            S.ActivationFunctionType.RELU if relu else S.ActivationFunctionType.NONE
        )
        self.op(S.BuiltinOperator.CONV_2D, (x, wt, bt), (y,), S.BuiltinOptions.Conv2DOptions, opt)
        return y

    def maxpool(self, name: str, x: int, hw: int, c: int) -> int:
        y = self.tensor(f"{name}/MaxPool", (1, hw // 2, hw // 2, c))
        opt = S.Pool2DOptionsT()
        opt.padding = S.Padding.VALID
        opt.strideH = opt.strideW = 2
        opt.filterHeight = opt.filterWidth = 2
        self.op(S.BuiltinOperator.MAX_POOL_2D, (x,), (y,), S.BuiltinOptions.Pool2DOptions, opt)
        return y

    def upsample(self, name: str, x: int, hw: int, c: int) -> int:
        size = self.tensor(f"{name}/size", (2,), S.TensorType.INT32,
                           np.array([2 * hw, 2 * hw], dtype="<i4"))
        y = self.tensor(f"{name}/ResizeNearestNeighbor", (1, 2 * hw, 2 * hw, c))
        opt = S.ResizeNearestNeighborOptionsT()
        self.op(S.BuiltinOperator.RESIZE_NEAREST_NEIGHBOR, (x, size), (y,),
                S.BuiltinOptions.ResizeNearestNeighborOptions, opt)
        return y

    def concat(self, name: str, a: int, b: int, hw: int, c: int) -> int:
        y = self.tensor(f"{name}/concat", (1, hw, hw, c))
        opt = S.ConcatenationOptionsT()
        opt.axis = 3
        self.op(S.BuiltinOperator.CONCATENATION, (a, b), (y,),
                S.BuiltinOptions.ConcatenationOptions, opt)
        return y


def build_bytes() -> bytes:
    """Return the demo model's flatbuffer bytes (deterministic).

    Returns
    -------
    bytes
        A TFL3 flatbuffer: one subgraph, 12 operators, 1x64x64x3 float32 input,
        1x64x64x1 float32 output, one ``serving_default`` signature.
    """
    g = _Graph()
    x = g.tensor("input", (1, 64, 64, 3))
    e1 = g.conv("enc1", x, 3, 8, 3, 64, relu=True)
    p1 = g.maxpool("pool1", e1, 64, 8)
    e2 = g.conv("enc2", p1, 8, 16, 3, 32, relu=True)
    p2 = g.maxpool("pool2", e2, 32, 16)
    m = g.conv("mid", p2, 16, 32, 3, 16, relu=True)
    u2 = g.upsample("up2", m, 16, 32)
    c2 = g.concat("cat2", u2, e2, 32, 48)
    d2 = g.conv("dec2", c2, 48, 16, 3, 32, relu=True)
    u1 = g.upsample("up1", d2, 32, 16)
    c1 = g.concat("cat1", u1, e1, 64, 24)
    d1 = g.conv("dec1", c1, 24, 8, 3, 64, relu=True)
    h = g.conv("head", d1, 8, 1, 1, 64, relu=False)
    out = g.tensor("output", (1, 64, 64, 1))
    g.op(S.BuiltinOperator.LOGISTIC, (h,), (out,))

    sg = S.SubGraphT()
    sg.name = "main"
    sg.tensors = g.tensors
    sg.inputs = [x]
    sg.outputs = [out]
    sg.operators = g.operators

    codes = []
    for c in g.opcodes:
        oc = S.OperatorCodeT()
        oc.builtinCode = c
        oc.deprecatedBuiltinCode = min(c, 127)
        oc.version = 1
        codes.append(oc)

    sig = S.SignatureDefT()
    sig.signatureKey = "serving_default"
    sig.subgraphIndex = 0
    ti, to = S.TensorMapT(), S.TensorMapT()
    ti.name, ti.tensorIndex = "input", x
    to.name, to.tensorIndex = "output", out
    sig.inputs, sig.outputs = [ti], [to]

    model = S.ModelT()
    model.version = 3
    model.description = "Arena Viewer demo: small U-Net (float32, 1x64x64x3)"
    model.operatorCodes = codes
    model.subgraphs = [sg]
    model.buffers = g.buffers
    model.signatureDefs = [sig]

    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def main(argv: list[str] | None = None) -> int:
    """Write the demo model (to ``argv[0]`` if given, else :data:`OUTPUT`)."""
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else OUTPUT
    data = build_bytes()
    path.write_bytes(data)
    print(f"wrote {path} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
