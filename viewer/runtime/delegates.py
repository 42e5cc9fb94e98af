"""A model's memory under a delegate, measured in a fresh LiteRT process.

A delegate (XNNPACK, LiteRT's default CPU delegate; a GPU or NPU delegate loaded from a shared
library) takes partitions of the graph. LiteRT then keeps in its CPU arena only the tensors the
remaining execution nodes touch (``Subgraph::ReplaceNodeSubsetsWithDelegateKernels`` replaces
each partition by one kernel node; ``ArenaPlanner::PlanAllocations`` walks the execution nodes
only), and the delegate holds its own buffers beside it: packed weights, workspace, runtime.

:func:`measure_delegate` runs :mod:`viewer.runtime._delegate_child` for a
:class:`DelegateSpec` and returns a :class:`DelegateMeasurement`: the CPU arena (the span of the
arena tensors' data pointers), the tensors left without CPU memory, and ``Pss_Anon``
(``/proc/self/smaps_rollup``) before the interpreter, after ``allocate_tensors()`` and after one
Invoke. The accounting (named terms) is :mod:`viewer.whatif.delegate_terms`'s.

A library that is missing or that LiteRT cannot load as a delegate raises
:class:`DelegateLoadError` (one line naming the library), never a traceback.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Mapping

from viewer.errors import RuntimeProbeError
from viewer.runtime.probe import (_answered, _launch, _crashed, _last_line, display_path,
                                  model_file_error, runtime_path)

_CHILD = "viewer.runtime._delegate_child"

#: Delegate kinds: LiteRT's builtin kernels only, XNNPACK (the stock interpreter's default
#: delegate), or a delegate library given by path (``load_delegate``).
KINDS = ("none", "xnnpack", "external")


class DelegateLoadError(RuntimeProbeError):
    """A delegate library that is missing or that LiteRT could not load as a delegate."""


@dataclass(frozen=True)
class DelegateSpec:
    """Which delegate to measure.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    library : str
        Path of the delegate's shared library (``kind == "external"``), else "".
    options : tuple of (str, str)
        ``load_delegate`` options, in the order given.
    """

    kind: str
    library: str = ""
    options: tuple = ()

    @property
    def name(self) -> str:
        """Short name for term labels: "XNNPACK", the library's file name, or "no delegate"."""
        if self.kind == "xnnpack":
            return "XNNPACK"
        if self.kind == "external":
            return os.path.basename(self.library) or self.library
        return "no delegate"

    @property
    def configuration(self) -> str:
        """The configuration as a verdict's ``configuration:`` line names it."""
        if self.kind == "xnnpack":
            return "LiteRT with XNNPACK (its default delegate, OpResolverType.AUTO)"
        if self.kind == "external":
            opts = ", ".join(f"{k}={v}" for k, v in self.options)
            return (f"LiteRT with the delegate {self.library} (load_delegate"
                    + (f", options {opts}" if opts else "") + "; no default delegate)")
        return "LiteRT without default delegates (XNNPACK off)"


def library_error(library: str) -> str | None:
    """One line saying why ``library`` cannot be a delegate library before any work, or None."""
    if not library:
        return "--delegate-library: give the path of the delegate's shared library (.so)"
    if os.path.isdir(library):
        return f"{library}: is a directory, not a delegate library (.so)"
    if not os.path.isfile(library):
        return f"{library}: no such delegate library"
    return None


@dataclass(frozen=True)
class DelegateMeasurement:
    """One interpreter under a delegate, as its fresh process measured it. Sizes in bytes.

    Attributes
    ----------
    spec : DelegateSpec
    pss_before, pss_after_setup, pss_after_invoke : int or None
        ``Pss_Anon`` before the interpreter was built (numpy, LiteRT imported, synthetic inputs
        built; for an external delegate before ``load_delegate``), after ``allocate_tensors()``,
        after the inputs were set and one Invoke ran. None off Linux.
    arena_bytes : int
        The CPU tensor arena: span of the ``kTfLiteArenaRw`` tensors' data pointers.
    arena_tensors : int
        Tensors in that span.
    without_memory : tuple of int
        ``kTfLiteArenaRw`` tensors with bytes but no data pointer: inside a delegated partition.
    without_memory_bytes : int
    persistent_bytes : int
        Persistent CPU tensors with memory (persistent arena, prepare-time outputs, dynamic).
    nodes, delegate_kernels, cpu_nodes, model_operators, delegated_operators : int or None
        The execution plan: its nodes, those that are delegate kernels (one per partition), the
        rest (LiteRT's CPU kernels), the model's operators and how many the delegate took.
        None when the plan could not be read (``notes`` says why).
    notes : tuple of str
    arena_ids, persistent_ids : tuple of int
        Tensor indices in the CPU arena's span, and the persistent ones with memory.
    """

    spec: DelegateSpec
    pss_before: int | None
    pss_after_setup: int | None
    pss_after_invoke: int | None
    arena_bytes: int
    arena_tensors: int
    without_memory: tuple = ()
    without_memory_bytes: int = 0
    persistent_bytes: int = 0
    nodes: int | None = None
    delegate_kernels: int | None = None
    cpu_nodes: int | None = None
    model_operators: int | None = None
    delegated_operators: int | None = None
    notes: tuple = field(default=(), compare=False)
    arena_ids: tuple = field(default=(), compare=False)
    persistent_ids: tuple = field(default=(), compare=False)

    @property
    def measured(self) -> bool:
        """True when all three Pss_Anon figures were read."""
        return None not in (self.pss_before, self.pss_after_setup, self.pss_after_invoke)

    @property
    def setup_growth(self) -> int | None:
        """Pss_Anon growth from before the interpreter to after ``allocate_tensors()``."""
        return None if not self.measured else int(self.pss_after_setup - self.pss_before)

    @property
    def invoke_growth(self) -> int | None:
        """Pss_Anon growth over setting the inputs and the first Invoke."""
        return None if not self.measured else int(self.pss_after_invoke - self.pss_after_setup)

    @property
    def total_growth(self) -> int | None:
        """Pss_Anon growth of the whole interpreter (setup + first Invoke)."""
        return None if not self.measured else int(self.pss_after_invoke - self.pss_before)


