"""Oracle for tests/analysis/test_intervals_vectorised.py: viewer/analysis/intervals.py as it was at
main 969f405 (with b18111e's READ_VARIABLE rule), the per-tensor loop version, kept verbatim below
(do not edit except to follow a rule change on main; not imported by viewer/).

Usage intervals under LiteRT's rules, and the operator profile they imply.

Follows LiteRT's ``ArenaPlanner::PlanAllocations`` (tflite/arena_planner.cc):

- graph inputs are allocated at operator 0 and, having an extra reference, never freed;
- graph outputs and variables are never freed (live to the end);
- any other tensor lives from its producer to its last consumer; a produced tensor that nothing
  consumes is never freed either (its reference count never reaches zero);
- constant tensors are read-only and mapped from the file (outside the arena);
- prepare-time folding: kernels that call ``SetTensorToPersistentRo`` compute their output once
  at prepare time, outside the arena, when their inputs are constant or already folded (SHAPE
  and RANK always; see :data:`PERSISTENT_RO_RULES` for the table and the kernel files); a folded
  output makes the operators reading it foldable in turn. DEQUANTIZE of a constant and DENSIFY
  put theirs in the persistent arena instead (which does not propagate);
- a WHILE output whose body passes the input through unchanged, and that nothing reads, gets
  no memory (when ``analyze`` is given the model: tflite/kernels/while.cc);
- variables live in LiteRT's separate persistent arena (``kTfLiteArenaRwPersistent``);
- resource handles made by VAR_HANDLE live in the persistent arena (a resource graph input
  stays in the arena); READ_VARIABLE's output is dynamic (allocated while the model runs)
  when the file gives it no dims, else an arena tensor the variable is copied into;
- a tensor that is only read (no producer, not a graph input) is never allocated by the planner,
  and operator ``intermediates`` are not seen by it at all;
- in-place operators (``IdentifyInPlaceTensors``): the first output of an operator whose kernel
  registration sets ``inplace_operator`` shares the bytes of one of its first three inputs, under
  ``InputTensorCanBeShared``'s conditions (see :data:`INPLACE_OPS`); the shared buffer then lives
  until the last use of any tensor sharing it.

Each rule is checked against LiteRT 2.3's data pointers on the shared models
(tests/analysis/test_runtime_agreement.py).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from viewer.analysis.problem import Buffer
from viewer.analysis.types import (
    KIND_ALIAS,
    KIND_INPUT,
    KIND_INTERMEDIATE,
    KIND_OUTPUT,
    KIND_TEMPORARY,
    OUT_CONSTANT,
    OUT_DYNAMIC,
    OUT_PERSISTENT,
    OUT_PERSISTENT_RO,
    OUT_UNUSED,
    Analysis,
    Temporary,
    TensorUsage,
)
from viewer.errors import SizeLimitError
from viewer.model.dtypes import MAX_SUM_BYTES, MAX_TENSOR_BYTES
from viewer.model.types import FLAG_RESOURCE, FLAG_STRING, FLAG_VARIANT, Subgraph
from viewer.ops import REGISTRY, PersistentRoRule

# The per-operator rules below live in the operator registry (viewer/ops/, one entry per
# operator, each citing its LiteRT kernel file); these tables are views of it.

#: Operators whose kernels put their output in LiteRT's persistent arena
#: (``kTfLiteArenaRwPersistent``) at prepare time, computed once: DEQUANTIZE when its input is
#: a constant from the file (``IsConstantTensor``: tflite/kernels/dequantize.cc), DENSIFY always
#: (its input must be constant: tflite/kernels/densify.cc). Unlike ``kTfLitePersistentRo`` this
#: does not make the output "constant or persistent" for the kernels that read it.
FOLDING_OPS = frozenset(n for n, s in REGISTRY.items() if s.persistent_folding)

#: The builtin kernels that call ``SetTensorToPersistentRo`` on their output (found by searching
#: LiteRT's tflite/kernels/*.cc for the call; the search index may miss a rarely used kernel),
#: with the condition (:class:`viewer.ops.PersistentRoRule`); every rule and each exclusion is
#: checked against LiteRT 2.3 with a hand-built model in tests/analysis/test_folding.py.
#: Not here: ADD, SUB, DIV and the other element-wise ops, PACK, CAST (only with the
#: interpreter's ``cache_constant_cast_op`` option), SUM/MEAN/REDUCE_MAX (their ``noop`` does
#: not change the allocation), SLICE, TRANSPOSE, FILL...: LiteRT 2.3 keeps those in the arena.
PERSISTENT_RO_RULES: dict[str, PersistentRoRule] = {
    n: s.persistent_ro for n, s in REGISTRY.items() if s.persistent_ro is not None
}

OUT_VARIABLE = "variable (LiteRT's persistent arena)"
OUT_NEVER_WRITTEN = "never written (only read; LiteRT's planner never allocates it)"
#: An in-place output whose root nothing writes: it shares the root's bytes, and the root has
#: none (LiteRT gives both no memory; measured on ../shared/fuzz/B4_*).
OUT_ALIAS_NEVER_WRITTEN = ("in-place on a tensor nothing writes (shares its bytes; LiteRT "
                           "allocates neither)")
OUT_RESOURCE = "resource handle (LiteRT's persistent arena)"
OUT_DYNAMIC_OUTPUT = "dynamic (its kernel sizes it at run time, outside the arena)"
OUT_WHILE_FORWARDED = (
    "no memory (WHILE output whose body passes its input through and nothing reads it)"
)

#: Operators whose kernels make their outputs dynamic in Prepare (allocated at run time,
#: outside the arena): READ_VARIABLE (tflite/kernels/read_variable.cc), measured with LiteRT 2.3.
DYNAMIC_OUTPUT_OPS = frozenset(n for n, s in REGISTRY.items() if s.dynamic_output)

#: LiteRT kernels whose registration sets ``inplace_operator`` (tflite/kernels/*.cc), as
#: (inputs that may be shared, data unmodified). ``kTfLiteInplaceOpInput0Shared`` = input 0...
INPLACE_OPS: dict[str, tuple[tuple[int, ...], bool]] = {
    n: (s.inplace.inputs, s.inplace.unmodified) for n, s in REGISTRY.items() if s.inplace is not None
}
_NOT_DROPPED_FLAGS = frozenset({FLAG_STRING, FLAG_RESOURCE, FLAG_VARIANT})
#: Flags that put a tensor in LiteRT's dynamic allocation instead of the arena.
_DYNAMIC_FLAGS = frozenset({FLAG_STRING, FLAG_VARIANT})
#: ``kTfLiteMaxSharableOpInputs``: only the first inputs are candidates.
MAX_SHARABLE_INPUTS = 3
#: ``kScalarTensorBytes``: a modified tensor this small is never shared.
SCALAR_TENSOR_BYTES = 4


def analyze(subgraph: Subgraph, *, temporaries: Iterable[Temporary] = (), model=None) -> Analysis:
    """Give every arena tensor of ``subgraph`` a usage interval, and compute the profile.

    Follows ``ArenaPlanner::PlanAllocations`` and ``IdentifyInPlaceTensors``
    (google-ai-edge/LiteRT tflite/arena_planner.cc); see the module docstring for the rules.

    Parameters
    ----------
    subgraph : Subgraph
        Operators in execution order.
    temporaries : iterable of Temporary
        Kernel temporaries measured from the runtime (each live at its one operator).
    model : viewer.model.types.Model, optional
        The model ``subgraph`` belongs to. Only control flow needs it: a WHILE output whose body
        subgraph forwards the input unchanged, and that nothing reads, gets no memory
        (tflite/kernels/while.cc). Without it such outputs stay in the arena.

    Returns
    -------
    Analysis
        ``usages`` in tensor-index order (temporaries last); in-place outputs have
        ``kind == KIND_ALIAS`` and ``alias_of`` = the tensor owning the bytes, whose interval
        runs to the last use of any tensor sharing them. ``breadth`` of shape (num_ops,) in
        bytes; ``naive_bytes``, ``lower_bound_bytes``, ``widest_op``; ``alloc_queue`` (LiteRT's
        per-operator allocation queue, for the ``litert`` planner).
    """
    n_ops = len(subgraph.operators)
    last_index = max(n_ops - 1, 0)
    tensors = subgraph.tensors
    n_t = len(tensors)
    outside: dict[int, str] = {}

    def valid(t: int) -> bool:
        return 0 <= t < n_t

    persistent_ro = _persistent_ro_outputs(subgraph)
    persistent: set[int] = set(persistent_ro)
    for op in subgraph.operators:
        if op.op_name not in FOLDING_OPS or not op.outputs or not valid(op.outputs[0]):
            continue
        src = op.inputs[0] if op.inputs else -1
        if op.op_name == "DENSIFY" or (valid(src) and tensors[src].is_constant):
            persistent.add(op.outputs[0])

    producer: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    for op in subgraph.operators:
        for t in op.outputs:
            if valid(t) and t not in producer:
                producer[t] = op.index
        for t in op.inputs:
            if valid(t):
                consumers.setdefault(t, []).append(op.index)

    # VAR_HANDLE's kernel puts its resource handle in the persistent arena (measured).
    handles = {t for op in subgraph.operators if op.op_name == "VAR_HANDLE" for t in op.outputs if valid(t)}
    # READ_VARIABLE's Prepare makes its output dynamic only when the file gives it no dims
    # (``output->dims->size == 0``: scalar or unranked); a ranked output stays in the arena and
    # Eval copies the variable into it (tflite/kernels/read_variable.cc; measured, LiteRT 2.3).
    dynamic_outputs = {
        t for op in subgraph.operators if op.op_name in DYNAMIC_OUTPUT_OPS
        for t in op.outputs if valid(t) and (op.op_name != "READ_VARIABLE" or not tensors[t].shape)
    }

    graph_inputs = [t for t in subgraph.inputs if valid(t)]
    graph_input_set = set(graph_inputs)
    graph_outputs = {t for t in subgraph.outputs if valid(t)}
    dropped = _dropped_while_outputs(subgraph, model, consumers, graph_outputs)
    variables = [t for t in subgraph.variables if valid(t)]
    touched = set(producer) | set(consumers) | graph_input_set | graph_outputs

    where_of: dict[int, str] = {}

    def where(t: int) -> str:
        """LiteRT's allocation type: 'mmap', 'persistent', 'dynamic' or 'arena' (memoised:
        it is asked several times per tensor)."""
        w = where_of.get(t)
        if w is None:
            tensor = tensors[t]
            if tensor.is_constant:
                w = "mmap"
            elif t in persistent or tensor.is_variable or t in handles:
                w = "persistent"
            elif not _DYNAMIC_FLAGS.isdisjoint(tensor.flags) or t in dynamic_outputs:
                w = "dynamic"
            else:
                w = "arena"
            where_of[t] = w
        return w

    # Reference counts as PlanAllocations builds them before IdentifyInPlaceTensors.
    refcounts = [0] * n_t
    for t in graph_outputs:
        refcounts[t] += 1
    for t in variables:
        refcounts[t] += 1
    for t in graph_inputs:
        refcounts[t] += 1
    for op in subgraph.operators:
        for t in op.inputs:
            if valid(t):
                refcounts[t] += 1

    # IdentifyInPlaceTensors: output -> tensor that owns its bytes.
    shared: dict[int, int] = {}
    for op in subgraph.operators:
        spec = INPLACE_OPS.get(op.op_name)
        if spec is None or not op.outputs or not valid(op.outputs[0]):
            continue
        shareable, unmodified = spec
        changed = not unmodified
        out = op.outputs[0]
        chosen = -1
        for i, t in enumerate(op.inputs[:MAX_SHARABLE_INPUTS]):
            if not valid(t) or i not in shareable:
                continue
            if changed:
                if tensors[t].nbytes != tensors[out].nbytes or tensors[t].nbytes <= SCALAR_TENSOR_BYTES:
                    continue
                if refcounts[t] > 1:
                    continue
            if t in graph_input_set or out in graph_outputs:
                continue
            if where(t) != where(out) and where(t) != "arena":
                continue
            chosen = t
            break
        if chosen < 0:
            continue
        root = shared.get(chosen, chosen)
        if changed and refcounts[root] > 1:
            continue
        shared[out] = root
    # CalculateAllocations drops a sharing whose root is not in the arena or differs in bytes.
    shared = {
        o: r for o, r in shared.items()
        if where(r) == "arena" and where(o) == "arena" and tensors[r].nbytes == tensors[o].nbytes
    }

    # Deallocation node of each buffer owner: last consumer of it or of any tensor sharing it.
    last_use: dict[int, int] = {}
    for op in subgraph.operators:
        for t in op.inputs:
            if valid(t):
                r = shared.get(t, t)
                last_use[r] = max(last_use.get(r, -1), op.index)
    never_freed = graph_input_set | graph_outputs | set(variables)

    def dealloc(t: int) -> int | None:
        """LiteRT's dealloc node; None = never deallocated (``kNodeNotAssigned``)."""
        if t in shared or t in never_freed:
            return None
        # Outputs get +1 reference; a produced tensor nothing reads is never freed.
        return last_use.get(t)

    usages: list[TensorUsage] = []
    for t in sorted(touched):
        tensor = tensors[t]
        w = where(t)
        if w == "mmap":
            outside[t] = OUT_CONSTANT
            continue
        if t in persistent:
            outside[t] = OUT_PERSISTENT_RO if t in persistent_ro else OUT_PERSISTENT
            continue
        if tensor.is_variable:
            outside[t] = OUT_VARIABLE
            continue
        if t in handles:
            outside[t] = OUT_RESOURCE
            continue
        if w == "dynamic":
            outside[t] = OUT_DYNAMIC_OUTPUT if t in dynamic_outputs else OUT_DYNAMIC
            continue
        if t in dropped:
            outside[t] = OUT_WHILE_FORWARDED
            continue
        cons = tuple(sorted(set(consumers.get(t, ()))))
        prod = producer.get(t)
        if t in graph_input_set:
            first, kind = 0, KIND_INPUT
        elif prod is None:
            outside[t] = OUT_NEVER_WRITTEN
            continue
        else:
            first = prod
            kind = KIND_OUTPUT if t in graph_outputs else KIND_INTERMEDIATE
        if t in shared:
            root = shared[t]
            if root not in graph_input_set and producer.get(root) is None:
                outside[t] = OUT_ALIAS_NEVER_WRITTEN
                continue
            last = max([first, *cons])
            usages.append(TensorUsage(t, first, last, tensor.nbytes, KIND_ALIAS, prod, cons, shared[t]))
            continue
        d = dealloc(t)
        last = last_index if d is None else max(d, first)
        usages.append(TensorUsage(t, first, last, tensor.nbytes, kind, prod, cons, never_freed=d is None))

    for t in range(n_t):
        if t not in touched and t not in outside and not tensors[t].is_constant:
            outside[t] = OUT_UNUSED

    temps: dict[int, str] = {}
    temp_list = list(temporaries)
    for tmp in temp_list:
        usages.append(TensorUsage(tmp.id, tmp.op, tmp.op, tmp.nbytes, KIND_TEMPORARY, tmp.op, ()))
        temps[tmp.id] = subgraph.operators[tmp.op].op_name if 0 <= tmp.op < n_ops else "?"

    # nodes_to_tensors_: node 0 queues variables then graph inputs; every node its outputs
    # (ExecuteAllocations adds its temporaries after them).
    queue: list[list[Buffer]] = [[] for _ in range(max(n_ops, 1))]
    alloc_at: dict[int, int] = {}

    def entry(t: int, node: int) -> Buffer:
        w = where(t)
        d = None if t in variables else dealloc(t)
        sortable = (w == "arena" and tensors[t].nbytes > 0 and t not in dropped) or w == "persistent"
        return Buffer(
            t, node, last_index if d is None else d,
            tensors[t].nbytes if sortable else 0, pinned=d is None,
        )

    for t in variables + graph_inputs:
        if t not in alloc_at:
            alloc_at[t] = 0
            queue[0].append(entry(t, 0))
    queued = {(0, b.id) for b in queue[0]}  # (node, tensor) pairs already in the queue
    for op in subgraph.operators:
        for t in op.outputs:
            if valid(t):
                if t not in alloc_at:
                    alloc_at[t] = op.index
                if (op.index, t) not in queued:
                    queued.add((op.index, t))
                    queue[op.index].append(entry(t, alloc_at[t]))
    for tmp in temp_list:
        if 0 <= tmp.op < len(queue):
            queue[tmp.op].append(Buffer(tmp.id, tmp.op, tmp.op, tmp.nbytes))
    alloc_queue = tuple(tuple(q) for q in queue)

    kernel_sized = tuple(
        u.tensor for u in usages
        if u.kind != KIND_TEMPORARY and u.producer is not None
        and _sized_by_kernel(subgraph, subgraph.operators[u.producer], u.tensor)
    )
    analysis = _finish(subgraph, tuple(usages), outside, temps, alloc_queue, kernel_sized)
    names = {tmp.id: tmp.name for tmp in temp_list if tmp.name}
    if names:
        object.__setattr__(analysis, "temporary_names", names)
    return analysis


