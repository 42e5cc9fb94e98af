"""LiteRT's own C structs read with :mod:`ctypes`, for the runtime child (:mod:`viewer.runtime._child`).

See that module's docstring for why and how: ``TfLiteContext.tensors`` for every tensor, and a
no-op delegate whose ``Prepare`` callback reads the execution plan, the nodes and their
temporaries (tflite/core/c/common.h, tflite/core/subgraph.cc ``SwitchToDelegateContext``).
Offsets are the x86-64 / aarch64 LP64 layout; the child checks them against the Python wrapper.
"""

from __future__ import annotations

import ctypes

import numpy as np


class _LayoutError(RuntimeError):
    """A struct offset does not match what the Python wrapper says: an unsupported LiteRT build."""


# --- LiteRT C structs (x86-64 / aarch64 LP64 layout of tflite/core/c/common.h) -----------------
_VP = ctypes.c_void_p
_TENSOR_SIZE = 112  # sizeof(TfLiteTensor)
_T_TYPE, _T_DATA, _T_DIMS, _T_ALLOC, _T_BYTES, _T_NAME, _T_IS_VARIABLE = 0, 8, 16, 32, 40, 56, 77
_C_TENSORS_SIZE, _C_GET_PLAN, _C_TENSORS, _C_GET_NODE, _C_ACQUIRE, _C_RELEASE = 0, 8, 16, 56, 184, 192
_N_INPUTS, _N_OUTPUTS, _N_TEMPORARIES = 0, 8, 24
# TfLiteRegistration: init, free, prepare, invoke, profiling_string, builtin_code, custom_name,
# version, registration_external, async_kernel, inplace_operator
_R_BUILTIN_CODE, _R_CUSTOM_NAME, _R_INPLACE = 40, 48, 80

ALLOCATION_TYPES = {
    0: "none",  # kTfLiteMemNone
    1: "mmap-ro",  # kTfLiteMmapRo: weights mapped from the file
    2: "arena-rw",  # kTfLiteArenaRw: the tensor arena
    3: "arena-rw-persistent",  # kTfLiteArenaRwPersistent: the separate persistent arena
    4: "dynamic",  # kTfLiteDynamic: malloc'd at run time
    5: "persistent-ro",  # kTfLitePersistentRo: computed once at prepare (heap)
    6: "custom",  # kTfLiteCustom
    7: "variant-object",  # kTfLiteVariantObject
    8: "non-cpu",  # kTfLiteNonCpu
}
# TfLiteType -> numpy-style name (tflite/core/c/c_api_types.h)
TYPES = {
    0: "none", 1: "float32", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool",
    7: "int16", 8: "complex64", 9: "int8", 10: "float16", 11: "float64", 12: "complex128",
    13: "uint64", 14: "resource", 15: "variant", 16: "uint32", 17: "uint16", 18: "int4",
    19: "bfloat16", 20: "int2", 21: "uint4",
}

_GET_PLAN = ctypes.CFUNCTYPE(ctypes.c_int, _VP, ctypes.POINTER(_VP))
_GET_NODE = ctypes.CFUNCTYPE(ctypes.c_int, _VP, ctypes.c_int, ctypes.POINTER(_VP), ctypes.POINTER(_VP))
_ACQUIRE = ctypes.CFUNCTYPE(ctypes.c_int, _VP, ctypes.c_int, ctypes.POINTER(_VP))
_RELEASE = ctypes.CFUNCTYPE(ctypes.c_int, _VP, ctypes.c_int)
_PREPARE = ctypes.CFUNCTYPE(ctypes.c_int, _VP, _VP)


class _Delegate(ctypes.Structure):
    # TfLiteDelegate: data_, Prepare, CopyFromBufferHandle, CopyToBufferHandle,
    # FreeBufferHandle, flags, opaque_delegate_builder
    _fields_ = [
        ("data_", _VP), ("Prepare", _PREPARE), ("CopyFromBufferHandle", _VP),
        ("CopyToBufferHandle", _VP), ("FreeBufferHandle", _VP), ("flags", ctypes.c_int64),
        ("opaque_delegate_builder", _VP),
    ]


_ALLOW_DYNAMIC_TENSORS = 1  # kTfLiteDelegateFlagsAllowDynamicTensors


