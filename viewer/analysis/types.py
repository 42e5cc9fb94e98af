"""Usage intervals and what follows from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from viewer.model.types import Subgraph
from viewer.analysis.problem import Buffer, PlanningProblem

# Tensor kinds, as drawn and reported.
KIND_INPUT = "input"  # graph input: live from operator 0, never freed
KIND_OUTPUT = "output"  # graph output: live to the end
KIND_INTERMEDIATE = "intermediate"
KIND_VARIABLE = "variable"  # stateful: whole inference
KIND_TEMPORARY = "temporary"  # kernel temporary (im2col, scratch): one operator
KIND_ALIAS = "in-place"  # shares the bytes of ``alias_of`` (RESHAPE and friends)

# Why a tensor is not in the arena.
OUT_CONSTANT = "constant (read-only, mapped from the model file)"
OUT_PERSISTENT = "persistent (folded: every input of its producer is constant)"
OUT_UNUSED = "unused (no operator touches it)"
OUT_DYNAMIC = "dynamic (STRING/VARIANT: sized at run time, outside the arena)"
OUT_PERSISTENT_RO = (
    "persistent (computed once at prepare time from constant or shape-only inputs; "
    "kTfLitePersistentRo, outside the arena)"
)
#: Note for tensors whose stored rank-0 shape is a placeholder (see ``Analysis.kernel_sized``).
NOTE_KERNEL_SIZED = "shape () in the file: its kernel sizes it at prepare time, bytes may differ"


@dataclass(frozen=True)
class TensorUsage:
    """One arena tensor's usage interval.

    Attributes
    ----------
    tensor : int
        Tensor index in the subgraph.
    first_op, last_op : int
        First and last operator that touches it, inclusive, in execution order.
    nbytes : int
        Bytes it occupies.
    kind : str
        One of the ``KIND_*`` constants.
    producer : int or None
        Operator that writes it; None for graph inputs and variables.
    consumers : tuple of int
        Operators that read it, ascending.
    alias_of : int or None
        For in-place tensors: the tensor whose bytes it shares (already resolved to the root).
    never_freed : bool
        LiteRT never deallocates it (``dealloc_node == kNodeNotAssigned``): graph inputs,
        outputs, variables, and produced tensors nothing reads. ``last_op`` is then the last
        operator.
    """

    tensor: int
    first_op: int
    last_op: int
    nbytes: int
    kind: str
    producer: int | None = None
    consumers: tuple[int, ...] = ()
    alias_of: int | None = None
    never_freed: bool = False

    @property
    def held_ops(self) -> int:
        """Operators it stays live across: ``last_op - first_op + 1``."""
        return self.last_op - self.first_op + 1


@dataclass(frozen=True)
class ProfileEntry:
    """One tensor live at an operator, as listed in that operator's profile."""

    tensor: int
    name: str
    nbytes: int
    producer: int | None
    producer_op: str
    held_ops: int
    kind: str


