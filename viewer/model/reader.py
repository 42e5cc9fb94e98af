"""Read a .tflite flatbuffer into :mod:`viewer.model.types`, without reading weight bytes.

The file is mapped with ``mmap``; only tables, vectors of indices and names are touched. Every
access is bounds-checked so that a hostile or truncated file becomes a
:class:`~viewer.errors.ModelFormatError` naming the file and the parse step, never a traceback,
a hang or a huge allocation.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import struct
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np
from ai_edge_litert import schema_py_generated as S

from viewer.errors import ModelFormatError
from viewer.model import dtypes
from viewer.model.types import (
    FLAG_DYNAMIC,
    FLAG_RESOURCE,
    FLAG_STRING,
    FLAG_UNKNOWN_DTYPE,
    FLAG_VARIANT,
    Model,
    Operator,
    Signature,
    Subgraph,
    Tensor,
)

#: BuiltinOperator value -> name, e.g. 3 -> "CONV_2D".
BUILTIN_NAMES: dict[int, str] = {
    v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")
}
_OPTIONS_NAMES = {v: k for k, v in vars(S.BuiltinOptions).items() if not k.startswith("_")}
_OPTIONS2_NAMES = {v: k for k, v in vars(S.BuiltinOptions2).items() if not k.startswith("_")}

FILE_IDENTIFIER = b"TFL3"
_T = TypeVar("_T")


def load_model(path: str | os.PathLike) -> Model:
    """Read a .tflite model.

    Parameters
    ----------
    path : str or PathLike
        A TensorFlow Lite / LiteRT flatbuffer (file identifier ``TFL3``).

    Returns
    -------
    Model
        Immutable; holds no reference to the file.

    Raises
    ------
    viewer.errors.ModelFormatError
        Missing or unreadable file, not a flatbuffer, wrong file identifier, truncated file,
        offsets or indices out of range. The message names the file and the parse step.
    """
    p = Path(path)
    if not p.exists():
        raise ModelFormatError(p, "open", "no such file")
    if p.is_dir():
        raise ModelFormatError(p, "open", "is a directory, not a .tflite file")
    try:
        if not stat.S_ISREG(p.stat().st_mode):
            # A FIFO would block forever on open; a device has no size to map.
            raise ModelFormatError(p, "open", "not a regular file (a pipe, socket or device)")
    except OSError as e:
        raise ModelFormatError(p, "open", e.strerror or str(e)) from None
    try:
        size = p.stat().st_size
        f = p.open("rb")
    except OSError as e:
        raise ModelFormatError(p, "open", e.strerror or str(e)) from None
    with f:
        if size < 8:
            raise ModelFormatError(p, "header", f"file is {size} bytes; too short to be a .tflite flatbuffer")
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise ModelFormatError(p, "map", str(e)) from None
        try:
            return _Reader(p, mm, size).read()
        finally:
            mm.close()


class _Reader:
    def __init__(self, path: Path, buf: mmap.mmap, size: int):
        self.path = path
        self.buf = buf
        self.size = size
        # Every vector element sits in its own bytes of the file, so a well-formed model has
        # fewer than size/4 of them in total. A hostile file can point many tables at one huge
        # vector; this budget keeps the read linear in the file size instead of quadratic.
        self.budget = size // 2 + 100_000

    # -- guarded access ----------------------------------------------------------------------
    def fail(self, step: str, reason: str) -> ModelFormatError:
        return ModelFormatError(self.path, step, reason)

    def guard(self, step: str, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except ModelFormatError:
            raise
        except (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeDecodeError,
                AttributeError, MemoryError) as e:
            raise self.fail(step, f"malformed or truncated flatbuffer ({type(e).__name__}: {e})") from None

    def count(self, step: str, n: int, min_elem_bytes: int = 4, *, iterated: bool = True) -> int:
        """A vector length, rejected when it cannot fit in the file (so loops stay bounded)."""
        if n < 0 or n * min_elem_bytes > self.size:
            raise self.fail(step, f"vector length {n} does not fit in a {self.size}-byte file")
        if iterated:
            self.budget -= n
        if self.budget < 0:
            raise self.fail(step, "more vector elements than the file can hold (tables share "
                                  "vectors in a loop?); not a well-formed model")
        return n

    def string(self, raw: bytes | None) -> str:
        if raw is None:
            return ""
        return raw.decode("utf-8", errors="replace")

    # -- model -------------------------------------------------------------------------------
    def read(self) -> Model:
        buf = self.buf
        root = self.guard("root offset", lambda: struct.unpack_from("<I", buf, 0)[0])
        if not (8 <= root < self.size):
            if buf[4:8] != FILE_IDENTIFIER:
                raise self.fail("file identifier", f"not a .tflite flatbuffer (identifier {bytes(buf[4:8])!r}, expected b'TFL3')")
            raise self.fail("root offset", f"root table offset {root} is outside the {self.size}-byte file")
        if buf[4:8] != FILE_IDENTIFIER:
            raise self.fail(
                "file identifier",
                f"identifier is {bytes(buf[4:8])!r}, expected b'TFL3' (not a TensorFlow Lite model)",
            )
        m = self.guard("model table", lambda: S.Model.GetRootAs(buf, 0))
        version = self.guard("version", m.Version)
        description = self.guard("description", lambda: self.string(m.Description()))

        n_codes = self.count("operator_codes", self.guard("operator_codes", m.OperatorCodesLength))
        opcodes = [self.guard(f"operator_codes[{i}]", lambda i=i: self._opcode(m.OperatorCodes(i)))
                   for i in range(n_codes)]

        n_buf = self.count("buffers", self.guard("buffers", m.BuffersLength))
        buffer_sizes = [self.guard(f"buffers[{i}]", lambda i=i: self._buffer_size(m.Buffers(i), i))
                        for i in range(n_buf)]

        n_sg = self.count("subgraphs", self.guard("subgraphs", m.SubgraphsLength))
        if n_sg == 0:
            raise self.fail("subgraphs", "the model has no subgraphs")
        subgraphs = tuple(self._subgraph(self.guard(f"subgraph {i}", lambda i=i: m.Subgraphs(i)), i, opcodes, buffer_sizes)
                          for i in range(n_sg))

        used = {t.buffer for sg in subgraphs for t in sg.tensors if t.is_constant}
        weights = sum(buffer_sizes[b] for b in used)

        n_sig = self.count("signature_defs", self.guard("signature_defs", m.SignatureDefsLength))
        signatures = tuple(self.guard(f"signature_defs[{i}]", lambda i=i: self._signature(m.SignatureDefs(i), n_sg))
                           for i in range(n_sig))
        n_meta = self.count("metadata", self.guard("metadata", m.MetadataLength))
        metadata = tuple(self.guard(f"metadata[{i}]", lambda i=i: self.string(m.Metadata(i).Name()))
                         for i in range(n_meta))
        return Model(str(self.path), self.size, int(version), description, subgraphs, int(weights),
                     signatures, metadata)

    def _opcode(self, oc) -> tuple[int | None, str, str | None, int]:
        deprecated = oc.DeprecatedBuiltinCode()
        code = max(int(deprecated), int(oc.BuiltinCode()))
        version = int(oc.Version())
        if code == S.BuiltinOperator.CUSTOM:
            custom = self.string(oc.CustomCode()) or "CUSTOM"
            return None, custom, custom, version
        return code, BUILTIN_NAMES.get(code, f"BUILTIN_{code}"), None, version

    def _buffer_size(self, b, i: int) -> int:
        if b is None:
            return 0
        n = b.DataLength()
        if n:
            self.count(f"buffers[{i}].data", n, 1, iterated=False)
            return int(n)
        off, size = int(b.Offset()), int(b.Size())
        if off > 1 and size > 0:
            # Stored after the flatbuffer (files over 2 GB); the bytes stay on disk.
            if off + size > self.size:
                raise self.fail(f"buffers[{i}]", f"offset {off} + size {size} is past the end of the {self.size}-byte file")
            return size
        return 0

    def _signature(self, sd, n_sg: int) -> Signature:
        sgi = int(sd.SubgraphIndex())
        if not 0 <= sgi < n_sg:
            raise self.fail("signature_defs", f"signature refers to subgraph {sgi}; the model has {n_sg}")
        ins = {self.string(sd.Inputs(j).Name()): int(sd.Inputs(j).TensorIndex())
               for j in range(self.count("signature inputs", sd.InputsLength()))}
        outs = {self.string(sd.Outputs(j).Name()): int(sd.Outputs(j).TensorIndex())
                for j in range(self.count("signature outputs", sd.OutputsLength()))}
        return Signature(self.string(sd.SignatureKey()), sgi, ins, outs)

    def _ints(self, step: str, length: Callable[[], int], get: Callable[[int], int]) -> tuple[int, ...]:
        n = self.count(step, self.guard(step, length))
        return self.guard(step, lambda: tuple(int(get(j)) for j in range(n)))

    def _subgraph(self, sg, index: int, opcodes, buffer_sizes) -> Subgraph:
        where = f"subgraph {index}"
        if sg is None:
            raise self.fail(where, "missing subgraph table")
        name = self.guard(f"{where} name", lambda: self.string(sg.Name()))
        n_t = self.count(f"{where} tensors", self.guard(f"{where} tensors", sg.TensorsLength))
        tensors = tuple(self.guard(f"{where} tensor {i}", lambda i=i: self._tensor(sg.Tensors(i), i, buffer_sizes, where))
                        for i in range(n_t))

        def check_idx(step: str, idx: tuple[int, ...]) -> tuple[int, ...]:
            for t in idx:
                if t != -1 and not 0 <= t < n_t:
                    raise self.fail(step, f"refers to tensor {t}, but the subgraph has {n_t} tensors")
            return idx

        inputs = check_idx(f"{where} inputs", self._ints(f"{where} inputs", sg.InputsLength, sg.Inputs))
        outputs = check_idx(f"{where} outputs", self._ints(f"{where} outputs", sg.OutputsLength, sg.Outputs))
        n_op = self.count(f"{where} operators", self.guard(f"{where} operators", sg.OperatorsLength))
        ops = []
        for i in range(n_op):
            step = f"{where} operator {i}"
            op = self.guard(step, lambda i=i: sg.Operators(i))
            oi = self.guard(step, op.OpcodeIndex)
            if not 0 <= oi < len(opcodes):
                raise self.fail(step, f"opcode index {oi} out of range (the model has {len(opcodes)} operator codes)")
            code, op_name, custom, version = opcodes[oi]
            ins = check_idx(f"{step} inputs", self._ints(f"{step} inputs", op.InputsLength, op.Inputs))
            outs = check_idx(f"{step} outputs", self._ints(f"{step} outputs", op.OutputsLength, op.Outputs))
            inter = check_idx(f"{step} intermediates",
                              self._ints(f"{step} intermediates", op.IntermediatesLength, op.Intermediates))
            opts, opts_type = self.guard(f"{step} options", lambda op=op: _options(op))
            ops.append(Operator(i, op_name, code, custom, version, ins, outs, inter, opts, opts_type))
        return Subgraph(index, name, tensors, tuple(ops), inputs, outputs)

    def _tensor(self, t, i: int, buffer_sizes, where: str) -> Tensor:
        shape = self._ints(f"{where} tensor {i} shape", t.ShapeLength, t.Shape)
        sig = self._ints(f"{where} tensor {i} shape_signature", t.ShapeSignatureLength, t.ShapeSignature) or shape
        code = int(t.Type())
        dtype = dtypes.TYPE_NAMES.get(code, f"type{code}")
        flags = set()
        if dtype == "string":
            flags.add(FLAG_STRING)
        elif dtype == "resource":
            flags.add(FLAG_RESOURCE)
        elif dtype == "variant":
            flags.add(FLAG_VARIANT)
        if any(d < 0 for d in sig) or any(d < 0 for d in shape):
            flags.add(FLAG_DYNAMIC)
        if dtype not in dtypes.BITS and dtype not in dtypes.UNSIZED:
            flags.add(FLAG_UNKNOWN_DTYPE)
            nbytes = 0
        else:
            nbytes = dtypes.nbytes(dtype, shape)
        b = int(t.Buffer())
        if not 0 <= b < max(len(buffer_sizes), 1):
            raise self.fail(f"{where} tensor {i}", f"buffer index {b} out of range (the model has {len(buffer_sizes)} buffers)")
        const = b > 0 and b < len(buffer_sizes) and buffer_sizes[b] > 0
        name = self.string(t.Name())
        return Tensor(i, name, shape, sig, dtype, nbytes, b, const, bool(t.IsVariable()), frozenset(flags))


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return tuple(v.tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if hasattr(v, "__dict__") and not isinstance(v, type):
        return {_snake(k): _plain(x) for k, x in vars(v).items()}
    return v


def _options(op) -> tuple[dict[str, Any], str]:
    """Builtin options of one operator as a plain dict (snake_case keys), and the table's name."""
    t = op.BuiltinOptionsType()
    table = op.BuiltinOptions()
    if t and table is not None:
        obj = S.BuiltinOptionsCreator(t, table)
        return (_plain(obj) if obj is not None else {}), _OPTIONS_NAMES.get(t, "")
    t2 = op.BuiltinOptions2Type()
    table2 = op.BuiltinOptions2()
    if t2 and table2 is not None:
        obj = S.BuiltinOptions2Creator(t2, table2)
        return (_plain(obj) if obj is not None else {}), _OPTIONS2_NAMES.get(t2, "")
    return {}, ""
