"""The child's ``measure`` mode: a real inference process's memory, the harness kept out of it.

Run as ``python -m viewer.runtime._child measure MODEL --runs N --resolver builtin|default``.
Order (each snapshot reads ``/proc/self/status`` and ``/proc/self/smaps_rollup``):

1. import numpy and LiteRT: snapshot ``baseline`` (what any Python process running LiteRT pays);
2. the harness's own work: read the model's input shapes from the file and make the random
   inputs of every run (at most two sets, alternated; made in small chunks without
   numpy.random, so the allocator's state is as a process's that only loads LiteRT); give the
   heap's free pages back (``malloc_trim``, also before the baseline): snapshot
   ``before_interpreter``;
3. build the interpreter, ``allocate_tensors()``, then ``runs`` times: set the inputs (a copy into
   the arena) and ``invoke()``: the final snapshot.

So ``after - before_interpreter`` is what the interpreter of this model adds (arena pages touched,
persistent tensors, interpreter and kernel state); ``before_interpreter - baseline`` is the
harness's (its inputs), measured in the same process and left out of the former.
An input whose shape the interpreter changed at allocation (rare) is made after the snapshot;
``late_inputs`` counts them (their bytes are then in the model's figure).
"""

from __future__ import annotations

import time

#: Distinct random input sets made before the interpreter (run k uses set k % POOL).
POOL = 2


#: Elements filled per step: every temporary stays below glibc's mmap threshold (128 KiB), so
#: making the inputs moves no allocator threshold and leaves no large freed block behind.
_CHUNK = 4096
_KNUTH = 2654435761  # Knuth's multiplicative hash constant (2^32 / golden ratio)


def _values(shape, dtype, seed: int):
    """Pseudo-random values for one input of ``shape`` and numpy ``dtype``, or None for types
    that take none (strings, resources).

    Made without :mod:`numpy.random` (creating a Generator alone changes how much the
    interpreter made after it appears to add, by ~0.3 MB on mobilenet_v2_224_int8) and in
    chunks of :data:`_CHUNK` elements: a multiplicative hash of the element index and ``seed``
    gives full-range 8/16-bit integers, floats uniform in [-2, 2), and 0/1 for booleans and
    wider integers (often indices), as the probe's synthetic inputs do.
    """
    import numpy as np

    dt = np.dtype(dtype)
    if dt.kind not in "fiub":
        return None
    out = np.empty(tuple(int(s) for s in shape), dt)
    flat = out.reshape(-1)
    salt = np.uint32((seed * 0x9E3779B9 + 0x7F4A7C15) & 0xFFFFFFFF)
    for start in range(0, flat.size, _CHUNK):
        h = np.arange(start, min(start + _CHUNK, flat.size), dtype=np.uint32)
        h ^= salt
        h *= np.uint32(_KNUTH)
        if dt.kind == "f":
            flat[start:start + h.size] = (h >> 8) * (4.0 / (1 << 24)) - 2.0
        elif dt.kind in "iu" and dt.itemsize <= 2:
            flat[start:start + h.size] = (h >> (32 - 8 * dt.itemsize)).astype(
                np.uint8 if dt.itemsize == 1 else np.uint16).view(dt)
        else:
            flat[start:start + h.size] = h >> 31
    return out


#: TensorType (tflite/schema/schema.fbs) -> numpy dtype name, for the types inputs are made in.
_TENSOR_TYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
                 7: "int16", 9: "int8", 10: "float64", 12: "uint64", 15: "uint32", 16: "uint16"}
#: Inputs and dimensions beyond these are not read (a hostile file): those inputs are made late.
_MAX_INPUTS, _MAX_RANK = 4096, 64


def _input_specs(path: str) -> list[tuple[int, tuple[int, ...], str]]:
    """(tensor index, stored shape, numpy type name) of subgraph 0's inputs.

    Read with :mod:`struct` from a read-only mapping of the file (Model.subgraphs[0].inputs,
    then each Tensor's shape and type, schema.fbs field order): no flatbuffer module is
    imported, since LiteRT's generated schema alone takes 4 MB of anonymous memory, which would
    be the harness's. [] when the file cannot be read so; types not in the table get "" (the
    interpreter's own inputs are then made late).
    """
    import mmap
    import struct

    def u32(b, o):
        return struct.unpack_from("<I", b, o)[0]

    def field(b, table, k):  # absolute position of field k of the table at ``table``, or None
        vt = table - struct.unpack_from("<i", b, table)[0]
        if 4 + 2 * k >= struct.unpack_from("<H", b, vt)[0]:
            return None
        off = struct.unpack_from("<H", b, vt + 4 + 2 * k)[0]
        return table + off if off else None

    def vector(b, pos):  # (first element's position, length) of the vector at ``pos``
        start = pos + u32(b, pos)
        return start + 4, u32(b, start)

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as b:
            subgraphs, n = vector(b, field(b, u32(b, 0), 2))
            sg = subgraphs + u32(b, subgraphs)
            tensors, n_tensors = vector(b, field(b, sg, 0))
            inputs, n_inputs = vector(b, field(b, sg, 1))
            if n < 1 or n_inputs > _MAX_INPUTS:
                return []
            out = []
            for k in range(n_inputs):
                i = struct.unpack_from("<i", b, inputs + 4 * k)[0]
                if not 0 <= i < n_tensors:
                    continue
                t = tensors + 4 * i + u32(b, tensors + 4 * i)
                pos, typ = field(b, t, 0), field(b, t, 1)
                dims, rank = vector(b, pos) if pos is not None else (0, 0)
                if rank > _MAX_RANK:
                    continue
                shape = struct.unpack_from(f"<{rank}i", b, dims) if rank else ()
                code = struct.unpack_from("<b", b, typ)[0] if typ is not None else 0
                out.append((i, tuple(shape), _TENSOR_TYPES.get(code, "")))
            return out
    except (OSError, ValueError, TypeError, struct.error):
        return []


