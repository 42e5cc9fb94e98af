"""Usage intervals under LiteRT's rules, on tiny subgraphs built in code.

Each rule restates ``ArenaPlanner::PlanAllocations`` / ``IdentifyInPlaceTensors``
(tflite/arena_planner.cc); tests/analysis/test_runtime_agreement.py checks the same rules against
LiteRT's data pointers on real models.
"""

from __future__ import annotations

import pytest

from viewer.analysis.intervals import (
    OUT_ALIAS_NEVER_WRITTEN,
    OUT_DYNAMIC_OUTPUT,
    OUT_NEVER_WRITTEN,
    OUT_RESOURCE,
    OUT_VARIABLE,
    analyze,
)
from viewer.analysis.types import (
    KIND_ALIAS,
    KIND_INPUT,
    KIND_INTERMEDIATE,
    KIND_OUTPUT,
    KIND_TEMPORARY,
    OUT_CONSTANT,
    OUT_PERSISTENT,
    OUT_UNUSED,
    Temporary,
)
from viewer.model.types import FLAG_RESOURCE, Operator, Subgraph, Tensor
from viewer.planning.litert import plan_litert
from viewer.planning.verify import verify_plan


def make(sizes, ops, inputs, outputs, *, constant=(), variable=()):
    """``sizes``: bytes per tensor; ``ops``: (name, inputs, outputs) in execution order."""
    tensors = tuple(
        Tensor(i, f"t{i}", (n,), (n,), "int8", n, buffer=1 if i in constant else 0,
               is_constant=i in constant, is_variable=i in variable)
        for i, n in enumerate(sizes)
    )
    operators = tuple(
        Operator(k, name, 0, None, 1, tuple(ins), tuple(outs)) for k, (name, ins, outs) in enumerate(ops)
    )
    return Subgraph(0, "main", tensors, operators, tuple(inputs), tuple(outputs))


def spans(an):
    return {u.tensor: (u.first_op, u.last_op) for u in an.usages}


def test_chain_inputs_live_from_op_0_and_are_never_freed():
    sg = make([100, 8, 200, 300, 50],
              [("CONV_2D", [0, 1], [2]), ("CONV_2D", [2, 1], [3]), ("CONV_2D", [3, 1], [4])],
              [0], [4], constant=[1])
    an = analyze(sg)
    assert spans(an) == {0: (0, 2), 2: (0, 1), 3: (1, 2), 4: (2, 2)}
    assert an.usage(0).kind == KIND_INPUT and an.usage(4).kind == KIND_OUTPUT
    assert an.usage(2).kind == KIND_INTERMEDIATE and an.usage(2).consumers == (1,)
    assert an.outside[1] == OUT_CONSTANT
    assert list(an.breadth) == [300, 600, 450]
    assert an.lower_bound_bytes == 600 and an.widest_op == 1 and an.naive_bytes == 650


def test_output_nothing_reads_is_never_freed():
    sg = make([64, 64, 64, 64],
              [("SPLIT", [0], [1, 2]), ("RELU", [1], [3])],
              [0], [3])
    an = analyze(sg)
    assert spans(an)[2] == (0, 1)  # produced at op 0, never consumed: live to the end
    problem = an.problem()
    queue0 = {b.id: b for b in problem.alloc_queue[0]}
    assert queue0[2].pinned and not queue0[1].pinned
    assert [b.id for b in problem.alloc_queue[0]] == [0, 1, 2]


def test_reshape_shares_its_input_and_extends_its_life():
    sg = make([64, 128, 128, 32, 16],
              [("CONV_2D", [0], [1]), ("RESHAPE", [1, 3], [2]), ("CONV_2D", [2], [4])],
              [0], [4], constant=[3])
    an = analyze(sg)
    assert an.usage(2).kind == KIND_ALIAS and an.usage(2).alias_of == 1
    assert spans(an)[1] == (0, 2)  # root lives until the alias's last use
    assert list(an.breadth) == [64 + 128, 64 + 128, 64 + 128 + 16]
    plan = plan_litert(an.problem())
    verify_plan(an.problem(), plan)
    offsets = an.resolve_alias_offsets(plan.offsets)
    assert offsets[2] == offsets[1]


