"""The subprocess that runs LiteRT: ``python -m viewer.runtime._child {probe,measure,serve,baseline} MODEL ...``.

It prints one JSON object on its stdout (the original fd 1; anything LiteRT or a kernel prints
goes to stderr) and exits 0, also when the runtime reports an error (``{"ok": false, ...}``).
A crash, a hang or a kill is the parent's business: it runs this with a timeout and reads the
exit status. Nothing here is imported by the parent; the parent only parses the JSON.

How tensors beyond ``get_tensor_details`` are read
--------------------------------------------------
``interpreter._interpreter.tensor()`` segfaults on a kernel temporary without dims, and the
Python wrapper does not expose node temporaries. So the child reads LiteRT's own C structs with
:mod:`ctypes`:

- ``InterpreterWrapper.interpreter()`` is the ``tflite::Interpreter*``; its first member is
  ``TfLiteContext* context_`` of the primary subgraph (tflite/core/interpreter.h).
- ``TfLiteContext.tensors`` / ``tensors_size`` give every ``TfLiteTensor`` (tflite/core/c/
  common.h): type, ``data`` pointer, dims, ``allocation_type``, ``bytes``, name.
- Node temporaries (``TfLiteNode.temporaries``) are read exactly, through a no-op delegate whose
  ``Prepare`` callback is given the delegate context, where ``GetExecutionPlan``,
  ``GetNodeAndRegistration`` and ``AcquireSubgraphContext`` are allowed (tflite/core/subgraph.cc
  ``SwitchToDelegateContext``). The delegate claims no node and carries
  ``kTfLiteDelegateFlagsAllowDynamicTensors``, so the graph is not re-prepared before the
  callback; the arena is snapshotted before the delegate is applied anyway.
- For subgraph 0 without a signature the delegate is applied *before* ``allocate_tensors()``
  and its ``Prepare`` keeps the two functions, which read the nodes after allocation
  (:func:`viewer.runtime._child_structs._keep_node_functions`): applied after it, LiteRT
  allocates the whole graph a second time (3 s of CPU at 100k operators). Probe answers are the
  same on every shared model LiteRT loads, resized and invoked ones included.

Every struct offset is checked against the Python wrapper (tensor count, names, data pointers of
model tensors); a mismatch is reported as an unsupported LiteRT build, never read further.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

#: Apply the read-only delegate before allocate_tensors() (see _keep_node_functions).
_EARLY_DELEGATE = True

from viewer.runtime._child_proc import _delta, _faults, _mapping_rss, _smaps_rollup, _status  # noqa: F401
from viewer.runtime._child_structs import (  # noqa: E402,F401  (the C-struct reads)
    ALLOCATION_TYPES, TYPES, _LayoutError, _keep_node_functions, _pending_arena, _ptr, _read_nodes,
    _read_tensors, _read_via_delegate, _tensor_head, _tensor_totals,
)

from viewer.runtime._child_io import (  # noqa: E402,F401  (inputs, signatures)
    _file_io, _resize_inputs, _resize_signature_inputs, _signature_of, _unallocated,
)

#: Interpreters this process has built (the overhead meter needs a process that built none).
_BUILT = 0


def _file_mappings(path: str) -> list[list[int]]:
    """Address ranges [start, end) of ``path`` in /proc/self/maps (Linux only; [] elsewhere)."""
    real = os.path.realpath(path)
    out = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].strip() == real:
                    lo, hi = parts[0].split("-")
                    out.append([int(lo, 16), int(hi, 16)])
    except OSError:
        pass
    return out


def _model_tensor_count(path: str, subgraph: int) -> int | None:
    import mmap

    from ai_edge_litert import schema_py_generated as S

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            model = S.Model.GetRootAs(mm, 0)
            if subgraph >= model.SubgraphsLength():
                return None
            return int(model.Subgraphs(subgraph).TensorsLength())
    except Exception:
        return None


def _make_interpreter(path: str, resolver: str, num_threads: int | None = None):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    global _BUILT
    _BUILT += 1
    kind = {
        "builtin": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        "default": OpResolverType.AUTO,  # the default resolver: XNNPACK applied by default
    }[resolver]
    return Interpreter(model_path=path, experimental_op_resolver_type=kind, num_threads=num_threads)




def _hook(stage: str) -> None:
    """Test hooks, set by tests through ARENA_VIEWER_CHILD_HOOK=<action>[@stage].

    action: segv, kill, hang, raise, garbage; stage: start, loaded (default), allocated (both
    modes) or measured (the measuring child only).
    """
    spec = os.environ.get("ARENA_VIEWER_CHILD_HOOK", "")
    if not spec:
        return
    action, _, at = spec.partition("@")
    if (at or "loaded") != stage:
        return
    import signal

    if action == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "hang":
        time.sleep(3600)
    elif action == "raise":
        raise RuntimeError("test hook: simulated runtime failure")
    elif action == "garbage":
        os.write(_OUT_FD, b"this is not json\n")
        os._exit(0)










def _invoke(interp, subgraph: int, sig) -> None:
    """One invocation on synthetic inputs, through the signature's runner for ``subgraph``."""
    wrapper = interp._interpreter  # (its Invoke: the caller holds no numpy view of a tensor)
    if sig is None or subgraph == 0:
        _random_inputs(interp)
        wrapper.Invoke()
        return
    for idx in sig[1].get("inputs", {}).values():
        d = interp._get_tensor_details(int(idx), subgraph)
        a = _synthetic(d)
        if a is not None:
            wrapper.SetTensor(int(idx), a, subgraph)
    wrapper.Invoke(subgraph)


