"""The graphs a tiled execution runs: one patch graph per border class, and the tail.

A patch graph takes its crop of the graph input and computes, for every cut tensor, the
patch's share. Every convolution and pooling becomes VALID; where the patch touches the image
border an explicit PAD (PADV2 with the type's lowest value before MAX_POOL_2D) supplies what SAME
padding supplied, and a SLICE crops a held tensor where a consumer reads less of it (a residual
branch's skip, a cut tensor the prefix also reads with a halo). The result is exact, not an
approximation: each output element is computed from the same inputs by the same kernel.

A :class:`GraphSpec` is both what we plan (:func:`to_subgraph`, then the usual analysis and
planners) and what :func:`viewer.model.writer.write_graphs` serialises, so the prediction and the
written model are one structure.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["GraphSpec", "OpSpec", "TensorSpec", "build_patch", "build_tail", "to_subgraph"]

import numpy as np

from viewer.model.build import GraphSpec, OpSpec, TensorSpec
from viewer.model.dtypes import nbytes
from viewer.model.types import Operator, Subgraph, Tensor
from viewer.ops import NotLocal
from viewer.whatif.tiling.geometry import AxisGeometry, constant_ops, derived_constants

_WINDOW_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"}
_VALID = 1
_LOWEST = {"int8": -128, "uint8": 0, "int16": -32768, "float32": float(np.finfo(np.float32).min)}


def _const(g: GraphSpec, name: str, values) -> int:
    a = np.asarray(values, dtype=np.int32)
    return g.add(TensorSpec(name, tuple(a.shape), "int32", constant=True, data=a))


def build_patch(sg: Subgraph, k: int, gy: AxisGeometry, gx: AxisGeometry, key: str) -> GraphSpec:
    """The graph of one patch (rows ``gy``, columns ``gx``) for the split after operator ``k``.

    Raises
    ------
    viewer.ops.NotLocal
        When the patch cannot be made exact (an AVERAGE_POOL_2D or L2_POOL_2D with SAME padding
        at the border: the kernel divides by the count of real elements, which a PAD cannot
        reproduce).
    """
    g = GraphSpec(key)
    tmap: dict[int, int] = {}
    tens = sg.tensors

    derived = derived_constants(sg)

    def held(t: int) -> int:
        if t in tmap:
            return tmap[t]
        src = tens[t]
        if t in derived:  # made from constants: carry the operators that make it
            _emit_constant_chain(g, sg, t, tmap)
            return tmap[t]
        if src.is_constant:
            tmap[t] = g.add(TensorSpec(src.name, tuple(src.shape), src.dtype, t, constant=True))
        else:  # the graph input: the patch's crop
            tmap[t] = g.add(TensorSpec(src.name, _held_shape(src, t, gy, gx), src.dtype, t))
            g.inputs[src.name] = tmap[t]
        return tmap[t]

    n_new = 0
    skip = constant_ops(sg)
    for op in sg.operators[: k + 1]:
        if op.index in skip or not any(t in gy.need for t in op.outputs if t >= 0):
            continue
        new_inputs: list[int] = []
        pads_for_op = None
        for p, t in enumerate(op.inputs):
            if t < 0 or (op.index, p) not in gy.request:
                new_inputs.append(held(t) if t >= 0 else -1)
                continue
            x = held(t)
            cy, cx = gy.crop((op.index, p), t), gx.crop((op.index, p), t)
            full_y = gy.need[t][1] - gy.need[t][0] if t in gy.need else tens[t].shape[1]
            full_x = gx.need[t][1] - gx.need[t][0] if t in gx.need else tens[t].shape[2]
            if (cy[0], cy[1], cx[0], cx[1]) != (0, full_y, 0, full_x):
                n_new += 1
                shape = (tens[t].shape[0], cy[1], cx[1], tens[t].shape[3])
                begin = _const(g, f"tiling/slice{n_new}/begin", [0, cy[0], cx[0], 0])
                size = _const(g, f"tiling/slice{n_new}/size", list(shape))
                y = g.add(TensorSpec(f"tiling/slice{n_new}", shape, tens[t].dtype, t))
                g.ops.append(OpSpec("SLICE", [x, begin, size], [y]))
                x = y
            pads = (cy[2], cy[3], cx[2], cx[3])
            if any(pads) and op.op_name in ("PAD", "PADV2"):
                pads_for_op = pads
            elif any(pads):
                x = _pad(g, op, t, x, pads, tens, n_new := n_new + 1)
            new_inputs.append(x)
        options: dict[str, Any] = {}
        if op.op_name in _WINDOW_OPS:
            options["padding"] = _VALID
        if op.op_name in ("PAD", "PADV2"):
            p = pads_for_op or (0, 0, 0, 0)
            new_inputs[1] = _const(g, f"tiling/pad_of_{op.index}", [[0, 0], [p[0], p[1]], [p[2], p[3]], [0, 0]])
        outs = []
        for t in op.outputs:
            if t < 0:
                outs.append(-1)
                continue
            tmap[t] = g.add(TensorSpec(tens[t].name, _held_shape(tens[t], t, gy, gx), tens[t].dtype, t))
            outs.append(tmap[t])
        g.ops.append(OpSpec(op.op_name, new_inputs, outs, src=op.index, options=options))
    for t, sy in gy.share.items():
        sx = gx.share[t]
        x = tmap[t]
        oy, ox = sy[0] - gy.need[t][0], sx[0] - gx.need[t][0]
        shape = (tens[t].shape[0], sy[1] - sy[0], sx[1] - sx[0], tens[t].shape[3])
        if shape != g.tensors[x].shape:
            g.tensors[x].name = f"{tens[t].name}/held"
            begin = _const(g, f"tiling/out{t}/begin", [0, oy, ox, 0])
            size = _const(g, f"tiling/out{t}/size", list(shape))
            y = g.add(TensorSpec(tens[t].name, shape, tens[t].dtype, t))
            g.ops.append(OpSpec("SLICE", [x, begin, size], [y]))
            x = y
        g.outputs[tens[t].name] = x
    return g


def _held_shape(t: Tensor, idx: int, gy: AxisGeometry, gx: AxisGeometry) -> tuple[int, ...]:
    ny, nx = gy.need[idx], gx.need[idx]
    return (t.shape[0], ny[1] - ny[0], nx[1] - nx[0], t.shape[3])


def _pad(g: GraphSpec, op: Operator, t: int, x: int, pads, tens, n: int) -> int:
    """PAD (or PADV2 with the lowest value, before MAX_POOL_2D) supplying SAME's border padding."""
    if op.op_name in ("AVERAGE_POOL_2D", "L2_POOL_2D"):
        raise NotLocal(f"#{op.index} {op.op_name} with SAME padding at the border: it divides by the "
                       "count of real elements, which an explicit PAD cannot reproduce")
    s = g.tensors[x].shape
    shape = (s[0], s[1] + pads[0] + pads[1], s[2] + pads[2] + pads[3], s[3])
    paddings = _const(g, f"tiling/pad{n}/paddings", [[0, 0], [pads[0], pads[1]], [pads[2], pads[3]], [0, 0]])
    y = g.add(TensorSpec(f"tiling/pad{n}", shape, tens[t].dtype, t))
    if op.op_name == "MAX_POOL_2D":
        dt = tens[t].dtype
        low = g.add(TensorSpec(f"tiling/pad{n}/value", (), dt, t, constant=True,
                               data=np.asarray(_LOWEST[dt], dtype=np.dtype(dt if dt != "float32" else np.float32))))
        g.ops.append(OpSpec("PADV2", [x, paddings, low], [y]))
    else:
        g.ops.append(OpSpec("PAD", [x, paddings], [y]))
    return y


