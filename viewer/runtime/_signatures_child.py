"""The LiteRT child that measures every signature of one interpreter, as a deployment holds them.

``python -m viewer.runtime._signatures_child MODEL [--keys k1,k2] [--input-shapes JSON]
[--rounds N]`` prints one JSON object on its stdout (the original fd 1) and exits 0, also when
the runtime reports an error (``{"ok": false, ...}``). Nothing here is imported by the parent.

What one interpreter does with several signatures (measured with LiteRT 2.3, no default
delegates; tflite/core/interpreter.cc, tflite/core/subgraph.cc):

- every signature's runner calls ``AllocateTensors(subgraph)`` on its own ``Subgraph``, whose
  ``ArenaPlanner`` owns its own arena and persistent arena: the arenas of all the signatures an
  application has allocated are resident at once (the child reads every subgraph's tensor
  addresses after all are allocated and invoked, and reports whether the arenas overlap);
- resource variables (``VAR_HANDLE``'s ``shared_name``) live in the interpreter's resource map,
  shared by every subgraph; their storage is ``malloc``-ed by the first ``ASSIGN_VARIABLE``
  during ``Invoke`` (tflite/experimental/resource/resource_variable.cc ``AssignFrom``), in no
  arena: it is seen here only as heap growth (glibc ``mallinfo2``: ``uordblks + hblkhd``);
  ``READ_VARIABLE`` copies the variable into its output, a dynamic (heap) tensor of the reading
  subgraph (tflite/kernels/read_variable.cc);
- ``is_variable`` tensors belong to one subgraph (its persistent arena): two subgraphs never
  share one.

The tensors of every subgraph are read from LiteRT's own ``TfLiteContext`` structs (the
contexts are collected by a no-op delegate applied before any allocation; see
:mod:`viewer.runtime._child`), so dynamic and persistent tensors are seen as well as the arena.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import traceback

from viewer.runtime._child_structs import (_ALLOW_DYNAMIC_TENSORS, _PREPARE, _Delegate, _LayoutError,
                                           _read_tensors)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _heap_reader():
    """A function returning the bytes malloc has handed out (glibc's ``mallinfo2``: in-use
    ordinary blocks ``uordblks`` + mmap-ed blocks ``hblkhd``), or None without glibc 2.33+."""
    try:
        libc = ctypes.CDLL(None)
        f = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    f.restype = _MallInfo2

    def read() -> int:
        m = f()
        return int(m.uordblks + m.hblkhd)

    return read


def _contexts(interp) -> list[int]:
    """Every subgraph's ``TfLiteContext*``, in index order (a no-op delegate's ``Prepare`` is
    called once per subgraph by ``Interpreter::ModifyGraphWithDelegate``)."""
    got: list[int] = []

    def prepare(ctx, _delegate):
        got.append(int(ctx))
        return 0  # kTfLiteOk: claim no node

    cb = _PREPARE(prepare)
    delegate = _Delegate(None, cb, None, None, None, _ALLOW_DYNAMIC_TENSORS, None)
    interp._interpreter.ModifyGraphWithDelegate(ctypes.addressof(delegate))
    _contexts.keep = (cb, delegate)  # the runtime keeps the pointer
    n = int(interp._interpreter.NumSubgraphs())
    if len(got) != n:
        raise _LayoutError(f"the delegate saw {len(got)} subgraph contexts, the runtime has {n}")
    return got


def _summary(tensors: list[dict]) -> dict:
    """Bytes by where LiteRT put them: the arena's extent, persistent, dynamic (heap)."""
    arena = [(t["address"], t["bytes"]) for t in tensors
             if t["allocation"] == "arena-rw" and t["address"] and t["bytes"] > 0]
    base = min((a for a, _ in arena), default=None)
    top = max((a + b for a, b in arena), default=None)

    def total(kind: str) -> int:
        return sum(t["bytes"] for t in tensors if t["allocation"] == kind and t["address"])

    return {
        "arena_base": base, "arena_bytes": (top - base) if base is not None else 0,
        "persistent_bytes": total("arena-rw-persistent"),
        "persistent_ro_bytes": total("persistent-ro"),
        "dynamic_bytes": total("dynamic"),
        "variables": [{"id": t["id"], "name": t["name"], "bytes": t["bytes"], "address": t["address"]}
                      for t in tensors if t["is_variable"]],
        "dynamic": [{"id": t["id"], "name": t["name"], "bytes": t["bytes"]}
                    for t in tensors if t["allocation"] == "dynamic" and t["address"]][:64],
    }