@dataclass(frozen=True)
class Analysis:
    """Usage intervals of one subgraph and the figures that follow from them.

    Attributes
    ----------
    subgraph : Subgraph
        The subgraph analysed (possibly one a what-if rewrote).
    usages : tuple of TensorUsage
        Every arena tensor, in tensor-index order, kernel temporaries and in-place aliases
        included.
    outside : Mapping[int, str]
        Tensors not in the arena -> why (``OUT_*``).
    temporaries_ops : Mapping[int, str]
        Kernel temporary tensor id -> op name of the operator that created it.
    breadth : numpy.ndarray
        Shape (num_ops,), int64: bytes live at each operator (the operator breadth); an
        in-place alias counts once, with its root.
    naive_bytes : int
        Sum of every arena tensor's bytes, each tensor its own (in-place aliases included):
        the naive sum people usually quote. (The ``naive`` plan keeps LiteRT's in-place sharing.)
    lower_bound_bytes : int
        ``breadth.max()``: no plan can be smaller.
    widest_op : int
        First operator whose breadth equals the lower bound; -1 when there are no operators.
    alloc_queue : sequence of tuple of Buffer
        LiteRT's per-operator allocation queue (``nodes_to_tensors_``), passed on to
        :class:`PlanningProblem` for the ``litert`` planner's tie order; may be empty. From
        :func:`~viewer.analysis.intervals.analyze` a tuple made on first use (equal to, and
        pickled as, a plain tuple).
    kernel_sized : tuple of int
        Arena tensors whose size comes from a rank-0 placeholder shape in the file while their
        kernel sizes them at prepare time (custom operators such as
        TFLite_Detection_PostProcess, old LSTM models): their ``nbytes`` (4 for float32) is
        likely not what LiteRT allocates; a runtime probe gives the real size.
    temporary_names : Mapping[int, str]
        Kernel temporary tensor id -> a readable name (LiteRT leaves temporaries unnamed);
        :meth:`tensor_name` uses it. Empty by default.
    bound_is_final : bool
        ``lower_bound_bytes`` already allows for the runtime's alignment and its exact time
        axis (TFLM: sizes rounded to 16 B, scopes, offline aliases), so a gap is measured
        against it as is, not against the aligned bound of this operator-axis view.
    """

    subgraph: Subgraph
    usages: tuple[TensorUsage, ...]
    outside: Mapping[int, str] = field(compare=False, hash=False, default_factory=dict)
    temporaries_ops: Mapping[int, str] = field(compare=False, hash=False, default_factory=dict)
    breadth: np.ndarray = field(compare=False, hash=False, default=None)  # type: ignore[assignment]
    naive_bytes: int = 0
    lower_bound_bytes: int = 0
    widest_op: int = -1
    alloc_queue: tuple = field(compare=False, hash=False, default=())
    kernel_sized: tuple[int, ...] = field(compare=False, hash=False, default=())
    temporary_names: Mapping[int, str] = field(compare=False, hash=False, default_factory=dict)
    bound_is_final: bool = field(compare=False, hash=False, default=False)

    @property
    def notes(self) -> tuple[str, ...]:
        """One line per tensor whose size the file cannot be trusted for (``kernel_sized``)."""
        return tuple(
            f"tensor {t} ({self.tensor_name(t)}): {NOTE_KERNEL_SIZED}" for t in self.kernel_sized
        )

    @property
    def num_ops(self) -> int:
        return len(self.subgraph.operators)

    def usage(self, tensor: int) -> TensorUsage | None:
        """The usage record of ``tensor``, or None when it is not in the arena."""
        return self._by_tensor().get(tensor)

    def _by_tensor(self) -> dict[int, TensorUsage]:
        cache = self.__dict__.get("_by_tensor_cache")
        if cache is None:
            cache = {u.tensor: u for u in self.usages}
            object.__setattr__(self, "_by_tensor_cache", cache)
        return cache

    def tensor_name(self, tensor: int) -> str:
        if 0 <= tensor < len(self.subgraph.tensors):
            return self.subgraph.tensors[tensor].name
        if self.temporary_names.get(tensor):
            return self.temporary_names[tensor]
        u = self._by_tensor().get(tensor)
        if u is not None and u.kind == KIND_TEMPORARY:
            # The runtime leaves most kernel temporaries unnamed (im2col, scratch).
            return f"kernel temporary #{tensor} of #{u.first_op} {self.op_name(u.first_op)}"
        return f"temporary {tensor}"

    def op_name(self, op: int | None) -> str:
        if op is None or op < 0:
            return "-"
        return self.subgraph.operators[op].op_name

    def operator_profile(self, op: int) -> tuple[ProfileEntry, ...]:
        """The tensors live while operator ``op`` runs, largest first.

        Each entry carries the producer and how many operators the tensor has been held
        (``op - first_op + 1``), which exposes skip connections. Aliases are omitted: their
        bytes are their root's.
        """
        out = []
        for u in self.usages:
            if u.alias_of is not None or not (u.first_op <= op <= u.last_op):
                continue
            out.append(
                ProfileEntry(
                    u.tensor,
                    self.tensor_name(u.tensor),
                    u.nbytes,
                    u.producer,
                    self.op_name(u.producer),
                    op - u.first_op + 1,
                    u.kind,
                )
            )
        out.sort(key=lambda e: (-e.nbytes, e.tensor))
        return tuple(out)

    def problem(self) -> PlanningProblem:
        """The planning problem: one buffer per non-alias usage.

        An alias's interval is folded into its root's (the root lives until the alias's last
        use), so planners never see aliases; :func:`resolve_alias_offsets` gives them offsets.
        ``Buffer.pinned`` is "never deallocated" (``TensorUsage.never_freed``; usages made
        without it fall back to their kind: input, output, variable). Built once per
        analysis and kept (the chart, the gap bound and the planners all ask; 100k buffers
        take a quarter of a second).
        """
        cache = self.__dict__.get("_problem_cache")
        if cache is None:
            from viewer.analysis._graph_arrays import no_gc

            with no_gc():
                cache = self._build_problem()
            object.__setattr__(self, "_problem_cache", cache)
        return cache

    def _build_problem(self) -> PlanningProblem:
        bufs = []
        for u in self.usages:
            if u.alias_of is not None:
                continue
            bufs.append(
                Buffer(
                    u.tensor,
                    u.first_op,
                    u.last_op,
                    u.nbytes,
                    pinned=u.never_freed or u.kind in (KIND_INPUT, KIND_OUTPUT, KIND_VARIABLE),
                )
            )
        return PlanningProblem(tuple(bufs), self.num_ops, self.alloc_queue)

    def resolve_alias_offsets(self, offsets: Mapping[int, int]) -> dict[int, int]:
        """Offsets for every usage: an alias gets its root's offset."""
        out = dict(offsets)
        for u in self.usages:
            if u.alias_of is not None and u.alias_of in offsets:
                out[u.tensor] = offsets[u.alias_of]
        return out


@dataclass(frozen=True)
class Temporary:
    """A kernel temporary the runtime adds (im2col, scratch): live during one operator only.

    Attributes
    ----------
    id : int
        The runtime's tensor index (after the model's own tensors).
    op : int
        Operator that created it in its prepare step.
    nbytes : int
    name : str
    """

    id: int
    op: int
    nbytes: int
    name: str = ""
