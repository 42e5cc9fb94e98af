"""Ground truth from the real runtime: run LiteRT in a subprocess and read where it put every tensor.

:func:`probe_model` starts ``python -m viewer.runtime._child probe MODEL`` with a timeout; the
child builds LiteRT's ``Interpreter`` (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``: no XNNPACK, so the
arena is LiteRT's own ``ArenaPlanner``'s), optionally resizes inputs, calls
``allocate_tensors()`` and reports every tensor's shape, dtype, bytes, allocation type and data
pointer, plus each node's temporaries. A segfault, a hang or an exception in the runtime never
reaches the caller: it becomes ``RuntimeProbe(ok=False, error=...)`` (or
:class:`~viewer.errors.RuntimeProbeError` with ``check=True``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from viewer.runtime.spawn import child_command
from viewer.errors import RuntimeProbeError
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan
from viewer.runtime._probe_json import probe_from_json  # noqa: F401,E402  (re-exported)
from viewer.runtime.probe_types import (  # noqa: F401,E402  (re-exported)
    REGION_ARENA, REGION_DYNAMIC, REGION_MODEL_FILE, REGION_NONE, REGION_OTHER,
    REGION_PERSISTENT, REGION_PERSISTENT_ARENA, REGION_READ_ONLY, ProbeTotals, RuntimeNode,
    RuntimeProbe, RuntimeTensor,
)

MEASURED_PLANNER = "litert_measured"
_CHILD = "viewer.runtime._child"
_ROOT = str(Path(__file__).resolve().parents[2])


def _child_env() -> dict[str, str]:
    """The runtime child's environment: ours, the package importable, TensorFlow's INFO off."""
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _launch(child: str, args: list[str], shown: str, timeout: float, what: str,
            env: dict[str, str] | None = None):
    """Run runtime child module ``child`` with ``args`` to its end (at most ``timeout`` s).

    Returns
    -------
    (subprocess.CompletedProcess, None) or (None, dict)
        The finished process, or the ``{"ok": False, "error": one line}`` answer when it timed
        out (killed) or could not start. ``env`` defaults to :func:`_child_env`.
    """
    try:
        proc = subprocess.run(child_command(child, *args), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout,
                              env=_child_env() if env is None else env, cwd=_ROOT)
    except subprocess.TimeoutExpired:
        return None, {"ok": False, "error": f"{shown}: LiteRT did not finish {what} within "
                      f"{timeout:g} s (hang?); the runtime process was killed"}
    except OSError as e:
        return None, {"ok": False, "error": f"{shown}: could not start the LiteRT process: {e}"}
    return proc, None


def _run_child(args: list[str], path: str, timeout: float, what: str) -> dict:
    """Run the child with ``args``; return its JSON or a dict with ``ok: False`` and one line."""
    proc, failed = _launch(_CHILD, args, path, timeout, what)
    if failed is not None:
        return failed
    tail = _last_line(proc.stderr)
    if proc.returncode < 0:
        return _crashed(path, -proc.returncode, tail, what)
    try:
        out = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        if not isinstance(out, dict):
            raise ValueError("not an object")
    except (ValueError, IndexError):
        return {"ok": False, "error": f"{path}: the LiteRT process exited with status "
                f"{proc.returncode} without an answer while {what}"
                + (f"; last message: {tail}" if tail else "")}
    return _answered(out, path, what)


def _crashed(path: str, sig: int, tail: str, what: str) -> dict:
    """The answer for a child killed by signal ``sig``: one line naming the signal."""
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    return {"ok": False, "error": f"{path}: the LiteRT runtime crashed ({name}) while {what}"
            + (f"; last message: {tail}" if tail else ""),
            "signal": name}


def _answered(out: dict, path: str, what: str) -> dict:
    """The child's JSON answer, its error (if any) made one line naming the file."""
    if not out.get("ok"):
        msg = " ".join(str(out.get("error", "unknown error")).split())
        if len(msg) > 300:
            msg = msg[:297] + "..."
        out["error"] = f"{path}: LiteRT failed while {what}: {msg}"
    return out


def model_file_error(path: str) -> str | None:
    """One line saying why ``path`` cannot be handed to the runtime, or None when it can.

    A missing path says "no such model file"; a directory says "is a directory".
    """
    if os.path.isdir(path):
        return f"{path}: is a directory, not a .tflite model file"
    if not os.path.isfile(path):
        return f"{path}: no such model file"
    return None


@contextlib.contextmanager
def runtime_path(path: str):
    """The path to hand to the runtime's child process: absolute, and UTF-8.

    The child runs in the project's root directory, so a relative path is made absolute
    against the caller's working directory. LiteRT's Python binding takes only UTF-8 file
    names; a name that is not (e.g. bytes ``0xff`` kept by Python as a surrogate) is reached
    through a symbolic link with an ASCII name in a temporary directory, removed afterwards.
    """
    full = os.path.abspath(path)
    try:
        os.path.realpath(full).encode("utf-8")
    except UnicodeEncodeError:
        # A hard link keeps the file (and its page cache) the same; a copy when the temporary
        # directory is on another file system. Not a symbolic link: the child reads the model's
        # mapping back from /proc/self/maps, which names the link's target.
        with tempfile.TemporaryDirectory(prefix="arena-viewer-") as tmp:
            link = os.path.join(tmp, "model.tflite")
            try:
                try:
                    os.link(full, link)
                except OSError:
                    shutil.copyfile(full, link)
            except OSError as e:
                raise RuntimeProbeError(
                    f"{display_path(path)}: the file name is not valid UTF-8, which LiteRT cannot "
                    f"open, and no temporary copy could be made ({e.strerror or e}); rename the file"
                ) from None
            yield link
        return
    yield full


