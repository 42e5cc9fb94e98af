"""The subprocess that runs TFLite Micro: ``python -m viewer.runtime._tflm_child MODEL [options]``.

It writes one JSON object on the original fd 1 and exits 0, also when TFLM refuses the model
(``{"ok": false, "error": ...}``). Everything TFLM prints (``MicroPrintf`` goes to the C
``stdout``) is captured from fds 1 and 2 into a temporary file and parsed.

What is read, and how
---------------------
- ``Interpreter.print_allocations()`` (``RecordingMicroAllocator::PrintAllocations``): head,
  tail and total, and each allocation type's used/requested bytes and count.
- Every buffer the memory planner is given, and the offset it returns: the
  ``GreedyMemoryPlanner`` vtable entries ``Init``, ``AddBuffer`` (both overloads) and
  ``GetOffsetForBuffer`` are pointed at :mod:`ctypes` callbacks that record the call and
  forward it to the original function (the library is linked ``-Bsymbolic``, so only virtual
  calls can be observed, and these are virtual calls from ``MicroAllocator``).
- Every kernel scratch buffer: ``MicroInterpreterContext::RequestScratchBufferInArena``
  (virtual, called by ``TfLiteContext::RequestScratchBufferInArena``), bytes in request order.
  Their operators come from the planner's view: ``CreatePlan`` adds scratch buffers after
  every tensor, each with its operator's allocation scope.

The symbols are looked up by their mangled names in the wrapper's own shared library; when one
is missing (another TFLM build) the hooks are skipped and the JSON says ``hooks: false``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import re
import sys
import tempfile
import traceback

_ADD3 = "_ZN6tflite5micro19GreedyMemoryPlanner9AddBufferEiii"
_ADD4 = "_ZN6tflite5micro19GreedyMemoryPlanner9AddBufferEiiii"
_INIT = "_ZN6tflite5micro19GreedyMemoryPlanner4InitEPhi"
_GET = "_ZN6tflite5micro19GreedyMemoryPlanner18GetOffsetForBufferEiPi"
_REQ = "_ZN6tflite5micro23MicroInterpreterContext27RequestScratchBufferInArenaEmPi"
_VT_GREEDY = "_ZTVN6tflite5micro19GreedyMemoryPlannerE"
_VT_CONTEXT = "_ZTVN6tflite5micro23MicroInterpreterContextE"

#: The largest arena this child tries (bytes).
_MAX_ARENA = 4 << 30

_C_INT = ctypes.c_int
_VP = ctypes.c_void_p
ADD3 = ctypes.CFUNCTYPE(_C_INT, _VP, _C_INT, _C_INT, _C_INT)
ADD4 = ctypes.CFUNCTYPE(_C_INT, _VP, _C_INT, _C_INT, _C_INT, _C_INT)
INIT = ctypes.CFUNCTYPE(_C_INT, _VP, _VP, _C_INT)
GET = ctypes.CFUNCTYPE(_C_INT, _VP, _C_INT, ctypes.POINTER(_C_INT))
REQ = ctypes.CFUNCTYPE(_C_INT, _VP, ctypes.c_size_t, ctypes.POINTER(_C_INT))


class Hooks:
    """Records what the planner and the kernels ask for (see the module docstring)."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.plans: list[dict] = []  # one per Init: buffers [size, first, last, offline], offsets
        self.scratch: list[int] = []
        self._depth = 0
        self._keep = []
        o_add3 = ADD3(self._addr(_ADD3))
        o_add4 = ADD4(self._addr(_ADD4))
        o_init = INIT(self._addr(_INIT))
        o_get = GET(self._addr(_GET))
        o_req = REQ(self._addr(_REQ))

        def h_init(this, p, n):
            self.plans.append({"buffers": [], "offsets": {}})
            return o_init(this, p, n)

        def h_add3(this, s, f, l_):
            if self._depth == 0 and self.plans:
                self.plans[-1]["buffers"].append([s, f, l_, -1])
            return o_add3(this, s, f, l_)

        def h_add4(this, s, f, l_, off):
            if self.plans:
                self.plans[-1]["buffers"].append([s, f, l_, off])
            self._depth += 1
            try:
                return o_add4(this, s, f, l_, off)
            finally:
                self._depth -= 1

        def h_get(this, i, out):
            r = o_get(this, i, out)
            if self.plans:
                self.plans[-1]["offsets"][i] = int(out[0])
            return r

        def h_req(this, nbytes, idx):
            r = o_req(this, nbytes, idx)
            self.scratch.append(int(nbytes))
            return r

        for vt, name, proto, fn in (
            (_VT_GREEDY, _INIT, INIT, h_init), (_VT_GREEDY, _ADD3, ADD3, h_add3),
            (_VT_GREEDY, _ADD4, ADD4, h_add4), (_VT_GREEDY, _GET, GET, h_get),
            (_VT_CONTEXT, _REQ, REQ, h_req),
        ):
            cb = proto(fn)
            self._keep.append(cb)
            self._patch(self._slot(vt, name), cb)

    def _addr(self, name: str) -> int:
        return ctypes.cast(getattr(self.lib, name), _VP).value

    def _slot(self, vtable: str, fname: str) -> int:
        base = ctypes.addressof(_VP.in_dll(self.lib, vtable))
        target = self._addr(fname)
        for i in range(64):
            if _VP.from_address(base + 8 * i).value == target:
                return base + 8 * i
        raise LookupError(f"{fname} not in {vtable}")

    @staticmethod
    def _patch(slot: int, cb) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [_VP, ctypes.c_size_t, _C_INT]
        page = slot & ~(mmap.PAGESIZE - 1)
        if libc.mprotect(page, 2 * mmap.PAGESIZE, 3) != 0:  # PROT_READ | PROT_WRITE
            raise OSError(ctypes.get_errno(), "mprotect")
        _VP.from_address(slot).value = ctypes.cast(cb, _VP).value


