"""A session measured: one LiteRT interpreter run through a sequence of input shapes.

:func:`measure_session` starts ``python -m viewer.runtime._session_child`` (one fresh process,
one interpreter for every step, as an application serving inputs of changing size keeps one)
and returns, per step, the probe of the subgraph after that step's ``Invoke``
(:class:`~viewer.runtime.probe_types.RuntimeProbe`, so our planner can be replayed on it) and
what the arena's buffer, the dynamic tensors and the process held then.

What LiteRT does across steps (tflite/simple_memory_arena.cc, arena_planner.cc, core/subgraph.cc):
a resize makes the subgraph uninvokable; ``AllocateTensors`` clears the plan
(``ArenaPlanner::ResetAllocations`` -> ``SimpleMemoryArena::ClearPlan``: the high-water mark
back to 0) and plans again; ``Commit`` calls ``ResizableAlignedBuffer::Resize(high_water_mark)``,
which returns at once when the new size is not larger ("Skip reallocation when resizing down")
and otherwise allocates a new block (``aligned_alloc``), copies the old contents and frees the
old block. So the buffer is the largest plan seen so far and never shrinks; while it grows the
old and new blocks are both allocated. Dynamic tensors (``kTfLiteDynamic``) are malloc'd by
``TfLiteTensorRealloc`` when a kernel resizes them, outside the arena.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from viewer.errors import RuntimeProbeError
from viewer.runtime._probe_json import probe_from_json
from viewer.runtime.probe import display_path, model_file_error, runtime_path
from viewer.runtime.probe_types import RuntimeProbe

_CHILD = "viewer.runtime._session_child"

#: The session child's address-space limit (RLIMIT_AS) by default: a step whose arena does not
#: fit fails to allocate (the session stops there) instead of driving the machine into swap.
DEFAULT_ADDRESS_SPACE = 8 << 30


@dataclass(frozen=True)
class DynamicTensor:
    """A ``kTfLiteDynamic`` tensor after a step.

    Attributes
    ----------
    id : int
        Runtime tensor index.
    nbytes : int
        ``TfLiteTensor.bytes`` now.
    held_bytes : int or None
        ``malloc_usable_size`` of its block (LiteRT keeps a larger block when a tensor shrinks);
        None when it has no block or the size could not be read.
    """

    id: int
    nbytes: int
    held_bytes: int | None


@dataclass(frozen=True)
class MeasuredStep:
    """What one step of the session left in the interpreter and the process.

    Attributes
    ----------
    index : int
        Step position, from 0.
    shapes : tuple of (int, tuple of int)
        (input tensor id, shape) resized before the step's ``AllocateTensors``.
    probe : RuntimeProbe
        The subgraph after the step's ``Invoke`` (offsets from the buffer's start).
    needed_bytes : int
        The arena this step's plan uses: max(offset + bytes) over arena tensors (LiteRT's
        ``SimpleMemoryArena`` high-water mark of the plan), bytes.
    needed_after_allocate_bytes : int
        The same read after ``AllocateTensors`` and before ``Invoke`` (smaller when LiteRT
        defers tensors to ``Invoke``).
    held_bytes : int or None
        ``malloc_usable_size`` of the arena's buffer (its block: the largest plan so far, as
        the allocator rounded it); None when not readable.
    buffer_address : int or None
        Address of the buffer's start in the child (only compared between steps).
    held_after_allocate_bytes, buffer_address_after_allocate : int or None
        The same two read after ``AllocateTensors``, before ``Invoke`` (they differ from the
        figures above when ``Invoke`` planned deferred tensors and grew the buffer).
    dynamic : tuple of DynamicTensor
    pss_anon_bytes : int or None
        The process's ``Pss_Anon`` after the step.
    rss_before_bytes, rss_after_bytes, peak_rss_bytes : int or None
        ``VmRSS`` before and after the step, and the step's peak ``VmHWM`` (reset before it).
    """

    index: int
    shapes: tuple[tuple[int, tuple[int, ...]], ...]
    probe: RuntimeProbe
    needed_bytes: int
    needed_after_allocate_bytes: int
    held_bytes: int | None
    buffer_address: int | None
    held_after_allocate_bytes: int | None = None
    buffer_address_after_allocate: int | None = None
    dynamic: tuple[DynamicTensor, ...] = ()
    pss_anon_bytes: int | None = None
    rss_before_bytes: int | None = None
    rss_after_bytes: int | None = None
    peak_rss_bytes: int | None = None

    @property
    def dynamic_held_bytes(self) -> int:
        """Bytes the dynamic tensors' blocks hold (usable size, else ``bytes``)."""
        return sum(d.held_bytes if d.held_bytes is not None else d.nbytes for d in self.dynamic)

    @property
    def peak_above_end_bytes(self) -> int | None:
        """How far the step's peak RSS rose above its RSS at the end (the buffer copied while
        it grows shows here), bytes; None when not measured."""
        if self.peak_rss_bytes is None or self.rss_after_bytes is None:
            return None
        return max(0, self.peak_rss_bytes - self.rss_after_bytes)


