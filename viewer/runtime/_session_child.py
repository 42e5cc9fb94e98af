"""The session child: one LiteRT interpreter run through a sequence of input shapes.

``python -m viewer.runtime._session_child MODEL --steps JSON [--subgraph N]`` prints one JSON
line per step as it ends (``{"step": {...}}``), then one summary line, on its stdout (the
original fd 1; LiteRT's own prints go to stderr), and exits 0, also when the runtime refuses a
step (its line is ``{"step": {"ok": false, "error": ...}}`` and the session stops there). A crash
or a hang is the parent's business (:mod:`viewer.runtime.session`): the steps printed before it
are kept. Nothing here is imported by the parent.

Each step, in the same interpreter (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``), does what an
application serving inputs of changing size does: ``ResizeInputTensor`` (strict: only the
dimensions the file marks -1 may change), ``AllocateTensors``, the inputs written in place (no
harness array the size of the input), one ``Invoke``. Then it reads:

- every ``TfLiteTensor`` and node (kernel temporaries), through the read-only delegate applied
  once before the first allocation (:mod:`viewer.runtime._child_structs`), in the probe child's
  answer format, so the parent builds a :class:`~viewer.runtime.probe_types.RuntimeProbe` per
  step and replays our planner on it;
- the arena's buffer: its lowest tensor address (offset 0 of ``SimpleMemoryArena``'s buffer)
  and ``malloc_usable_size`` of it. LiteRT allocates the buffer with ``aligned_alloc``
  (``AlignedAlloc`` in tflite/simple_memory_arena.cc), so that address is the block malloc
  returned; a usable size below the tensors' span is discarded (not read);
- each dynamic tensor (``kTfLiteDynamic``, malloc'd by ``TfLiteTensorRealloc``): bytes, address,
  ``malloc_usable_size`` (the block can be larger than ``bytes``: LiteRT keeps a block when a
  tensor shrinks);
- the process: ``Pss_Anon`` (/proc/self/smaps_rollup) after the step, ``VmRSS`` before and the
  step's peak ``VmHWM`` (reset before the step by writing 5 to /proc/self/clear_refs), so a
  buffer copied while it grows shows as the step's peak above its end.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import traceback

def _hook(k: int) -> None:
    """Test hook: ``ARENA_VIEWER_SESSION_HOOK=segv@K`` kills this process with SIGSEGV as step
    K (from 1) begins, as a kernel crashing there would."""
    action, _, at = os.environ.get("ARENA_VIEWER_SESSION_HOOK", "").partition("@")
    if action == "segv" and at.isdigit() and int(at) == k + 1:
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)


def _libc():
    try:
        lib = ctypes.CDLL(None)
        fn = lib.malloc_usable_size
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_void_p]
    return fn


def _usable(fn, address: int | None, at_least: int) -> int | None:
    """``malloc_usable_size(address)`` when it is plausible (>= ``at_least``), else None."""
    if fn is None or not address:
        return None
    n = int(fn(address))
    return n if at_least <= n else None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _keep_contexts(interp) -> dict:
    """Apply a no-op delegate before allocation; keep every subgraph's ``TfLiteContext*`` (as
    its ``Prepare`` sees them, in subgraph order) and the delegate context's node functions.

    See :func:`viewer.runtime._child_structs._keep_node_functions`: the functions are static
    in tflite/core/subgraph.cc and look up ``context->impl_`` only, so they read any context.
    """
    from viewer.runtime._child_structs import (
        _ALLOW_DYNAMIC_TENSORS, _C_GET_NODE, _C_GET_PLAN, _PREPARE, _Delegate, _ptr,
    )

    got: dict = {"contexts": []}

    def prepare(ctx, _delegate):
        if "functions" not in got:
            got["functions"] = (_ptr(ctx + _C_GET_PLAN), _ptr(ctx + _C_GET_NODE))
        got["contexts"].append(int(ctx))
        return 0  # kTfLiteOk: claim no node

    cb = _PREPARE(prepare)
    delegate = _Delegate(None, cb, None, None, None, _ALLOW_DYNAMIC_TENSORS, None)
    got["_keep"] = (cb, delegate)
    interp._interpreter.ModifyGraphWithDelegate(ctypes.addressof(delegate))
    return got


def _fill_inputs(interp, subgraph: int, inputs: list[int], seed: int) -> None:
    """Write synthetic values into the input tensors in place (the probe's kinds of values:
    normal floats, full-range 8/16-bit integers, 0/1 for wider integers and booleans)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    wrapper = interp._interpreter
    for t in inputs:
        try:
            view = wrapper.tensor(interp, int(t), subgraph)
        except ValueError:
            continue  # no data (0 bytes) or a type numpy cannot view
        flat = view.reshape(-1)
        if flat.dtype in (np.float32, np.float64):
            rng.standard_normal(out=flat, dtype=flat.dtype)
        elif flat.dtype.kind == "f":
            for lo in range(0, flat.size, 1 << 16):
                flat[lo:lo + (1 << 16)] = rng.standard_normal(min(1 << 16, flat.size - lo))
        elif flat.dtype.kind in "iu" and flat.dtype.itemsize <= 2:
            info = np.iinfo(flat.dtype)
            for lo in range(0, flat.size, 1 << 16):
                n = min(1 << 16, flat.size - lo)
                flat[lo:lo + n] = rng.integers(info.min, int(info.max) + 1, n)
        elif flat.dtype.kind in "iub":
            flat[...] = 0
            flat[::2] = 1
        del view, flat


