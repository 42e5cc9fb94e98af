"""Topological operator orders: which operators must run before which, and applying an order.

Every topological order of a subgraph computes the same outputs. :func:`predecessors` (or
:func:`dependencies`, as bit masks) gives the constraints (data dependencies plus the
side-effect chain), :func:`apply_order` checks an order against them and renumbers the operators, :func:`moved_operators` names the fewest operators an
order moves. :mod:`viewer.whatif.reorder` searches these orders for the smallest lower bound.

Operators with side effects keep their relative order: resource variables (VAR_HANDLE,
READ_VARIABLE, ASSIGN_VARIABLE), CALL_ONCE, control flow (WHILE, IF, CALL and StableHLO's),
hash tables, random-number generators, delegates, custom operators (conservatively), and any
operator that touches a variable or RESOURCE tensor.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from viewer.errors import WhatIfError
from viewer.model.types import FLAG_RESOURCE, Operator, Subgraph

#: Builtin operators that must keep their relative order (state, control flow, randomness).
SIDE_EFFECT_OPS = frozenset(
    {
        "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE",
        "WHILE", "IF", "CALL", "DELEGATE",
        "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "HASHTABLE_LOOKUP",
        "RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL", "MULTINOMIAL",
        "STABLEHLO_WHILE", "STABLEHLO_CASE", "STABLEHLO_COMPOSITE", "STABLEHLO_CUSTOM_CALL",
        "STABLEHLO_RNG_BIT_GENERATOR",
    }
)


def has_side_effects(op: Operator, subgraph: Subgraph) -> bool:
    """True when ``op`` must keep its order relative to every other such operator.

    Custom operators count (we cannot know what they do), as does any operator reading or
    writing a variable tensor or a RESOURCE tensor.
    """
    if op.is_custom or op.op_name in SIDE_EFFECT_OPS:
        return True
    tensors = subgraph.tensors
    for t in (*op.inputs, *op.outputs):
        if 0 <= t < len(tensors) and (tensors[t].is_variable or FLAG_RESOURCE in tensors[t].flags):
            return True
    return False


def predecessors(subgraph: Subgraph) -> list[list[int]]:
    """Per operator ``j``, the sorted operator indices that must run before it.

    Data dependencies (a tensor produced by ``i`` is read by ``j``; also write-after-write when
    two operators write one tensor) plus a chain through the side-effect operators in their
    original order. Lists, so memory is linear in the edges (bit masks of a 100k-operator
    chain take n^2/16 bytes).
    """
    ops = subgraph.operators
    preds: list[set[int]] = [set() for _ in ops]
    writers: dict[int, list[int]] = {}
    for op in ops:
        for t in (*op.outputs, *op.intermediates):
            if t >= 0:
                writers.setdefault(t, []).append(op.index)
    readers: dict[int, list[int]] = {}
    for op in ops:
        for t in op.inputs:
            if t >= 0:
                readers.setdefault(t, []).append(op.index)
    for t, ws in writers.items():
        for j in readers.get(t, ()):
            for i in ws:
                if i != j:
                    # Read after write in the file's order; a read before any write (a cycle in
                    # the file) keeps its original position relative to the writer.
                    if i < j:
                        preds[j].add(i)
                    else:
                        preds[i].add(j)
        for a, b in zip(ws, ws[1:]):
            preds[b].add(a)
    prev = None
    for op in ops:
        if has_side_effects(op, subgraph):
            if prev is not None:
                preds[op.index].add(prev)
            prev = op.index
    return [sorted(p) for p in preds]


def dependencies(subgraph: Subgraph) -> list[int]:
    """Predecessor bit masks: bit ``i`` of ``deps[j]`` set when operator ``i`` must run before ``j``
    (:func:`predecessors` as masks; for small graphs and tests)."""
    deps = []
    for p in predecessors(subgraph):
        m = 0
        for i in p:
            m |= 1 << i
        deps.append(m)
    return deps


def apply_order(subgraph: Subgraph, order: Sequence[int]) -> Subgraph:
    """Return ``subgraph`` with its operators in ``order``.

    Parameters
    ----------
    subgraph : Subgraph
    order : sequence of int
        Original operator indices in the new execution order; a permutation of
        ``range(len(subgraph.operators))``.

    Returns
    -------
    Subgraph
        Same tensors, inputs and outputs; operator ``k`` is the original ``order[k]`` with
        ``index = k``.

    Raises
    ------
    viewer.errors.WhatIfError
        When ``order`` is not a permutation, or runs an operator before one it depends on
        (data, or side-effect order).
    """
    n = len(subgraph.operators)
    order = tuple(int(i) for i in order)
    if sorted(order) != list(range(n)):
        raise WhatIfError(
            f"subgraph {subgraph.index}: operator order must be a permutation of 0..{n - 1}"
        )
    preds = predecessors(subgraph)
    pos = [0] * n
    for k, o in enumerate(order):
        pos[o] = k
    for k, o in enumerate(order):
        missing = [p for p in preds[o] if pos[p] > k]
        if missing:
            first = missing[0]
            raise WhatIfError(
                f"subgraph {subgraph.index}: operator {o} ({subgraph.operators[o].op_name}) placed "
                f"at position {k}, before operator {first} "
                f"({subgraph.operators[first].op_name}) that it depends on"
            )
    ops = tuple(dataclasses.replace(subgraph.operators[o], index=k) for k, o in enumerate(order))
    return dataclasses.replace(subgraph, operators=ops)


def moved_count(order: Sequence[int]) -> int:
    """``len(moved_operators(order))``."""
    return len(moved_operators(order))


def moved_operators(order: Sequence[int]) -> tuple[int, ...]:
    """The fewest operators to move to get ``order`` from ``0..n-1``, ascending.

    Those outside one longest increasing subsequence of ``order`` (patience sorting,
    O(n log n)).
    """
    import bisect

    tails: list[int] = []  # values
    tails_pos: list[int] = []  # position in order of each tail
    parent = [-1] * len(order)
    for pos, v in enumerate(order):
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tails_pos.append(pos)
        else:
            tails[k] = v
            tails_pos[k] = pos
        parent[pos] = tails_pos[k - 1] if k > 0 else -1
    keep = set()
    p = tails_pos[-1] if tails_pos else -1
    while p >= 0:
        keep.add(order[p])
        p = parent[p]
    return tuple(sorted(set(order) - keep))