def _emit_constant_chain(g: GraphSpec, sg: Subgraph, t: int, tmap: dict[int, int]) -> None:
    """Add the operators (whole, original shapes) that compute derived constant ``t``."""
    prod = next(op for op in sg.operators if t in op.outputs)
    ins = []
    for i in prod.inputs:
        if i < 0:
            ins.append(-1)
            continue
        if i not in tmap:
            if sg.tensors[i].is_constant:
                src = sg.tensors[i]
                tmap[i] = g.add(TensorSpec(src.name, tuple(src.shape), src.dtype, i, constant=True))
            else:
                _emit_constant_chain(g, sg, i, tmap)
        ins.append(tmap[i])
    outs = []
    for o in prod.outputs:
        if o >= 0 and o not in tmap:
            src = sg.tensors[o]
            tmap[o] = g.add(TensorSpec(src.name, tuple(src.shape), src.dtype, o))
        outs.append(tmap[o] if o >= 0 else -1)
    g.ops.append(OpSpec(prod.op_name, ins, outs, src=prod.index))


def build_tail(sg: Subgraph, k: int, cut: list[int]) -> GraphSpec:
    """The graph after operator ``k``: its inputs are the cut tensors (and any graph input the
    tail reads), by their original names; its outputs the original graph outputs."""
    g = GraphSpec("tail")
    tmap: dict[int, int] = {}

    def get(t: int) -> int:
        if t < 0:
            return -1
        if t not in tmap:
            src = sg.tensors[t]
            tmap[t] = g.add(TensorSpec(src.name, tuple(src.shape), src.dtype, t, constant=src.is_constant))
        return tmap[t]

    tail_reads = [t for op in sg.operators[k + 1:] for t in op.inputs if t >= 0]
    for t in cut + [t for t in sg.inputs if t in tail_reads and t not in cut]:
        g.inputs[sg.tensors[t].name] = get(t)
    derived = derived_constants(sg)
    tail_ops = {op.index for op in sg.operators[k + 1:]}
    emitted: dict[int, int] = {}
    for op in sg.operators[k + 1:]:
        for t in op.inputs:  # a weight the prefix made from constants: the tail makes its own
            if t in derived and t not in tmap and not any(t in o.outputs for o in sg.operators if o.index in tail_ops):
                _emit_constant_chain(g, sg, t, tmap)
        g.ops.append(OpSpec(op.op_name, [get(t) for t in op.inputs], [get(t) for t in op.outputs], src=op.index))
    del emitted
    for t in sg.outputs:
        g.outputs[sg.tensors[t].name] = get(t)
    return g


