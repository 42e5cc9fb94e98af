"""TFLM's lifetime rules (micro_allocation_info.cc), on tiny models built in code and shared ones."""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as S

from tests.conftest import shared_model
from tests.tflite_builder import add_chain, build, tensor, write
from viewer.analysis.intervals import analyze
from viewer.analysis.tflm import (
    OUT_TFLM_VARIABLE, ScratchRequest, align16, analyze_tflm, scratch_from_planner, tflm_problem,
)
from viewer.analysis.types import KIND_TEMPORARY
from viewer.model.reader import load_model


def test_graph_input_is_freed_after_its_last_use(tmp_path):
    m = load_model(write(tmp_path, "chain.tflite", add_chain(3)))
    p = tflm_problem(m)
    # scopes: input at 0, op i at i+1; time = scope + 1
    assert [(b.id, b.first, b.last) for b in p.buffers] == [(0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 4)]
    a = analyze_tflm(m)
    assert a.usage(0).last_op == 0  # TFLM frees it after operator 0
    assert analyze(m.subgraphs[0]).usage(0).last_op == 2  # LiteRT keeps it to the end


def test_sizes_round_up_to_16_bytes(tmp_path):
    m = load_model(write(tmp_path, "odd.tflite", add_chain(2, shape=(1, 3))))  # 12 B tensors
    assert {b.size for b in tflm_problem(m).buffers} == {16}
    assert align16(0) == 0 and align16(17) == 32


def test_variables_go_to_the_tail_and_constants_stay_in_the_file(tmp_path):
    ts = [tensor("x", (1, 4)), tensor("state", (1, 4), variable=True), tensor("w", (1, 4), buffer=1),
          tensor("y", (1, 4)), tensor("z", (1, 4))]
    data = build(ts, [(0, [0, 1], [3]), (0, [3, 2], [4])], [0], [4],
                 buffers=[None, bytes(16)])
    m = load_model(write(tmp_path, "var.tflite", data))
    ids = [b.id for b in tflm_problem(m).buffers]
    assert ids == [0, 3, 4]
    assert analyze_tflm(m).outside[1] == OUT_TFLM_VARIABLE


def test_only_read_tensor_is_planned_from_scope_minus_one(tmp_path):
    """Vela's scratch tensors: no producer, not a graph input: TFLM still plans them."""
    ts = [tensor("x", (1, 4)), tensor("scratch", (1, 64)), tensor("y", (1, 4))]
    m = load_model(write(tmp_path, "ro.tflite", build(ts, [(0, [0, 1], [2])], [0], [2])))
    b = {b.id: b for b in tflm_problem(m).buffers}[1]
    assert (b.first, b.last, b.size) == (0, 2, 256)


def test_scratch_lives_at_its_operator(tmp_path):
    m = load_model(write(tmp_path, "chain.tflite", add_chain(3)))
    p = tflm_problem(m, [ScratchRequest(0, 1, 100)])
    s = p.buffers[-1]
    assert (s.id, s.first, s.last, s.size) == (p.tensor_count, 3, 3, 112)
    a = analyze_tflm(m, [ScratchRequest(0, 1, 100)])
    t = [u for u in a.usages if u.kind == KIND_TEMPORARY]
    assert len(t) == 1 and t[0].first_op == 1 and "scratch of #1 ADD" in a.tensor_name(t[0].tensor)
    # and back from what the planner saw: the scope names the operator
    assert scratch_from_planner(m, [100], [[112, 2, 2, -1]]) == (ScratchRequest(0, 1, 100),)


def test_while_subgraphs_are_nested_in_the_callers_scope():
    m = load_model(shared_model("litert_testdata_multi_subgraphs_while.tflite"))
    p = tflm_problem(m)
    # every subgraph is in the one plan, and the called subgraphs' scopes sit between the
    # WHILE's own scope and the next operator's
    sgs = {next(i for i in range(len(p.subgraph_offsets)) if i + 1 == len(p.subgraph_offsets)
                or b.id < p.subgraph_offsets[i + 1]) for b in p.buffers}
    assert len(sgs) > 1
    w = next(op.index for op in m.subgraphs[0].operators if op.op_name == "WHILE")
    s_while = p.op_scopes[w]
    nested = [b for b in p.buffers if b.id >= p.subgraph_offsets[1]]
    assert all(s_while + 1 <= b.first - 1 for b in nested)
    nxt = p.op_scopes[w + 1] if w + 1 < len(p.op_scopes) else 10**9
    assert all(b.last - 1 < nxt for b in nested)


def test_called_subgraph_tensors_are_tensors_not_temporaries():
    m = load_model(shared_model("litert_testdata_multi_subgraphs_while.tflite"))
    p = tflm_problem(m)
    a = analyze_tflm(m, problem=p)
    nested = [u for u in a.usages if len(m.subgraphs[0].tensors) <= u.tensor < p.tensor_count]
    assert nested and all(u.kind != KIND_TEMPORARY for u in nested)
    assert all(a.tensor_name(u.tensor).startswith("sg") for u in nested)
