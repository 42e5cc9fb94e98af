"""``never_freed``/``pinned`` and ``kernel_sized`` on tiny subgraphs built in code.

The same rules are checked against LiteRT in test_folding.py (pinning, on a model LiteRT runs)
and test_runtime_agreement.py (kernel-sized placeholders, on the shared models).
"""

from __future__ import annotations

import dataclasses
import math

from viewer.analysis.intervals import analyze
from viewer.analysis.types import NOTE_KERNEL_SIZED, TensorUsage
from viewer.model.types import Operator, Subgraph, Tensor


def _sg(shapes, ops, inputs, outputs, custom=()):
    tensors = tuple(
        Tensor(i, f"t{i}", s, s, "float32", 4 * max(1, math.prod(s)))
        for i, s in enumerate(shapes)
    )
    operators = tuple(
        Operator(k, name, None if name in custom else 0, name if name in custom else None, 1,
                 tuple(i), tuple(o))
        for k, (name, i, o) in enumerate(ops)
    )
    return Subgraph(0, "main", tensors, operators, tuple(inputs), tuple(outputs))


def test_pinned_is_never_deallocated_including_produced_but_unread():
    # t2 is produced at op 0 and never read: LiteRT never frees it (refcount never reaches 0).
    sg = _sg([(8,), (8,), (8,), (8,)], [("SPLIT", [0], [1, 2]), ("RELU", [1], [3])], [0], [3])
    an = analyze(sg)
    assert {u.tensor: u.never_freed for u in an.usages} == {0: True, 1: False, 2: True, 3: True}
    assert {b.id: b.pinned for b in an.problem().buffers} == {0: True, 1: False, 2: True, 3: True}
    assert an.usage(2).last_op == 1  # held to the end


def test_usages_made_without_never_freed_fall_back_to_their_kind():
    sg = _sg([(8,), (8,)], [("RELU", [0], [1])], [0], [1])
    an = analyze(sg)
    bare = dataclasses.replace(an, usages=tuple(
        TensorUsage(u.tensor, u.first_op, u.last_op, u.nbytes, u.kind) for u in an.usages))
    assert all(b.pinned for b in bare.problem().buffers)


def test_rank0_outputs_of_a_custom_op_are_flagged_and_noted():
    sg = _sg([(1, 10, 4), (1, 10), (), (), (), ()],
             [("TFLite_Detection_PostProcess", [0, 1], [2, 3, 4, 5])], [0, 1], [2, 3, 4, 5],
             custom={"TFLite_Detection_PostProcess"})
    an = analyze(sg)
    assert an.kernel_sized == (2, 3, 4, 5)
    assert len(an.notes) == 4 and NOTE_KERNEL_SIZED in an.notes[0] and "t2" in an.notes[0]


def test_genuine_scalars_are_not_flagged():
    # A reduction to a scalar, and an element-wise op of scalars: the file's shape is right.
    sg = _sg([(4,), (1,), (), (), ()],
             [("SUM", [0, 1], [2]), ("MUL", [2, 2], [3]), ("ADD", [3, 3], [4])], [0, 1], [4])
    assert analyze(sg).kernel_sized == ()
    # An LSTM whose output is stored as shape (): flagged (its kernel sizes it from its inputs).
    lstm = _sg([(1, 2), ()], [("LSTM", [0], [1])], [0], [1])
    assert analyze(lstm).kernel_sized == (1,)
