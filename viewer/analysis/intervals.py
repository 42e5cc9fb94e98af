"""Usage intervals under LiteRT's rules, and the operator profile they imply.

Follows LiteRT's ``ArenaPlanner::PlanAllocations`` (tflite/arena_planner.cc):

- graph inputs are allocated at operator 0 and, having an extra reference, never freed;
- graph outputs and variables are never freed (live to the end);
- any other tensor lives from its producer to its last consumer; a produced tensor that nothing
  consumes is never freed either (its reference count never reaches zero);
- constant tensors are read-only and mapped from the file (outside the arena);
- the outputs of operators whose every input is constant are computed once at prepare time into
  persistent memory (kernels that call ``SetTensorToPersistentRo``, e.g. DEQUANTIZE, DENSIFY);
- variables live in LiteRT's separate persistent arena (``kTfLiteArenaRwPersistent``).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from viewer.analysis.types import (
    KIND_INPUT,
    KIND_INTERMEDIATE,
    KIND_OUTPUT,
    KIND_TEMPORARY,
    OUT_CONSTANT,
    OUT_DYNAMIC,
    OUT_PERSISTENT,
    OUT_UNUSED,
    Analysis,
    Temporary,
    TensorUsage,
)
from viewer.model.types import FLAG_STRING, FLAG_VARIANT, Subgraph

#: Operators whose kernels fold an all-constant input into a persistent output at prepare time.
FOLDING_OPS = frozenset({"DEQUANTIZE", "DENSIFY"})
OUT_VARIABLE = "variable (LiteRT's persistent arena)"


def analyze(subgraph: Subgraph, *, temporaries: Iterable[Temporary] = ()) -> Analysis:
    """Give every arena tensor of ``subgraph`` a usage interval, and compute the profile.

    Parameters
    ----------
    subgraph : Subgraph
        Operators in execution order.
    temporaries : iterable of Temporary
        Kernel temporaries measured from the runtime (each live at its one operator).

    Returns
    -------
    Analysis
        ``usages`` in tensor-index order (temporaries last); ``breadth`` of shape (num_ops,)
        in bytes; ``naive_bytes``, ``lower_bound_bytes``, ``widest_op``.
    """
    n_ops = len(subgraph.operators)
    last_index = max(n_ops - 1, 0)
    tensors = subgraph.tensors
    outside: dict[int, str] = {}

    persistent: set[int] = set()
    for op in subgraph.operators:
        ins = [t for t in op.inputs if t >= 0]
        if op.op_name in FOLDING_OPS and ins and all(
            tensors[t].is_constant or t in persistent for t in ins
        ):
            persistent.update(t for t in op.outputs if t >= 0)

    producer: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    for op in subgraph.operators:
        for t in op.outputs:
            if t >= 0 and t not in producer:
                producer[t] = op.index
        for t in op.inputs:
            if t >= 0:
                consumers.setdefault(t, []).append(op.index)
        for t in op.intermediates:
            if t >= 0:
                producer.setdefault(t, op.index)
                consumers.setdefault(t, []).append(op.index)

    graph_inputs = [t for t in subgraph.inputs if t >= 0]
    graph_outputs = {t for t in subgraph.outputs if t >= 0}
    touched = set(producer) | set(consumers) | set(graph_inputs) | graph_outputs

    usages: list[TensorUsage] = []
    for t in sorted(touched):
        tensor = tensors[t]
        if tensor.is_constant:
            outside[t] = OUT_CONSTANT
            continue
        if t in persistent:
            outside[t] = OUT_PERSISTENT
            continue
        if tensor.is_variable:
            outside[t] = OUT_VARIABLE
            continue
        if tensor.flags & {FLAG_STRING, FLAG_VARIANT}:
            outside[t] = OUT_DYNAMIC
            continue
        cons = tuple(sorted(set(consumers.get(t, ()))))
        prod = producer.get(t)
        if t in graph_inputs:
            first, last, kind = 0, last_index, KIND_INPUT
        elif prod is None:
            # Read but never written, not an input: LiteRT allocates it at its first use.
            first = cons[0] if cons else 0
            last = last_index if t in graph_outputs else (cons[-1] if cons else first)
            kind = KIND_OUTPUT if t in graph_outputs else KIND_INTERMEDIATE
        else:
            first = prod
            if t in graph_outputs:
                last, kind = last_index, KIND_OUTPUT
            elif cons and cons[-1] >= prod:
                last, kind = cons[-1], KIND_INTERMEDIATE
            else:
                # Never consumed: its reference count never reaches zero, so it is never freed.
                last, kind = last_index, KIND_INTERMEDIATE
        usages.append(TensorUsage(t, first, last, tensor.nbytes, kind, prod, cons))

    for t in range(len(tensors)):
        if t not in touched and t not in outside and not tensors[t].is_constant:
            outside[t] = OUT_UNUSED

    temps: dict[int, str] = {}
    for tmp in temporaries:
        usages.append(TensorUsage(tmp.id, tmp.op, tmp.op, tmp.nbytes, KIND_TEMPORARY, tmp.op, ()))
        temps[tmp.id] = subgraph.operators[tmp.op].op_name if 0 <= tmp.op < n_ops else "?"

    return _finish(subgraph, tuple(usages), outside, temps)


def _finish(subgraph: Subgraph, usages: tuple[TensorUsage, ...], outside, temps) -> Analysis:
    n_ops = len(subgraph.operators)
    m = max(n_ops, 1)
    diff = np.zeros(m + 1, dtype=np.int64)
    naive = 0
    for u in usages:
        if u.alias_of is not None:
            continue
        naive += u.nbytes
        diff[u.first_op] += u.nbytes
        diff[min(u.last_op, m - 1) + 1] -= u.nbytes
    breadth = np.cumsum(diff)[:m] if n_ops else np.zeros(0, dtype=np.int64)
    lb = int(breadth.max()) if len(breadth) else 0
    widest = int(np.argmax(breadth)) if len(breadth) else -1
    return Analysis(subgraph, usages, outside, temps, breadth, naive, lb, widest)