def _persistent_ro_outputs(subgraph: Subgraph) -> set[int]:
    """Outputs LiteRT's kernels make ``kTfLitePersistentRo`` at prepare time (:data:`PERSISTENT_RO_RULES`).

    Operators are visited in execution order, as ``Subgraph::PrepareOpsStartingAt`` prepares
    them, so a folded output makes the operators reading it foldable in turn.
    """
    tensors = subgraph.tensors
    n_t = len(tensors)
    folded: set[int] = set()

    def ready(t: int) -> bool:  # IsConstantOrPersistentTensor; -1 = omitted optional input
        return t < 0 or t >= n_t or tensors[t].is_constant or t in folded

    for op in subgraph.operators:
        rule = PERSISTENT_RO_RULES.get(op.op_name)
        if rule is None or not op.outputs or not 0 <= op.outputs[0] < n_t:
            continue
        out = tensors[op.outputs[0]]
        if rule.inputs is None:
            ok = bool(op.inputs) and all(ready(t) for t in op.inputs)
        else:
            ok = all(ready(op.inputs[i]) for i in rule.inputs if i < len(op.inputs))
        if ok and op.op_name == "RESHAPE" and FLAG_STRING in out.flags:
            ok = False  # "Always postpone sizing string tensors"
        if ok and rule.max_output_elements is not None:
            ok = int(np.prod(out.shape, dtype=np.int64)) <= rule.max_output_elements
        if ok:
            folded.add(out.index)
    return folded


