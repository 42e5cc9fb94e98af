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
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from viewer.runtime.spawn import child_command
from viewer.errors import RuntimeProbeError
from viewer.planning.types import DEFAULT_ALIGNMENT, Plan

# Where a tensor's bytes live, as the runtime placed them.
REGION_ARENA = "arena"
REGION_PERSISTENT_ARENA = "persistent arena (kTfLiteArenaRwPersistent, outside the tensor arena)"
REGION_MODEL_FILE = "read-only, mapped from the model file"
REGION_READ_ONLY = "read-only, outside the model file mapping"
REGION_PERSISTENT = "persistent (computed once at prepare time, heap)"
REGION_DYNAMIC = "dynamic (heap, sized at run time)"
REGION_NONE = "no memory (zero bytes or never allocated)"
REGION_OTHER = "other (custom or non-CPU allocation)"

#: The planner name of a plan read back from the runtime.
MEASURED_PLANNER = "litert_measured"

_CHILD = "viewer.runtime._child"
_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class RuntimeTensor:
    """One tensor as LiteRT allocated it (after ``allocate_tensors()``).

    Attributes
    ----------
    id : int
        Runtime tensor index; indices >= ``RuntimeProbe.num_model_tensors`` were added by kernels.
    name : str
        Empty for kernel temporaries.
    shape : tuple of int or None
        Runtime shape (dynamic dims resolved); None when the runtime gave it no dims.
    dtype : str
        Lower-case TfLiteType name, e.g. ``"float32"``.
    nbytes : int
        ``TfLiteTensor.bytes``.
    allocation : str
        ``TfLiteAllocationType``: ``"arena-rw"``, ``"mmap-ro"``, ``"arena-rw-persistent"``,
        ``"persistent-ro"``, ``"dynamic"``, ``"none"``...
    region : str
        One of the ``REGION_*`` constants, from the allocation type and the pointer ranges.
    offset : int or None
        Bytes from the arena's lowest address, for tensors in the arena (None otherwise).
    op : int or None
        For a kernel temporary: the operator (execution-order index) whose node lists it.
    """

    id: int
    name: str
    shape: tuple[int, ...] | None
    dtype: str
    nbytes: int
    allocation: str
    region: str
    offset: int | None = None
    op: int | None = None

    @property
    def in_arena(self) -> bool:
        return self.region == REGION_ARENA


@dataclass(frozen=True)
class RuntimeNode:
    """One node (operator) as the runtime prepared it.

    Attributes
    ----------
    index : int
        Node index (= operator index without delegates).
    op_name : str
        Builtin name or custom name.
    inputs, outputs, temporaries : tuple of int
        Runtime tensor ids (-1: omitted optional input).
    inplace_operator : int
        The kernel's ``TfLiteRegistration.inplace_operator`` bit set (``TfLiteInPlaceOp``:
        1 data unmodified, 4 << k input k may share the output's bytes).
    """

    index: int
    op_name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    temporaries: tuple[int, ...]
    inplace_operator: int = 0


