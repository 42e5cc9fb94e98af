"""TFLite Micro's own numbers: run its Python interpreter in a subprocess and read them back.

The child (:mod:`viewer.runtime._tflm_child`) builds ``tflite_micro.runtime.Interpreter`` with
the recording allocator (``kAllocationRecording``) and returns head, tail, total, the
per-type allocation records, every buffer the memory planner was given with the offset it
chose, and every kernel scratch buffer (``RequestScratchBufferInArena``). The kernels are
TFLM's *reference* kernels as the ``tflite-micro`` wheel builds them: optimised kernels
(CMSIS-NN, Xtensa) request other scratch sizes.

The ``tflite-micro`` package is optional (``pip install 'arena-viewer[tflm]'``): without it
:func:`tflm_available` is False and callers show planned numbers, "scratch and persistent not
measured".
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from viewer.analysis.tflm import ScratchRequest, scratch_from_planner

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CHILD = "viewer.runtime._tflm_child"
#: The note on every measured number: which kernels were measured.
REFERENCE_KERNELS_NOTE = ("measured with TFLM's reference kernels (tflite-micro wheel); optimised "
                          "kernels (CMSIS-NN, Xtensa) request different scratch")
NOT_MEASURED_NOTE = "scratch and persistent not measured"
#: Bytes of address space the child may take (the arena is malloc'd, most of it never touched).
CHILD_ADDRESS_SPACE = 8 << 30


def tflm_available() -> bool:
    """True when the optional ``tflite-micro`` package is installed."""
    try:
        return importlib.util.find_spec("tflite_micro") is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class TflmMeasurement:
    """What TFLM's recording allocator and planner reported for one model.

    Attributes
    ----------
    ok : bool
    error : str
        One line when not ok (which operator TFLM refused, and why).
    head_bytes, tail_bytes, total_bytes : int
        ``RecordingMicroAllocator``'s arena head (planned tensors and scratch), tail
        (persistent: tensor structs, quantization data, kernels' persistent buffers,
        variables) and their sum, in bytes.
    allocations : tuple of dict
        Per-type records: ``type``, ``used_bytes``, ``requested_bytes``, ``count``, ``of``.
    scratch : tuple of ScratchRequest
        Kernel scratch buffers in request order (bytes as requested).
    planner_buffers : tuple of (size, first scope, last scope, offline offset)
        Every ``AddBuffer`` call; ``planner_offsets`` the offset TFLM chose for each.
    outputs : tuple of dict
        Outputs of one invoke on seeded random inputs, when asked (``dtype``, ``shape``, ``hex``).
    hooks : bool
        The planner's buffers and the scratch requests were read (see the child's docstring).
    min_arena_bytes : int or None
        The smallest ``arena_size`` with which the interpreter is built (bisected), when asked.
    """

    ok: bool
    error: str = ""
    head_bytes: int = 0
    tail_bytes: int = 0
    total_bytes: int = 0
    allocations: tuple = ()
    scratch: tuple[ScratchRequest, ...] = ()
    planner_buffers: tuple = field(default=(), compare=False)
    planner_offsets: tuple = field(default=(), compare=False)
    outputs: tuple = field(default=(), compare=False)
    hooks: bool = False
    min_arena_bytes: int | None = None

    def to_json(self, model=None) -> dict[str, Any]:
        """The JSON ``measure --runtime tflm --json`` prints (sizes in bytes)."""
        def op_name(r):
            try:
                return model.subgraphs[r.subgraph].operators[r.op].op_name
            except (AttributeError, IndexError):
                return None
        return {
            "runtime": "tflm",
            "head_bytes": self.head_bytes, "tail_bytes": self.tail_bytes,
            "total_bytes": self.total_bytes,
            "scratch": [{"operator": r.op, "subgraph": r.subgraph, "op_name": op_name(r),
                         "bytes": r.nbytes} for r in self.scratch],
            "scratch_measured": self.hooks,
            "min_arena_bytes": self.min_arena_bytes,
            "allocations": [dict(a) for a in self.allocations],
            "kernels": "reference",
            "note": REFERENCE_KERNELS_NOTE,
        }


def measure_tflm(model, *, timeout: float = 120.0, invoke_seed: int | None = None,
                 path: str | None = None, min_arena: bool = False) -> TflmMeasurement:
    """Run TFLM on ``model`` (a :class:`viewer.model.types.Model`) in a subprocess.

    Never raises for what the runtime does: a refusal, crash (signal), hang (``timeout``
    seconds) or garbage output becomes ``ok=False`` with one line in ``error``.
    """
    path = path or model.path
    if not tflm_available():
        return TflmMeasurement(False, "the optional 'tflite-micro' package is not installed "
                               "(pip install 'arena-viewer[tflm]'); " + NOT_MEASURED_NOTE)
    args = [os.path.abspath(path)]
    if invoke_seed is not None:
        args += ["--invoke-seed", str(int(invoke_seed))]
    if min_arena:
        args.append("--min-arena")
    raw = _run(args, path, timeout)
    if not raw.get("ok"):
        err = raw.get("error") or "TFLM gave no answer"
        m = re.search(r"operator #(\d+) (\S+) failed to", err)
        g = model.subgraphs[0] if model.subgraphs else None
        if m and g is not None and int(m.group(1)) < len(g.operators):
            op = g.operators[int(m.group(1))]
            dts = [g.tensors[t].dtype for t in op.inputs if 0 <= t < len(g.tensors)]
            if dts:
                err += f" (its inputs are {', '.join(dts)})"
        if "CUSTOM operator" in err:
            customs = sorted({op.op_name for g in model.subgraphs for op in g.operators if op.is_custom})
            if customs:
                err += f"; the model's custom operators: {', '.join(customs)}"
        return TflmMeasurement(False, err)
    scratch: tuple[ScratchRequest, ...] = ()
    hooks = bool(raw.get("hooks"))
    try:
        if hooks:
            scratch = scratch_from_planner(model, raw.get("scratch_bytes", []), raw.get("planner_buffers", []))
    except ValueError as e:
        hooks = False
        scratch = ()
        raw.setdefault("hooks_error", str(e))
    head = int(raw.get("head_bytes", 0))
    tail = int(raw.get("tail_bytes", 0))
    return TflmMeasurement(
        True, "", head, tail, int(raw.get("total_bytes", head + tail)),
        tuple(raw.get("allocations", ())), scratch,
        tuple(tuple(b) for b in raw.get("planner_buffers", ())),
        tuple(raw.get("planner_offsets", ())), tuple(raw.get("outputs", ())), hooks,
        raw.get("min_arena_bytes"),
    )


def _limit():  # runs in the child before exec
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))
    except (ValueError, OSError):
        pass


def _run(args: list[str], path: str, timeout: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", _CHILD, *args]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              env=env, cwd=_ROOT, preexec_fn=_limit if os.name == "posix" else None)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"{path}: TFLM did not finish within {timeout:g} s (hang?); "
                "the process was killed"}
    except OSError as e:
        return {"ok": False, "error": f"{path}: could not start the TFLM process: {e}"}
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        what = "aborted" if name == "SIGABRT" else "crashed"
        return {"ok": False, "error": f"{path}: TFLM {what} ({name}) while loading the model to "
                "measure it, so its scratch and tail cannot be told"}
    try:
        out = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        if not isinstance(out, dict):
            raise ValueError
    except (ValueError, IndexError):
        return {"ok": False, "error": f"{path}: the TFLM process exited with status "
                f"{proc.returncode} without an answer"}
    if not out.get("ok"):
        msg = " ".join(str(out.get("error", "unknown error")).split())
        out["error"] = f"{path}: TFLM cannot load it: " + (msg if len(msg) <= 300 else msg[:297] + "...")
    return out
