"""Values of small integer constant tensors (shapes, axes, paddings, sizes).

The reader (:mod:`viewer.model.reader`) never reads weight bytes. Shape inference for what-ifs
(:mod:`viewer.whatif.shapes`) needs a few constant *values* - a RESHAPE's target shape, a PAD's
paddings, a RESIZE's size, a MEAN's axes - so this module reads only integer constants with few
elements, on demand, from the file.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
from ai_edge_litert import schema_py_generated as S

_INT_TYPES = {
    S.TensorType.INT32: "<i4",
    S.TensorType.INT64: "<i8",
    S.TensorType.INT16: "<i2",
    S.TensorType.INT8: "i1",
    S.TensorType.UINT8: "u1",
}


def small_int_constants(path: str | Path, subgraph_index: int, max_elements: int = 4096,
                        tensors=None) -> dict[int, np.ndarray]:
    """Read every integer constant tensor with at most ``max_elements`` elements.

    Parameters
    ----------
    path : str or Path
        The .tflite file the model was read from.
    subgraph_index : int
    max_elements : int
        Larger constants (weights) are skipped.
    tensors : sequence of Tensor, optional
        The subgraph's tensor records as the reader made them from this file
        (``Subgraph.tensors``). Given, the type, shape and buffer index of each tensor are taken
        from them, and the file is opened only for the few candidates' buffers: at 100k tensors
        that is ~0.05 s instead of ~2 s through the generated flatbuffer accessors. The result is
        the same.

    Returns
    -------
    dict
        tensor index -> int64 array of the tensor's shape. Empty when the file cannot be read
        (the caller then treats those values as unknown); never raises for a bad file.
    """
    out: dict[int, np.ndarray] = {}
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            m = S.Model.GetRootAs(mm, 0)
            for i, fmt, shape, buffer in _candidates(m, subgraph_index, tensors):
                n = int(np.prod(shape)) if shape else 1
                if n > max_elements or buffer <= 0:
                    continue
                b = m.Buffers(buffer)
                if b is None:
                    continue
                item = np.dtype(fmt).itemsize
                if b.DataLength():
                    raw = b.DataAsNumpy().tobytes()
                elif b.Offset() > 1 and b.Size() > 0:
                    raw = bytes(mm[b.Offset(): b.Offset() + b.Size()])
                else:
                    continue
                if len(raw) != n * item:
                    continue
                out[i] = np.frombuffer(raw, dtype=fmt).astype(np.int64).reshape(shape)
    except Exception:  # a bad file: the values stay unknown; the reader reports the file itself
        return out
    return out


def _candidates(m, subgraph_index: int, tensors):
    """(index, numpy format, shape, buffer index) of each integer tensor of the subgraph: from
    the reader's records when given, else through the generated accessors."""
    if tensors is not None:
        by_name = _int_formats_by_name()
        for t in tensors:
            fmt = by_name.get(t.dtype)
            if fmt is not None:
                yield t.index, fmt, tuple(t.shape), int(t.buffer)
        return
    sg = m.Subgraphs(subgraph_index)
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        fmt = _INT_TYPES.get(t.Type())
        if fmt is None:
            continue
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        yield i, fmt, shape, t.Buffer()


def _int_formats_by_name() -> dict[str, str]:
    """The reader's dtype name (``"int32"``) -> numpy format, for the types of ``_INT_TYPES``."""
    from viewer.model.dtypes import TYPE_NAMES

    return {TYPE_NAMES[code]: fmt for code, fmt in _INT_TYPES.items() if code in TYPE_NAMES}