@dataclass(frozen=True)
class RuntimeProbe:
    """What LiteRT did with one subgraph of a model.

    Attributes
    ----------
    path : str
    subgraph : int
    ok : bool
        False when the runtime failed, crashed or timed out; ``error`` says how.
    error : str
        One line naming the file and what happened ("" when ``ok``).
    tensors : tuple of RuntimeTensor
        Every runtime tensor, in index order (model tensors, then kernel-added ones).
    num_model_tensors : int or None
        Tensors in the model file's subgraph; the rest were added by kernels.
    arena_bytes : int or None
        The runtime's arena span: max(offset + bytes) over arena tensors, in bytes (LiteRT's
        ``SimpleMemoryArena`` high-water mark; the first allocation sits at offset 0).
    arena_address : int or None
        Address of offset 0 in the child process (only meaningful for comparisons there).
    node_temporaries : Mapping[int, tuple of int]
        Operator index -> tensor ids in its ``TfLiteNode.temporaries`` (non-empty ones only).
    execution_plan : tuple of int
        Node indices in execution order (0..n-1 without delegates).
    resized_inputs : tuple of (int, tuple of int)
        (input tensor id, new shape) applied before allocation.
    notes : tuple of str
    """

    path: str
    subgraph: int = 0
    ok: bool = True
    error: str = ""
    tensors: tuple[RuntimeTensor, ...] = ()
    num_model_tensors: int | None = None
    arena_bytes: int | None = None
    arena_address: int | None = None
    node_temporaries: Mapping[int, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False)
    execution_plan: tuple[int, ...] = ()
    resized_inputs: tuple[tuple[int, tuple[int, ...]], ...] = ()
    notes: tuple[str, ...] = ()
    nodes: tuple[RuntimeNode, ...] = ()
    inplace_aliases: Mapping[int, int] = field(default_factory=dict, compare=False, hash=False)
    invoked: bool = False
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    #: The signature whose runner allocated this subgraph (None: the interpreter's own).
    signature: str | None = None
    #: Why the probe invoked once ("" when it did not): tensors deferred to Invoke.
    invoke_reason: str = ""
    #: The invocation's error when it failed (the arena read is then partial).
    invoke_error: str = ""

    @property
    def deferred(self) -> tuple[int, ...]:
        """Arena tensors with bytes, used by a runtime node, that the runtime has not placed yet.

        After ``allocate_tensors()`` on a graph with dynamic tensors, LiteRT plans only up to the
        first operator with a dynamic output and places the rest as ``Invoke`` reaches them;
        probe with ``invoke=True`` to see the whole arena. (A tensor no runtime node uses, e.g. a
        WHILE output the kernel replaced by -1 because it forwards an unchanged input, never
        gets memory and is not counted.)
        """
        used = set(self.inputs) | set(self.outputs)
        for node in self.nodes:
            used.update(node.inputs, node.outputs, node.temporaries)
        return tuple(t.id for t in self.tensors
                     if t.allocation == "arena-rw" and t.nbytes > 0 and t.offset is None
                     and t.id in used)

    @property
    def node_ranges(self) -> tuple[tuple[int, int], ...]:
        """The ``ArenaPlanner::ExecuteAllocations(first, last)`` calls the runtime made.

        ``Subgraph::PrepareOpsStartingAt`` (tflite/core/subgraph.cc) stops after each operator
        with a dynamic output, and after one whose Prepare returned
        ``kTfLiteOutputShapeNotKnown`` (RESHAPE whose shape input is neither constant nor
        persistent: tflite/kernels/reshape.cc); each stop ends one range (operator indices,
        inclusive). One range for a static graph.
        """
        n_ops = len(self.nodes)
        if n_ops == 0:
            return ((0, 0),)
        out, start = [], 0
        for pos, node in enumerate(self.nodes):
            dyn = any(0 <= t < len(self.tensors) and self.tensors[t].allocation == "dynamic"
                      for t in node.outputs) or self._shape_not_known(node)
            if dyn and pos < n_ops - 1:
                out.append((start, pos))
                start = pos + 1
        out.append((start, n_ops - 1))
        return tuple(out)

    def _shape_not_known(self, node: RuntimeNode) -> bool:
        """RESHAPE's Prepare returns ``kTfLiteOutputShapeNotKnown``: two inputs, the shape
        tensor neither mmap-ro nor persistent-ro (``IsConstantOrPersistentTensor``), and a
        non-string output."""
        if node.op_name != "RESHAPE" or len(node.inputs) != 2 or not node.outputs:
            return False
        shape, out = node.inputs[1], node.outputs[0]
        if not (0 <= shape < len(self.tensors) and 0 <= out < len(self.tensors)):
            return False
        return (self.tensors[shape].allocation not in ("mmap-ro", "persistent-ro")
                and self.tensors[out].dtype != "string")

    def tensor(self, index: int) -> RuntimeTensor:
        return self.tensors[index]

    @property
    def offsets(self) -> dict[int, int]:
        """Tensor id -> byte offset in the arena, for every arena tensor with bytes > 0."""
        return {t.id: t.offset for t in self.tensors if t.offset is not None}

    @property
    def outside(self) -> dict[int, str]:
        """Tensors with bytes outside the tensor arena -> where (a ``REGION_*`` value)."""
        return {t.id: t.region for t in self.tensors if t.region not in (REGION_ARENA, REGION_NONE)}

    @property
    def temporaries(self) -> tuple:
        """Kernel temporaries with bytes, as :class:`viewer.analysis.types.Temporary`.

        Each is attributed to the operator whose node lists it in ``temporaries``; ordered by
        tensor id. Includes temporaries outside the arena (see :attr:`arena_temporaries`).
        """
        from viewer.analysis.types import Temporary

        return tuple(
            Temporary(t.id, t.op, t.nbytes, t.name)
            for t in self.tensors
            if t.op is not None and t.nbytes > 0
        )

    @property
    def arena_temporaries(self) -> tuple:
        """The kernel temporaries that live in the tensor arena (what ``analyze`` takes)."""
        return tuple(tp for tp in self.temporaries if self.tensors[tp.id].in_arena)

    def check(self) -> "RuntimeProbe":
        """Return self, or raise :class:`~viewer.errors.RuntimeProbeError` when not ``ok``."""
        if not self.ok:
            raise RuntimeProbeError(self.error)
        return self