def _ptr(addr: int) -> int | None:
    return _VP.from_address(addr).value


def _cstr(addr: int | None) -> str | None:
    return ctypes.c_char_p(addr).value.decode("utf-8", "replace") if addr else None


_INT_ARRAYS: dict[int, type] = {}  # c_int * n, made once per length


def _int_array(addr: int | None) -> list[int]:
    if not addr:
        return []
    n = ctypes.c_int.from_address(addr).value
    if n < 0 or n > 1 << 24:
        raise RuntimeError(f"implausible TfLiteIntArray size {n}")
    if n == 0:
        return []
    kind = _INT_ARRAYS.get(n)
    if kind is None:
        kind = _INT_ARRAYS[n] = ctypes.c_int * n
    return kind.from_address(addr + 4)[:]


def _read_tensors(ctx: int, limit: int | None = None) -> list[dict]:
    """Every ``TfLiteTensor`` of the context ``ctx`` (the first ``limit`` when given): the
    struct array copied in one read, its fields taken as numpy columns (100k tensors: ~3
    ctypes calls each instead of ~10)."""
    n = ctypes.c_size_t.from_address(ctx + _C_TENSORS_SIZE).value
    if n > 1 << 26:
        raise RuntimeError(f"implausible TfLiteContext.tensors_size {n}")
    n = n if limit is None else min(n, int(limit))
    if n == 0:
        return []
    raw = np.frombuffer(ctypes.string_at(_ptr(ctx + _C_TENSORS), n * _TENSOR_SIZE),
                        dtype=np.uint8).reshape(n, _TENSOR_SIZE)

    def column(off: int, dtype) -> list:
        width = np.dtype(dtype).itemsize
        return raw[:, off:off + width].copy().view(dtype)[:, 0].tolist()

    types, allocs = column(_T_TYPE, np.intc), column(_T_ALLOC, np.intc)
    data, dims = column(_T_DATA, np.uintp), column(_T_DIMS, np.uintp)
    nbytes, names = column(_T_BYTES, np.uintp), column(_T_NAME, np.uintp)
    variable = raw[:, _T_IS_VARIABLE].tolist()
    out = []
    for i in range(n):
        name = ctypes.string_at(names[i]) if names[i] else b""
        out.append({
            "id": i,
            "name": name.decode("utf-8", "replace"),
            "dtype": TYPES.get(types[i], f"type{types[i]}"),
            "shape": _int_array(dims[i]) if dims[i] else None,
            "bytes": int(nbytes[i]),
            "allocation": ALLOCATION_TYPES.get(allocs[i], "unknown"),
            "address": data[i] or None,
            "is_variable": bool(variable[i]),
        })
    return out


def _pending_arena(ctx: int, n_check: int, allocation: int = 2, need_bytes: bool = True) -> list[int]:
    """Ids (< ``n_check``) of tensors of ``allocation`` type (kTfLiteArenaRw by default) with
    bytes (any, with ``need_bytes`` False) but no data pointer yet, read through a zero-copy
    view of ``TfLiteContext.tensors``: no per-tensor record is made, so the probe's overhead
    measurement (:class:`viewer.runtime._child_overhead.Meter`) sees no harness memory from it
    (the few temporary columns are freed before the next reading)."""
    n = min(ctypes.c_size_t.from_address(ctx + _C_TENSORS_SIZE).value, max(int(n_check), 0))
    if n == 0:
        return []
    raw = np.frombuffer((ctypes.c_char * (n * _TENSOR_SIZE)).from_address(_ptr(ctx + _C_TENSORS)),
                        dtype=np.uint8).reshape(n, _TENSOR_SIZE)
    out: list[int] = []
    for lo in range(0, n, 2048):  # small columns, reused by the allocator chunk after chunk
        rows = raw[lo:lo + 2048]
        alloc = rows[:, _T_ALLOC:_T_ALLOC + 4].copy().view(np.intc)[:, 0]
        data = rows[:, _T_DATA:_T_DATA + 8].copy().view(np.uint64)[:, 0]
        nbytes = rows[:, _T_BYTES:_T_BYTES + 8].copy().view(np.uint64)[:, 0]
        sized = (nbytes > 0) if need_bytes else True
        out.extend((lo + np.flatnonzero((alloc == allocation) & sized & (data == 0))).tolist())
    return out