def probe(path: str, subgraph: int, input_shapes: dict, invoke: bool | str = "auto",
          overhead: bool = False) -> dict:
    """Allocate (and, when ``invoke`` says so, run once) and read subgraph ``subgraph``.

    ``invoke``: True always, False never, ``"auto"`` when ``allocate_tensors()`` left model
    tensors without data. LiteRT defers them when ``Subgraph::PrepareOpsStartingAt``
    (tflite/core/subgraph.cc) stops at an operator whose output is dynamic or whose Prepare
    returned ``kTfLiteOutputShapeNotKnown`` (RESHAPE with a computed shape); ``Invoke`` then
    prepares and plans the rest (``ExecuteAllocations`` per range), and an intermediate
    dynamic tensor resized during ``Invoke`` makes it re-plan from there
    (``ResetAllocationsAfter``). The arena never shrinks afterwards.

    A subgraph that a signature reaches (other than 0) is resized and allocated through that
    signature's runner (``AllocateTensors(subgraph)``), as an application calling it would.

    ``overhead``: also measure the runtime overhead in this process
    (:class:`viewer.runtime._child_overhead.Meter`; subgraph 0 at the file's shapes, ``invoke``
    "auto", a process that built no interpreter before): the synthetic inputs are set and one
    Invoke runs before anything is read back, and the answer's ``overhead`` holds the figures.
    The tensors are then read after that Invoke (the same addresses where nothing was deferred:
    LiteRT places a static graph once, in allocate_tensors()).
    """
    meter = None
    if overhead:
        from viewer.runtime._child_overhead import Meter

        meter = Meter(path, _BUILT)
        if subgraph != 0 or input_shapes or invoke != "auto":
            meter.fail("measured only for subgraph 0 at the file's shapes")
    interp = _make_interpreter(path, "builtin")
    _hook("loaded")
    # No local reference to the wrapper until inputs are resized: the Python API refuses to
    # resize while anything but the interpreter holds it (``_ensure_safe``).
    n_sub = int(interp._interpreter.NumSubgraphs())
    if not 0 <= subgraph < n_sub:
        raise ValueError(f"no subgraph {subgraph}; the runtime has {n_sub} (0..{n_sub - 1})")
    sig = _signature_of(interp, subgraph) if subgraph != 0 else None
    io = _file_io(path, subgraph) if subgraph != 0 else None
    kept = None  # node functions kept from a delegate applied before allocation
    if sig is not None:
        resized = _resize_signature_inputs(interp, subgraph, sig[1], io[0] if io else [],
                                           input_shapes) if input_shapes else []
        interp._interpreter.AllocateTensors(subgraph)
    else:
        resized = _resize_inputs(interp, input_shapes) if input_shapes else []
        kept = _keep_node_functions(interp) if subgraph == 0 and _EARLY_DELEGATE else None
        interp.allocate_tensors()
    _hook("allocated")
    wrapper = interp._interpreter
    extra: dict = {"signature": sig[0] if sig else None, "invoke_reason": "", "invoke_error": ""}
    n_model = _model_tensor_count(path, subgraph)
    if invoke == "auto" and subgraph != 0 and sig is None:
        # A control-flow body: prepared by its caller's kernel, which may release its arena
        # after running it (while.cc); read as prepared.
        invoke = False
    first_read = None  # the struct read after allocate_tensors(), reused when nothing ran
    unsized: dict = {}  # metered: dynamic tensors without memory before the meter's Invoke
    if invoke == "auto":
        n_check = n_model if n_model is not None else int(wrapper.NumTensors(subgraph))
        if meter is not None and not meter.error:  # nothing read back before *after*
            ctx0 = _ptr(wrapper.interpreter())
            pending = _pending_arena(ctx0, n_check)
            # kTfLiteDynamic tensors without memory yet: read as after allocate_tensors() below
            unsized = {i: _tensor_head(ctx0, i)
                       for i in _pending_arena(ctx0, 1 << 26, allocation=4, need_bytes=False)}
        elif subgraph == 0:  # the struct read also sees 0-d tensors, which tensor() cannot view
            first_read = _read_tensors(_ptr(wrapper.interpreter()))
            pending = [t["id"] for t in first_read[:n_check]
                       if t["allocation"] == "arena-rw" and t["bytes"] > 0 and not t["address"]]
        else:
            pending = _unallocated(interp, subgraph, n_check)
        extra["deferred_count"] = len(pending)
        if pending:
            extra["invoke_reason"] = (
                f"{len(pending)} tensor(s) had no memory after allocate_tensors() "
                f"(e.g. {pending[:5]}): LiteRT sizes and places them during Invoke")
        invoke = bool(pending)
        if meter is not None and not meter.error:
            _metered_invoke(interp, meter, invoke, extra)
        elif invoke:
            try:
                _invoke(interp, subgraph, sig)
            except Exception as e:  # the arena read below is then partial, and says so
                if "failed to prepare" in str(e):
                    raise  # a deferred operator rejects these shapes: allocation failed
                extra["invoke_error"] = " ".join(f"{type(e).__name__}: {e}".split())[:300]
    elif invoke:
        # Graphs with dynamic tensors are planned in node ranges as Invoke reaches them.
        _invoke(interp, subgraph, sig)
    n_runtime = int(wrapper.NumTensors(subgraph)) if subgraph == 0 else None
    result: dict = {
        "ok": True, "subgraph": subgraph, "resized_inputs": resized,
        "invoked": bool(invoke) and not extra["invoke_error"],
        "num_model_tensors": n_model,
        "model_file_mappings": _file_mappings(path),
        "inputs": [int(i) for i in wrapper.InputIndices()] if subgraph == 0 else (io[0] if io else None),
        "outputs": [int(i) for i in wrapper.OutputIndices()] if subgraph == 0 else (io[1] if io else None),
        "notes": [], **extra,
    }
    if meter is not None:
        result["overhead"] = meter.answer()
    # Snapshot the primary subgraph's tensors before the read-only delegate touches anything.
    ctx = _ptr(wrapper.interpreter())
    if subgraph != 0:
        before = None
    elif first_read is not None and not invoke:  # nothing ran since that read
        before = first_read
    else:
        before = _read_tensors(ctx)
        for i, (nbytes, shape) in unsized.items():  # the Invoke was the meter's alone
            if i < len(before) and not invoke:
                before[i].update(address=None, bytes=nbytes, shape=shape)
    if before is not None:
        if len(before) != n_runtime:
            raise _LayoutError(f"TfLiteContext.tensors_size {len(before)} != NumTensors {n_runtime}")
        _check_layout(interp, before[:64])
    if kept is not None and "functions" in kept and before is not None:
        try:
            plan_nodes = _read_nodes(ctx, kept["functions"])
        except Exception as e:  # fall back to the delegate applied now
            result["notes"].append(f"node read through the early delegate failed ({e})")
        else:
            result["tensors"] = before
            result["execution_plan"], result["nodes"] = plan_nodes
            return result
    got = _read_via_delegate(interp, subgraph)
    if "error" in got or "tensors" not in got:
        if before is None:
            raise RuntimeError("cannot read subgraph tensors: "
                               + got.get("error", "the delegate's Prepare was not called"))
        result["notes"].append(
            "node temporaries not read (" + got.get("error", "delegate Prepare not called")
            + "); temporaries are attributed to no operator")
        result["tensors"], result["nodes"], result["execution_plan"] = before, [], []
        return result
    if before is not None and [(t["address"], t["bytes"]) for t in before] != [
        (t["address"], t["bytes"]) for t in got["tensors"][: len(before)]
    ]:
        result["notes"].append(
            "the read-only delegate made LiteRT re-plan (control flow or dynamic tensors); "
            "offsets are those from before it")
    result["tensors"] = before if before is not None else got["tensors"]
    result["nodes"], result["execution_plan"] = got["nodes"], got["plan"]
    return result