def _resize(interp, subgraph: int, inputs: list[int], step: dict) -> list[dict]:
    """``ResizeInputTensor(strict=True)`` for each ``{position: shape}`` of ``step``."""
    import numpy as np

    done = []
    for key, shape in step.items():
        pos = int(key)
        if not 0 <= pos < len(inputs):
            raise ValueError(f"no input {pos}; the subgraph has {len(inputs)} inputs")
        dims = np.array([int(s) for s in shape], dtype=np.int32)
        interp._interpreter.ResizeInputTensor(int(inputs[pos]), dims, True, subgraph)
        done.append({"input": int(inputs[pos]), "shape": [int(s) for s in shape]})
    return done


def _check_context(interp, ctx: int, subgraph: int, inputs: list[int]) -> None:
    """The context kept for ``subgraph`` names its inputs as the wrapper does (else the
    delegate's call order was not the subgraph order: an unsupported LiteRT build)."""
    from viewer.runtime._child_structs import _LayoutError, _read_tensors

    tensors = _read_tensors(ctx)
    for t in inputs:
        name = interp._interpreter.TensorName(int(t), subgraph)
        if not 0 <= t < len(tensors) or tensors[t]["name"] != name:
            raise _LayoutError(f"subgraph {subgraph}'s context does not hold its input {t} ({name!r})")


def _read_step(ctx: int, functions, usable_fn, n_model: int | None) -> dict:
    """Tensors, nodes, arena buffer and dynamic tensors of the context ``ctx``, now."""
    from viewer.runtime._child_structs import _read_nodes, _read_tensors

    tensors = _read_tensors(ctx)
    plan, nodes = _read_nodes(ctx, functions)
    arena = [(t["address"], t["bytes"]) for t in tensors
             if t["allocation"] == "arena-rw" and t["address"] and t["bytes"] > 0]
    base = min((a for a, _ in arena), default=None)
    span = (max(a + b for a, b in arena) - base) if arena else 0
    dynamic = [{"id": t["id"], "bytes": t["bytes"], "address": t["address"],
                "usable_bytes": _usable(usable_fn, t["address"], t["bytes"])}
               for t in tensors if t["allocation"] == "dynamic"]
    return {
        "tensors": tensors, "nodes": nodes, "execution_plan": plan,
        "num_model_tensors": n_model,
        "arena_address": base, "arena_span_bytes": span,
        "arena_usable_bytes": _usable(usable_fn, base, span) if base else None,
        "dynamic": dynamic,
    }


