"""Usage intervals under TensorFlow Lite Micro's rules.

Re-states tflite-micro's ``AllocationInfoBuilder`` (tensorflow/lite/micro/micro_allocation_info.cc)
and ``CreatePlan`` (micro_allocator.cc), which decide what its memory planner sees:

- **one plan for the whole model**: every subgraph's tensors, then every kernel scratch buffer
  (``RequestScratchBufferInArena``), go to one planner, in that order;
- **allocation scopes** instead of operator indices: a counter starts at 0 where subgraph 0's
  inputs are created, and every operator opens a new scope. A control-flow operator (IF,
  WHILE, CALL_ONCE) opens one more scope per called subgraph and marks that subgraph's
  tensors inside it, so a called subgraph's tensors are nested in their caller's scope;
- a tensor lives from the scope of its first producer (graph inputs: the subgraph's first
  scope) to the scope of its last consumer: **a graph input is freed after its last use**
  (LiteRT keeps it to the end); subgraph outputs live to the subgraph's last scope;
- a scratch buffer lives from its operator's scope to the end of any subgraph that operator
  called (``start_allocation_scope_count``);
- **what is planned** (``needs_allocating``): tensors with no data in the file (constants are
  used in place), not variables, of non-zero size. Variables go to the persistent tail
  (``AllocateVariables``) unless the model plans them offline; RESOURCE handles are not
  planned either. A tensor only read (no
  producer, not a graph input, e.g. Vela's Ethos-U ``scratch``/``scratch_fast``) is planned
  too, from scope -1 (never marked created) to its last use;
- **16-byte alignment**: each size is rounded up to ``MicroArenaBufferAlignment()`` (16)
  before it reaches the planner (``AlignSizeUp`` in ``CreatePlan``);
- **offline-planned tensors** (an ``OfflineMemoryAllocation`` metadata entry): their offset is
  fixed; -1 entries are planned online.

The time axis of :class:`TflmProblem` is ``scope + 1`` (so scope -1 is time 0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

from viewer.analysis.problem import Buffer, PlanningProblem
from viewer.analysis.types import (
    KIND_INPUT,
    KIND_INTERMEDIATE,
    KIND_OUTPUT,
    KIND_TEMPORARY,
    OUT_CONSTANT,
    OUT_UNUSED,
    Analysis,
    TensorUsage,
)
from viewer.analysis.intervals import _finish
from viewer.model.types import FLAG_RESOURCE, Model

#: ``MicroArenaBufferAlignment()`` (tensorflow/lite/micro/memory_helpers.h): 16 bytes.
TFLM_ALIGNMENT = 16
#: Control-flow operators and the option keys of the subgraphs they call, in the order
#: ``MarkSubgraphLifetimesIfNecessary`` visits them.
CONTROL_FLOW = {
    "IF": ("then_subgraph_index", "else_subgraph_index"),
    "WHILE": ("cond_subgraph_index", "body_subgraph_index"),
    "CALL_ONCE": ("init_subgraph_index",),
}
OUT_TFLM_VARIABLE = "variable (TFLM's persistent tail, AllocateVariables)"
OUT_TFLM_RESOURCE = "resource handle (not in TFLM's planned head)"
OUT_TFLM_ZERO = "0 bytes (TFLM plans nothing for it)"
OUT_TFLM_OTHER_SUBGRAPH = "in another subgraph (planned with it in the same arena)"


@dataclass(frozen=True)
class ScratchRequest:
    """One kernel scratch buffer (``RequestScratchBufferInArena``), as TFLM measured it.

    Attributes
    ----------
    subgraph : int
    op : int
        Operator index in that subgraph (``node_idx``).
    nbytes : int
        Bytes requested (before the 16-byte rounding).
    """

    subgraph: int
    op: int
    nbytes: int


@dataclass(frozen=True)
class TflmProblem(PlanningProblem):
    """The problem TFLM's planner receives: buffers in ``AddBuffer`` order, scope time axis.

    Attributes (besides :class:`PlanningProblem`'s)
    ----------
    offline : Mapping[int, int]
        Buffer id -> fixed offset in bytes (offline-planned tensors).
    names : Mapping[int, str]
        Buffer id -> readable name ("sg1:name", "scratch of #4 CONV_2D").
    tensor_count : int
        Tensors across all subgraphs: buffer ids below it are tensors
        (``subgraph_offset + index``), ids from it on are scratch buffers in request order.
    subgraph_offsets : tuple of int
        First global id of each subgraph's tensors.
    """

    offline: Mapping[int, int] = field(default_factory=dict, compare=False, hash=False)
    names: Mapping[int, str] = field(default_factory=dict, compare=False, hash=False)
    tensor_count: int = 0
    subgraph_offsets: tuple[int, ...] = ()
    op_scopes: tuple[int, ...] = field(default=(), compare=False, hash=False)


def _lifetimes(model: Model, scratch: Sequence[ScratchRequest]):
    """``MarkAllocationLifetimes(0, ...)``: first/last scope of every tensor and scratch buffer.

    Returns (first, last) dicts keyed by (subgraph, tensor) and by scratch position, and the
    scope of each of subgraph 0's operators.
    """
    first: dict[tuple[int, int], int] = {}
    last: dict[tuple[int, int], int] = {}
    sfirst: dict[int, int] = {}
    slast: dict[int, int] = {}
    by_node: dict[tuple[int, int], list[int]] = {}
    for j, r in enumerate(scratch):
        by_node.setdefault((r.subgraph, r.op), []).append(j)
    scope = 0
    op_scopes: list[int] = []
    scope_ops: dict[int, tuple[int, int]] = {}
    depth = 0

    def created(key, s):
        first.setdefault(key, s)

    def used(key, s):
        last[key] = s

    def mark(sg: int) -> None:
        nonlocal scope, depth
        depth += 1
        if depth > 64:  # a subgraph calling itself: TFLM would recurse forever
            from viewer.errors import ModelFormatError

            raise ModelFormatError(model.path, f"subgraph {sg}", "control flow recursion deeper than 64")
        g = model.subgraphs[sg]
        n_t = len(g.tensors)
        for t in g.inputs:
            if 0 <= t < n_t:
                created((sg, t), scope)
                used((sg, t), scope)
        for op in g.operators:
            scope += 1
            if sg == 0:
                op_scopes.append(scope)
            scope_ops.setdefault(scope, (sg, op.index))
            for t in op.outputs:
                if 0 <= t < n_t:
                    created((sg, t), scope)
            start = scope
            for key in CONTROL_FLOW.get(op.op_name, ()):
                callee = op.options.get(key)
                if isinstance(callee, int) and 0 <= callee < len(model.subgraphs):
                    scope += 1
                    mark(callee)
            for t in op.inputs:
                if 0 <= t < n_t:
                    used((sg, t), scope)
            for t in op.outputs:
                if 0 <= t < n_t:
                    used((sg, t), scope)
            for j in by_node.get((sg, op.index), ()):
                sfirst.setdefault(j, start)
                slast[j] = scope
        for t in g.outputs:
            if 0 <= t < n_t:
                created((sg, t), scope)
                used((sg, t), scope)
        depth -= 1

    if model.subgraphs:
        mark(0)
    return first, last, sfirst, slast, tuple(op_scopes), scope_ops


def tflm_problem(
    model: Model,
    scratch: Iterable[ScratchRequest] = (),
    *,
    offline_offsets: Sequence[int] | None = None,
) -> TflmProblem:
    """The buffers TFLM's ``CreatePlan`` hands its memory planner, in the same order.

    Parameters
    ----------
    model : Model
        The whole model (TFLM plans every subgraph in one arena, from subgraph 0).
    scratch : iterable of ScratchRequest
        Kernel scratch buffers in request order (measured: :mod:`viewer.runtime.tflm_probe`).
    offline_offsets : sequence of int, optional
        One per tensor across all subgraphs (-1 = online), as in an ``OfflineMemoryAllocation``
        entry; None: read the model's own entry, if any (:func:`offline_offsets_of`).

    Returns
    -------
    TflmProblem
        Sizes already rounded up to 16 bytes; ``first``/``last`` are ``scope + 1``, inclusive.

    Raises
    ------
    viewer.errors.ModelFormatError
        When the offline entry's tensor count differs from the model's (TFLM refuses it too).
    """
    scratch = tuple(scratch)
    if offline_offsets is None:
        offline_offsets = offline_offsets_of(model)
    offsets: list[int] = []
    total = 0
    for g in model.subgraphs:
        offsets.append(total)
        total += len(g.tensors)
    if offline_offsets is not None and len(offline_offsets) != total:
        from viewer.errors import ModelFormatError

        raise ModelFormatError(model.path, "OfflineMemoryAllocation",
                               f"{len(offline_offsets)} offsets for {total} tensors (TFLM refuses it)")
    first, last, sfirst, slast, op_scopes, _ = _lifetimes(model, scratch)
    bufs: list[Buffer] = []
    offline: dict[int, int] = {}
    names: dict[int, str] = {}
    max_time = 0
    for sg, g in enumerate(model.subgraphs):
        for t in g.tensors:
            gid = offsets[sg] + t.index
            off = -1 if offline_offsets is None else int(offline_offsets[gid])
            if not _needs_allocating(t, off):
                continue
            f = first.get((sg, t.index), -1) + 1
            l_ = last.get((sg, t.index), -1) + 1
            bufs.append(Buffer(gid, f, max(l_, f) if l_ >= 0 else f, align16(t.nbytes)))
            max_time = max(max_time, l_, f)
            if off != -1:
                offline[gid] = off
            names[gid] = t.name if sg == 0 else f"sg{sg}:{t.name}"
    for j, r in enumerate(scratch):
        gid = total + j
        f = sfirst.get(j, -1) + 1
        l_ = slast.get(j, -1) + 1
        bufs.append(Buffer(gid, f, max(l_, f), align16(r.nbytes)))
        max_time = max(max_time, l_, f)
        op = model.subgraphs[r.subgraph].operators[r.op].op_name if (
            0 <= r.subgraph < len(model.subgraphs) and 0 <= r.op < len(model.subgraphs[r.subgraph].operators)) else "?"
        where = f"#{r.op}" if r.subgraph == 0 else f"sg{r.subgraph}#{r.op}"
        names[gid] = f"scratch of {where} {op}"
    return TflmProblem(tuple(bufs), max_time + 1, (), offline, names, total, tuple(offsets), op_scopes)


def offline_aliases(problem: TflmProblem) -> list[tuple[int, int]]:
    """Pairs of offline-planned buffers the model itself places over the same bytes while
    both are live (ids, in ``AddBuffer`` order).

    TFLM takes an offline plan as given (``GreedyMemoryPlanner::AddBuffer`` with an offset;
    nothing checks it), so these are the model's intended aliases, not planner errors: Vela
    places ``scratch`` and ``scratch_fast`` (and the NPU's input and output) at one offset.
    """
    fixed = [b for b in problem.buffers if b.id in problem.offline and b.size > 0]
    out = []
    for k, a in enumerate(fixed):
        oa = int(problem.offline[a.id])
        for b in fixed[k + 1:]:
            ob = int(problem.offline[b.id])
            if a.first <= b.last and b.first <= a.last and oa < ob + b.size and ob < oa + a.size:
                out.append((a.id, b.id))
                if len(out) >= 64:  # enough to name them; the bound below does not need the list
                    return out
    return out


def kept_breadth(problem: TflmProblem) -> np.ndarray:
    """Bytes occupied at each time of ``problem`` (scope axis), shape (num_ops,), with the
    offline plan's aliases counted once.

    Offline-planned buffers count as the union of their byte ranges at their fixed offsets;
    every other buffer adds its size (TFLM's greedy planner never places an online buffer over
    another live one). Without aliases this is :meth:`PlanningProblem.breadth`. Its maximum is
    a lower bound for any plan that keeps the offline offsets, and (a union being no larger
    than a sum) for any plan that places every buffer online too.
    """
    base = problem.breadth()
    if not offline_aliases(problem):
        return base
    fixed = [b for b in problem.buffers if b.id in problem.offline and b.size > 0]
    online = dataclasses.replace(problem, buffers=tuple(b for b in problem.buffers if b.id not in problem.offline))
    out = online.breadth()[: len(base)].copy() if online.buffers else np.zeros(len(base), dtype=np.int64)
    if len(out) < len(base):
        out = np.concatenate([out, np.zeros(len(base) - len(out), dtype=np.int64)])
    points = sorted({b.first for b in fixed} | {b.last + 1 for b in fixed})
    for k, t in enumerate(points):
        live = sorted((int(problem.offline[b.id]), int(problem.offline[b.id]) + b.size)
                      for b in fixed if b.first <= t <= b.last)
        covered = top = 0
        for lo, hi in live:
            lo = max(lo, top)
            if hi > lo:
                covered += hi - lo
                top = hi
        stop = points[k + 1] if k + 1 < len(points) else len(out)
        out[t:stop] += covered
    return out


def kept_lower_bound(problem: TflmProblem) -> int:
    """``kept_breadth(problem).max()`` in bytes (0 for an empty problem): the lower bound under
    TFLM's rules with the model's offline aliases counted once."""
    b = kept_breadth(problem) if problem.buffers else np.zeros(0, dtype=np.int64)
    return int(b.max()) if len(b) else 0


def scratch_from_planner(model: Model, scratch_bytes: Sequence[int],
                         planner_buffers: Sequence[Sequence[int]]) -> tuple[ScratchRequest, ...]:
    """Scratch requests with their operators, from what TFLM's planner was given.

    ``CreatePlan`` adds the scratch buffers last, in request order, each created at its
    operator's allocation scope; that scope names the (subgraph, operator).

    Parameters
    ----------
    scratch_bytes : sequence of int
        Bytes of each ``RequestScratchBufferInArena`` call, in order.
    planner_buffers : sequence of (size, first, last, offline)
        Every ``AddBuffer`` call, in order (scopes as TFLM numbers them).

    Raises
    ------
    ValueError
        When the planner saw fewer buffers than there were scratch requests, or a scope that
        is no operator's.
    """
    n = len(scratch_bytes)
    if n == 0:
        return ()
    if len(planner_buffers) < n:
        raise ValueError(f"{n} scratch requests but only {len(planner_buffers)} planner buffers")
    _, _, _, _, _, scope_ops = _lifetimes(model, ())
    out = []
    for nbytes, b in zip(scratch_bytes, planner_buffers[-n:]):
        where = scope_ops.get(int(b[1]))
        if where is None or align16(nbytes) != int(b[0]):
            raise ValueError(f"scratch buffer of {nbytes} B at scope {b[1]} matches no operator")
        out.append(ScratchRequest(where[0], where[1], int(nbytes)))
    return tuple(out)


def _needs_allocating(t, offline_offset: int) -> bool:
    """``needs_allocating`` of ``InitializeAllocationInfo``.

    RESOURCE handles (VAR_HANDLE outputs) already hold data when the plan is made, so they are
    never planned (measured with tflite-micro on litert_testdata_call_once_mul).
    """
    if t.is_variable:
        return offline_offset != -1
    if FLAG_RESOURCE in t.flags:
        return False
    return not t.is_constant and t.nbytes != 0


def align16(n: int) -> int:
    """``AlignSizeUp(n, MicroArenaBufferAlignment())``."""
    return -(-int(n) // TFLM_ALIGNMENT) * TFLM_ALIGNMENT


def offline_offsets_of(model: Model) -> tuple[int, ...] | None:
    """The model's ``OfflineMemoryAllocation`` offsets, or None (also when the file is gone)."""
    from viewer.model.offline_plan import OFFLINE_METADATA_NAME, read_offline_offsets

    if OFFLINE_METADATA_NAME not in getattr(model, "metadata_names", ()):
        return None
    return read_offline_offsets(model.path)


def analyze_tflm(model: Model, scratch: Iterable[ScratchRequest] = (), *,
                 problem: TflmProblem | None = None) -> Analysis:
    """Usage intervals of subgraph 0 under TFLM's rules, on subgraph 0's operator axis.

    The exact problem is :func:`tflm_problem` (scope axis); this view maps each scope to the
    operator of subgraph 0 it belongs to, so tables, profiles and charts read per operator.
    Tensors of called subgraphs (IF/WHILE/CALL_ONCE) and scratch buffers appear at their
    caller's operator, with ids from :class:`TflmProblem` (global ids; scratch after every
    tensor) and names in ``temporary_names``. Sizes are TFLM's (rounded up to 16 bytes).

    Returns
    -------
    Analysis
        ``usages``: tensors (kind input/output/intermediate), scratch buffers
        (``KIND_TEMPORARY``); ``outside``: constants, variables, 0-byte tensors.
    """
    scratch = tuple(scratch)
    p = problem if problem is not None else tflm_problem(model, scratch)
    g = model.subgraphs[0]
    n_t = len(g.tensors)
    n_ops = len(g.operators)
    scopes = p.op_scopes

    def to_op(time: int) -> int:
        s = time - 1
        lo, hi = 0, len(scopes) - 1
        ans = 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if scopes[mid] <= s:
                ans, lo = mid, mid + 1
            else:
                hi = mid - 1
        return min(ans, max(n_ops - 1, 0))

    producer: dict[int, int] = {}
    consumers: dict[int, set[int]] = {}
    for op in g.operators:
        for t in op.outputs:
            producer.setdefault(t, op.index)
        for t in op.inputs:
            consumers.setdefault(t, set()).add(op.index)
    ins, outs = set(g.inputs), set(g.outputs)
    usages: list[TensorUsage] = []
    temps: dict[int, str] = {}
    planned = {b.id for b in p.buffers}
    for b in p.buffers:
        fo, lo_ = to_op(b.first), to_op(b.last)
        if b.id < n_t:
            kind = KIND_INPUT if b.id in ins else KIND_OUTPUT if b.id in outs else KIND_INTERMEDIATE
            usages.append(TensorUsage(b.id, fo, lo_, b.size, kind, producer.get(b.id),
                                      tuple(sorted(consumers.get(b.id, ())))))
        elif b.id < p.tensor_count:  # a called subgraph's tensor, at its caller's operator
            usages.append(TensorUsage(b.id, fo, lo_, b.size, KIND_INTERMEDIATE, fo, ()))
        else:
            usages.append(TensorUsage(b.id, fo, lo_, b.size, KIND_TEMPORARY, fo, ()))
            temps[b.id] = g.operators[fo].op_name if n_ops else "?"
    outside: dict[int, str] = {}
    for t in g.tensors:
        if t.index in planned:
            continue
        if t.is_constant:
            outside[t.index] = OUT_CONSTANT
        elif t.is_variable:
            outside[t.index] = OUT_TFLM_VARIABLE
        elif FLAG_RESOURCE in t.flags:
            outside[t.index] = OUT_TFLM_RESOURCE
        elif t.nbytes == 0:
            outside[t.index] = OUT_TFLM_ZERO
        else:
            outside[t.index] = OUT_UNUSED
    a = _finish(g, tuple(usages), outside, temps)
    if n_ops:
        # The breadth per operator is the most bytes occupied at any scope of it (a called
        # subgraph's scopes are not all live at once), the offline plan's aliases counted once:
        # so the lower bound never exceeds what TFLM's own plan of this problem needs.
        scope_b = kept_breadth(p)
        op_of = np.array([to_op(t) for t in range(len(scope_b))], dtype=np.int64)
        per_op = np.zeros(n_ops, dtype=np.int64)
        np.maximum.at(per_op, op_of, scope_b)
        a = dataclasses.replace(a, breadth=per_op, lower_bound_bytes=int(per_op.max()),
                                widest_op=int(np.argmax(per_op)), bound_is_final=True)
    object.__setattr__(a, "temporary_names", {k: v for k, v in p.names.items() if k >= n_t})
    return a


def variable_bytes(model: Model) -> int:
    """Bytes of variable tensors TFLM puts in its persistent tail (16-byte rounded), all subgraphs."""
    return sum(align16(t.nbytes) for g in model.subgraphs for t in g.tensors if t.is_variable)