@dataclass(frozen=True)
class SessionRun:
    """A measured session.

    Attributes
    ----------
    path : str
    subgraph : int
    ok : bool
        False when the process failed before any step (``error`` says why).
    error : str
        One line naming the file ("" when ``ok``); also set, with ``ok`` True, when a step
        failed (``failed_step``): the steps before it are in ``steps``.
    steps : tuple of MeasuredStep
    failed_step : int or None
        Index of the step the runtime refused (the session stopped there).
    pss_anon_before_bytes : int or None
        ``Pss_Anon`` just before the interpreter was built (numpy and LiteRT imported).
    """

    path: str
    subgraph: int = 0
    ok: bool = True
    error: str = ""
    steps: tuple[MeasuredStep, ...] = ()
    failed_step: int | None = None
    pss_anon_before_bytes: int | None = None
    notes: tuple[str, ...] = field(default=())
    #: ``builtin`` (no default delegates, our planner's configuration) or ``default`` (XNNPACK).
    resolver: str = "builtin"


def _env() -> dict[str, str]:
    from viewer.runtime.probe import _ROOT

    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _run(args: list[str], shown: str, timeout: float) -> dict:
    """Run the session child; its JSON answer, or ``{"ok": False, "error": one line}``."""
    from viewer.runtime.probe import _launch

    what = "running the session"
    proc, failed = _launch(_CHILD, args, shown, timeout, what, env=_env())
    if failed is not None:
        return failed
    steps, out = [], None
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        try:
            got = json.loads(line)
        except ValueError:
            continue
        if isinstance(got, dict) and isinstance(got.get("step"), dict):
            steps.append(got["step"])
        elif isinstance(got, dict):
            out = got
    if proc.returncode < 0 or out is None:
        if proc.returncode < 0:
            import signal

            try:
                name = signal.Signals(-proc.returncode).name
            except ValueError:
                name = f"signal {-proc.returncode}"
            why = f"the LiteRT runtime crashed ({name}) while {what}"
        else:
            why = f"the LiteRT process exited with status {proc.returncode} without an answer while {what}"
        if not steps:
            return {"ok": False, "error": f"{shown}: {why}"}
        # the steps before the crash stand; the step it crashed in is the refused one
        return {"ok": True, "steps": steps + [{"ok": False, "error": why}], "crashed": True}
    if steps or "steps" not in out:
        out["steps"] = steps
    if not out.get("ok"):
        msg = " ".join(str(out.get("error", "unknown error")).split())[:300]
        out["error"] = f"{shown}: LiteRT failed while {what}: {msg}"
    return out


def _step(path: str, subgraph: int, k: int, raw: dict) -> MeasuredStep:
    probe = probe_from_json(path, raw, subgraph)
    dynamic = tuple(DynamicTensor(int(d["id"]), int(d["bytes"]),
                                  None if d.get("usable_bytes") is None else int(d["usable_bytes"]))
                    for d in raw.get("dynamic", ()))

    def opt(key):
        v = raw.get(key)
        return None if v is None else int(v)

    return MeasuredStep(
        k, tuple((int(r["input"]), tuple(int(s) for s in r["shape"])) for r in raw.get("resized_inputs", ())),
        probe, int(raw.get("arena_span_bytes") or 0),
        int(raw.get("arena_span_after_allocate_bytes") or 0), opt("arena_usable_bytes"),
        opt("arena_address"), opt("arena_usable_after_allocate_bytes"),
        opt("arena_address_after_allocate"), dynamic, opt("pss_anon_bytes"), opt("rss_before_bytes"),
        opt("rss_after_bytes"), opt("peak_rss_bytes"),
    )