def _child_env() -> dict[str, str]:
    """The runtime child's environment: ours, the package importable, TensorFlow's INFO off."""
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _run_child(args: list[str], path: str, timeout: float, what: str) -> dict:
    """Run the child with ``args``; return its JSON or a dict with ``ok: False`` and one line."""
    env = _child_env()
    cmd = child_command(_CHILD, *args)
    try:
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env,
            cwd=_ROOT,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"{path}: LiteRT did not finish {what} within "
                f"{timeout:g} s (hang?); the runtime process was killed"}
    except OSError as e:
        return {"ok": False, "error": f"{path}: could not start the LiteRT process: {e}"}
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
        args += ["--invoke", mode]
        raw = (runner or _run_child)(args, shown, timeout, "allocating tensors"
                                     + {"auto": "", "always": " and invoking", "never": ""}[mode])
    probe = probe_from_json(path, raw, subgraph)
    if invoke == "auto" and probe.ok and probe.deferred and not probe.invoked and not probe.invoke_error:
        # The child's own test missed them (e.g. a subgraph's 0-d tensors): invoke once.
        again = probe_model(path, subgraph, input_shapes, timeout, invoke=True, runner=runner)
        if again.ok:
            probe = dataclasses.replace(again, invoke_reason=(
                f"{len(probe.deferred)} tensor(s) had no memory after allocate_tensors() "
                f"(e.g. {list(probe.deferred[:5])}): LiteRT sizes and places them during Invoke"))
    return probe.check() if check else probe


def probe_from_json(path: str, raw: Mapping[str, Any], subgraph: int = 0) -> RuntimeProbe:
    """Build a :class:`RuntimeProbe` from the child's JSON (classify regions, compute offsets)."""
    subgraph = int(raw.get("subgraph", subgraph) or 0)
    if not raw.get("ok"):
        return RuntimeProbe(path, subgraph, ok=False, error=str(raw.get("error", f"{path}: failed")))
    tensors = raw["tensors"]
    n_model = raw.get("num_model_tensors")
    notes = list(raw.get("notes", ()))
    plan = [int(k) for k in raw.get("execution_plan", ())]
    position = {node: pos for pos, node in enumerate(plan)}
    owner: dict[int, int] = {}
    node_temps: dict[int, tuple[int, ...]] = {}
    for node in raw.get("nodes", ()):
        temps = tuple(int(t) for t in node["temporaries"] if t >= 0)
        op = position.get(int(node["index"]), int(node["index"]))
        if temps:
            node_temps[op] = temps
        for t in temps:
            owner.setdefault(t, op)

    maps = [(int(lo), int(hi)) for lo, hi in raw.get("model_file_mappings", ())]
    arena_addrs = [
        (int(t["address"]), int(t["bytes"])) for t in tensors
        if t["allocation"] == "arena-rw" and t["address"] and t["bytes"] > 0
    ]
    base = min((a for a, _ in arena_addrs), default=None)
    span = max((a + b for a, b in arena_addrs), default=None)
    arena_bytes = (span - base) if base is not None else 0

    out = []
    for t in tensors:
        addr, nbytes, alloc = t["address"], int(t["bytes"]), t["allocation"]
        offset = None
        if not addr or nbytes == 0:
            region = REGION_NONE
        elif alloc == "arena-rw":
            region, offset = REGION_ARENA, int(addr) - base
        elif alloc == "arena-rw-persistent":
            region = REGION_PERSISTENT_ARENA
        elif alloc == "mmap-ro":
            inside = any(lo <= addr and addr + nbytes <= hi for lo, hi in maps)
            region = REGION_MODEL_FILE if inside or not maps else REGION_READ_ONLY
        elif alloc == "persistent-ro":
            region = REGION_PERSISTENT
        elif alloc == "dynamic":
            region = REGION_DYNAMIC
        else:
            region = REGION_OTHER
        if region not in (REGION_ARENA, REGION_NONE) and base is not None and base <= addr < base + arena_bytes:
            notes.append(f"tensor {t['id']} ({alloc}) points inside the arena span")
        shape = tuple(int(s) for s in t["shape"]) if t["shape"] is not None else None
        out.append(RuntimeTensor(
            int(t["id"]), t["name"], shape, t["dtype"], nbytes, alloc, region, offset,
            owner.get(int(t["id"])),
        ))
    nodes = tuple(
        RuntimeNode(
            int(n["index"]), _op_name(n), tuple(n["inputs"]), tuple(n["outputs"]),
            tuple(n["temporaries"]), int(n.get("inplace_operator", 0)),
        )
        for n in raw.get("nodes", ())
    )
    aliases: dict[int, int] = {}
    if nodes and raw.get("inputs") is not None:
        aliases, alias_notes = _inplace_aliases(
            out, nodes, raw["inputs"], raw["outputs"],
            [t["id"] for t in tensors if t.get("is_variable")],
        )
        notes.extend(alias_notes)
    if n_model is not None:
        stray = [t.id for t in out[n_model:] if t.op is None and t.nbytes > 0]
        if stray:
            notes.append(f"runtime-added tensors with bytes but in no node's temporaries: {stray}")
    return RuntimeProbe(
        path, subgraph, True, "", tuple(out), n_model, arena_bytes, base, node_temps,
        tuple(plan),
        tuple((int(r["input"]), tuple(int(s) for s in r["shape"])) for r in raw.get("resized_inputs", ())),
        tuple(notes), nodes, aliases, bool(raw.get("invoked")),
        tuple(int(t) for t in raw.get("inputs") or ()),
        tuple(int(t) for t in raw.get("outputs") or ()),
        raw.get("signature") or None, str(raw.get("invoke_reason") or ""),
        str(raw.get("invoke_error") or ""),
    )