def _dropped_while_outputs(subgraph: Subgraph, model, consumers, graph_outputs) -> set[int]:
    """WHILE outputs the kernel replaces by -1 in Prepare, so they never get memory.

    ``while_kernel::Prepare_impl`` (tflite/kernels/while.cc): when the body subgraph returns
    its input ``i`` unchanged (``body.inputs[i] == body.outputs[i]``) and nothing in this
    subgraph reads output ``i``, the output is dropped, unless the body input is a STRING,
    RESOURCE or VARIANT tensor. A graph output counts as read (conservative: LiteRT's
    ``GetInputTensorsCount`` is not checked on such a model). Needs the model (the body is
    another subgraph); without it nothing is dropped.
    """
    if model is None:
        return set()
    subgraphs = getattr(model, "subgraphs", ())
    out: set[int] = set()
    for op in subgraph.operators:
        if op.op_name != "WHILE":
            continue
        b = op.options.get("body_subgraph_index")
        if not isinstance(b, int) or not 0 <= b < len(subgraphs) or b == subgraph.index:
            continue
        body = subgraphs[b]
        for i, t in enumerate(op.outputs):
            if not 0 <= t < len(subgraph.tensors) or i >= len(body.inputs) or i >= len(body.outputs):
                continue
            if body.inputs[i] != body.outputs[i] or consumers.get(t) or t in graph_outputs:
                continue
            bi = body.inputs[i]
            if 0 <= bi < len(body.tensors) and body.tensors[bi].flags & _NOT_DROPPED_FLAGS:
                continue
            out.add(t)
    return out