def test_chain_of_data_unmodified_ops_shares_one_root():
    sg = make([64, 96, 96, 96, 96, 8, 32],
              [("CONV_2D", [0], [1]), ("RESHAPE", [1, 5], [2]), ("EXPAND_DIMS", [2, 5], [3]),
               ("SQUEEZE", [3], [4]), ("CONV_2D", [4], [6])],
              [0], [6], constant=[5])
    an = analyze(sg)
    assert {t: an.usage(t).alias_of for t in (2, 3, 4)} == {2: 1, 3: 1, 4: 1}
    assert spans(an)[1] == (0, 4)


@pytest.mark.parametrize(
    "inputs,outputs,why",
    [([1], [3], "input of the reshape is a graph input"),
     ([0], [2], "output of the reshape is a graph output")],
)
def test_reshape_never_shares_graph_inputs_or_outputs(inputs, outputs, why):
    sg = make([64, 96, 96, 32],
              [("CONV_2D", [0], [1]), ("RESHAPE", [1], [2]), ("CONV_2D", [2], [3])],
              inputs, outputs)
    an = analyze(sg)
    assert an.usage(2).alias_of is None, why


def test_add_shares_an_input_only_it_reads():
    # t1 is read by ADD only: shared. t2 also feeds op 3: not a candidate.
    sg = make([64, 256, 256, 256, 256],
              [("CONV_2D", [0], [1]), ("CONV_2D", [0], [2]), ("ADD", [2, 1], [3]),
               ("ADD", [3, 2], [4])],
              [0], [4])
    an = analyze(sg)
    assert an.usage(3).alias_of == 1  # input 0 (t2) has two readers; input 1 (t1) is taken
    assert an.usage(4).alias_of is None  # output is a graph output


@pytest.mark.parametrize(
    "sizes,why",
    [([64, 128, 256, 256, 64], "broadcast: the input is smaller than the output"),
     ([64, 4, 4, 4, 64], "a modified tensor of <= 4 bytes is never shared")],
)
def test_add_does_not_share_unequal_or_scalar_tensors(sizes, why):
    sg = make(sizes,
              [("CONV_2D", [0], [1]), ("CONV_2D", [0], [2]), ("ADD", [1, 2], [3]),
               ("CONV_2D", [3], [4])],
              [0], [4])
    an = analyze(sg)
    # Input 0 never qualifies; input 1 does only when it has the output's bytes, > 4 of them.
    expected = 2 if sizes[2] == sizes[3] and sizes[3] > 4 else None
    assert an.usage(3).alias_of == expected, why


def test_add_does_not_modify_a_root_others_read():
    # t2 is a reshape of t1; t1 is also read by op 4, so ADD may not overwrite it through t2.
    sg = make([64, 128, 128, 128, 64, 64, 4],
              [("CONV_2D", [0], [1]), ("RESHAPE", [1], [2]), ("ADD", [2, 6], [3]),
               ("CONV_2D", [3], [4]), ("CONV_2D", [1], [5])],
              [0], [4, 5], constant=[6])
    an = analyze(sg)
    assert an.usage(2).alias_of == 1
    assert an.usage(3).alias_of is None


def test_dequantize_of_a_constant_is_persistent_not_of_an_activation():
    sg = make([64, 32, 128, 64, 128, 16],
              [("DEQUANTIZE", [1], [2]), ("DEQUANTIZE", [0], [4]), ("CONV_2D", [4, 2], [5])],
              [0], [5], constant=[1])
    an = analyze(sg)
    assert an.outside[2] == OUT_PERSISTENT
    assert an.usage(4) is not None and spans(an)[4] == (1, 2)
    assert an.outside[3] == OUT_UNUSED