def _op_name(node: Mapping[str, Any]) -> str:
    if node.get("custom_name"):
        return str(node["custom_name"])
    return _builtin_names().get(int(node["builtin_code"]), f"builtin {node['builtin_code']}")


@functools.lru_cache(maxsize=1)
def _builtin_names() -> dict[int, str]:
    """BuiltinOperator code -> name, from LiteRT's schema ({} when it cannot be imported)."""
    try:
        from ai_edge_litert import schema_py_generated as S  # only for the name table

        return {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
    except Exception:
        return {}


#: ``TfLiteInPlaceOp`` bits (tflite/core/c/common.h) and ArenaPlanner constants.
_INPLACE_DATA_UNMODIFIED = 1
_INPLACE_INPUT0_SHARED = 4
_MAX_SHARABLE_INPUTS = 3  # kTfLiteMaxSharableOpInputs
_SCALAR_TENSOR_BYTES = 4  # kScalarTensorBytes


def _inplace_aliases(tensors, nodes, inputs, outputs, variables) -> tuple[dict[int, int], list[str]]:
    """Which outputs share their input's bytes, as LiteRT decides it.

    Follows ``ArenaPlanner::IdentifyInPlaceTensors`` / ``InputTensorCanBeShared`` and the check
    in ``CalculateAllocations`` (tflite/arena_planner.cc), fed with each kernel's own
    ``inplace_operator`` flags read from the runtime. Sizes are the runtime's after prepare
    (LiteRT decides with the sizes before prepare; they differ only for resized graphs). The
    result is checked against the data pointers; a disagreement becomes a note.

    Returns
    -------
    (dict, list of str)
        alias tensor id -> root tensor id; notes.
    """
    n = len(tensors)
    refcounts = [0] * n
    for t in list(outputs) + list(variables) + list(inputs):
        if 0 <= t < n:
            refcounts[t] += 1
    for node in nodes:
        for t in node.inputs:
            if 0 <= t < n:
                refcounts[t] += 1
    graph_in, graph_out = set(inputs), set(outputs)
    alias: dict[int, int] = {}

    def find(t: int) -> int:
        return alias.get(t, t)

    for node in nodes:
        flags = node.inplace_operator
        if not node.outputs or flags == 0:
            continue
        changed = not (flags & _INPLACE_DATA_UNMODIFIED)
        out = node.outputs[0]
        if not 0 <= out < n:
            continue
        chosen = -1
        for k, t in enumerate(node.inputs[:_MAX_SHARABLE_INPUTS]):
            if not 0 <= t < n or not flags & (_INPLACE_INPUT0_SHARED << k):
                continue
            ti, to = tensors[t], tensors[out]
            if changed and (ti.nbytes != to.nbytes or ti.nbytes <= _SCALAR_TENSOR_BYTES
                            or refcounts[t] > 1):
                continue
            if t in graph_in or out in graph_out:
                continue
            if ti.allocation != to.allocation and ti.allocation != "arena-rw":
                continue
            chosen = t
            break
        if chosen < 0:
            continue
        root = find(chosen)
        if changed and refcounts[root] > 1:
            continue
        alias[out] = root
    # CalculateAllocations drops an alias whose root is not in the arena or differs in size.
    alias = {
        a: r for a, r in alias.items()
        if tensors[r].allocation == "arena-rw" and tensors[r].nbytes == tensors[a].nbytes
    }
    notes = []
    wrong = [a for a, r in alias.items()
             if tensors[a].offset is not None and tensors[a].offset != tensors[r].offset]
    if wrong:
        notes.append(f"in-place emulation disagrees with the runtime's pointers for tensors {wrong}")
        for a in wrong:
            del alias[a]
    return alias, notes


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
    from viewer.model.types import FLAG_DYNAMIC

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
        tensors.append(dataclasses.replace(
            t, shape=rt.shape, nbytes=rt.nbytes, flags=t.flags - {FLAG_DYNAMIC}))
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