def _check_layout(interp, head: list[dict]) -> None:
    """The struct read of the first tensors against the Python wrapper (data pointers, names):
    :class:`_LayoutError` on any mismatch (an unsupported LiteRT build)."""
    wrapper = interp._interpreter
    for t in head:
        if t["allocation"] not in ("arena-rw", "mmap-ro") or not t["address"] or not t["shape"]:
            continue
        try:
            py = interp.tensor(t["id"])().ctypes.data
        except ValueError:  # e.g. "Invalid tensor size": the wrapper cannot view it
            continue
        if py != t["address"] or (t["name"] and t["name"] != wrapper.TensorName(t["id"], 0)):
            raise _LayoutError(f"tensor {t['id']}: struct read {t['address']:#x}, wrapper {py:#x}")


def probe_totals(path: str, input_shapes: dict) -> dict:
    """Subgraph 0 allocated at ``input_shapes`` (no Invoke), answered as totals only
    (:func:`viewer.runtime._child_structs._tensor_totals`): no tensor or node records, no
    read-only delegate. The parent asks for the full probe when ``unplaced`` is not 0."""
    interp = _make_interpreter(path, "builtin")
    _hook("loaded")
    resized = _resize_inputs(interp, input_shapes) if input_shapes else []
    interp.allocate_tensors()
    _hook("allocated")
    wrapper = interp._interpreter
    ctx = _ptr(wrapper.interpreter())
    n_runtime = int(wrapper.NumTensors(0))
    totals = _tensor_totals(ctx)
    if totals["tensors"] != n_runtime:
        raise _LayoutError(f"TfLiteContext.tensors_size {totals['tensors']} != NumTensors {n_runtime}")
    _check_layout(interp, _read_tensors(ctx, limit=64))
    return {"ok": True, "subgraph": 0, "resized_inputs": resized,
            "num_model_tensors": _model_tensor_count(path, 0), "totals": totals, "notes": []}