def _feeds(interp, sg: int, inputs: dict, step: int) -> None:
    """Synthetic inputs: zeros (a zero mask, start indices 0: always in range) except float
    inputs named ``x``-like, which get ones; what matters here is the memory, not the values."""
    import numpy as np

    for name, idx in inputs.items():
        d = interp._get_tensor_details(int(idx), sg)
        shape = [int(s) for s in d["shape"]]
        a = np.zeros(shape, dtype=d["dtype"])
        if np.dtype(d["dtype"]).kind == "f" and "mask" not in name and "cache" not in name:
            a = a + np.asarray(1.0 + 0.01 * step, dtype=d["dtype"])
        interp._interpreter.SetTensor(int(idx), a, sg)


def measure(path: str, keys: list[str] | None, input_shapes: dict, rounds: int,
            watch: dict | None = None) -> dict:
    """Allocate every signature in ``keys`` (all by default), invoke each ``rounds`` times in
    turn, and read every subgraph's tensors and the heap after each stage (bytes)."""
    import numpy as np

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    heap = _heap_reader()
    h0 = heap() if heap else None
    interp = Interpreter(model_path=path,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    from viewer.runtime._child import _hook  # tests: ARENA_VIEWER_CHILD_HOOK=segv|kill|hang|raise

    _hook("loaded")
    ctxs = _contexts(interp)
    sigs = interp._get_full_signature_list()
    keys = list(sigs) if keys is None else keys
    wrapper = interp._interpreter
    stages = [{"stage": "built", "heap_bytes": (heap() - h0) if heap else None}]
    index = {}
    for key in keys:
        if key not in sigs:
            raise ValueError(f"no signature {key!r}; the model has: {', '.join(sigs) or 'none'}")
        sg = index[key] = int(wrapper.GetSubgraphIndexFromSignature(key))
        for name, shape in (input_shapes.get(key) or {}).items():
            if name not in sigs[key]["inputs"]:
                raise ValueError(f"signature {key!r} has no input {name!r}")
            wrapper.ResizeInputTensor(int(sigs[key]["inputs"][name]), np.array(shape, np.int32), False, sg)
        wrapper.AllocateTensors(sg)
        stages.append({"stage": f"allocate {key}", "heap_bytes": (heap() - h0) if heap else None})
    for r in range(rounds):
        for key in keys:
            _feeds(interp, index[key], sigs[key]["inputs"], r)
            wrapper.Invoke(index[key])
            stages.append({"stage": f"invoke {key} #{r + 1}",
                           "heap_bytes": (heap() - h0) if heap else None})
    subgraphs = []
    for k, ctx in enumerate(ctxs):
        tensors = _read_tensors(ctx)
        s = _summary(tensors)
        s["subgraph"] = k
        s["watched"] = [{"id": t["id"], "allocation": t["allocation"], "bytes": t["bytes"],
                         "address": t["address"]}
                        for i in (watch or {}).get(str(k), []) if 0 <= i < len(tensors)
                        for t in (tensors[i],)]
        s["signatures"] = [key for key in keys if index[key] == k]
        subgraphs.append(s)
    spans = sorted((s["arena_base"], s["arena_base"] + s["arena_bytes"], s["subgraph"])
                   for s in subgraphs if s["arena_base"] is not None and s["arena_bytes"])
    overlaps = [[a[2], b[2]] for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    return {"ok": True, "keys": keys, "signature_subgraphs": index, "stages": stages,
            "subgraphs": subgraphs, "arena_overlaps": overlaps, "heap_measured": heap is not None}


def main(argv: list[str] | None = None) -> int:
    out_fd = os.dup(1)
    os.dup2(2, 1)  # LiteRT's INFO lines to stderr; our JSON alone on the original stdout
    p = argparse.ArgumentParser(prog="viewer.runtime._signatures_child")
    p.add_argument("model")
    p.add_argument("--keys", default=None)
    p.add_argument("--input-shapes", default="{}", help='{"KEY": {"INPUT": [dims]}}')
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--watch", default="{}", help='{"SUBGRAPH": [tensor ids]}: report these tensors')
    args = p.parse_args(argv)
    try:
        keys = [k for k in args.keys.split(",") if k] if args.keys else None
        out = measure(args.model, keys, json.loads(args.input_shapes), max(1, args.rounds),
                      json.loads(args.watch))
    except _LayoutError as e:
        out = {"ok": False, "error": f"unsupported LiteRT build (struct layout check failed: {e})"}
    except Exception as e:
        out = {"ok": False, "error": f"{type(e).__name__}: {' '.join(str(e).split())}",
               "traceback": traceback.format_exc(limit=3)}
    with os.fdopen(out_fd, "wb") as f:
        f.write(json.dumps(out).encode() + b"\n")
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
