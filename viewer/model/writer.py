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


def _repack(src_p: Path, raw: bytes, subgraph_index: int, order: list[int]) -> bytes:
    """The model re-serialised through the object API with the new operator order."""
    try:
        model = S.ModelT.InitFromPackedBuf(bytearray(raw), 0)
    except Exception as e:  # the generated code raises anything on a corrupt buffer
        raise ModelFormatError(src_p, "object API unpack", f"{type(e).__name__}: {e}") from None
    sg = model.subgraphs[subgraph_index]
    ops = list(sg.operators or [])
    for i, b in enumerate(model.buffers or []):
        if b.offset and b.offset > 1:
            raise ModelFormatError(
                src_p, f"buffer {i}", "data stored outside the flatbuffer (offset/size); cannot rewrite"
            )
        b.__class__ = _AlignedBufferT
    sg.operators = [ops[i] for i in order]

    builder = flatbuffers.Builder(len(raw) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())
