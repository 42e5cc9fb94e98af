"""Bounds-checked, vectorised reads of flatbuffer tables and vectors, page by page from a file.

The file is not mapped: mapping it makes the kernel map up to 64 KiB of page cache around every
page the reader touches (fault-around), and a .tflite file interleaves its small ``Buffer``
tables with the weights, so the process's RSS grew by most of the file. Instead the pages the
reader needs are read with ``os.preadv`` into an anonymous private map of the file's size (pages
never written stay unallocated: reading them gives zeros and costs nothing), so positions stay
the file's own and memory is the metadata actually read. :meth:`FlatFile.peek` reads a few bytes
without keeping their page (the ``Buffer`` tables between the weights).

Every position is checked against the file before it is read, and every vector element and
string byte decoded is charged against one budget proportional to the file size
(:meth:`FlatFile.charge`), shared or not, so a hostile file that points many tables at one huge
vector or string is refused in time linear in its size.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Callable

import numpy as np

PAGE = 4096
#: Up to this many tables are read with plain struct calls (:class:`SmallTables`).
SMALL_TABLES = 32
#: Files up to this size are read whole at once (one pread; cheaper than paging).
SMALL_FILE = 256 * 1024
#: :meth:`FlatFile.windows` reads windows at most this far apart with one pread ...
WINDOW_GAP = 4096
#: ... of at most this many bytes.
WINDOW_SPAN = 32 * 1024
_AR4 = np.arange(4, dtype=np.int64)
_AR2 = np.arange(2, dtype=np.int64)
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")

Fail = Callable[[str, str], Exception]


def unique(a: np.ndarray, return_inverse: bool = False):
    """``np.unique(a[, return_inverse=True])`` for a 1-d integer array, without numpy 2's first
    call importing ``numpy.ma`` (~7 ms on the first model opened; issue 14's first-call cost)."""
    a = np.asarray(a).ravel()
    order = np.argsort(a, kind="stable")
    s = a[order]
    keep = np.empty(len(s), bool)
    if len(s):
        keep[0] = True
        np.not_equal(s[1:], s[:-1], out=keep[1:])
    uniq = s[keep]
    if not return_inverse:
        return uniq
    inverse = np.empty(len(a), dtype=np.intp)
    inverse[order] = np.cumsum(keep) - 1
    return uniq, inverse


class FlatFile:
    """The file's bytes, fetched on demand; see the module docstring.

    Parameters
    ----------
    fd : int
        An open file descriptor (the caller closes it).
    size : int
        The file's size in bytes (>= 8).
    fail : callable
        ``fail(step, reason)`` -> the exception to raise (a ModelFormatError naming the file).
    budget : int
        Vector elements plus string bytes that may be decoded in total.
    """

    def __init__(self, fd: int, size: int, fail: Fail, budget: int):
        self.fd = fd
        self.size = size
        self.fail = fail
        self.budget = budget
        self.mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
        self.u8 = np.frombuffer(self.mem, dtype=np.uint8)
        self._loaded = bytearray((size + PAGE - 1) // PAGE)
        self._loaded_np = np.frombuffer(self._loaded, dtype=np.uint8)
        self.full = False  # every page loaded: ensure() has nothing to do
        self.span = (0, 0)  # a loaded run of pages [lo, hi): ensure() inside it is two comparisons
        if size <= SMALL_FILE:
            self._load_run(0, len(self._loaded) - 1)
            self.full = True

    # -- budget and bounds ------------------------------------------------------------------
    def charge(self, step: str, n: int) -> None:
        """Spend ``n`` units (vector elements or string bytes) of the decode budget."""
        self.budget -= n
        if self.budget < 0:
            raise self.fail(step, "more vector elements than the file can hold (string bytes "
                                  "counted too; tables sharing one vector or string?); not a well-formed model")

    def check(self, step: str, lo: int, hi: int) -> None:
        """Raise unless ``[lo, hi)`` lies inside the file."""
        if lo < 0 or hi > self.size or lo > hi:
            raise self.fail(step, f"bytes [{lo}, {hi}) are outside the {self.size}-byte file")

    def check_many(self, step: Callable[[int], str], lo: np.ndarray, hi: np.ndarray) -> None:
        """Vectorised :meth:`check`; ``step(i)`` names the i-th item in the error."""
        if len(lo) == 0 or (lo.min() >= 0 and hi.max() <= self.size and (hi >= lo).all()):
            return
        bad = (lo < 0) | (hi > self.size) | (lo > hi)
        if bad.any():
            i = int(np.argmax(bad))
            raise self.fail(step(i), f"bytes [{int(lo[i])}, {int(hi[i])}) are outside the {self.size}-byte file")

    # -- paging -----------------------------------------------------------------------------
    def _load_run(self, p0: int, p1: int) -> None:
        a, b = p0 * PAGE, min((p1 + 1) * PAGE, self.size)
        got = os.preadv(self.fd, [memoryview(self.mem)[a:b]], a)
        if got != b - a:
            raise self.fail("read", f"short read at byte {a} (the file changed while it was read?)")
        self._loaded[p0:p1 + 1] = b"\1" * (p1 + 1 - p0)
        if p0 == 0 and p1 == len(self._loaded) - 1:
            self.full = True

    def ensure(self, lo: int, hi: int) -> None:
        """Make bytes ``[lo, hi)`` (already bounds-checked) readable in :attr:`mem`."""
        if hi <= lo or self.full or (self.span[0] <= lo and hi <= self.span[1]):
            return
        p0, p1 = lo // PAGE, (hi - 1) // PAGE
        ld = self._loaded
        if ld[p0] and ld[p1] and (p1 - p0 < 2 or all(ld[p0:p1 + 1])):
            return
        run = None
        for p in range(p0, p1 + 1):
            if not ld[p]:
                if run is None:
                    run = p
            elif run is not None:
                self._load_run(run, p - 1)
                run = None
        if run is not None:
            self._load_run(run, p1)

    def ensure_many(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """Vectorised :meth:`ensure` over ranges ``[lo[i], hi[i])``."""
        if self.full or len(lo) == 0:
            return
        if self.span[1] and self.span[0] <= lo.min() and hi.max() <= self.span[1]:
            return
        keep = hi > lo
        if not keep.all():
            lo, hi = lo[keep], hi[keep]
            if len(lo) == 0:
                return
        p0, p1 = lo // PAGE, (hi - 1) // PAGE
        ld = self._loaded_np
        long = (p1 - p0) > 1
        if not long.any():
            if ld[p0].all() and ld[p1].all():
                return
            pages = np.concatenate([p0, p1])
        else:
            pages = np.concatenate([p0, p1] + [np.arange(a, b + 1) for a, b in zip(p0[long], p1[long])])
        pages = pages[ld[pages] == 0]
        missing = unique(pages)
        if len(missing) == 0:
            return
        cuts = np.nonzero(np.diff(missing) != 1)[0] + 1
        for run in np.split(missing, cuts):
            self._load_run(int(run[0]), int(run[-1]))

    def ensure_span(self, lo: int, hi: int) -> None:
        """Load pages ``[lo, hi)`` (clipped to the file) at once and remember them as the span.

        For the region a vector of tables sits in (a subgraph's tensors and operators, their
        names and shapes): one read, and every later check inside it is two comparisons.
        """
        lo, hi = max(lo, 0), min(hi, self.size)
        if hi <= lo or self.full:
            return
        self.ensure(lo, hi)
        a, b = (lo // PAGE) * PAGE, min(((hi - 1) // PAGE + 1) * PAGE, self.size)
        s0, s1 = self.span
        if s1 and a <= s1 and s0 <= b:  # overlapping or touching: one span
            a, b = min(a, s0), max(b, s1)
        elif s1 - s0 > b - a:
            return
        self.span = (a, b)

    def peek(self, step: str, pos: int, n: int) -> bytes:
        """``n`` bytes at ``pos`` (bounds-checked), without keeping their page when not loaded."""
        self.check(step, pos, pos + n)
        if self._loaded[pos // PAGE] and self._loaded[(pos + n - 1) // PAGE]:
            return self.mem[pos:pos + n]
        got = os.pread(self.fd, n, pos)
        if len(got) != n:
            raise self.fail("read", f"short read at byte {pos} (the file changed while it was read?)")
        return got

    def window(self, pos: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``pos`` (``0 <= pos < size``), zero-padded to ``n``; page not kept."""
        if not 0 <= pos < self.size:
            return bytes(n)
        m = min(n, self.size - pos)
        if self.full or (self._loaded[pos // PAGE] and self._loaded[(pos + m - 1) // PAGE]):
            got = self.mem[pos:pos + m]
        else:
            got = os.pread(self.fd, m, pos)
        return got + bytes(n - len(got)) if len(got) < n else got

    def windows(self, positions: list[int], n: int) -> bytes:
        """:meth:`window` of every position, concatenated (``len(positions) * n`` bytes).

        Windows less than :data:`WINDOW_GAP` bytes apart are read with one ``pread`` of at
        most :data:`WINDOW_SPAN` bytes that is not kept (the Buffer tables of a model often sit
        side by side: one system call instead of hundreds), so memory stays the span read."""
        if self.full or len(positions) < 2:
            return b"".join(self.window(p, n) for p in positions)
        order = sorted(range(len(positions)), key=positions.__getitem__)
        got: list[bytes] = [b""] * len(positions)
        k = 0
        while k < len(order):
            lo = positions[order[k]]
            if not 0 <= lo < self.size:
                got[order[k]] = self.window(lo, n)
                k += 1
                continue
            j = k + 1
            while (j < len(order) and positions[order[j]] - positions[order[j - 1]] <= WINDOW_GAP
                   and positions[order[j]] + n - lo <= WINDOW_SPAN):
                j += 1
            if j == k + 1:
                got[order[k]] = self.window(lo, n)
                k = j
                continue
            hi = min(positions[order[j - 1]] + n, self.size)
            span = os.pread(self.fd, hi - lo, lo)
            if len(span) != hi - lo:
                raise self.fail("read", f"short read at byte {lo} (the file changed while it was read?)")
            for i in order[k:j]:
                w = span[positions[i] - lo:positions[i] - lo + n]
                got[i] = w + bytes(n - len(w)) if len(w) < n else w
            k = j
        return b"".join(got)

    # -- scalars ----------------------------------------------------------------------------
    def u32(self, step: str, pos: int) -> int:
        self.check(step, pos, pos + 4)
        self.ensure(pos, pos + 4)
        return _U32.unpack_from(self.mem, pos)[0]

    def unpack(self, step: str, st: struct.Struct, pos: int):
        self.check(step, pos, pos + st.size)
        self.ensure(pos, pos + st.size)
        return st.unpack_from(self.mem, pos)[0]

    # -- vectorised gathers (positions already checked and ensured) -------------------------
    def gather_u32(self, pos: np.ndarray) -> np.ndarray:
        return self.u8[pos[:, None] + _AR4].view("<u4").reshape(-1).astype(np.int64)

    def gather_i32(self, pos: np.ndarray) -> np.ndarray:
        return self.u8[pos[:, None] + _AR4].view("<i4").reshape(-1).astype(np.int64)

    def gather_u16(self, pos: np.ndarray) -> np.ndarray:
        return self.u8[pos[:, None] + _AR2].view("<u2").reshape(-1).astype(np.int64)

    def read_u32(self, step: Callable[[int], str], pos: np.ndarray) -> np.ndarray:
        """uint32 at each position, bounds-checked and fetched."""
        self.check_many(step, pos, pos + 4)
        self.ensure_many(pos, pos + 4)
        return self.gather_u32(pos)

    # -- tables -----------------------------------------------------------------------------
    def table(self, step: str, pos: int) -> "Table":
        """One table at ``pos``."""
        return Table(self, step, pos)

    def tables(self, step: Callable[[int], str], pos: np.ndarray) -> "Tables | SmallTables":
        """Many tables at once (e.g. a subgraph's tensors): :class:`Tables`, or for a few of
        them :class:`SmallTables` (the same answers, without numpy's per-call cost)."""
        return SmallTables(self, step, pos) if len(pos) <= SMALL_TABLES else Tables(self, step, pos)

    def vector_of_tables(self, step: str, vpos: int, n: int) -> np.ndarray:
        """Positions of the ``n`` tables a vector of offsets at ``vpos`` points to."""
        self.charge(step, n)
        self.check(step, vpos + 4, vpos + 4 + 4 * n)
        self.ensure(vpos + 4, vpos + 4 + 4 * n)
        slots = vpos + 4 + 4 * np.arange(n, dtype=np.int64)
        return slots + np.frombuffer(self.mem, dtype="<u4", count=n, offset=vpos + 4).astype(np.int64)


class Table:
    """One flatbuffer table; fields are read by vtable offset (4, 6, 8, ...)."""

    __slots__ = ("f", "step", "pos", "vt", "vtlen")

    def __init__(self, f: FlatFile, step: str, pos: int):
        self.f, self.step, self.pos = f, step, pos
        self.vt = pos - f.unpack(step, _I32, pos)
        self.vtlen = f.unpack(step, _U16, self.vt)

    def field(self, voffset: int) -> int:
        """Position of the field at ``voffset``, or 0 when absent."""
        if voffset + 2 > self.vtlen:
            return 0
        off = self.f.unpack(self.step, _U16, self.vt + voffset)
        return self.pos + off if off else 0

    def scalar(self, voffset: int, st: struct.Struct, default=0):
        p = self.field(voffset)
        return self.f.unpack(self.step, st, p) if p else default

    def vector(self, voffset: int) -> tuple[int, int]:
        """(position of the length word, length) of a vector field; (0, 0) when absent."""
        p = self.field(voffset)
        if not p:
            return 0, 0
        v = p + self.f.u32(self.step, p)
        return v, self.f.u32(self.step, v)

    def string(self, voffset: int) -> str:
        v, n = self.vector(voffset)
        if not v:
            return ""
        f = self.f
        f.charge(self.step, n)
        f.check(self.step, v + 4, v + 4 + n)
        f.ensure(v + 4, v + 4 + n)
        return f.mem[v + 4:v + 4 + n].decode("utf-8", errors="replace")

    def ints(self, voffset: int) -> tuple[int, ...]:
        """A vector of int32 as a tuple."""
        v, n = self.vector(voffset)
        if not n:
            return ()
        f = self.f
        f.charge(self.step, n)
        f.check(self.step, v + 4, v + 4 + 4 * n)
        f.ensure(v + 4, v + 4 + 4 * n)
        return struct.unpack_from(f"<{n}i", f.mem, v + 4)


class Tables:
    """Many tables read together: every field access is one numpy gather over all of them."""

    def __init__(self, f: FlatFile, step: Callable[[int], str], pos: np.ndarray):
        self.f, self.step, self.pos = f, step, pos
        f.check_many(step, pos, pos + 4)
        if len(pos) > 16:
            lo, hi = int(pos.min()), int(pos.max()) + PAGE
            if hi - lo <= 256 * len(pos) + (1 << 16):  # compact, as converters write them
                f.ensure_span(lo, hi)
        f.ensure_many(pos, pos + 4)
        self.vt = pos - f.gather_i32(pos)
        f.check_many(step, self.vt, self.vt + 4)
        f.ensure_many(self.vt, self.vt + 4)
        self.vtlen = f.gather_u16(self.vt)

    def field(self, voffset: int) -> np.ndarray:
        """Field positions (0 where absent)."""
        have = self.vtlen >= voffset + 2
        if have.all():
            at = self.vt + voffset
            self.f.ensure_many(at, at + 2)
            off = self.f.gather_u16(at)
            return np.where(off > 0, self.pos + off, 0)
        out = np.zeros(len(self.pos), dtype=np.int64)
        if not have.any():
            return out
        at = self.vt[have] + voffset
        self.f.ensure_many(at, at + 2)
        off = self.f.gather_u16(at)
        out[have] = np.where(off > 0, self.pos[have] + off, 0)
        return out

    def scalar(self, voffset: int, dtype: str, default: int = 0) -> np.ndarray:
        """One scalar field of every table (numpy dtype e.g. ``"<u4"``, ``"i1"``)."""
        p = self.field(voffset)
        out = np.full(len(self.pos), default, dtype=np.int64)
        have = p > 0
        if have.any():
            w = np.dtype(dtype).itemsize
            at = p[have]
            self.f.check_many(lambda i: self.step(int(np.nonzero(have)[0][i])), at, at + w)
            self.f.ensure_many(at, at + w)
            raw = self.f.u8[at[:, None] + np.arange(w)]
            out[have] = raw.view(dtype).reshape(-1)
        return out

    def vectors(self, voffset: int, elem: int, name: Callable[[int], str] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """(element start, length) of a vector field in every table; length 0 where absent.

        Both ends of every vector are checked against the file; ``name(i)`` names table ``i``
        in an error (default: the tables' step).
        """
        p = self.field(voffset)
        have = np.nonzero(p > 0)[0]
        start = np.zeros(len(self.pos), dtype=np.int64)
        n = np.zeros(len(self.pos), dtype=np.int64)
        if len(have) == 0:
            return start, n
        f, at = self.f, p[have]
        label = name or self.step
        name = lambda i: label(int(have[i]))  # noqa: E731
        f.check_many(name, at, at + 4)
        f.ensure_many(at, at + 4)
        v = at + f.gather_u32(at)
        f.check_many(name, v, v + 4)
        f.ensure_many(v, v + 4)
        length = f.gather_u32(v)
        f.check_many(name, v + 4, v + 4 + elem * length)
        start[have], n[have] = v + 4, length
        return start, n

    def int_vectors(self, voffset: int, what: str) -> list[tuple[int, ...]]:
        """An int32 vector field of every table, as tuples (charged against the budget)."""
        start, n = self.vectors(voffset, 4)
        total = int(n.sum())
        out: list[tuple[int, ...]] = [()] * len(self.pos)
        if total == 0:
            return out
        f = self.f
        f.charge(what, total)
        have = np.nonzero(n)[0]
        s, k = start[have], n[have]
        f.ensure_many(s, s + 4 * k)
        first = np.cumsum(k) - k
        idx = np.repeat(s - 4 * first, k) + 4 * np.arange(total, dtype=np.int64)
        flat = f.u8[idx[:, None] + _AR4].view("<i4").reshape(-1).tolist()
        for i, a, m in zip(have.tolist(), first.tolist(), k.tolist()):
            out[i] = tuple(flat[a:a + m])
        return out

    def strings(self, voffset: int, what: str, absent=""):
        """A string field of every table (``absent`` where absent; bytes charged to the budget)."""
        start, n = self.vectors(voffset, 1)
        out = [absent] * len(self.pos)
        if absent != "":
            present = self.field(voffset) > 0
            for i in np.nonzero(present & (n == 0))[0].tolist():
                out[i] = ""
        total = int(n.sum())
        if total == 0:
            return out
        f = self.f
        f.charge(what, total)
        have = np.nonzero(n)[0]
        s, e = start[have], start[have] + n[have]
        f.ensure_many(s, e)
        mem = f.mem
        for i, a, b in zip(have.tolist(), s.tolist(), e.tolist()):
            out[i] = mem[a:b].decode("utf-8", errors="replace")
        return out

    def scalar_any(self, voffset: int, fmt: str, default) -> list:
        """A scalar field of any type (struct format ``fmt``, e.g. ``"<f"``) as Python values."""
        p = self.field(voffset)
        out = [default] * len(self.pos)
        have = np.nonzero(p > 0)[0]
        if len(have) == 0:
            return out
        dt = np.dtype(_NUMPY_OF[fmt[1:]])
        at = p[have]
        self.f.check_many(lambda i: self.step(int(have[i])), at, at + dt.itemsize)
        self.f.ensure_many(at, at + dt.itemsize)
        vals = self.f.u8[at[:, None] + np.arange(dt.itemsize)].view(dt).reshape(-1).tolist()
        for i, v in zip(have.tolist(), vals):
            out[i] = v
        return out

    def scalar_vectors(self, voffset: int, fmt: str, size: int, step: Callable[[int], str], absent=None) -> list:
        """A vector-of-scalars field of every table, as tuples (``absent`` where absent)."""
        p = self.field(voffset)
        start, n = self.vectors(voffset, size, step)
        out = [absent] * len(self.pos)
        have = np.nonzero(p > 0)[0]
        if len(have) == 0:
            return out
        f = self.f
        total = int(n.sum())
        f.charge(step(int(have[0])), total)
        code = fmt[1:]
        for i in have.tolist():
            k, s0 = int(n[i]), int(start[i])
            if k:
                f.ensure(s0, s0 + k * size)
            out[i] = struct.unpack_from(f"<{k}{code}", f.mem, s0) if k else ()
        return out


#: struct code -> numpy dtype (little-endian), for :meth:`Tables.scalar_any`.
_NUMPY_OF = {"?": "?", "B": "u1", "b": "i1", "H": "<u2", "h": "<i2", "I": "<u4", "i": "<i4",
             "Q": "<u8", "q": "<i8", "f": "<f4", "d": "<f8"}


_STRUCT_OF = {"i1": struct.Struct("<b"), "u1": struct.Struct("<B"), "<u4": struct.Struct("<I"),
              "<i4": struct.Struct("<i"), "<u2": struct.Struct("<H")}


class SmallTables:
    """:class:`Tables` for a few tables: one ``struct`` call per field instead of numpy gathers.

    Same methods, same results, same checks and error steps (tests/model compares both on
    every shared model through :func:`viewer.model.reader.load_model`).
    """

    def __init__(self, f: FlatFile, step: Callable[[int], str], pos: np.ndarray):
        self.f, self.step, self.pos = f, step, pos
        self._p = pos.tolist()
        self._vt = [p - self._u(i, _I32, p) for i, p in enumerate(self._p)]
        # The vtable's first word (checked as 4 bytes, as Tables does): its length in bytes.
        self._vtlen = [self._u(i, _U32, vt) & 0xFFFF for i, vt in enumerate(self._vt)]

    def _u(self, i: int, st: struct.Struct, at: int, label: Callable[[int], str] | None = None):
        f = self.f
        if at < 0 or at + st.size > f.size:
            raise f.fail((label or self.step)(i), f"bytes [{at}, {at + st.size}) are outside the {f.size}-byte file")
        if not f.full:
            f.ensure(at, at + st.size)
        return st.unpack_from(f.mem, at)[0]

    def _field(self, i: int, voffset: int) -> int:
        if voffset + 2 > self._vtlen[i]:
            return 0
        off = self._u(i, _U16, self._vt[i] + voffset)
        return self._p[i] + off if off else 0

    def _vector(self, i: int, voffset: int, elem: int, label=None) -> tuple[int, int]:
        p = self._field(i, voffset)
        if not p:
            return 0, 0
        v = p + self._u(i, _U32, p, label)
        k = self._u(i, _U32, v, label)
        if v + 4 + elem * k > self.f.size:
            raise self.f.fail((label or self.step)(i), f"bytes [{v + 4}, {v + 4 + elem * k}) are outside "
                                                       f"the {self.f.size}-byte file")
        return v + 4, k

    def field(self, voffset: int) -> np.ndarray:
        return np.array([self._field(i, voffset) for i in range(len(self._p))], dtype=np.int64)

    def scalar(self, voffset: int, dtype: str, default: int = 0) -> np.ndarray:
        st = _STRUCT_OF[dtype]
        vals = []
        for i in range(len(self._p)):
            p = self._field(i, voffset)
            vals.append(self._u(i, st, p) if p else default)
        return np.array(vals, dtype=np.int64)

    def vectors(self, voffset: int, elem: int, name=None) -> tuple[np.ndarray, np.ndarray]:
        spans = [self._vector(i, voffset, elem, name) for i in range(len(self._p))]
        return (np.array([a for a, _ in spans], dtype=np.int64).reshape(-1),
                np.array([k for _, k in spans], dtype=np.int64).reshape(-1))

    def _decode(self, spans, what: str, code: str, size: int, empty):
        f = self.f
        total = sum(k for _, k in spans if k)
        if total:
            f.charge(what, total)
        out = []
        for s0, k in spans:
            if s0 is None:
                out.append(empty)
            elif k == 0:
                out.append("" if code == "s" else ())
            else:
                f.ensure(s0, s0 + k * size)
                out.append(f.mem[s0:s0 + k].decode("utf-8", errors="replace") if code == "s"
                           else struct.unpack_from(f"<{k}{code}", f.mem, s0))
        return out

    def _spans(self, voffset: int, elem: int, label=None):
        out = []
        for i in range(len(self._p)):
            if not self._field(i, voffset):
                out.append((None, 0))
            else:
                out.append(self._vector(i, voffset, elem, label))
        return out

    def int_vectors(self, voffset: int, what: str) -> list[tuple[int, ...]]:
        return self._decode(self._spans(voffset, 4), what, "i", 4, ())

    def strings(self, voffset: int, what: str, absent=""):
        return self._decode(self._spans(voffset, 1), what, "s", 1, absent)

    def scalar_any(self, voffset: int, fmt: str, default) -> list:
        st = struct.Struct(fmt)
        out = []
        for i in range(len(self._p)):
            p = self._field(i, voffset)
            out.append(self._u(i, st, p) if p else default)
        return out

    def scalar_vectors(self, voffset: int, fmt: str, size: int, step: Callable[[int], str], absent=None) -> list:
        spans = self._spans(voffset, size, step)
        first = next((i for i, (a, _) in enumerate(spans) if a is not None), 0)
        return self._decode(spans, step(first), fmt[1:], size, absent)
