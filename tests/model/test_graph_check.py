"""Graph rules before planning: two producers, cycles, subgraph indices, recursion, dimensions."""

from __future__ import annotations

import pytest

from tests.tflite_builder import build, tensor, write
from viewer.errors import ModelFormatError
from viewer.model.graph_check import check_graph
from viewer.model.reader import load_model
from viewer.model.types import Model, Operator, Subgraph, Tensor


def _sg(index, n_t, ops, inputs=(0,), outputs=None, shapes=None):
    tensors = tuple(Tensor(i, f"t{i}", (shapes or {}).get(i, (4,)), (shapes or {}).get(i, (4,)), "float32", 16)
                    for i in range(n_t))
    operators = tuple(Operator(k, name, 0, None, 1, tuple(ins), tuple(outs), (), opts)
                      for k, (name, ins, outs, opts) in enumerate(ops))
    return Subgraph(index, "", tensors, operators, tuple(inputs), tuple(outputs or (n_t - 1,)))


def _model(*sgs):
    return Model("m.tflite", 100, 3, "", tuple(sgs), 0)


def _refused(model, *words):
    with pytest.raises(ModelFormatError) as e:
        check_graph(model)
    msg = str(e.value)
    assert "m.tflite" in msg and "\n" not in msg
    for w in words:
        assert w in msg, msg
    return msg


def test_a_valid_chain_passes():
    check_graph(_model(_sg(0, 3, [("ADD", [0], [1], {}), ("ADD", [1], [2], {})])))


def test_two_producers():
    _refused(_model(_sg(0, 3, [("ADD", [0], [1], {}), ("ADD", [0], [1], {})])),
             "tensor 1 (t1)", "written by operators #0 and #1")


def test_self_loop():
    _refused(_model(_sg(0, 3, [("ADD", [0, 1], [1], {}), ("ADD", [1], [2], {})])),
             "operator #0 (ADD)", "its own output")


def test_cycle_reads_a_tensor_written_later():
    _refused(_model(_sg(0, 4, [("ADD", [0, 2], [1], {}), ("ADD", [1], [2], {}), ("ADD", [2], [3], {})])),
             "operator #0 (ADD)", "written later by operator #1")


def test_while_naming_a_subgraph_that_does_not_exist():
    main = _sg(0, 2, [("WHILE", [0], [1], {"cond_subgraph_index": 1, "body_subgraph_index": 7})])
    body = _sg(1, 2, [("ADD", [0], [1], {})])
    _refused(_model(main, body), "operator #0 (WHILE)", "body_subgraph_index 7 is not a subgraph")


def test_while_calling_itself():
    main = _sg(0, 2, [("CALL_ONCE", [], [], {"init_subgraph_index": 1}), ("ADD", [0], [1], {})])
    body = _sg(1, 2, [("WHILE", [0], [1], {"cond_subgraph_index": 2, "body_subgraph_index": 1})])
    cond = _sg(2, 2, [("ADD", [0], [1], {})])
    _refused(_model(main, body, cond), "subgraph 1 operator #0 (WHILE)", "calls itself")


def test_mutual_recursion():
    a = _sg(0, 2, [("IF", [0], [1], {"then_subgraph_index": 1, "else_subgraph_index": 1})])
    b = _sg(1, 2, [("IF", [0], [1], {"then_subgraph_index": 0, "else_subgraph_index": 0})])
    _refused(_model(a, b), "calls subgraph 0, which calls it back")


def test_dimensions_below_minus_one():
    _refused(_model(_sg(0, 2, [("ADD", [0], [1], {})], shapes={1: (1, -2, 3)})),
             "tensor 1 (t1)", "below -1")
    check_graph(_model(_sg(0, 2, [("ADD", [0], [1], {})], shapes={1: (1, -1, 3)})))


def test_load_model_applies_the_rules_and_can_skip_them(tmp_path):
    data = build([tensor("a", (2,)), tensor("b", (2,))], [(0, [0], [1]), (0, [0], [1])], [0], [1])
    p = write(tmp_path, "two.tflite", data)
    with pytest.raises(ModelFormatError, match="written by operators #0 and #1"):
        load_model(p)
    assert len(load_model(p, graph_rules=False).subgraph(0).operators) == 2


def test_a_variable_written_in_place_names_the_verifier_rule(tmp_path):
    """newuser3 #21: a decoder whose KV caches are is_variable tensors updated in place was
    refused as "a self-loop ... a cycle in the graph?"; the line now says which rule it breaks."""
    from tests.decoder_builder import decoder

    path = tmp_path / "dec_variable.tflite"
    path.write_bytes(decoder("variable"))
    with pytest.raises(ModelFormatError) as e:
        load_model(str(path))
    msg = str(e.value)
    assert "writes the variable" in msg and "in place" in msg and "verifier" in msg
    assert "cycle" not in msg and "\n" not in msg
