"""What a runtime probe found: where LiteRT put every tensor, its nodes and temporaries.

The records :func:`viewer.runtime.probe.probe_model` returns (re-exported there), built from the
child's answer by :mod:`viewer.runtime._probe_json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from viewer.errors import RuntimeProbeError

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
class ProbeTotals:
    """The footprint's terms of one allocation, without per-tensor records
    (:func:`viewer.runtime.probe.probe_totals`: subgraph 0, no Invoke).

    Attributes
    ----------
    path : str
    ok : bool
    error : str
        One line naming the file when not ``ok``.
    arena_bytes : int
        The runtime's arena span (as :attr:`RuntimeProbe.arena_bytes`), bytes.
    persistent_bytes : int
        kTfLitePersistentRo + kTfLiteArenaRwPersistent tensors with memory, bytes.
    dynamic_bytes : int
        kTfLiteDynamic tensors with memory, bytes.
    unplaced : int
        Arena tensors with bytes that ``allocate_tensors()`` left without memory (LiteRT
        places them during Invoke): when not 0, only a full probe answers.
    num_model_tensors : int or None
    resized_inputs : tuple of (int, tuple of int)
    """

    path: str
    ok: bool = True
    error: str = ""
    arena_bytes: int = 0
    persistent_bytes: int = 0
    dynamic_bytes: int = 0
    unplaced: int = 0
    num_model_tensors: int | None = None
    resized_inputs: tuple[tuple[int, tuple[int, ...]], ...] = ()


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
    #: Model tensors ``allocate_tensors()`` left without memory (LiteRT sized them in Invoke);
    #: 0 when none were, or when the probe was told not to look (``invoke`` True or False).
    deferred_count: int = 0
    #: The runtime overhead measured in the probe's own process
    #: (:class:`viewer.runtime._child_overhead.Meter`): Pss_Anon growth of one interpreter,
    #: bytes; None when not asked for or not measured (``overhead_error`` says why).
    overhead_grown_bytes: int | None = None
    overhead_error: str = ""

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