def _input_pool(path: str, runs: int) -> list[dict]:
    """``min(runs, POOL)`` sets {tensor index: array} for subgraph 0's inputs, at the file's
    stored shapes and types."""
    import numpy as np

    wanted = []
    for i, shape, name in _input_specs(path):
        if name:
            wanted.append((i, shape, np.dtype(name)))
    return [{i: _values(shape, dt, k) for i, shape, dt in wanted}
            for k in range(min(max(runs, 1), POOL))]


def _set_inputs(interp, arrays: dict, details: list[dict], late: list[int]) -> None:
    """Copy ``arrays`` into the interpreter's inputs; an input the file's shape does not fit
    gets values made now (its index is added to ``late`` once)."""
    import numpy as np

    for d in details:
        a = arrays.get(int(d["index"]))
        want = tuple(int(s) for s in d["shape"])
        if a is None or a.shape != want or a.dtype != np.dtype(d["dtype"]):
            if int(d["index"]) not in late:
                late.append(int(d["index"]))
            a = _values(want, d["dtype"], len(late))
            if a is None:
                continue
        interp.set_tensor(d["index"], a)


def _trim() -> bool:
    """Give the heap's free pages back to the kernel (glibc ``malloc_trim(0)``, which also
    releases free pages inside the heap): the interpreter built next then touches fresh pages
    for what it allocates, instead of reusing pages freed earlier and already counted, which hid
    ~0.6 MB of mobilenet_v2_224_int8's interpreter. False where there is no glibc."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):  # no glibc (musl, macOS; Windows: no CDLL(None))
        return False
    return True


def _sizes(status: dict, roll: dict, linux: bool) -> dict:
    def g(d, k):
        return d.get(k) if linux else None

    return {"vmhwm_bytes": g(status, "VmHWM"), "rss_bytes": g(roll, "Rss"),
            "pss_anon_bytes": g(roll, "Pss_Anon"), "pss_file_bytes": g(roll, "Pss_File"),
            "anonymous_bytes": g(roll, "Anonymous")}


def measure(path: str, runs: int, resolver: str, *, hook, make_interpreter, litert_version) -> dict:
    """Measure ``runs`` invocations of ``path`` in this process (see the module docstring).

    Returns
    -------
    dict
        The JSON answer: ``vmhwm_bytes``, ``rss_bytes``, ``pss_anon_bytes``, ``pss_file_bytes``,
        ``anonymous_bytes`` at the end; ``baseline`` and ``before_interpreter`` (the same sizes at
        those snapshots); ``model_mapping_rss_bytes``; page faults and seconds per phase;
        ``late_inputs``; ``heap_trimmed`` (False: no glibc, free heap pages may hide some of
        the interpreter's allocations). Sizes in bytes, None off Linux.

    ``hook(stage)`` is called at "loaded", "allocated" and "measured" (the child's test hooks);
    ``make_interpreter(path, resolver)`` and ``litert_version()`` are the child's own
    (:mod:`viewer.runtime._child`), so interpreters are built as the probe builds them.
    """
    import numpy  # noqa: F401  (imported before the baseline, like the runtime itself)
    from ai_edge_litert import interpreter  # noqa: F401

    from viewer.runtime._child_proc import _delta, _faults, _mapping_rss, _smaps_rollup, _status

    _faults()  # imports resource before the baseline
    trimmed = _trim()
    base_status, base_roll = _status(), _smaps_rollup()
    pool = _input_pool(path, runs)
    late: list[int] = []
    _trim()
    pre_status, pre_roll = _status(), _smaps_rollup()
    f0 = _faults()
    t0 = time.perf_counter()
    interp = make_interpreter(path, resolver)
    hook("loaded")
    interp.allocate_tensors()
    hook("allocated")
    hook("measured")
    details = interp.get_input_details()
    f1 = _faults()
    t1 = time.perf_counter()
    after_alloc = _status()
    _set_inputs(interp, pool[0], details, late)
    interp.invoke()
    f2 = _faults()
    t2 = time.perf_counter()
    for k in range(1, max(runs, 1)):
        _set_inputs(interp, pool[k % len(pool)], details, late)
        interp.invoke()
    f3 = _faults()
    t3 = time.perf_counter()
    status, roll = _status(), _smaps_rollup()
    linux = bool(status) and bool(roll)
    return {
        "ok": True,
        "resolver": resolver,
        "runs": runs,
        **_sizes(status, roll, linux),
        "model_mapping_rss_bytes": _mapping_rss(path) if linux else None,
        "baseline": _sizes(base_status, base_roll, linux),
        "before_interpreter": _sizes(pre_status, pre_roll, linux),
        "late_inputs": late,
        "heap_trimmed": trimmed,
        "after_allocate_rss_bytes": after_alloc.get("VmRSS") if linux else None,
        "minor_faults_load": _delta(f0, f1, 0),
        "major_faults_load": _delta(f0, f1, 1),
        "minor_faults_first_run": _delta(f1, f2, 0),
        "major_faults_first_run": _delta(f1, f2, 1),
        "minor_faults_later_runs": _delta(f2, f3, 0) if runs > 1 else None,
        "major_faults_later_runs": _delta(f2, f3, 1) if runs > 1 else None,
        "seconds_load": t1 - t0,
        "seconds_first_run": t2 - t1,
        "seconds_later_runs": t3 - t2 if runs > 1 else None,
        "litert_version": litert_version(),
    }