@lru_cache(maxsize=65536)
def _nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    return nbytes(dtype, shape)


def to_subgraph(g: GraphSpec, sg: Subgraph, index: int = 0) -> Subgraph:
    """Our own :class:`~viewer.model.types.Subgraph` of ``g`` (for analysis and planning)."""
    tensors = []
    for i, t in enumerate(g.tensors):
        src = sg.tensors[t.src] if t.src is not None else None
        flags = src.flags if src is not None and src.flags and tuple(src.shape) == t.shape else frozenset()
        tensors.append(Tensor(i, t.name, t.shape, t.shape, t.dtype, _nbytes(t.dtype, t.shape),
                              buffer=(src.buffer if t.constant and t.data is None and src is not None else 0),
                              is_constant=t.constant, flags=flags))
    operators = []
    for i, o in enumerate(g.ops):
        src = sg.operators[o.src] if o.src is not None else None
        options = src.options if src is not None else {}
        if o.options:
            options = {**options, **o.options}
        operators.append(Operator(i, o.op_name, src.builtin_code if src is not None else 0,
                                  src.custom_code if src is not None else None,
                                  src.version if src is not None else 1,
                                  tuple(o.inputs), tuple(o.outputs), options=options))
    return Subgraph(index, g.key, tuple(tensors), tuple(operators), tuple(g.inputs.values()),
                    tuple(g.outputs.values()))