def run_session(path: str, subgraph: int, steps: list[dict], emit=None,
                resolver: str = "builtin") -> dict:
    """Run ``steps`` (each ``{input position: shape}``) in one interpreter; see the module doc.

    ``emit(step_answer)`` is called after each step (the CLI child writes it out at once, so
    the harness keeps no step in memory and a crash keeps the steps before it); without it the
    answers are returned under ``"steps"``. ``resolver="default"``: the stock interpreter
    (XNNPACK applied at the first ``AllocateTensors``; the arena read is then LiteRT's CPU arena
    beside the delegate's, whose memory shows only in the process figures).
    """
    import numpy  # noqa: F401  (imported before the baseline, like the runtime itself)
    from ai_edge_litert import interpreter  # noqa: F401

    from viewer.runtime._child import _file_io, _file_mappings, _make_interpreter, _model_tensor_count
    from viewer.runtime._child_proc import _smaps_rollup, _status

    usable_fn = _libc()
    io = _file_io(path, subgraph)
    if io is None:
        raise ValueError(f"no subgraph {subgraph} in the model file")
    inputs, outputs = io
    n_model = _model_tensor_count(path, subgraph)
    pss_before = _smaps_rollup().get("Pss_Anon")
    interp = _make_interpreter(path, resolver)
    n_sub = int(interp._interpreter.NumSubgraphs())
    if not 0 <= subgraph < n_sub:
        raise ValueError(f"no subgraph {subgraph}; the runtime has {n_sub} (0..{n_sub - 1})")
    kept = _keep_contexts(interp)
    contexts = kept["contexts"]
    if len(contexts) != n_sub:
        raise RuntimeError(f"the read-only delegate saw {len(contexts)} of {n_sub} subgraphs")
    ctx = contexts[subgraph]
    _check_context(interp, ctx, subgraph, inputs)
    out_steps: list[dict] = []
    emit = emit or out_steps.append
    for k, step in enumerate(steps):
        _hook(k)
        peak_reset = _reset_peak()
        rss_before = _status().get("VmRSS")
        stage = "ResizeInputTensor"
        try:
            resized = _resize(interp, subgraph, inputs, step)
            stage = "AllocateTensors"
            if subgraph == 0:  # the interpreter's own: applies the default delegates first
                interp._interpreter.AllocateTensors()
            else:
                interp._interpreter.AllocateTensors(subgraph)
            after_alloc = _read_step(ctx, kept["functions"], usable_fn, n_model)
            stage = "Invoke"
            _fill_inputs(interp, subgraph, inputs, seed=k)
            if subgraph == 0:
                interp._interpreter.Invoke()
            else:
                interp._interpreter.Invoke(subgraph)
        except Exception as e:
            msg = " ".join(str(e).split()) or "no message from the runtime"
            emit({"ok": False, "stage": stage,
                  "error": f"{stage} failed: {type(e).__name__}: {msg}"[:400]})
            break
        got = _read_step(ctx, kept["functions"], usable_fn, n_model)
        status = _status()
        got.update({
            "ok": True, "subgraph": subgraph, "resized_inputs": resized, "invoked": True,
            "inputs": inputs, "outputs": outputs, "notes": [],
            "model_file_mappings": _file_mappings(path),
            "arena_span_after_allocate_bytes": after_alloc["arena_span_bytes"],
            "arena_address_after_allocate": after_alloc["arena_address"],
            "arena_usable_after_allocate_bytes": after_alloc["arena_usable_bytes"],
            "pss_anon_bytes": _smaps_rollup().get("Pss_Anon"),
            "rss_before_bytes": rss_before,
            "rss_after_bytes": status.get("VmRSS"),
            "peak_rss_bytes": status.get("VmHWM") if peak_reset else None,
        })
        emit(got)
        del got, after_alloc
    return {"ok": True, "subgraph": subgraph, "resolver": resolver, "pss_anon_before_bytes": pss_before,
            "malloc_usable_size": usable_fn is not None, "steps": out_steps}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="viewer.runtime._session_child")
    p.add_argument("model")
    p.add_argument("--subgraph", type=int, default=0)
    p.add_argument("--steps", required=True, help='JSON list of {"input position": shape}')
    p.add_argument("--resolver", choices=["builtin", "default"], default="builtin")
    p.add_argument("--address-space", type=int, default=0,
                   help="RLIMIT_AS in bytes (0: none), so a step too large fails to allocate "
                        "instead of pushing the machine into swap")
    return p


def _limit(address_space: int) -> None:
    if address_space > 0:
        try:
            import resource
        except ImportError:  # not on this platform
            return
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


def main(argv: list[str] | None = None) -> None:
    out_fd = os.dup(1)
    os.dup2(2, 1)  # LiteRT's INFO lines and kernel prints go to stderr
    args = _parser().parse_args(argv)
    _limit(args.address_space)
    from viewer.runtime._child_structs import _LayoutError

    out = os.fdopen(out_fd, "wb")

    def emit(step: dict) -> None:
        out.write(json.dumps({"step": step}).encode() + b"\n")
        out.flush()

    try:
        answer = run_session(args.model, args.subgraph, json.loads(args.steps), emit, args.resolver)
    except _LayoutError as e:
        answer = {"ok": False, "error": f"unsupported LiteRT build (struct layout check failed: {e})"}
    except Exception as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        answer = {"ok": False, "error": f"{type(e).__name__}: {msg}",
                  "traceback": traceback.format_exc(limit=3)}
    out.write(json.dumps(answer).encode() + b"\n")
    out.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter teardown: a kernel crashing in its destructor is not our answer


if __name__ == "__main__":
    main()
