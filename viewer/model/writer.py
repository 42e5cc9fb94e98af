"""Write a copy of a .tflite model with one subgraph's operators in a new order.

Two ways, both keeping everything but the operator order:

- *in place* (used whenever possible): the subgraph's ``operators`` vector holds one unsigned
  offset per operator, pointing forward to its table; permuting the targets rewrites only those
  ``4 * num_ops`` bytes. The file is otherwise byte-for-byte the original, including anything
  stored after the flatbuffer (TFLite metadata's associated-files zip, buffers at offset/size);
- *repack*, when an operator table lies before the vector (no standard builder does this):
  LiteRT's generated schema object API (``ModelT.InitFromPackedBuf`` / ``Pack`` and
  ``builder.Finish(..., file_identifier=b"TFL3")``), buffer data re-aligned to 16 bytes as the
  schema asks (``force_align: 16``). Bytes after the flatbuffer are lost that way, so a model
  with buffers stored at offset/size is refused.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

from viewer.errors import ModelFormatError, ViewerError

FILE_IDENTIFIER = b"TFL3"
#: Alignment of buffer data, as the schema's ``data:[ubyte] (force_align: 16)``.
BUFFER_ALIGNMENT = 16


class _AlignedBufferT(S.BufferT):
    """``BufferT`` whose ``data`` vector starts on a 16-byte boundary."""

    def Pack(self, builder):  # noqa: N802 (flatbuffers' name)
        data = None
        if self.data is not None:
            raw = np.asarray(self.data, dtype=np.uint8).tobytes()
            builder.StartVector(1, len(raw), BUFFER_ALIGNMENT)
            builder.head = builder.head - len(raw)
            builder.Bytes[builder.head : builder.head + len(raw)] = raw
            builder.vectorNumElems = len(raw)
            data = builder.EndVector()
        S.BufferStart(builder)
        if data is not None:
            S.BufferAddData(builder, data)
        S.BufferAddOffset(builder, self.offset)
        S.BufferAddSize(builder, self.size)
        return S.BufferEnd(builder)


def reordered_model_bytes(
    src: str | os.PathLike,
    subgraph_index: int,
    order: Sequence[int],
    *,
    repack: bool = False,
) -> bytes:
    """The bytes of ``src`` with subgraph ``subgraph_index``'s operators in ``order``.

    Writing them is :func:`viewer.export.model_copy.write_reordered`'s job (atomically).

    Parameters
    ----------
    src : path
        The model.
    subgraph_index : int
    order : sequence of int
        Original operator indices in their new execution order (a permutation). The caller
        checks it is a topological order (:func:`viewer.whatif.reorder.apply_order`).
    repack : bool
        Always re-serialise through the object API instead of permuting in place.

    Returns
    -------
    bytes
        The reordered model file.

    Raises
    ------
    viewer.errors.ModelFormatError
        ``src`` cannot be read as a flatbuffer model; or it needs a repack (see the module
        notes) and stores buffers outside the flatbuffer (offset/size, models over 2 GB).
    viewer.errors.ViewerError
        ``order`` does not fit the subgraph.
    """
    src_p = Path(src)
    try:
        raw = src_p.read_bytes()
    except OSError as e:
        raise ModelFormatError(src_p, "open", e.strerror or str(e)) from None
    if len(raw) < 8 or raw[4:8] != FILE_IDENTIFIER:
        raise ModelFormatError(src_p, "file identifier", "not a .tflite flatbuffer (no TFL3 identifier)")
    try:
        root = S.Model.GetRootAs(raw, 0)
        n_subgraphs = root.SubgraphsLength()
        n_ops = root.Subgraphs(subgraph_index).OperatorsLength() if 0 <= subgraph_index < n_subgraphs else 0
    except Exception as e:  # the generated accessors raise anything on a corrupt buffer
        raise ModelFormatError(src_p, "subgraphs", f"{type(e).__name__}: {e}") from None
    if not 0 <= subgraph_index < n_subgraphs:
        raise ViewerError(f"{src_p}: no subgraph {subgraph_index}; the model has {n_subgraphs}")
    order = [int(i) for i in order]
    if sorted(order) != list(range(n_ops)):
        raise ViewerError(
            f"{src_p}: subgraph {subgraph_index}: order is not a permutation of its {n_ops} operators"
        )
    out = None if repack else _permute_in_place(raw, subgraph_index, order)
    if out is None:
        out = _repack(src_p, raw, subgraph_index, order)
    return bytes(out)


def _permute_in_place(raw: bytes, subgraph_index: int, order: list[int]) -> bytes | None:
    """The file with only the operator offsets permuted; None when that is impossible."""
    try:
        root = S.Model.GetRootAs(raw, 0)
        sg = root.Subgraphs(subgraph_index)
        field = sg._tab.Offset(10)  # SubGraph.operators
        if not field:
            return raw if not order else None
        vec = sg._tab.Vector(field)
        n = sg._tab.VectorLen(field)
        if n != len(order) or vec + 4 * n > len(raw):
            return None
        slots = [vec + 4 * j for j in range(n)]
        targets = [a + struct.unpack_from("<I", raw, a)[0] for a in slots]
    except (struct.error, IndexError, ValueError, TypeError, AttributeError):
        return None
    out = bytearray(raw)
    for j, a in enumerate(slots):
        rel = targets[order[j]] - a
        if rel <= 0 or targets[order[j]] >= len(raw):
            return None  # an operator table before the vector: offsets cannot point back
        struct.pack_into("<I", out, a, rel)
    return bytes(out)


def _unpack(src_p: Path, raw: bytes | None = None):
    """``(raw, ModelT)``: the bytes of ``src_p`` (read unless given) unpacked through LiteRT's
    schema object API.

    Raises
    ------
    viewer.errors.ModelFormatError
        ``src_p`` cannot be read, or the object API cannot unpack it.
    """
    try:
        if raw is None:
            raw = src_p.read_bytes()
        return raw, S.ModelT.InitFromPackedBuf(bytearray(raw), 0)
    except OSError as e:
        raise ModelFormatError(src_p, "open", e.strerror or str(e)) from None
    except Exception as e:  # the generated code raises anything on a corrupt buffer
        raise ModelFormatError(src_p, "object API unpack", f"{type(e).__name__}: {e}") from None


def _realign_buffers(src_p: Path, model) -> None:
    """Make every buffer of ``model`` (a ``ModelT``) pack its data 16-byte aligned.

    Raises
    ------
    viewer.errors.ModelFormatError
        A buffer stores its data outside the flatbuffer (offset/size): it cannot be rewritten.
    """
    for i, b in enumerate(model.buffers or []):
        if b.offset and b.offset > 1:
            raise ModelFormatError(
                src_p, f"buffer {i}", "data stored outside the flatbuffer (offset/size); cannot rewrite"
            )
        b.__class__ = _AlignedBufferT


def _repack(src_p: Path, raw: bytes, subgraph_index: int, order: list[int]) -> bytes:
    """The model re-serialised through the object API with the new operator order."""
    _, model = _unpack(src_p, raw)
    sg = model.subgraphs[subgraph_index]
    ops = list(sg.operators or [])
    _realign_buffers(src_p, model)
    sg.operators = [ops[i] for i in order]

    builder = flatbuffers.Builder(len(raw) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


# -- new models from an existing one ---------------------------------------------------------
_NEW_OPS = {
    "PAD": (S.BuiltinOperator.PAD, S.BuiltinOptions.PadOptions, S.PadOptionsT),
    "PADV2": (S.BuiltinOperator.PADV2, S.BuiltinOptions.PadV2Options, S.PadV2OptionsT),
    "SLICE": (S.BuiltinOperator.SLICE, S.BuiltinOptions.SliceOptions, S.SliceOptionsT),
}


def write_graphs(src: str | os.PathLike, dst: str | os.PathLike, graphs, subgraph_index: int = 0) -> int:
    """Write a new model whose subgraphs are ``graphs``, built from ``src``'s subgraph.

    Each graph becomes one subgraph with a signature of the same key (inputs and outputs by
    their keys). Tensors copy their source tensor's type and quantization; constants share the
    source's weight buffer, so weights used by several graphs are stored once; only buffers a
    graph uses are kept. Operators copy their source operator (opcode, options, with the
    graph's overrides applied to the options object) or are new PAD / PADV2 / SLICE builtins.
    Serialised with LiteRT's generated schema object API, buffers aligned to 16 bytes.

    Parameters
    ----------
    src, dst : path
        The model and where to write; they must be different files.
    graphs : sequence of viewer.model.build.GraphSpec
    subgraph_index : int
        The subgraph of ``src`` the graphs' ``src`` indices refer to.

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    viewer.errors.ModelFormatError
        ``src`` cannot be read, or stores buffers outside the flatbuffer.
    viewer.errors.ViewerError
        ``dst`` is ``src`` or cannot be written.
    """
    import copy

    src_p, dst_p = Path(src), Path(dst)
    if dst_p.exists() and src_p.exists() and os.path.samefile(src_p, dst_p):
        raise ViewerError(f"{dst_p}: refusing to overwrite the input model; choose another output file")
    raw, model = _unpack(src_p)
    old = model.subgraphs[subgraph_index]
    old_buffers = model.buffers or []
    buffers = [_AlignedBufferT()]
    buf_map: dict[int, int] = {}
    codes: list = []
    code_map: dict = {}

    def buffer_of(i: int) -> int:
        if i <= 0:
            return 0
        if i not in buf_map:
            b = old_buffers[i]
            if b.offset and b.offset > 1:
                raise ModelFormatError(src_p, f"buffer {i}", "data stored outside the flatbuffer (offset/size)")
            b.__class__ = _AlignedBufferT
            buffers.append(b)
            buf_map[i] = len(buffers) - 1
        return buf_map[i]

    def new_buffer(data: np.ndarray) -> int:
        b = _AlignedBufferT()
        b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
        buffers.append(b)
        return len(buffers) - 1

    def opcode(key, make) -> int:
        if key not in code_map:
            codes.append(make())
            code_map[key] = len(codes) - 1
        return code_map[key]

    subgraphs, sigs = [], []
    for gi, g in enumerate(graphs):
        sg = S.SubGraphT()
        sg.name = g.key
        sg.tensors = []
        for t in g.tensors:
            tt = copy.deepcopy(old.tensors[t.src]) if t.src is not None else S.TensorT()
            if t.src is None:
                tt.type = _TYPE_CODES[t.dtype]
            tt.name = t.name
            tt.shape = np.asarray(t.shape, dtype=np.int32)
            tt.shapeSignature = None
            if t.data is not None:
                tt.buffer = new_buffer(np.asarray(t.data, dtype=np.dtype(_NP[t.dtype])))
            elif t.constant:
                tt.buffer = buffer_of(old.tensors[t.src].buffer)
            else:
                tt.buffer = 0
            sg.tensors.append(tt)
        sg.operators = []
        for o in g.ops:
            if o.src is not None:
                ot = copy.deepcopy(old.operators[o.src])
                ot.opcodeIndex = opcode(("src", ot.opcodeIndex),
                                        lambda i=ot.opcodeIndex: copy.deepcopy(model.operatorCodes[i]))
                for k, v in o.options.items():
                    setattr(ot.builtinOptions, _CAMEL.get(k, k), v)
            else:
                code, opt_type, opt_cls = _NEW_OPS[o.op_name]
                ot = S.OperatorT()
                ot.opcodeIndex = opcode(("new", o.op_name), lambda c=code: _opcode(c))
                ot.builtinOptionsType = opt_type
                ot.builtinOptions = opt_cls()
            ot.inputs = np.asarray(o.inputs, dtype=np.int32)
            ot.outputs = np.asarray(o.outputs, dtype=np.int32)
            sg.operators.append(ot)
        sg.inputs = np.asarray(list(g.inputs.values()), dtype=np.int32)
        sg.outputs = np.asarray(list(g.outputs.values()), dtype=np.int32)
        subgraphs.append(sg)
        sig = S.SignatureDefT()
        sig.signatureKey = g.key
        sig.subgraphIndex = gi
        sig.inputs = [_tensor_map(k, i) for k, i in g.inputs.items()]
        sig.outputs = [_tensor_map(k, i) for k, i in g.outputs.items()]
        sigs.append(sig)
    model.subgraphs = subgraphs
    model.signatureDefs = sigs
    model.buffers = buffers
    model.operatorCodes = codes
    model.metadata = None
    model.metadataBuffer = None
    builder = flatbuffers.Builder(1024 + sum(len(b.data) if b.data is not None else 0 for b in buffers))
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    out = bytes(builder.Output())
    try:
        dst_p.write_bytes(out)
    except OSError as e:
        raise ViewerError(f"{dst_p}: cannot write: {e.strerror or e}") from None
    return len(out)


_CAMEL = {"padding": "padding"}
_NP = {"int32": "<i4", "int8": "i1", "uint8": "u1", "int16": "<i2", "float32": "<f4", "int64": "<i8"}


def _type_codes() -> dict[str, int]:
    return {k.lower(): v for k, v in vars(S.TensorType).items() if not k.startswith("_")}


_TYPE_CODES = _type_codes()


def _opcode(code: int):
    oc = S.OperatorCodeT()
    oc.builtinCode = code
    oc.deprecatedBuiltinCode = min(code, 127)
    oc.version = 1
    return oc


def _tensor_map(name: str, index: int):
    m = S.TensorMapT()
    m.name = name
    m.tensorIndex = index
    return m

