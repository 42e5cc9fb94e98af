"""The delegate child: one LiteRT interpreter under a delegate, its memory read back stage by stage.

Run as ``python -m viewer.runtime._delegate_child MODEL --delegate none|xnnpack|external
[--library PATH.so] [--option KEY=VALUE ...] [--input-shapes JSON]``; prints one JSON object on
fd 1. :mod:`viewer.runtime.delegates` starts it and reads the answer.

Order (each ``Pss_Anon`` read from ``/proc/self/smaps_rollup``, as
:mod:`viewer.runtime._child_overhead` does):

1. import numpy and LiteRT, read the model's inputs with our reader;
2. ``before``;
3. the delegate: ``none`` and ``xnnpack`` build the interpreter with
   ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` or ``AUTO`` (LiteRT applies XNNPACK, its default
   delegate, inside the first ``allocate_tensors()``); ``external`` calls
   ``load_delegate(PATH, options)`` (the library's ``tflite_plugin_create_delegate``) and passes
   it as ``experimental_delegates`` (applied in the constructor), no default delegate;
4. resize inputs (if asked), ``allocate_tensors()``: ``after_setup``;
5. synthetic inputs (the probe's values, seed 0), one ``invoke()``: ``after_invoke``;
6. every ``TfLiteTensor`` of the primary subgraph (``TfLiteContext.tensors``): the CPU arena's
   tensors (``kTfLiteArenaRw`` with an address; their span is the CPU arena), those left without
   memory (inside a delegated partition: after ``Subgraph::ReplaceNodeSubsetsWithDelegateKernels``
   no execution node reads or writes them, and ``ArenaPlanner::PlanAllocations`` walks only the
   execution nodes, so it never places them), persistent tensors;
7. the execution plan, through the read-only delegate of :mod:`viewer.runtime._child_structs`
   (after every memory figure): nodes, delegate kernels (``BuiltinOperator_DELEGATE``, 51).

A delegate library that cannot load answers ``{"ok": false, "stage": "load_delegate", ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

#: ``BuiltinOperator_DELEGATE``: the builtin code of a delegate kernel node (schema.fbs).
DELEGATE_BUILTIN_CODE = 51
DELEGATES = ("none", "xnnpack", "external")


def _inputs(path: str, shapes: dict) -> list:
    """Synthetic arrays for subgraph 0's inputs at the file's (or the resized) shapes."""
    import numpy as np

    from viewer.model.reader import load_model
    from viewer.runtime._child import _synthetic

    sg = load_model(path).subgraph(0)
    rng = np.random.default_rng(0)
    out = []
    for k, t in enumerate(sg.tensors[i] for i in sg.inputs if i >= 0):
        shape = shapes.get(t.name, shapes.get(str(k), list(t.shape or ())))
        try:
            out.append(_synthetic({"shape": list(shape), "dtype": np.dtype(t.dtype)}, rng))
        except TypeError:
            out.append(None)
    return out


def _build(path: str, delegate: str, library: str, options: dict):
    """The interpreter of ``path`` under ``delegate`` (raises ``_LoadFailed`` for a library
    LiteRT cannot load as a delegate)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType, load_delegate

    if delegate == "external":
        try:
            d = load_delegate(library, options)
        except (ValueError, OSError, RuntimeError, AttributeError) as e:
            # Keep the half-built Delegate alive until os._exit: its __del__ would hand the
            # library's destroy function the NULL its create returned.
            _KEEP.append(e)
            raise _LoadFailed(" ".join(str(e).split()) or "its create function returned NULL") from None
        return Interpreter(model_path=path, experimental_delegates=[d],
                           experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    kind = (OpResolverType.AUTO if delegate == "xnnpack"
            else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    return Interpreter(model_path=path, experimental_op_resolver_type=kind)


class _LoadFailed(Exception):
    pass


_KEEP: list = []


def _trim() -> None:
    """Give the heap's free pages back (glibc ``malloc_trim(0)``) so that what the interpreter
    allocates next is counted: otherwise a small model's buffers fit in pages our own reader
    touched and freed, and Pss_Anon barely grows (16 KiB for XNNPACK on a 300 KB model)."""
    import ctypes
    import ctypes.util

    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the figures may then undercount small models
        pass


def _tensors_summary(tensors: list[dict]) -> dict:
    """The CPU arena (span of placed ``arena-rw`` tensors), tensors without memory, persistent."""
    placed = [t for t in tensors if t["allocation"] == "arena-rw" and t["address"] and t["bytes"] > 0]
    left = [t["id"] for t in tensors if t["allocation"] == "arena-rw" and not t["address"]
            and t["bytes"] > 0]
    span = (max(t["address"] + t["bytes"] for t in placed) - min(t["address"] for t in placed)
            if placed else 0)
    persistent = [t for t in tensors if t["address"] and t["bytes"] > 0
                  and t["allocation"] in ("arena-rw-persistent", "persistent-ro", "dynamic")]
    return {"tensors": len(tensors), "arena_tensors": len(placed), "arena_bytes": int(span),
            "arena_ids": [t["id"] for t in placed], "persistent_ids": [t["id"] for t in persistent],
            "arena_tensor_bytes": int(sum(t["bytes"] for t in placed)),
            "without_memory": left, "without_memory_bytes": int(sum(
                t["bytes"] for t in tensors if t["id"] in set(left))),
            "persistent_tensors": len(persistent),
            "persistent_bytes": int(sum(t["bytes"] for t in persistent))}


def _plan_summary(interp, n_ops: int) -> dict:
    from viewer.runtime._child_structs import _read_via_delegate

    got = _read_via_delegate(interp, 0)
    nodes = got.get("nodes")
    if nodes is None:
        return {"plan_error": got.get("error", "the execution plan was not read")}
    kernels = [n for n in nodes if n["builtin_code"] == DELEGATE_BUILTIN_CODE]
    cpu = len(nodes) - len(kernels)
    return {"nodes": len(nodes), "delegate_kernels": len(kernels), "cpu_nodes": cpu,
            "model_operators": n_ops, "delegated_operators": max(0, n_ops - cpu),
            "plan_error": None}


def measure(path: str, delegate: str, library: str = "", options: dict | None = None,
            input_shapes: dict | None = None) -> dict:
    """Pss_Anon at each stage and the tensors of one interpreter under ``delegate`` (bytes)."""
    import numpy  # noqa: F401  (imported before *before*)
    from ai_edge_litert import interpreter  # noqa: F401

    from viewer.model.reader import load_model
    from viewer.runtime._child import _resize_inputs
    from viewer.runtime._child_proc import _smaps_rollup
    from viewer.runtime._child_structs import _ptr, _read_tensors

    shapes = dict(input_shapes or {})
    n_ops = len(load_model(path).subgraph(0).operators)
    arrays = _inputs(path, shapes)
    _trim()
    before = _smaps_rollup().get("Pss_Anon")
    try:
        interp = _build(path, delegate, library, dict(options or {}))
    except _LoadFailed as e:
        return {"ok": False, "stage": "load_delegate",
                "error": f"{library}: LiteRT could not load it as a delegate ({e})"}
    built = _smaps_rollup().get("Pss_Anon")
    if shapes:
        _resize_inputs(interp, shapes)
    interp.allocate_tensors()
    after_setup = _smaps_rollup().get("Pss_Anon")
    for d, a in zip(interp.get_input_details(), arrays):
        if a is not None and tuple(a.shape) == tuple(int(s) for s in d["shape"]):
            interp.set_tensor(d["index"], a)
    interp.invoke()
    after_invoke = _smaps_rollup().get("Pss_Anon")
    n_runtime = int(interp._interpreter.NumTensors(0))
    tensors = _read_tensors(_ptr(interp._interpreter.interpreter()))
    if len(tensors) != n_runtime:
        return {"ok": False, "error": f"TfLiteContext.tensors_size {len(tensors)} != NumTensors "
                f"{n_runtime}: an unsupported LiteRT build"}
    out = {"ok": True, "delegate": delegate, "library": library, "options": dict(options or {}),
           "pss_anon_before_bytes": before, "pss_anon_built_bytes": built,
           "pss_anon_after_setup_bytes": after_setup, "pss_anon_after_invoke_bytes": after_invoke,
           **_tensors_summary(tensors)}
    out.update(_plan_summary(interp, n_ops))
    return out


def _options(pairs: list[str]) -> dict:
    out = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k:
            raise ValueError(f"delegate option {p!r}: need KEY=VALUE")
        out[k] = v
    return out


def main(argv: list[str] | None = None) -> int:
    out_fd = os.dup(1)  # fd 1 keeps our JSON; LiteRT's INFO lines go to stderr
    os.dup2(2, 1)
    p = argparse.ArgumentParser(prog="_delegate_child")
    p.add_argument("model")
    p.add_argument("--delegate", choices=DELEGATES, required=True)
    p.add_argument("--library", default="")
    p.add_argument("--option", action="append", default=[])
    p.add_argument("--input-shapes", default="{}")
    args = p.parse_args(argv)
    try:
        answer = measure(args.model, args.delegate, args.library, _options(args.option),
                         json.loads(args.input_shapes))
    except Exception as e:  # the runtime's refusal, as one line for the parent
        answer = {"ok": False, "error": " ".join(f"{type(e).__name__}: {e}".split())[:400]}
    with os.fdopen(out_fd, "wb") as f:
        f.write(json.dumps(answer).encode() + b"\n")
    sys.stderr.flush()
    os._exit(0)  # skip teardown: a delegate that crashes in its destructor must not lose the answer


if __name__ == "__main__":
    main()