def _metered_invoke(interp, meter, deferred: bool, extra: dict) -> None:
    """The overhead measurement's one Invoke on the file-shaped synthetic inputs, then *after*.

    ``deferred``: tensors were left for Invoke, so this is also the probe's own invocation
    (its failure is the probe's, as in :func:`probe`); otherwise a failure only leaves the
    overhead unmeasured."""
    from viewer.runtime._child_overhead import set_inputs

    try:
        set_inputs(interp, meter.arrays)
        interp._interpreter.Invoke()
    except Exception as e:
        why = " ".join(f"{type(e).__name__}: {e}".split())[:300]
        meter.fail(f"one Invoke on synthetic inputs failed ({why})")
        if deferred:
            if "failed to prepare" in str(e):
                raise
            extra["invoke_error"] = why
        return
    meter.stop()


def _synthetic(d: dict, rng=None):
    """Synthetic values for one input (tensor details): normal floats, full-range 8/16-bit
    integers, 0/1 for wider integers (often indices) and booleans; None for strings etc."""
    import numpy as np

    rng = rng if rng is not None else np.random.default_rng(0)
    shape = [int(s) for s in d["shape"]]
    dt = np.dtype(d["dtype"])
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu" and dt.itemsize == 1 or dt == np.int16:
        info = np.iinfo(dt)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 2, shape).astype(dt)
    return None


def _random_inputs(interp, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    for d in interp.get_input_details():
        a = _synthetic(d, rng)
        if a is not None:
            interp.set_tensor(d["index"], a)


def measure(path: str, runs: int, resolver: str) -> dict:
    """The ``measure`` mode: :func:`viewer.runtime._child_measure.measure` with this module's
    functions (not imported there a second time: this module runs as ``__main__``)."""
    from viewer.runtime._child_measure import measure as run

    return run(path, runs, resolver, hook=_hook, make_interpreter=_make_interpreter,
               litert_version=_litert_version)


def baseline() -> dict:
    """The process with no model: Python, numpy and LiteRT imported (``baseline -``)."""
    import numpy  # noqa: F401
    from ai_edge_litert import interpreter  # noqa: F401

    status, roll = _status(), _smaps_rollup()
    return {"ok": True, "vmhwm_bytes": status.get("VmHWM"), "rss_bytes": roll.get("Rss"),
            "pss_anon_bytes": roll.get("Pss_Anon"), "anonymous_bytes": roll.get("Anonymous"),
            "litert_version": _litert_version()}


def _litert_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("ai-edge-litert")
    except Exception:
        return None


_OUT_FD = 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="viewer.runtime._child")
    p.add_argument("mode", choices=["probe", "measure", "serve", "baseline", "overhead"])
    p.add_argument("model")
    p.add_argument("--subgraph", type=int, default=0)
    p.add_argument("--input-shapes", default="{}")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--invoke", choices=["auto", "always", "never"], default="auto",
                   help="probe: read after one invocation (auto: when tensors were deferred)")
    p.add_argument("--resolver", choices=["builtin", "default"], default="builtin")
    p.add_argument("--packed", action="store_true",
                   help="probe: tensors and nodes as packed columns (viewer.runtime._probe_packed)")
    p.add_argument("--totals", action="store_true",
                   help="probe: answer the footprint's totals only (subgraph 0, no Invoke)")
    p.add_argument("--overhead", action="store_true",
                   help="probe: also measure the runtime overhead in this process (Meter)")
    return p