def _from_json(spec: DelegateSpec, raw: dict) -> DelegateMeasurement:
    notes = () if not raw.get("plan_error") else (f"execution plan not read: {raw['plan_error']}",)
    return DelegateMeasurement(
        spec, raw.get("pss_anon_before_bytes"), raw.get("pss_anon_after_setup_bytes"),
        raw.get("pss_anon_after_invoke_bytes"), int(raw["arena_bytes"]), int(raw["arena_tensors"]),
        tuple(raw.get("without_memory", ())), int(raw.get("without_memory_bytes", 0)),
        int(raw.get("persistent_bytes", 0)), raw.get("nodes"), raw.get("delegate_kernels"),
        raw.get("cpu_nodes"), raw.get("model_operators"), raw.get("delegated_operators"), notes,
        tuple(raw.get("arena_ids", ())), tuple(raw.get("persistent_ids", ())))


def _child_args(path: str, spec: DelegateSpec, input_shapes: Mapping | None) -> list[str]:
    args = [path, "--delegate", spec.kind]
    if spec.kind == "external":
        args += ["--library", os.path.abspath(spec.library)]
        for k, v in spec.options:
            args += ["--option", f"{k}={v}"]
    if input_shapes:
        args += ["--input-shapes", json.dumps({str(k): [int(s) for s in v]
                                               for k, v in input_shapes.items()})]
    return args


def _run(args: list[str], shown: str, timeout: float, what: str) -> dict:
    proc, failed = _launch(_CHILD, args, shown, timeout, what)
    if failed is not None:
        return failed
    if proc.returncode < 0:
        return _crashed(shown, -proc.returncode, _last_line(proc.stderr), what)
    try:
        out = json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = _last_line(proc.stderr)
        return {"ok": False, "error": f"{shown}: the LiteRT process exited with status "
                f"{proc.returncode} without an answer while {what}"
                + (f"; last message: {tail}" if tail else "")}
    if not out.get("ok") and out.get("stage") == "load_delegate":
        return out  # the library's own one line, not "LiteRT failed while ..."
    return _answered(out, shown, what)


def measure_delegate(path, spec: DelegateSpec, *, input_shapes: Mapping | None = None,
                     timeout: float = 120.0) -> DelegateMeasurement:
    """Measure one interpreter of ``path`` under ``spec`` in a fresh process.

    Parameters
    ----------
    path : str or Path
        The .tflite model.
    spec : DelegateSpec
    input_shapes : mapping, optional
        Input name (or index as a string) -> shape, resized before ``allocate_tensors()``.
    timeout : float
        Seconds before the process is killed.

    Raises
    ------
    DelegateLoadError
        The library is missing or LiteRT cannot load it as a delegate (no
        ``tflite_plugin_create_delegate``, or the plugin refused the options).
    RuntimeProbeError
        The runtime failed, crashed or timed out on the model (one line, naming the file).
    """
    path = str(path)
    if spec.kind not in KINDS:
        raise ValueError(f"delegate kind must be one of {KINDS}, got {spec.kind!r}")
    if spec.kind == "external":
        bad = library_error(spec.library)
        if bad:
            raise DelegateLoadError(bad)
    bad = model_file_error(path)
    if bad is not None:
        raise RuntimeProbeError(display_path(bad))
    what = f"measuring the model under {spec.name}"
    with runtime_path(path) as child_path:
        raw = _run(_child_args(child_path, spec, input_shapes), display_path(path), timeout, what)
    if not raw.get("ok"):
        err = str(raw.get("error", "unknown error"))
        if raw.get("stage") == "load_delegate" or (
                spec.kind == "external" and "tflite_plugin_create_delegate" in err):
            if "tflite_plugin_create_delegate" in err:
                err = (f"{spec.library}: not a LiteRT delegate library (it has no "
                       "tflite_plugin_create_delegate, the entry point load_delegate calls)")
            raise DelegateLoadError(err)
        raise RuntimeProbeError(err)
    return _from_json(spec, raw)
