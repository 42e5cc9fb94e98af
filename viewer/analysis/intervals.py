"""Usage intervals under LiteRT's rules, and the operator profile they imply.

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

from viewer.analysis._graph_arrays import (
    LazyTuple,
    consumer_lists,
    edges,
    first_occurrences,
    first_writer,
    mask,
    no_gc,
)
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
    with no_gc():  # ~100k acyclic records at scale: the collector would walk the model each time
        return _analyze(subgraph, tuple(temporaries), model)


# LiteRT's allocation types, as codes in an array indexed by tensor (see ``_TensorFacts.where``).
_W_MMAP, _W_PERSISTENT, _W_DYNAMIC, _W_ARENA = 0, 1, 2, 3
_KINDS = (KIND_INPUT, KIND_OUTPUT, KIND_INTERMEDIATE, KIND_ALIAS)


class _TensorFacts:
    """Per-tensor arrays (shape (n_t,)) that the rules of :func:`analyze` read.

    ``where``: LiteRT's allocation type as a ``_W_*`` code (constant -> mmap; persistent,
    variable or resource handle -> persistent; STRING/VARIANT or a dynamic-output kernel ->
    dynamic; else arena). ``producer``: first writer, -1 for none. ``cons_ptr``/``cons_ops``:
    the distinct readers (CSR, ascending). ``refcounts``: as ``PlanAllocations`` builds them
    before ``IdentifyInPlaceTensors``. ``nbytes``: a list of exact Python ints (a what-if can
    make sizes past int64; :func:`_check_sizes` refuses them later with one line).
    """

    def __init__(self, subgraph: Subgraph, model) -> None:
        tensors, ops = subgraph.tensors, subgraph.operators
        n_t = self.n_t = len(tensors)
        self.nbytes = [t.nbytes for t in tensors]
        self.const = np.fromiter((t.is_constant for t in tensors), bool, n_t)
        self.var = np.fromiter((t.is_variable for t in tensors), bool, n_t)
        dyn_flag = np.fromiter((not _DYNAMIC_FLAGS.isdisjoint(t.flags) for t in tensors), bool, n_t)
        self.inp, self.out = edges(subgraph, "inputs"), edges(subgraph, "outputs")
        self.producer = first_writer(n_t, self.out)
        self.cons_ptr, self.cons_ops = consumer_lists(n_t, self.inp)
        self.consumed = self.cons_ptr[1:] > self.cons_ptr[:-1]

        self.persistent_ro = mask(n_t, _persistent_ro_outputs(subgraph))
        self.persistent = self.persistent_ro | mask(n_t, _folded_outputs(subgraph))
        self.handles = mask(n_t, _outputs_of(subgraph, lambda name: name == "VAR_HANDLE"))
        # READ_VARIABLE's Prepare makes its output dynamic only when the file gives it no dims
        # (``output->dims->size == 0``: scalar or unranked); a ranked output stays in the arena and
        # Eval copies the variable into it (tflite/kernels/read_variable.cc; measured, LiteRT 2.3).
        self.dynout = mask(n_t, (
            t for op in ops if op.op_name in DYNAMIC_OUTPUT_OPS
            for t in op.outputs if 0 <= t < n_t and (op.op_name != "READ_VARIABLE" or not tensors[t].shape)))

        self.gi_list = [t for t in subgraph.inputs if 0 <= t < n_t]
        self.gi = mask(n_t, self.gi_list)
        self.go = mask(n_t, (t for t in subgraph.outputs if 0 <= t < n_t))
        self.dropped = mask(n_t, _dropped_while_outputs(subgraph, model, self.consumed, self.go))

        where = np.full(n_t, _W_ARENA, dtype=np.int8)
        where[dyn_flag | self.dynout] = _W_DYNAMIC
        where[self.persistent | self.var | self.handles] = _W_PERSISTENT
        where[self.const] = _W_MMAP
        self.where = where
        extra = np.concatenate([np.flatnonzero(self.go), np.flatnonzero(self.var),
                                np.asarray(self.gi_list, dtype=np.int64)])
        self.refcounts = np.bincount(np.concatenate([extra, self.inp.tensor]), minlength=n_t)


def _analyze(subgraph: Subgraph, temp_list: tuple[Temporary, ...], model) -> Analysis:
    n_ops = len(subgraph.operators)
    last_index = max(n_ops - 1, 0)
    f = _TensorFacts(subgraph, model)
    shared = _inplace_roots(subgraph, f)

    # Deallocation node of each buffer owner: last reader of it or of any tensor sharing it.
    root_of = np.arange(f.n_t, dtype=np.int64)
    shared_mask = np.zeros(f.n_t, dtype=bool)
    if shared:
        outs = np.fromiter(shared.keys(), np.int64, len(shared))
        root_of[outs] = np.fromiter(shared.values(), np.int64, len(shared))
        shared_mask[outs] = True
    last_use = np.full(f.n_t, -1, dtype=np.int64)
    np.maximum.at(last_use, root_of[f.inp.tensor], f.inp.op)
    # LiteRT's dealloc node; -1 = never deallocated (kNodeNotAssigned). Outputs get +1
    # reference, so a produced tensor nothing reads is never freed either.
    dealloc = np.where(shared_mask | f.gi | f.go | f.var, -1, last_use)

    outside, arena = _outside_reasons(f, shared_mask, root_of)
    usages = _arena_usages(f, arena, shared_mask, root_of, dealloc, last_index)

    temps: dict[int, str] = {}
    for tmp in temp_list:
        usages.append(TensorUsage(tmp.id, tmp.op, tmp.op, tmp.nbytes, KIND_TEMPORARY, tmp.op, ()))
        temps[tmp.id] = subgraph.operators[tmp.op].op_name if 0 <= tmp.op < n_ops else "?"

    alloc_queue = _alloc_queue(f, dealloc, last_index, max(n_ops, 1), temp_list)
    tensors = subgraph.tensors
    kernel_sized = tuple(
        u.tensor for u in usages
        if u.kind != KIND_TEMPORARY and u.producer is not None and tensors[u.tensor].shape == ()
        and _sized_by_kernel(subgraph, subgraph.operators[u.producer], u.tensor)
    )
    analysis = _finish(subgraph, tuple(usages), outside, temps, alloc_queue, kernel_sized)
    names = {tmp.id: tmp.name for tmp in temp_list if tmp.name}
    if names:
        object.__setattr__(analysis, "temporary_names", names)
    return analysis


def _folded_outputs(subgraph: Subgraph) -> list[int]:
    """Outputs of :data:`FOLDING_OPS` that go to LiteRT's persistent arena (DEQUANTIZE of a
    constant, DENSIFY always)."""
    tensors = subgraph.tensors
    n_t = len(tensors)
    out = []
    for op in subgraph.operators:
        if op.op_name not in FOLDING_OPS or not op.outputs or not 0 <= op.outputs[0] < n_t:
            continue
        src = op.inputs[0] if op.inputs else -1
        if op.op_name == "DENSIFY" or (0 <= src < n_t and tensors[src].is_constant):
            out.append(op.outputs[0])
    return out


def _outputs_of(subgraph: Subgraph, name_matches) -> list[int]:
    """Every valid output of the operators whose name ``name_matches``."""
    n_t = len(subgraph.tensors)
    return [t for op in subgraph.operators if name_matches(op.op_name) for t in op.outputs if 0 <= t < n_t]


def _inplace_roots(subgraph: Subgraph, f: _TensorFacts) -> dict[int, int]:
    """``IdentifyInPlaceTensors``: in-place output -> the tensor that owns its bytes.

    Sequential in execution order (an output shared earlier passes its root on). Ends with
    ``CalculateAllocations``' filter: a sharing whose root is not in the arena, or whose bytes
    differ, is dropped.
    """
    n_t, nb, gi, go = f.n_t, f.nbytes, f.gi.tolist(), f.go.tolist()
    where, refcounts = f.where.tolist(), f.refcounts.tolist()
    shared: dict[int, int] = {}
    for op in subgraph.operators:
        spec = INPLACE_OPS.get(op.op_name)
        if spec is None or not op.outputs or not 0 <= op.outputs[0] < n_t:
            continue
        shareable, unmodified = spec
        out = op.outputs[0]
        chosen = -1
        for i, t in enumerate(op.inputs[:MAX_SHARABLE_INPUTS]):
            if not 0 <= t < n_t or i not in shareable:
                continue
            if not unmodified and (nb[t] != nb[out] or nb[t] <= SCALAR_TENSOR_BYTES or refcounts[t] > 1):
                continue
            if gi[t] or go[out]:
                continue
            if where[t] != where[out] and where[t] != _W_ARENA:
                continue
            chosen = t
            break
        if chosen < 0:
            continue
        root = shared.get(chosen, chosen)
        if not unmodified and refcounts[root] > 1:
            continue
        shared[out] = root
    return {o: r for o, r in shared.items()
            if where[r] == _W_ARENA and where[o] == _W_ARENA and nb[r] == nb[o]}


def _outside_reasons(f: _TensorFacts, shared_mask, root_of) -> tuple[dict[int, str], np.ndarray]:
    """(tensor -> why it is not in the arena, boolean mask of the arena tensors).

    The rules are tried in order, each on the touched tensors no earlier rule claimed; the
    dict lists touched tensors in index order, then the untouched ones (``OUT_UNUSED``).
    """
    touched = (f.producer >= 0) | f.consumed | f.gi | f.go
    left = touched.copy()
    reason = np.full(f.n_t, -1, dtype=np.int8)
    texts: list[str] = []

    def claim(cond, text):
        sel = left & cond
        reason[sel] = len(texts)
        texts.append(text)
        left[sel] = False

    claim(f.where == _W_MMAP, OUT_CONSTANT)
    claim(f.persistent_ro, OUT_PERSISTENT_RO)
    claim(f.persistent, OUT_PERSISTENT)
    claim(f.var, OUT_VARIABLE)
    claim(f.handles, OUT_RESOURCE)
    claim((f.where == _W_DYNAMIC) & f.dynout, OUT_DYNAMIC_OUTPUT)
    claim(f.where == _W_DYNAMIC, OUT_DYNAMIC)
    claim(f.dropped, OUT_WHILE_FORWARDED)
    claim(~f.gi & (f.producer < 0), OUT_NEVER_WRITTEN)
    root_unwritten = ~f.gi[root_of] & (f.producer[root_of] < 0)
    claim(shared_mask & root_unwritten, OUT_ALIAS_NEVER_WRITTEN)
    idx = np.flatnonzero(reason >= 0)
    outside = dict(zip(idx.tolist(), (texts[r] for r in reason[idx].tolist())))
    outside.update(dict.fromkeys(np.flatnonzero(~touched & ~f.const).tolist(), OUT_UNUSED))
    return outside, left


def _arena_usages(f: _TensorFacts, arena, shared_mask, root_of, dealloc, last_index) -> list[TensorUsage]:
    """One :class:`TensorUsage` per arena tensor, in index order.

    A graph input lives from operator 0; any other tensor from its producer. An in-place alias
    keeps its own span (producer to last reader) and names its root; an owner lives to its
    dealloc node (the last reader of any tensor sharing it), or to the end when never freed.
    """
    ptr, cons = f.cons_ptr, f.cons_ops
    first = np.where(f.gi, 0, f.producer)
    last_reader = np.full(f.n_t, -1, dtype=np.int64)
    has = f.consumed
    last_reader[has] = np.asarray(cons, dtype=np.int64)[ptr[1:][has] - 1]
    owner_last = np.where(dealloc < 0, last_index, np.maximum(dealloc, first))
    last = np.where(shared_mask, np.maximum(first, last_reader), owner_last)
    kind = np.where(f.gi, 0, np.where(f.go, 1, 2))
    kind[shared_mask] = 3
    alias = np.where(shared_mask, root_of, -1)
    never_freed = ~shared_mask & (dealloc < 0)
    idx = np.flatnonzero(arena)
    nb, ptr_l = f.nbytes, ptr.tolist()
    return [
        TensorUsage(t, a, b, nb[t], _KINDS[k], None if p < 0 else p, tuple(cons[ptr_l[t]:ptr_l[t + 1]]),
                    None if r < 0 else r, nf)
        for t, a, b, k, p, r, nf in zip(
            idx.tolist(), first[idx].tolist(), last[idx].tolist(), kind[idx].tolist(),
            f.producer[idx].tolist(), alias[idx].tolist(), never_freed[idx].tolist())
    ]


def _alloc_queue(f: _TensorFacts, dealloc, last_index: int, m: int, temp_list) -> LazyTuple:
    """LiteRT's ``nodes_to_tensors_``: node 0 queues variables then graph inputs; every node its
    outputs, once per (node, tensor) (``ExecuteAllocations`` adds its temporaries after them).

    Each entry is a Buffer (alloc node, dealloc node, bytes, never freed); bytes are 0 for a
    tensor the arena does not sort (outside it, empty, or a dropped WHILE output). The order is
    decided here; the ``m`` tuples of Buffers are made on first use (:class:`LazyTuple`).
    """
    nb = f.nbytes
    positive = np.fromiter((x > 0 for x in nb), bool, f.n_t)
    sortable = ((f.where == _W_ARENA) & positive & ~f.dropped) | (f.where == _W_PERSISTENT)
    never = dealloc < 0
    last = np.where(never, last_index, dealloc)
    first_at_0 = np.fromiter(dict.fromkeys([*np.flatnonzero(f.var).tolist(), *f.gi_list]), np.int64)
    init = mask(f.n_t, first_at_0)
    out_t, out_op = f.out.tensor, f.out.op
    firsts = first_occurrences(out_op * max(f.n_t, 1) + out_t)  # each (node, tensor) once
    firsts.sort()
    firsts = firsts[~((out_op[firsts] == 0) & init[out_t[firsts]])]
    order = firsts[np.argsort(out_op[firsts], kind="stable")]
    ts, ops = out_t[order], out_op[order]
    nodes = np.where(init, 0, f.producer)[ts]
    temps = [tmp for tmp in temp_list if 0 <= tmp.op < m]

    def entries(ts: np.ndarray, nodes) -> list[Buffer]:
        sizes = [nb[t] if s else 0 for t, s in zip(ts.tolist(), sortable[ts].tolist())]
        return list(map(Buffer, ts.tolist(), nodes, last[ts].tolist(), sizes, never[ts].tolist()))

    def build():
        queue: list[list[Buffer]] = [[] for _ in range(m)]
        queue[0] = entries(first_at_0, [0] * len(first_at_0))
        for op, b in zip(ops.tolist(), entries(ts, nodes.tolist())):
            queue[op].append(b)
        for tmp in temps:
            queue[tmp.op].append(Buffer(tmp.id, tmp.op, tmp.op, tmp.nbytes))
        return (tuple(q) for q in queue)

    return LazyTuple(m, build)


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


def _dropped_while_outputs(subgraph: Subgraph, model, consumed, graph_output) -> set[int]:
    """WHILE outputs the kernel replaces by -1 in Prepare, so they never get memory.

    ``while_kernel::Prepare_impl`` (tflite/kernels/while.cc): when the body subgraph returns
    its input ``i`` unchanged (``body.inputs[i] == body.outputs[i]``) and nothing in this
    subgraph reads output ``i``, the output is dropped, unless the body input is a STRING,
    RESOURCE or VARIANT tensor. A graph output counts as read (conservative: LiteRT's
    ``GetInputTensorsCount`` is not checked on such a model). Needs the model (the body is
    another subgraph); without it nothing is dropped. ``consumed`` and ``graph_output`` are
    boolean arrays of shape (num tensors,): read by an operator, a graph output.
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
            if body.inputs[i] != body.outputs[i] or consumed[t] or graph_output[t]:
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
    owners = [u for u in usages if u.alias_of is None]  # an alias counts once, with its root
    k = len(owners)
    size = np.fromiter((u.nbytes for u in owners), np.int64, k)  # checked above: no wrap
    np.add.at(diff, np.fromiter((u.first_op for u in owners), np.int64, k), size)
    np.add.at(diff, np.minimum(np.fromiter((u.last_op for u in owners), np.int64, k), m - 1) + 1, -size)
    breadth = np.cumsum(diff)[:m] if n_ops else np.zeros(0, dtype=np.int64)
    lb = int(breadth.max()) if len(breadth) else 0
    widest = int(np.argmax(breadth)) if len(breadth) else -1
    return Analysis(subgraph, usages, outside, temps, breadth, naive, lb, widest, alloc_queue,
                    kernel_sized=tuple(kernel_sized))