def _answer(args: argparse.Namespace) -> dict:
    """Run one probe or measurement; the JSON-ready answer (errors become ``ok: False``)."""
    try:
        if args.mode == "baseline":
            return baseline()
        if args.mode == "probe" and args.totals:
            return probe_totals(args.model, json.loads(args.input_shapes))
        if args.mode == "probe":
            invoke = {"auto": "auto", "always": True, "never": False}[args.invoke]
            out = probe(args.model, args.subgraph, json.loads(args.input_shapes), invoke,
                        overhead=args.overhead)
            if args.packed and "tensors" in out:
                from viewer.runtime import _probe_packed

                out[_probe_packed.KEY] = _probe_packed.pack(out.pop("tensors"), out.pop("nodes"))
            return out
        if args.mode == "overhead":
            from viewer.runtime._child_overhead import overhead

            return overhead(args.model, args.resolver)
        return measure(args.model, args.runs, args.resolver)
    except _LayoutError as e:
        return {"ok": False, "error": f"unsupported LiteRT build (struct layout check failed: {e})"}
    except Exception as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        return {"ok": False, "error": f"{type(e).__name__}: {msg}",
                "traceback": traceback.format_exc(limit=3)}


def serve(out_fd: int) -> None:
    """The resident worker (:mod:`viewer.runtime.worker`): answer probe requests until EOF.

    Announces itself with ``{"ok": true, "ready": true, "pid": ...}`` once LiteRT is imported.
    Each request is one JSON line ``{"argv": [...], "hook": ...}`` with the arguments the
    one-shot child takes (``probe MODEL --input-shapes ...``); each answer is one JSON line,
    exactly what the one-shot child would print. ``hook`` is the caller's
    ARENA_VIEWER_CHILD_HOOK for this request (tests).
    """
    import numpy  # noqa: F401  (the imports are what a fresh process pays for)
    from ai_edge_litert import interpreter  # noqa: F401

    out = os.fdopen(out_fd, "wb")
    out.write(json.dumps({"ok": True, "ready": True, "pid": os.getpid()}).encode() + b"\n")
    out.flush()
    parser = _parser()
    for line in sys.stdin.buffer:
        try:
            req = json.loads(line)
            if req.get("hook"):
                os.environ["ARENA_VIEWER_CHILD_HOOK"] = str(req["hook"])
            else:
                os.environ.pop("ARENA_VIEWER_CHILD_HOOK", None)
            _hook("start")
            args = parser.parse_args([str(a) for a in req["argv"]])
            answer = ({"ok": False, "error": "the resident worker answers probes only"}
                      if args.mode != "probe" else _answer(args))
        except (ValueError, KeyError, TypeError, SystemExit) as e:
            answer = {"ok": False, "error": f"bad request to the resident worker: {e}"}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()
        sys.stderr.flush()
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    global _OUT_FD
    # Keep fd 1 for our JSON; everything else (LiteRT's INFO lines, kernel prints) to stderr.
    _OUT_FD = os.dup(1)
    os.dup2(2, 1)
    args = _parser().parse_args(argv)
    _hook("start")
    if args.mode == "serve":
        serve(_OUT_FD)
    out = _answer(args)
    data = json.dumps(out).encode() + b"\n"
    with os.fdopen(_OUT_FD, "wb") as f:
        f.write(data)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a kernel or delegate that crashes in its destructor must not
    # turn a good answer into a crash.
    os._exit(0)


if __name__ == "__main__":
    main()