_LINE = re.compile(r"\[RecordingMicroAllocator\] Arena allocation (total|head|tail) (\d+) bytes")
_TYPE = re.compile(r"\[RecordingMicroAllocator\] '([^']+)' used (\d+) bytes with alignment overhead "
                   r"\(requested (\d+) bytes for (\d+) ([^)]*)\)")


def parse_allocations(text: str) -> dict:
    """Head/tail/total and the per-type records of ``PrintAllocations``'s output."""
    out: dict = {"allocations": []}
    for m in _LINE.finditer(text):
        out[m.group(1) + "_bytes"] = int(m.group(2))
    for m in _TYPE.finditer(text):
        out["allocations"].append({"type": m.group(1), "used_bytes": int(m.group(2)),
                                   "requested_bytes": int(m.group(3)), "count": int(m.group(4)),
                                   "of": m.group(5).strip()})
    return out


def load_error(text: str, exc: str) -> str:
    """One line: which operator TFLM refused and why, from its own messages."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        m = re.match(r"Node (\S+) \(number (\d+)\) failed to (prepare|invoke) with status", ln)
        if m:
            why = lines[i - 1] if i else "no reason printed"
            why = re.sub(r"^tensorflow/lite/micro/kernels/", "", why)
            return f"operator #{m.group(2)} {m.group(1)} failed to {m.group(3)}: {why}"
        m = re.match(r"Didn't find op for builtin opcode '([^']+)'", ln)
        if m:
            return f"operator {m.group(1)} is not in TFLM's op resolver (no kernel for it)"
        if ln.startswith("Failed to get registration from op code CUSTOM"):
            return "a CUSTOM operator has no TFLM kernel registered (e.g. ethos-u needs an Ethos-U build)"
    tail = lines[-1] if lines else ""
    return f"{exc}" + (f" (last message: {tail})" if tail and tail not in exc else "")


def _write(fd: int, obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--arena", type=int, default=256 << 20)
    ap.add_argument("--invoke-seed", type=int, default=None,
                    help="invoke once on random inputs from this seed and return the outputs")
    ap.add_argument("--no-hooks", action="store_true")
    ap.add_argument("--min-arena", action="store_true",
                    help="also bisect the smallest arena_size TFLM accepts (16-byte aligned array)")
    args = ap.parse_args(argv)
    out_fd = os.dup(1)
    cap = tempfile.TemporaryFile()
    libc = ctypes.CDLL(None)
    os.dup2(cap.fileno(), 1)
    os.dup2(cap.fileno(), 2)
    result: dict = {"ok": False}

    def captured() -> str:
        sys.stdout.flush()
        libc.fflush(None)
        cap.seek(0)
        return cap.read().decode("utf-8", "replace")

    try:
        from tflite_micro import runtime
        from tflite_micro.python.tflite_micro import _runtime

        hooks = None
        if not args.no_hooks:
            try:
                hooks = Hooks(ctypes.CDLL(_runtime.__file__))
            except (AttributeError, LookupError, OSError, ValueError) as e:
                result["hooks_error"] = str(e)
        arena = args.arena
        if hasattr(os, "fork"):
            # A model larger than the arena fails (or crashes TFLM): find, in forks, the first of
            # arena, 4x, 16x ... (up to 4 GiB) it loads with; the real load uses that size.
            n = arena
            while n <= _MAX_ARENA and not _loads_in_fork(runtime, args.model, n):
                n *= 4
            arena = n if n <= _MAX_ARENA else arena
        if hooks is not None:  # only the load below counts
            hooks.plans.clear()
            hooks.scratch.clear()
        try:
            it = runtime.Interpreter.from_file(args.model, arena_size=arena)
        except (RuntimeError, ValueError) as e:
            result["error"] = load_error(captured(), str(e))
            _write(out_fd, result)
            return 0
        result["arena_size_used"] = arena
        cap.seek(0)
        cap.truncate()
        it.print_allocations()
        result.update(parse_allocations(captured()))
        result["ok"] = "head_bytes" in result
        result["hooks"] = hooks is not None
        if hooks is not None:
            plan = hooks.plans[-1] if hooks.plans else {"buffers": [], "offsets": {}}
            result["planner_buffers"] = list(plan["buffers"])
            result["planner_offsets"] = [plan["offsets"].get(i) for i in range(len(plan["buffers"]))]
            result["scratch_bytes"] = list(hooks.scratch)
        if args.min_arena and result["ok"] and hasattr(os, "fork"):
            result["min_arena_bytes"] = _min_arena(runtime, args.model, result["total_bytes"], arena)
            cap.seek(0)
            cap.truncate()
        if args.invoke_seed is not None:
            result["outputs"] = _invoke(it, args.invoke_seed)
    except Exception as e:  # noqa: BLE001 - reported to the parent as one line
        result["ok"] = False
        result["error"] = f"{type(e).__name__}: {e}"
        result["traceback"] = traceback.format_exc()[-2000:]
    _write(out_fd, result)
    return 0


def _loads_in_fork(runtime, path: str, n: int) -> bool:
    """True when the interpreter is built with ``arena_size=n``, tried in a forked process.

    TFLM can crash on an arena too small for its bookkeeping, so each size is tried in a fork.
    """
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            runtime.Interpreter.from_file(path, arena_size=n)
            code = 0
        except BaseException:  # noqa: BLE001 - the exit status is the answer
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _min_arena(runtime, path: str, total: int, upper: int) -> int | None:
    """Smallest ``arena_size`` (bytes) with which the interpreter is built, by bisection.

    ``total`` (head + tail) is the low end: below it the allocator cannot fit what it
    recorded. The wrapper allocates the arena itself (malloc: 16-byte aligned here).
    """
    def loads(n: int) -> bool:
        return _loads_in_fork(runtime, path, n)

    lo, hi = max(total - 1, 0), total
    while not loads(hi):
        lo, hi = hi, hi * 2 + 4096
        if hi > upper:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if loads(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _invoke(it, seed: int) -> list:
    """Fill every input with seeded random values, invoke once, return outputs as hex."""
    import numpy as np

    rng = np.random.default_rng(seed)
    i = 0
    while True:
        try:
            d = it.get_input_details(i)
        except (IndexError, RuntimeError, ValueError):
            break
        dt = np.dtype(d["dtype"])
        shape = tuple(int(s) for s in d["shape"])
        if dt.kind in "iu":
            info = np.iinfo(dt)
            x = rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=shape).astype(dt)
        elif dt.kind == "b":
            x = rng.integers(0, 2, size=shape).astype(dt)
        else:
            x = rng.standard_normal(shape).astype(dt)
        it.set_input(x, i)
        i += 1
    it.invoke()
    outs = []
    k = 0
    while True:
        try:
            o = it.get_output(k)
        except (IndexError, RuntimeError, ValueError):
            break
        outs.append({"dtype": str(o.dtype), "shape": list(o.shape), "hex": np.ascontiguousarray(o).tobytes().hex()})
        k += 1
    return outs


if __name__ == "__main__":
    sys.exit(main())
