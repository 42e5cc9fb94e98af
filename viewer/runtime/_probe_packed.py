"""The probe's tensors and nodes as packed numpy columns inside its one JSON answer line.

At 100k operators the list-of-objects answer is a 32 MB JSON line: ~0.7 s to write in the
child, ~0.5 s to parse and ~1.5 s to turn into records in the parent. Packed, each field is one
little-endian array (base64 in the JSON line, so the worker's line protocol and its kept answers
are unchanged), strings with few values (dtype, allocation type) a table plus codes, tensor names
one NUL-joined blob, shapes and node lists a length column plus the flat values.

:func:`pack` (child) and :func:`unpack_tensors` / :func:`unpack_nodes` (parent) are exact
inverses over what the child reads (tests/runtime/test_probe_packed.py compares the records
built both ways on the shared models).
"""

from __future__ import annotations

import base64

import numpy as np

#: Key of the packed answer in the child's JSON (``"tensors"`` / ``"nodes"`` are then absent).
KEY = "packed"


def _b64(a: np.ndarray, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode("ascii")


def _arr(s: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=np.dtype(dtype).newbyteorder("<"))


def _codes(values: list) -> dict:
    index: dict = {}
    codes = [index.setdefault(v, len(index)) for v in values]
    return {"table": list(index), "codes": _b64(np.array(codes, dtype=np.int32), "i4")}


def _ragged(lists: list) -> dict:
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter((v for x in lists for v in x), dtype=np.int64, count=int(lengths.sum()))
    return {"lengths": _b64(lengths, "i4"), "values": _b64(flat, "i4")}


def pack(tensors: list[dict], nodes: list[dict]) -> dict:
    """The child's tensor and node records (``_read_tensors`` / ``_read_nodes`` dicts) packed."""
    if any(t["id"] != k for k, t in enumerate(tensors)):
        raise ValueError("tensor records out of index order")
    shapes = [t["shape"] for t in tensors]
    return {
        "n": len(tensors),
        "names": base64.b64encode("\0".join(t["name"] for t in tensors).encode("utf-8")).decode("ascii"),
        "dtype": _codes([t["dtype"] for t in tensors]),
        "allocation": _codes([t["allocation"] for t in tensors]),
        "address": _b64(np.array([t["address"] or 0 for t in tensors], dtype=np.uint64), "u8"),
        "bytes": _b64(np.array([t["bytes"] for t in tensors], dtype=np.uint64), "u8"),
        "is_variable": _b64(np.array([t["is_variable"] for t in tensors], dtype=np.uint8), "u1"),
        "has_shape": _b64(np.array([s is not None for s in shapes], dtype=np.uint8), "u1"),
        "shape": _ragged([s or () for s in shapes]),
        "nodes": {
            "n": len(nodes),
            "index": _b64(np.array([n["index"] for n in nodes], dtype=np.int64), "i4"),
            "builtin_code": _b64(np.array([n["builtin_code"] for n in nodes], dtype=np.int64), "i4"),
            "custom_name": {str(k): n["custom_name"] for k, n in enumerate(nodes) if n["custom_name"]},
            "inplace_operator": _b64(np.array([n["inplace_operator"] for n in nodes], dtype=np.uint64), "u8"),
            "inputs": _ragged([n["inputs"] for n in nodes]),
            "outputs": _ragged([n["outputs"] for n in nodes]),
            "temporaries": _ragged([n["temporaries"] for n in nodes]),
        },
    }


def _unragged(d: dict) -> list[tuple[int, ...]]:
    lengths_a = _arr(d["lengths"], "i4")
    flat_a = _arr(d["values"], "i4")
    if len(lengths_a) and (lengths_a == lengths_a[0]).all():  # one length (ADD: 2 inputs): rows
        k = int(lengths_a[0])
        if k == 0:
            return [()] * len(lengths_a)
        return list(zip(*flat_a.reshape(-1, k).T.tolist()))
    lengths, flat = lengths_a.tolist(), flat_a.tolist()
    out, k = [], 0
    for n in lengths:
        out.append(tuple(flat[k:k + n]))
        k += n
    return out


def unpack_tensors(p: dict) -> dict:
    """The tensor columns: ``names`` (list of str), ``dtype`` and ``allocation`` (lists of str),
    ``address`` and ``bytes`` (uint64 arrays; address 0 = none), ``is_variable`` (bool array),
    ``shape`` (list of tuple or None)."""
    n = int(p["n"])
    names = base64.b64decode(p["names"]).decode("utf-8").split("\0") if n else []
    dtype_t, alloc_t = p["dtype"]["table"], p["allocation"]["table"]
    has = _arr(p["has_shape"], "u1").astype(bool).tolist()
    shapes = [s if h else None for s, h in zip(_unragged(p["shape"]), has)]
    return {
        "n": n, "names": names,
        "dtype": [dtype_t[c] for c in _arr(p["dtype"]["codes"], "i4").tolist()],
        "allocation": [alloc_t[c] for c in _arr(p["allocation"]["codes"], "i4").tolist()],
        "address": _arr(p["address"], "u8"), "bytes": _arr(p["bytes"], "u8"),
        "is_variable": _arr(p["is_variable"], "u1").astype(bool), "shape": shapes,
    }


def unpack_nodes(p: dict) -> list[dict]:
    """The node records as the child read them (dicts with tuples for the tensor lists)."""
    d = p["nodes"]
    index = _arr(d["index"], "i4").tolist()
    codes = _arr(d["builtin_code"], "i4").tolist()
    inplace = _arr(d["inplace_operator"], "u8").tolist()
    custom = {int(k): v for k, v in d["custom_name"].items()}
    ins, outs, temps = _unragged(d["inputs"]), _unragged(d["outputs"]), _unragged(d["temporaries"])
    return [{"index": index[k], "builtin_code": codes[k], "custom_name": custom.get(k),
             "inplace_operator": inplace[k], "inputs": ins[k], "outputs": outs[k],
             "temporaries": temps[k]} for k in range(int(d["n"]))]
