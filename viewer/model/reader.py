"""Read a .tflite flatbuffer into :mod:`viewer.model.types`, without reading weight bytes.

Only tables, vectors of indices and names are read, through :mod:`viewer.model._flatbuf`:
page by page with ``pread`` (no mapping of the file: its weights are never touched), each
vector of tables with one numpy gather per field (a subgraph's tensors or operators at once),
every position checked against the file and every vector element and string byte charged
against one budget proportional to the file size. Options tables are decoded once per distinct
table (:mod:`viewer.model._options`), so operators sharing one table share one dict. A hostile
or truncated file becomes a :class:`~viewer.errors.ModelFormatError` naming the file and the
parse step, never a traceback, a hang or a huge allocation.

Field offsets are the vtable offsets of LiteRT's schema (tflite/schema/schema.fbs, as in
``ai_edge_litert.schema_py_generated``: ``Tensor.Shape`` is ``Offset(4)`` and so on).
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as S

from viewer.errors import ModelFormatError
from viewer.model import dtypes
from viewer.model import _options_table  # noqa: F401  (imported now, not on the first options read)
from viewer.model._flatbuf import FlatFile, Table, unique
from viewer.model.graph_check import check_graph
from viewer.model._options import KIND_SCALAR, KIND_STRING, OPTIONS2_NAMES, OPTIONS_NAMES, layout
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
FILE_IDENTIFIER = b"TFL3"
_CUSTOM = S.BuiltinOperator.CUSTOM
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
_DTYPE_FLAGS = {"string": frozenset({FLAG_STRING}), "resource": frozenset({FLAG_RESOURCE}),
                "variant": frozenset({FLAG_VARIANT})}
_NO_FLAGS: frozenset[str] = frozenset()
_DYNAMIC = frozenset({FLAG_DYNAMIC})


def load_model(path: str | os.PathLike, *, graph_rules: bool = True) -> Model:
    """Read a .tflite model.

    Parameters
    ----------
    path : str or PathLike
        A TensorFlow Lite / LiteRT flatbuffer (file identifier ``TFL3``).
    graph_rules : bool
        Apply :func:`viewer.model.graph_check.check_graph` (default). False reads a graph
        LiteRT would reject, e.g. to show what is wrong with it.

    Returns
    -------
    Model
        Immutable; holds no reference to the file.

    Raises
    ------
    viewer.errors.ModelFormatError
        Missing or unreadable file, not a flatbuffer, wrong file identifier, truncated file,
        offsets, vectors or indices out of range, a buffer's data running past the end of the
        file, more vector elements and string bytes than the file can hold (tables sharing
        one vector or string), a tensor whose byte size is beyond
        :data:`viewer.model.dtypes.MAX_TENSOR_BYTES`, or a graph LiteRT rejects
        (:func:`viewer.model.graph_check.check_graph`: two producers, a cycle, a bad or
        recursive subgraph index, a dimension below -1). The message names the file and the
        parse step.
    """
    p = Path(path)
    if not p.exists():
        raise ModelFormatError(p, "open", "no such file")
    if p.is_dir():
        raise ModelFormatError(p, "open", "is a directory, not a .tflite file")
    try:
        if not stat.S_ISREG(p.stat().st_mode):
            # A FIFO would block forever on open; a device has no size to read.
            raise ModelFormatError(p, "open", "not a regular file (a pipe, socket or device)")
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ModelFormatError(p, "open", e.strerror or str(e)) from None
    try:
        size = os.fstat(fd).st_size
        if size < 8:
            raise ModelFormatError(p, "header", f"file is {size} bytes; too short to be a .tflite flatbuffer")

        def fail(step: str, reason: str) -> ModelFormatError:
            return ModelFormatError(p, step, reason)

        try:
            f = FlatFile(fd, size, fail, budget=2 * size + 65536)
        except (OSError, ValueError, OverflowError, MemoryError) as e:
            raise ModelFormatError(p, "read", getattr(e, "strerror", None) or str(e)) from None
        model = _Reader(p, f).read()
    except OSError as e:
        raise ModelFormatError(p, "read", e.strerror or str(e)) from None
    finally:
        os.close(fd)
    if graph_rules:
        check_graph(model)
    return model


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[:limit] + "..."


class _Reader:
    def __init__(self, path: Path, f: FlatFile):
        self.path = path
        self.f = f
        self.size = f.size
        self.step = "model table"
        self._options_cache: dict[tuple[int, int, int], tuple[dict[str, Any], str]] = {}

    def fail(self, step: str, reason: str) -> ModelFormatError:
        return ModelFormatError(self.path, step, reason)

    def read(self) -> Model:
        try:
            return self._read()
        except ModelFormatError:
            raise
        except (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeDecodeError,
                AttributeError, MemoryError, KeyError) as e:
            raise self.fail(self.step, f"malformed or truncated flatbuffer ({type(e).__name__}: {e})") from None

    # -- model -------------------------------------------------------------------------------
    def _read(self) -> Model:
        f = self.f
        root = f.u32("root offset", 0)
        ident = f.peek("file identifier", 4, 4)
        if not (8 <= root < self.size):
            if ident != FILE_IDENTIFIER:
                raise self.fail("file identifier", f"not a .tflite flatbuffer (identifier {ident!r}, expected b'TFL3')")
            raise self.fail("root offset", f"root table offset {root} is outside the {self.size}-byte file")
        if ident != FILE_IDENTIFIER:
            raise self.fail("file identifier",
                            f"identifier is {ident!r}, expected b'TFL3' (not a TensorFlow Lite model)")
        m = f.table("model table", root)
        version = m.scalar(4, _U32, 0)
        self.step = "description"
        m.step = "description"
        description = m.string(10)
        opcodes = self._opcodes(m)
        buffer_sizes = self._buffers(m)
        sg_pos = self._table_vector(m, 8, "subgraphs")
        if len(sg_pos) == 0:
            raise self.fail("subgraphs", "the model has no subgraphs")
        subgraphs = tuple(self._subgraph(int(pos), i, opcodes, buffer_sizes) for i, pos in enumerate(sg_pos))
        used = {t.buffer for sg in subgraphs for t in sg.tensors if t.is_constant}
        weights = sum(buffer_sizes[b] for b in used)
        signatures = tuple(self._signature(int(pos), i, len(subgraphs))
                           for i, pos in enumerate(self._table_vector(m, 18, "signature_defs")))
        metadata = []
        for i, pos in enumerate(self._table_vector(m, 16, "metadata")):
            metadata.append(f.table(f"metadata[{i}]", int(pos)).string(4))
        return Model(str(self.path), self.size, int(version), description, subgraphs, int(weights),
                     signatures, tuple(metadata))

    def _table_vector(self, t: Table, voffset: int, step: str) -> np.ndarray:
        """Positions of the tables in the vector-of-tables field ``voffset`` of ``t``."""
        self.step = step
        t.step = step
        v, n = t.vector(voffset)
        if not v:
            return np.zeros(0, dtype=np.int64)
        return self.f.vector_of_tables(step, v, n)

    def _opcodes(self, m: Table) -> list[tuple[int | None, str, str | None, int]]:
        pos = self._table_vector(m, 6, "operator_codes")
        if len(pos) == 0:
            return []
        t = self.f.tables(lambda i: f"operator_codes[{i}]", pos)
        deprecated = t.scalar(4, "i1", 0).tolist()
        customs = t.strings(6, "operator_codes custom_code")
        versions = t.scalar(8, "<i4", 1).tolist()
        builtin = t.scalar(10, "<i4", 0).tolist()
        out = []
        for dep, bc, ver, custom in zip(deprecated, builtin, versions, customs):
            code = max(dep, bc)
            if code == _CUSTOM:
                name = custom or "CUSTOM"
                out.append((None, name, name, ver))
            else:
                out.append((code, BUILTIN_NAMES.get(code, f"BUILTIN_{code}"), None, ver))
        return out

    def _buffers(self, m: Table) -> list[int]:
        """Byte size of every buffer; each data vector must lie inside the file, start and end.

        The Buffer tables sit between the weights, so each is read as a 64-byte window with a
        small ``peek`` (its page is not kept: the weights' pages are never read), and all
        windows are parsed together; a table whose fields fall outside its window, or that
        uses offset/size (weights after the flatbuffer), is read field by field.
        """
        f = self.f
        pos = self._table_vector(m, 12, "buffers")
        n = len(pos)
        if n == 0:
            return []
        self.step = "buffers"
        plist = pos.tolist()
        win = np.frombuffer(f.windows(plist, _WINDOW), dtype=np.uint8).reshape(n, _WINDOW)
        avail = np.minimum(_WINDOW, self.size - pos)
        short = avail < 4
        if short.any():
            i = int(np.argmax(short))
            raise self.fail(f"buffers[{i}]", f"table at byte {plist[i]} is cut off by the end of the file")
        vt = pos - win[:, :4].copy().view("<i4")[:, 0]
        uniq, inverse = unique(vt, return_inverse=True)
        vts = {}
        offs = np.array([self._buffer_vtable(int(np.argmax(vt == v)), int(v), vts) for v in uniq.tolist()],
                        dtype=np.int64).reshape(-1, 3)[inverse]
        o_data, o_off, o_size = offs[:, 0], offs[:, 1], offs[:, 2]
        word, ok = _window_u32(win, avail, o_data, o_data > 0)
        v_rel = o_data + word  # the data vector's length word, relative to the table
        length, ok2 = _window_u32(win, avail, v_rel, ok)
        data = ok2 & (length > 0)
        end = pos + v_rel + 4 + length
        past = data & (end > self.size)
        if past.any():
            i = int(np.argmax(past))
            raise self.fail(f"buffers[{i}].data", f"data vector of {int(length[i])} bytes at byte "
                                                  f"{int(pos[i] + v_rel[i] + 4)} runs past the end of the "
                                                  f"{self.size}-byte file")
        sizes = np.where(data, length, 0).tolist()
        slow = ~data & ((o_data > 0) & ~ok2 | (o_off > 0) | (o_size > 0))
        for i in np.nonzero(slow)[0].tolist():
            step = f"buffers[{i}]"
            self.step = step
            tpos = plist[i]
            sizes[i] = self._buffer_size(step, tpos, f.peek(step, tpos, int(avail[i])), tuple(offs[i].tolist()))
        return sizes

    def _buffer_vtable(self, i: int, vt: int, cache) -> tuple[int, int, int]:
        """(data, offset, size) field offsets of a Buffer vtable at ``vt`` (0 = absent)."""
        step = f"buffers[{i}]"
        vtlen = _U16.unpack_from(self.f.peek(step, vt, 2), 0)[0]
        raw = self.f.peek(step, vt, min(max(vtlen, 2), 10)) + b"\0" * 10
        return tuple(_U16.unpack_from(raw, k)[0] if vtlen >= k + 2 else 0 for k in (4, 6, 8))

    def _buffer_size(self, step: str, tpos: int, win: bytes, offs: tuple[int, int, int]) -> int:
        f = self.f

        def word(st: struct.Struct, at: int) -> int:
            if tpos <= at and at + st.size <= tpos + len(win):
                return st.unpack_from(win, at - tpos)[0]
            return st.unpack_from(f.peek(step, at, st.size), 0)[0]

        o_data, o_off, o_size = offs
        if o_data:
            fp = tpos + o_data
            v = fp + word(_U32, fp)
            n = word(_U32, v)
            if n:
                if v + 4 + n > self.size:
                    raise self.fail(f"{step}.data", f"data vector of {n} bytes at byte {v + 4} runs past "
                                                    f"the end of the {self.size}-byte file")
                return n
        off = word(_U64, tpos + o_off) if o_off else 0
        size = word(_U64, tpos + o_size) if o_size else 0
        if off > 1 and size > 0:
            # Stored after the flatbuffer (files over 2 GB); the bytes stay on disk.
            if off + size > self.size:
                raise self.fail(step, f"offset {off} + size {size} is past the end of the {self.size}-byte file")
            return size
        return 0

    def _signature(self, pos: int, i: int, n_sg: int) -> Signature:
        step = f"signature_defs[{i}]"
        self.step = step
        t = self.f.table(step, pos)
        sgi = t.scalar(12, _U32, 0)
        if not 0 <= sgi < n_sg:
            raise self.fail("signature_defs", f"signature refers to subgraph {sgi}; the model has {n_sg}")
        maps = []
        for voff, what in ((4, "inputs"), (6, "outputs")):
            d = {}
            for j, mp in enumerate(self._table_vector(t, voff, f"{step} {what}")):
                tm = self.f.table(f"{step} {what}[{j}]", int(mp))
                d[tm.string(4)] = int(tm.scalar(6, _U32, 0))
            maps.append(d)
        t.step = step
        return Signature(t.string(8), sgi, maps[0], maps[1])

    # -- subgraphs ---------------------------------------------------------------------------
    def _subgraph(self, pos: int, index: int, opcodes, buffer_sizes) -> Subgraph:
        where = f"subgraph {index}"
        self.step = where
        sg = self.f.table(where, pos)
        name = sg.string(12)
        tensors = self._tensors(self._table_vector(sg, 4, f"{where} tensors"), where, buffer_sizes)
        n_t = len(tensors)
        sg.step = f"{where} inputs"
        inputs = self._check_idx(f"{where} inputs", sg.ints(6), n_t)
        sg.step = f"{where} outputs"
        outputs = self._check_idx(f"{where} outputs", sg.ints(8), n_t)
        ops = self._operators(self._table_vector(sg, 10, f"{where} operators"), where, opcodes, n_t)
        return Subgraph(index, name, tensors, ops, inputs, outputs)

    def _check_idx(self, step: str, idx: tuple[int, ...], n_t: int) -> tuple[int, ...]:
        for t in idx:
            if t != -1 and not 0 <= t < n_t:
                raise self.fail(step, f"refers to tensor {t}, but the subgraph has {n_t} tensors")
        return idx

    def _tensors(self, pos: np.ndarray, where: str, buffer_sizes: list[int]) -> tuple[Tensor, ...]:
        if len(pos) == 0:
            return ()
        self.step = f"{where} tensors"
        t = self.f.tables(lambda i: f"{where} tensor {i}", pos)
        shapes = t.int_vectors(4, f"{where} tensor shapes")
        types = t.scalar(6, "i1", 0).tolist()
        bufs = t.scalar(8, "<u4", 0)
        n_buf = len(buffer_sizes)
        bad = bufs >= max(n_buf, 1)
        if bad.any():
            i = int(np.argmax(bad))
            raise self.fail(f"{where} tensor {i}", f"buffer index {int(bufs[i])} out of range "
                                                   f"(the model has {n_buf} buffers)")
        names = t.strings(10, f"{where} tensor names")
        variable = (t.scalar(14, "u1", 0) != 0).tolist()
        sigs = t.int_vectors(18, f"{where} tensor shape signatures")
        type_names, bits, unsized = dtypes.TYPE_NAMES, dtypes.BITS, dtypes.UNSIZED
        limit = dtypes.MAX_TENSOR_BYTES
        sized: dict[tuple[str, tuple[int, ...]], int] = {}
        out = []
        new = object.__new__
        for i, (shape, sig, code, b, name, var) in enumerate(zip(shapes, sigs, types, bufs.tolist(), names, variable)):
            sig = sig or shape
            dtype = type_names.get(code) or f"type{code}"
            flags = _DTYPE_FLAGS.get(dtype, _NO_FLAGS)
            if (sig and min(sig) < 0) or (shape and min(shape) < 0):
                flags = flags | _DYNAMIC
            if dtype in bits or dtype in unsized:
                nbytes = sized.get((dtype, shape))
                if nbytes is None:
                    nbytes = sized[dtype, shape] = dtypes.nbytes(dtype, shape)
                if nbytes > limit:
                    raise self.fail(f"{where} tensor {i}",
                                    f"{_short(name)!r} of shape {list(shape)} {dtype} would take {nbytes:,} B, "
                                    f"beyond what any device can hold (more than 2^53 B)")
            else:
                flags = flags | {FLAG_UNKNOWN_DTYPE}
                nbytes = 0
            # Tensor(...) field by field, without the frozen dataclass's per-field __setattr__.
            rec = new(Tensor)
            rec.__dict__.update(index=i, name=name, shape=shape, shape_signature=sig, dtype=dtype,
                                nbytes=nbytes, buffer=b, is_constant=0 < b < n_buf and buffer_sizes[b] > 0,
                                is_variable=var, flags=flags)
            out.append(rec)
        return tuple(out)

    def _operators(self, pos: np.ndarray, where: str, opcodes, n_t: int) -> tuple[Operator, ...]:
        if len(pos) == 0:
            return ()
        self.step = f"{where} operators"
        t = self.f.tables(lambda i: f"{where} operator {i}", pos)
        oidx = t.scalar(4, "<u4", 0)
        bad = oidx >= len(opcodes)
        if bad.any():
            i = int(np.argmax(bad))
            raise self.fail(f"{where} operator {i}", f"opcode index {int(oidx[i])} out of range "
                                                     f"(the model has {len(opcodes)} operator codes)")
        lists = {}
        for voff, what in ((6, "inputs"), (8, "outputs"), (20, "intermediates")):
            vecs = t.int_vectors(voff, f"{where} operator {what}")
            for i, v in enumerate(vecs):
                if v and (min(v) < -1 or max(v) >= n_t):
                    self._check_idx(f"{where} operator {i} {what}", v, n_t)
            lists[what] = vecs
        options = self._options(t, where)
        out = []
        new = object.__new__
        for i, (oi, ins, outs, inter, (opts, opts_type)) in enumerate(
                zip(oidx.tolist(), lists["inputs"], lists["outputs"], lists["intermediates"], options)):
            code, op_name, custom, version = opcodes[oi]
            rec = new(Operator)  # Operator(...) without the per-field __setattr__
            rec.__dict__.update(index=i, op_name=op_name, builtin_code=code, custom_code=custom,
                                version=version, inputs=ins, outputs=outs, intermediates=inter,
                                options=opts, options_type=opts_type)
            out.append(rec)
        return tuple(out)

    # -- builtin options ---------------------------------------------------------------------
    def _options(self, t, where: str) -> list[tuple[dict[str, Any], str]]:
        """(options dict, table name) of every operator; one decode per distinct table.

        Operators are grouped by options type and each field is read for the whole group with
        one numpy gather; operators pointing at one table (however many) share one dict.
        """
        f = self.f
        n = len(t.pos)
        out: list[tuple[dict[str, Any], str]] = [({}, "")] * n
        pending = np.ones(n, dtype=bool)
        for union, type_off, value_off, names in ((1, 10, 12, OPTIONS_NAMES), (2, 26, 28, OPTIONS2_NAMES)):
            types = t.scalar(type_off, "u1", 0)
            fpos = t.field(value_off)
            have = np.nonzero(pending & (types > 0) & (fpos > 0))[0]
            if len(have) == 0:
                continue
            pending[have] = False
            at = fpos[have]
            tpos = at + f.read_u32(lambda i: f"{where} operator {int(have[i])} options", at)
            ty = types[have]
            for code in unique(ty).tolist():
                sel = ty == code
                ops, tabs = have[sel], tpos[sel]
                uniq, inverse = unique(tabs, return_inverse=True)
                decoded = self._decode_group(union, code, names, uniq, ops, inverse, where)
                for i, k in zip(ops.tolist(), inverse.tolist()):
                    out[i] = decoded[k]
        return out

    def _decode_group(self, union: int, code: int, names, tabs: np.ndarray, ops: np.ndarray,
                      inverse: np.ndarray, where: str) -> list[tuple[dict[str, Any], str]]:
        """Decode the distinct options tables ``tabs`` (all of type ``code``) at once."""
        name = names.get(code)
        if name is None:
            return [({}, "")] * len(tabs)
        first_op = np.zeros(len(tabs), dtype=np.int64)
        first_op[inverse[::-1]] = ops[::-1]  # the first operator using each table, for errors
        fields = layout(name)
        if fields is None:  # not a layout this module can read: LiteRT's object API
            out = []
            for tp, op in zip(tabs.tolist(), first_op.tolist()):
                self.step = f"{where} operator {op} options"
                out.append((self._object_api_options(union, code, tp), name))
            return out
        step = lambda i: f"{where} operator {int(first_op[i])} options"  # noqa: E731
        tt = self.f.tables(step, tabs)
        columns = []
        for fl in fields:
            if fl.kind == KIND_SCALAR:
                columns.append(tt.scalar_any(fl.voffset, fl.fmt, fl.default))
            elif fl.kind == KIND_STRING:
                columns.append(tt.strings(fl.voffset, f"{where} options {fl.key}", absent=fl.default))
            else:
                columns.append(tt.scalar_vectors(fl.voffset, fl.fmt, fl.size,
                                                 lambda i, k=fl.key: f"{step(i)} {k}", absent=fl.default))
        keys = [fl.key for fl in fields]
        return [(dict(zip(keys, row)), name) for row in zip(*columns)] if fields else [({}, name)] * len(tabs)

    def _object_api_options(self, union: int, ty: int, tpos: int) -> dict[str, Any]:
        """Fallback for an options table :func:`layout` cannot read (none today): whole file."""
        import flatbuffers

        f = self.f
        f.charge(self.step, self.size // 4)
        f.ensure(0, self.size)
        table = flatbuffers.table.Table(f.mem, tpos)
        creator = S.BuiltinOptionsCreator if union == 1 else S.BuiltinOptions2Creator
        obj = creator(ty, table)
        return _plain(obj) if obj is not None else {}


_WINDOW = 64


def _window_u32(win: np.ndarray, avail: np.ndarray, rel: np.ndarray, want: np.ndarray):
    """uint32 at offset ``rel`` of each row of ``win`` where ``want`` and it lies in the row."""
    ok = want & (rel >= 0) & (rel + 4 <= avail)
    out = np.zeros(len(rel), dtype=np.int64)
    r = np.nonzero(ok)[0]
    if len(r):
        out[r] = win[r[:, None], rel[r][:, None] + np.arange(4)].copy().view("<u4")[:, 0]
    return out, ok


def _plain(v: Any) -> Any:
    """An object-API value as plain Python (tuples, str, dicts with snake_case keys)."""
    from viewer.model._options import _snake

    if isinstance(v, np.ndarray):
        return tuple(v.tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if hasattr(v, "__dict__") and not isinstance(v, type):
        return {_snake(k): _plain(x) for k, x in vars(v).items()}
    return v