def test_never_written_tensor_and_variable_are_outside_the_arena():
    sg = make([64, 64, 64, 16],
              [("ADD", [0, 1], [3]), ("ASSIGN_VARIABLE", [2, 3], [])],
              [0], [3], variable=[2])
    an = analyze(sg)
    assert an.outside[1] == OUT_NEVER_WRITTEN
    assert an.outside[2] == OUT_VARIABLE
    queue0 = an.problem().alloc_queue[0]
    assert [b.id for b in queue0][:2] == [2, 0]  # variables, then graph inputs
    assert queue0[0].pinned and queue0[0].size == 64  # persistent: takes part in the sort


def test_resource_handle_is_persistent_and_read_variable_output_dynamic():
    # As LiteRT 2.3 allocates litert_testdata_call_once_mul.tflite (measured).
    base = make([4, 4, 4, 4],
                [("VAR_HANDLE", [], [1]), ("READ_VARIABLE", [1], [2]), ("MUL", [2, 0], [3])],
                [0], [3])
    handle = Tensor(1, "v", (), (), "resource", 4, flags=frozenset({FLAG_RESOURCE}))
    scalar_read = Tensor(2, "t2", (), (), "float32", 4)  # the file gives the output no dims
    tensors = (base.tensors[0], handle, scalar_read, base.tensors[3])
    sg = Subgraph(0, "main", tensors, base.operators, base.inputs, base.outputs)
    an = analyze(sg)
    assert an.outside[1] == OUT_RESOURCE and an.outside[2] == OUT_DYNAMIC_OUTPUT
    assert spans(an) == {0: (0, 2), 3: (2, 2)}
    # A ranked READ_VARIABLE output stays in the arena (read_variable.cc: dynamic only when
    # dims->size == 0; measured on tests/decoder_builder.py's resource-variable decoder).
    ranked = Subgraph(0, "main", (base.tensors[0], handle, *base.tensors[2:]), base.operators,
                      base.inputs, base.outputs)
    assert spans(analyze(ranked)) == {0: (0, 2), 2: (1, 2), 3: (2, 2)}
    # A resource handle passed in as a graph input is an ordinary arena tensor.
    assign = (Operator(0, "ASSIGN_VARIABLE", 0, None, 1, (1, 0), ()),)
    as_input = Subgraph(0, "main", tensors, assign, (0, 1), ())
    assert spans(analyze(as_input)) == {0: (0, 0), 1: (0, 0)}


def test_temporaries_live_at_their_operator_and_queue_after_outputs():
    sg = make([64, 128, 32],
              [("CONV_2D", [0], [1]), ("CONV_2D", [1], [2])],
              [0], [2])
    an = analyze(sg, temporaries=[Temporary(3, 1, 500, "im2col")])
    t = an.usage(3)
    assert (t.first_op, t.last_op, t.kind) == (1, 1, KIND_TEMPORARY)
    assert an.temporaries_ops == {3: "CONV_2D"}
    assert [b.id for b in an.problem().alloc_queue[1]] == [2, 3]
    assert an.lower_bound_bytes == 64 + 128 + 32 + 500


def test_empty_subgraph():
    an = analyze(Subgraph(0, "empty", (), (), (), ()))
    assert an.usages == () and an.lower_bound_bytes == 0 and an.widest_op == -1
    assert plan_litert(an.problem()).arena_bytes == 0


def test_reshape_of_a_tensor_nothing_writes_has_no_bytes_either():
    """B4 of issue 15: RESHAPE shares the bytes of a tensor no operator writes. LiteRT gives
    neither memory (../shared/fuzz/B4_chart_inplace_root_never_written: both 'no memory'), so
    both are outside the arena, and every plan covers every tensor the chart draws."""
    sg = make([256, 256, 8, 256, 256],
              [("RESHAPE", [1, 2], [3]), ("ADD", [3, 0], [4])], [0], [4], constant=[2])
    an = analyze(sg)
    assert an.outside[1] == OUT_NEVER_WRITTEN
    assert an.outside[3] == OUT_ALIAS_NEVER_WRITTEN
    assert sorted(u.tensor for u in an.usages) == [0, 4]
    plan = plan_litert(an.problem())
    offsets = an.resolve_alias_offsets(plan.offsets)
    assert all(u.tensor in offsets for u in an.usages)