def display_path(path: str) -> str:
    """``path`` printable on any stream: bytes that are not UTF-8 become U+FFFD."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _last_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("INFO:")]
    s = lines[-1] if lines else ""
    return s if len(s) <= 200 else s[:197] + "..."


def _shape_arg(input_shapes: Mapping[str | int, Sequence[int]] | None) -> str:
    if not input_shapes:
        return "{}"
    return json.dumps({str(k): [int(s) for s in v] for k, v in input_shapes.items()})


def probe_model(
    path: str | os.PathLike,
    subgraph: int = 0,
    input_shapes: Mapping[str | int, Sequence[int]] | None = None,
    timeout: float = 60.0,
    *,
    check: bool = False,
    invoke: bool | str = "auto",
    runner=None,
    overhead: bool = False,
) -> RuntimeProbe:
    """Run LiteRT on ``path`` in a subprocess and read back its tensor arena.

    Parameters
    ----------
    path : str or PathLike
        A .tflite model.
    subgraph : int
        Subgraph to read (0, the main one; others are read only after LiteRT prepared them,
        i.e. when a control-flow operator of subgraph 0 calls them).
    input_shapes : mapping, optional
        ``{input position (int) or tensor name: shape}``, applied with
        ``resize_tensor_input`` before ``allocate_tensors()``.
    timeout : float
        Seconds before the runtime process is killed.
    check : bool
        Raise instead of returning a probe with ``ok=False``.
    invoke : bool or "auto"
        Run one invocation on synthetic inputs before reading, so that a graph with dynamic
        tensors has its whole arena placed (see :attr:`RuntimeProbe.deferred`). ``"auto"``
        (the default) invokes only when ``allocate_tensors()`` left model tensors without
        memory; :attr:`RuntimeProbe.invoke_reason` then says so. LiteRT's arena only grows
        during ``Invoke`` (tflite/core/subgraph.cc), so the arena read after it is the one the
        device must hold.
    runner : callable, optional
        ``runner(child_args, shown_path, timeout, what) -> dict``, the child's JSON answer:
        :func:`_run_child` (a fresh process, the default) or a resident worker's
        (:mod:`viewer.runtime.worker`), which answers the same arguments the same way.
    overhead : bool
        Also measure the runtime overhead in the probe's own process
        (:class:`viewer.runtime._child_overhead.Meter`: Pss_Anon growth from before the
        interpreter is built to after allocate_tensors() and one Invoke on synthetic inputs);
        only for subgraph 0 at the file's shapes with ``invoke="auto"``, in a process that built
        no interpreter before. :attr:`RuntimeProbe.overhead_grown_bytes` holds the figure,
        ``overhead_error`` why there is none. The tensors are then read after that Invoke.

    Returns
    -------
    RuntimeProbe
        Offsets are bytes from the arena's lowest address; temporaries are attributed to the
        operator whose ``TfLiteNode.temporaries`` lists them (exact, read from the runtime).

    Raises
    ------
    viewer.errors.RuntimeProbeError
        Only with ``check=True``: the runtime failed, crashed (e.g. SIGSEGV) or timed out.
    """
    path = str(path)
    bad = model_file_error(path)
    if bad is not None:
        bad = display_path(bad)
        probe = RuntimeProbe(path, subgraph, ok=False, error=bad)
        return probe.check() if check else probe
    shown = display_path(path)
    with runtime_path(path) as child_path:
        args = ["probe", child_path, "--subgraph", str(int(subgraph)), "--input-shapes",
                _shape_arg(input_shapes)]
        mode = "auto" if invoke == "auto" else ("always" if invoke else "never")
        args += ["--invoke", mode, "--packed"] + (["--overhead"] if overhead else [])
        raw = (runner or _run_child)(args, shown, timeout, "allocating tensors"
                                     + {"auto": "", "always": " and invoking", "never": ""}[mode])
    probe = probe_from_json(path, raw, subgraph)
    if invoke == "auto" and probe.ok and probe.deferred and not probe.invoked and not probe.invoke_error:
        # The child's own test missed them (e.g. a subgraph's 0-d tensors): invoke once.
        again = probe_model(path, subgraph, input_shapes, timeout, invoke=True, runner=runner)
        if again.ok:
            probe = dataclasses.replace(again, deferred_count=len(probe.deferred), invoke_reason=(
                f"{len(probe.deferred)} tensor(s) had no memory after allocate_tensors() "
                f"(e.g. {list(probe.deferred[:5])}): LiteRT sizes and places them during Invoke"))
    return probe.check() if check else probe


def probe_totals(
    path: str | os.PathLike,
    input_shapes: Mapping[str | int, Sequence[int]] | None = None,
    timeout: float = 60.0,
    *,
    runner=None,
) -> ProbeTotals:
    """Subgraph 0 allocated by LiteRT at ``input_shapes``, answered as the footprint's totals.

    The same allocation as :func:`probe_model` with ``invoke="auto"`` where nothing is deferred
    (``BUILTIN_WITHOUT_DEFAULT_DELEGATES``, ``resize_tensor_input`` then
    ``allocate_tensors()``), without the read-only delegate and without a record per tensor or
    node: at 100k operators a few hundred bytes instead of a 32 MB answer. For a figure that
    needs no layout (``check``'s footprint at the next batch).

    Returns
    -------
    ProbeTotals
        ``ok=False`` with one line when the runtime failed, crashed or timed out (never
        raises for those). ``unplaced`` not 0: tensors were deferred to Invoke, and only
        :func:`probe_model` (which invokes once) can say what they need.
    """
    path = str(path)
    bad = model_file_error(path)
    if bad is not None:
        return ProbeTotals(path, ok=False, error=display_path(bad))
    with runtime_path(path) as child_path:
        args = ["probe", child_path, "--subgraph", "0", "--input-shapes", _shape_arg(input_shapes),
                "--totals"]
        raw = (runner or _run_child)(args, display_path(path), timeout, "allocating tensors")
    if not raw.get("ok"):
        return ProbeTotals(path, ok=False, error=str(raw.get("error", f"{path}: failed")))
    t = raw["totals"]
    return ProbeTotals(
        path, True, "", int(t["arena_bytes"]), int(t["persistent_bytes"]), int(t["dynamic_bytes"]),
        int(t["unplaced"]), raw.get("num_model_tensors"),
        tuple((int(r["input"]), tuple(int(s) for s in r["shape"])) for r in raw.get("resized_inputs", ())),
    )


def measured_plan(probe: RuntimeProbe) -> Plan:
    """The runtime's own placement as a :class:`~viewer.planning.types.Plan`.

    Returns
    -------
    Plan
        Planner ``"litert_measured"``; ``offsets`` for every arena tensor with bytes (model
        tensors and kernel temporaries, in-place aliases included); ``arena_bytes`` is the
        runtime's arena span.

    Raises
    ------
    viewer.errors.RuntimeProbeError
        When the probe failed.
    """
    probe.check()
    return Plan(
        MEASURED_PLANNER, probe.offsets, int(probe.arena_bytes or 0), DEFAULT_ALIGNMENT,
        stats={"source": "LiteRT runtime (allocate_tensors, BUILTIN_WITHOUT_DEFAULT_DELEGATES)"},
    )


def runtime_subgraph(model, probe: RuntimeProbe):
    """The model's subgraph with the runtime's shapes and bytes (dynamic dims resolved).

    Parameters
    ----------
    model : viewer.model.types.Model
    probe : RuntimeProbe
        Of the same file and subgraph.

    Returns
    -------
    viewer.model.types.Subgraph
        Tensors whose runtime shape is known get that shape and ``TfLiteTensor.bytes``.

    Raises
    ------
    viewer.errors.RuntimeProbeError
        When the probe failed or does not match the model (tensor count).
    """
    from viewer.model.types import FLAG_DYNAMIC, replaced

    probe.check()
    sg = model.subgraph(probe.subgraph)
    if probe.num_model_tensors is not None and probe.num_model_tensors != len(sg.tensors):
        raise RuntimeProbeError(
            f"{probe.path}: the runtime has {probe.num_model_tensors} model tensors in subgraph "
            f"{probe.subgraph}, the model file {len(sg.tensors)}"
        )
    tensors = []
    for t in sg.tensors:
        rt = probe.tensors[t.index] if t.index < len(probe.tensors) else None
        if rt is None or rt.shape is None or t.is_constant:
            tensors.append(t)
            continue
        if rt.shape == t.shape and rt.nbytes == t.nbytes and FLAG_DYNAMIC not in t.flags:
            tensors.append(t)  # unchanged: the same record (100k copies cost ~0.3 s)
            continue
        tensors.append(replaced(t, shape=rt.shape, nbytes=rt.nbytes, flags=t.flags - {FLAG_DYNAMIC}))
    return dataclasses.replace(sg, tensors=tuple(tensors))


def probe_analysis(model, probe: RuntimeProbe):
    """The analysis input the runtime implies: runtime shapes plus its kernel temporaries.

    Returns
    -------
    viewer.analysis.types.Analysis
        ``analyze(runtime_subgraph(model, probe), temporaries=probe.arena_temporaries,
        model=model)`` (the model lets WHILE see its body subgraph).

    Raises
    ------
    viewer.errors.RuntimeProbeError
    """
    from viewer.analysis.intervals import analyze

    return analyze(runtime_subgraph(model, probe), temporaries=probe.arena_temporaries,
                   model=model)