def _tensor_head(ctx: int, i: int) -> tuple[int, list[int] | None]:
    """(bytes, shape) of tensor ``i`` of ``ctx`` (shape None without dims)."""
    base = _ptr(ctx + _C_TENSORS) + i * _TENSOR_SIZE
    dims = _ptr(base + _T_DIMS)
    return int(ctypes.c_size_t.from_address(base + _T_BYTES).value), (_int_array(dims) if dims else None)


def _tensor_totals(ctx: int) -> dict:
    """The footprint's terms over every tensor of ``ctx``, without a record per tensor (the
    batch-2 probe of ``check``: :func:`viewer.runtime.probe.probe_totals`). Bytes; the same
    rules as :func:`viewer.runtime._probe_json.probe_from_json` (a tensor with no data pointer
    or no bytes has no memory):

    - ``arena_bytes``: max(address + bytes) - min(address) over kTfLiteArenaRw tensors;
    - ``persistent_bytes``: kTfLitePersistentRo and kTfLiteArenaRwPersistent tensors;
    - ``dynamic_bytes``: kTfLiteDynamic tensors;
    - ``unplaced``: kTfLiteArenaRw tensors with bytes but no memory yet (deferred to Invoke).
    """
    n = ctypes.c_size_t.from_address(ctx + _C_TENSORS_SIZE).value
    if n > 1 << 26:
        raise RuntimeError(f"implausible TfLiteContext.tensors_size {n}")
    if n == 0:
        return {"tensors": 0, "arena_bytes": 0, "persistent_bytes": 0, "dynamic_bytes": 0,
                "unplaced": 0}
    raw = np.frombuffer((ctypes.c_char * (n * _TENSOR_SIZE)).from_address(_ptr(ctx + _C_TENSORS)),
                        dtype=np.uint8).reshape(n, _TENSOR_SIZE)
    alloc = raw[:, _T_ALLOC:_T_ALLOC + 4].copy().view(np.intc)[:, 0]
    data = raw[:, _T_DATA:_T_DATA + 8].copy().view(np.uint64)[:, 0]
    nbytes = raw[:, _T_BYTES:_T_BYTES + 8].copy().view(np.uint64)[:, 0]
    has = (data != 0) & (nbytes > 0)
    arena = has & (alloc == 2)
    span = 0
    if arena.any():
        span = int((data[arena] + nbytes[arena]).max()) - int(data[arena].min())
    return {
        "tensors": int(n), "arena_bytes": span,
        "persistent_bytes": int(nbytes[has & ((alloc == 3) | (alloc == 5))].sum(dtype=np.uint64)),
        "dynamic_bytes": int(nbytes[has & (alloc == 4)].sum(dtype=np.uint64)),
        "unplaced": int(((alloc == 2) & (nbytes > 0) & (data == 0)).sum()),
    }


def _read_nodes(ctx: int, functions: tuple[int, int] | None = None) -> tuple[list[int], list[dict]]:
    """Execution plan and nodes of ``ctx``, through its ``GetExecutionPlan`` and
    ``GetNodeAndRegistration`` (those of the delegate context, or ``functions`` kept from it)."""
    fp, fn = functions or (_ptr(ctx + _C_GET_PLAN), _ptr(ctx + _C_GET_NODE))
    get_plan = _GET_PLAN(fp)
    get_node = _GET_NODE(fn)
    plan_p = _VP()
    if get_plan(ctx, ctypes.byref(plan_p)) != 0:
        raise RuntimeError("GetExecutionPlan failed in the delegate context")
    plan = _int_array(plan_p.value)
    nodes = []
    regs: dict[int, tuple] = {}  # one registration per kernel: read once
    node, reg = _VP(), _VP()
    node_ref, reg_ref = ctypes.byref(node), ctypes.byref(reg)
    for k in plan:
        if get_node(ctx, k, node_ref, reg_ref) != 0 or not node.value:
            raise RuntimeError(f"GetNodeAndRegistration({k}) failed")
        r = reg.value
        info = regs.get(r)
        if info is None:
            info = regs[r] = (ctypes.c_int.from_address(r + _R_BUILTIN_CODE).value,
                              _cstr(_ptr(r + _R_CUSTOM_NAME)),
                              int(ctypes.c_uint64.from_address(r + _R_INPLACE).value))
        n = node.value
        nodes.append({
            "index": k, "builtin_code": info[0], "custom_name": info[1], "inplace_operator": info[2],
            "inputs": _int_array(_ptr(n + _N_INPUTS)),
            "outputs": _int_array(_ptr(n + _N_OUTPUTS)),
            "temporaries": _int_array(_ptr(n + _N_TEMPORARIES)),
        })
    return plan, nodes