#: Operators whose output may legitimately be a rank-0 scalar computed from larger inputs.
_SCALAR_MAKERS = frozenset({
    "STRIDED_SLICE", "RESHAPE", "SQUEEZE", "GATHER", "GATHER_ND", "SLICE", "UNPACK", "RANK",
    "SUM", "MEAN", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL",
    "ARG_MAX", "ARG_MIN", "WHILE", "IF", "CALL_ONCE",
})


def _sized_by_kernel(subgraph: Subgraph, op, t: int) -> bool:
    """True when ``t``'s stored rank-0 shape is likely a placeholder its kernel resizes.

    Some converters store shape () for outputs their kernel sizes at prepare time (custom
    operators such as TFLite_Detection_PostProcess, old LSTM models): the file's 4 bytes are not
    what LiteRT allocates. A rank-0 output of an operator that reads a non-scalar tensor, and
    is not one that can reduce to a scalar (:data:`_SCALAR_MAKERS`), is flagged.
    """
    tensors = subgraph.tensors
    if tensors[t].shape != () or tensors[t].is_constant:
        return False
    if op.op_name in _SCALAR_MAKERS and not op.is_custom:
        return False
    return any(0 <= i < len(tensors) and tensors[i].shape != () for i in op.inputs)


def _check_sizes(subgraph: Subgraph, usages: tuple[TensorUsage, ...]) -> int:
    """The naive sum (exact Python int), after checking every size against the ceilings.

    A tensor over :data:`~viewer.model.dtypes.MAX_TENSOR_BYTES` (2^53 B), or sizes summing
    over :data:`~viewer.model.dtypes.MAX_SUM_BYTES` (2^62 B), raise ``SizeLimitError`` naming
    the tensor (a what-if can make them; the reader refuses them in a file), so the int64
    arrays below (breadth, offsets) never wrap.
    """
    naive = 0
    for u in usages:
        if not 0 <= u.nbytes <= MAX_TENSOR_BYTES:
            name = subgraph.tensors[u.tensor].name if 0 <= u.tensor < len(subgraph.tensors) else "temporary"
            raise SizeLimitError(f"subgraph {subgraph.index} tensor {u.tensor} ({name[:60]}): {u.nbytes:,} B "
                                 f"is beyond what any device can hold (more than 2^53 B)")
        naive += u.nbytes
    if naive > MAX_SUM_BYTES:
        raise SizeLimitError(f"subgraph {subgraph.index}: its arena tensors add up to {naive:,} B, beyond "
                             f"what any device can hold (more than 2^62 B)")
    return naive


def _finish(subgraph: Subgraph, usages: tuple[TensorUsage, ...], outside, temps, alloc_queue=(),
            kernel_sized=()) -> Analysis:
    naive = _check_sizes(subgraph, usages)  # the naive sum gives every tensor its own bytes
    n_ops = len(subgraph.operators)
    m = max(n_ops, 1)
    diff = np.zeros(m + 1, dtype=np.int64)
    for u in usages:
        if u.alias_of is not None:
            continue
        diff[u.first_op] += u.nbytes
        diff[min(u.last_op, m - 1) + 1] -= u.nbytes
    breadth = np.cumsum(diff)[:m] if n_ops else np.zeros(0, dtype=np.int64)
    lb = int(breadth.max()) if len(breadth) else 0
    widest = int(np.argmax(breadth)) if len(breadth) else -1
    return Analysis(subgraph, usages, outside, temps, breadth, naive, lb, widest, alloc_queue,
                    kernel_sized=tuple(kernel_sized))