def measure_session(
    path: str | os.PathLike,
    steps: Sequence[Mapping[int, Sequence[int]]],
    subgraph: int = 0,
    timeout: float = 120.0,
    *,
    check: bool = False,
    address_space: int = DEFAULT_ADDRESS_SPACE,
    resolver: str = "builtin",
) -> SessionRun:
    """Run ``steps`` in one LiteRT interpreter of ``path`` and read the arena after each.

    Parameters
    ----------
    path : str or PathLike
        A .tflite model.
    steps : sequence of mapping
        One ``{input position (among the subgraph's inputs, as in the file): shape}`` per step;
        each shape is applied with ``ResizeInputTensor(strict=True)`` (only the file's -1
        dimensions may change), then ``AllocateTensors`` and one ``Invoke`` on synthetic values.
    subgraph : int
        The subgraph run (a signature's: its own runner's arena; 0 is the interpreter's own).
    timeout : float
        Seconds for the whole session before the process is killed.
    check : bool
        Raise instead of returning ``ok=False``.
    address_space : int
        Bytes of address space the LiteRT process may map (``RLIMIT_AS``; 0: no limit). A step
        needing more fails to allocate and ends the session there, saying so.
    resolver : str
        ``builtin`` (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) or ``default`` (the stock
        interpreter: XNNPACK applied at the first ``AllocateTensors``).

    Returns
    -------
    SessionRun
        A step the runtime refuses ends the session there (``failed_step``, ``error``).

    Raises
    ------
    viewer.errors.RuntimeProbeError
        Only with ``check=True``: the process failed, crashed or timed out.
    """
    path = str(path)
    shown = display_path(path)
    bad = model_file_error(path)
    if bad is not None:
        run = SessionRun(path, subgraph, ok=False, error=display_path(bad))
    else:
        spec = json.dumps([{str(int(k)): [int(s) for s in v] for k, v in st.items()} for st in steps])
        with runtime_path(path) as child_path:
            raw = _run([child_path, "--subgraph", str(int(subgraph)), "--steps", spec,
                        "--address-space", str(int(address_space)), "--resolver", resolver],
                       shown, timeout)
        run = dataclasses.replace(_session_from_json(path, subgraph, raw, shown, address_space),
                                  resolver=resolver)
    if check and not run.ok:
        raise RuntimeProbeError(run.error)
    return run


def _session_from_json(path: str, subgraph: int, raw: dict, shown: str,
                       address_space: int = 0) -> SessionRun:
    if not raw.get("ok"):
        return SessionRun(path, subgraph, ok=False, error=str(raw.get("error")))
    steps, failed, error = [], None, ""
    for k, s in enumerate(raw.get("steps", ())):
        if not s.get("ok"):
            failed = k
            msg = " ".join(str(s.get("error", "unknown error")).split())[:300]
            error = f"{shown}: LiteRT refused step {k + 1}: {msg}"
            if address_space and (s.get("stage") == "AllocateTensors" or "memory" in msg.lower()):
                from viewer.units import format_bytes

                error += (f" (if it ran out of memory: the LiteRT process may map "
                          f"{format_bytes(address_space)}, --memory-limit SIZE raises it)")
            break
        steps.append(_step(path, subgraph, k, s))
    notes = () if raw.get("malloc_usable_size") else (
        "malloc_usable_size is not available here: the buffers' held sizes were not read",)
    if raw.get("crashed"):
        notes = notes + ("the process's figures before the crash are kept; the interpreter is gone",)
    before = raw.get("pss_anon_before_bytes")
    return SessionRun(path, subgraph, True, error, tuple(steps), failed,
                      None if before is None else int(before), notes)