def _read_via_delegate(interp, subgraph: int) -> dict:
    """Apply a no-op delegate; in its Prepare read tensors and nodes of ``subgraph``.

    ``Interpreter::ModifyGraphWithDelegate`` calls ``Prepare`` once per subgraph, in index
    order; only the first call reads, and it reads the wanted subgraph through
    ``AcquireSubgraphContext`` unless it already is that subgraph's context.
    """
    got: dict = {}
    primary = _ptr(interp._interpreter.interpreter())

    def prepare(ctx, _delegate):
        if "tensors" in got or "error" in got:
            return 0
        try:
            if subgraph == 0 and ctx == primary:
                got["plan"], got["nodes"] = _read_nodes(ctx)
                got["tensors"] = _read_tensors(ctx)
            else:
                acquire = _ACQUIRE(_ptr(ctx + _C_ACQUIRE))
                release = _RELEASE(_ptr(ctx + _C_RELEASE))
                sub = _VP()
                if acquire(ctx, subgraph, ctypes.byref(sub)) != 0 or not sub.value:
                    raise RuntimeError(f"AcquireSubgraphContext({subgraph}) failed")
                try:
                    got["plan"], got["nodes"] = _read_nodes(sub.value)
                    got["tensors"] = _read_tensors(sub.value)
                finally:
                    if sub.value != ctx:
                        release(ctx, subgraph)
        except Exception as e:  # never let an exception cross into C
            got["error"] = f"{type(e).__name__}: {e}"
        return 0  # kTfLiteOk: claim no node

    cb = _PREPARE(prepare)
    delegate = _Delegate(None, cb, None, None, None, _ALLOW_DYNAMIC_TENSORS, None)
    got["_keep"] = (cb, delegate)  # the runtime keeps the pointer; keep it alive
    try:
        interp._interpreter.ModifyGraphWithDelegate(ctypes.addressof(delegate))
    except Exception as e:  # the runtime refused the delegate after our read, or before it
        if "tensors" not in got:
            got.setdefault("error", " ".join(f"{type(e).__name__}: {e}".split()))
    return got


def _keep_node_functions(interp) -> dict:
    """Apply the no-op delegate *before* ``allocate_tensors()`` and keep, from its ``Prepare``
    on the primary subgraph, the delegate context's ``GetExecutionPlan`` and
    ``GetNodeAndRegistration`` (static functions of tflite/core/subgraph.cc that only look up
    ``context->impl_``), so the nodes can be read after allocation without a second delegate.

    Applied after allocation, ``Subgraph::ModifyGraphWithDelegate`` allocates the whole graph
    again (``was_invokable_before_delegate``): 3 s of CPU at 100k operators. Before it, there
    is nothing to re-allocate. Returns ``{"functions": (plan, node), "context": ctx}``, or
    ``{"error": ...}`` when the runtime refused the delegate or never called ``Prepare``.
    """
    got: dict = {}
    primary = _ptr(interp._interpreter.interpreter())

    def prepare(ctx, _delegate):
        if "functions" not in got and ctx == primary:
            got["functions"] = (_ptr(ctx + _C_GET_PLAN), _ptr(ctx + _C_GET_NODE))
        return 0  # kTfLiteOk: claim no node

    cb = _PREPARE(prepare)
    delegate = _Delegate(None, cb, None, None, None, _ALLOW_DYNAMIC_TENSORS, None)
    got["_keep"] = (cb, delegate)
    try:
        interp._interpreter.ModifyGraphWithDelegate(ctypes.addressof(delegate))
    except Exception as e:
        got["error"] = " ".join(f"{type(e).__name__}: {e}".split())
    if "functions" not in got:
        got.setdefault("error", "the delegate's Prepare was not called on the primary subgraph")
    return got

