"""Graph rules LiteRT needs before anything is planned: one line naming the operator or tensor.

Checked for every subgraph, in this order:

- **single producer**: no tensor is an output of two operators;
- **execution order is a topological order**: an operator reads only tensors written by an
  earlier operator (or graph inputs, constants, variables and tensors nothing writes); a
  self-loop or a cycle shows up as a read of a tensor written at or after the reader;
- **valid subgraph indices**: every control-flow option (WHILE's ``cond/body_subgraph_index``,
  IF's ``then/else``, CALL_ONCE's ``init``, StableHLO's ...) names an existing subgraph;
- **no recursive control flow**: no subgraph calls itself, directly or through others;
- **dimensions**: every dimension of ``shape`` and ``shape_signature`` is >= 0, or -1 (unknown).

These follow the consistency checks of LiteRT's model verifier (``tflite/tools/verifier.cc``,
``VerifySubgraphConsistency``, run by ``FlatBufferModel::VerifyAndBuildFromFile``: a tensor
written twice is "an output from another op", an input must be produced before it is read)
and the control-flow kernels' subgraph index checks (``tflite/kernels/while.cc``, ``if.cc``,
``call_once.cc``). Measured with the Python ``Interpreter`` of LiteRT 2.3, which does not run
the verifier: an operator reading its own output is refused ("Tensor 1 is both input 1 and
output 0"); two producers, or a read before the write, are accepted and give an arena that
depends on which write wins, so they are refused here rather than planned silently.
"""

from __future__ import annotations

from viewer.errors import ModelFormatError
from viewer.model.types import Model, Subgraph

#: Option keys that hold subgraph indices (an int, or a tuple of ints), as in the schema.
SUBGRAPH_KEYS = ("cond_subgraph_index", "body_subgraph_index", "then_subgraph_index",
                 "else_subgraph_index", "init_subgraph_index", "subgraph", "subgraph_index",
                 "decomposition_subgraph_index", "branch_subgraph_indices",
                 "comparator_subgraph_index", "update_computation_subgraph_index")
_KEY_SET = frozenset(SUBGRAPH_KEYS)


def check_graph(model: Model) -> None:
    """Raise unless every subgraph of ``model`` follows the rules in the module docstring.

    Parameters
    ----------
    model : Model

    Raises
    ------
    viewer.errors.ModelFormatError
        Naming the file, the subgraph and the operator or tensor that breaks a rule.
    """
    n_sg = len(model.subgraphs)
    calls: dict[int, list[tuple[int, int, str, str]]] = {}
    for sg in model.subgraphs:
        _check_tensors(model, sg)
        _check_order(model, sg)
        calls[sg.index] = _called_subgraphs(model, sg, n_sg)
    _check_recursion(model, calls)


def _fail(model: Model, step: str, reason: str) -> ModelFormatError:
    return ModelFormatError(model.path, step, reason)


def _name(sg: Subgraph, t: int) -> str:
    name = sg.tensors[t].name
    return f"tensor {t} ({name[:60] + '...' if len(name) > 60 else name})"


def _check_tensors(model: Model, sg: Subgraph) -> None:
    for t in sg.tensors:
        for what, dims in (("shape", t.shape), ("shape_signature", t.shape_signature)):
            if dims and min(dims) < -1:
                raise _fail(model, f"subgraph {sg.index} {_name(sg, t.index)}",
                            f"{what} {list(dims)} has a dimension below -1 (dimensions are >= 0, or -1 "
                            f"for unknown)")


def _check_order(model: Model, sg: Subgraph) -> None:
    producer: dict[int, int] = {}
    for op in sg.operators:
        for t in set(op.outputs):
            if t < 0:
                continue
            if t in producer:
                raise _fail(model, f"subgraph {sg.index} {_name(sg, t)}",
                            f"written by operators #{producer[t]} and #{op.index} ({op.op_name}); "
                            f"LiteRT's model verifier needs one producer per tensor")
            producer[t] = op.index
    for op in sg.operators:
        for t in op.inputs:
            p = producer.get(t)
            if p is not None and p == op.index and 0 <= t < len(sg.tensors) and sg.tensors[t].is_variable:
                raise _fail(model, f"subgraph {sg.index} operator #{op.index} ({op.op_name})",
                            f"writes the variable {_name(sg, t)} in place (it is its input and its "
                            f"output): LiteRT's model verifier rejects an operator output that is a "
                            f"variable (tflite/core/tools/verifier.cc); stateful kernels update a "
                            f"variable given as an input only, and KV caches are resource variables "
                            f"(VAR_HANDLE/ASSIGN_VARIABLE) or signature inputs and outputs")
            if p is not None and p >= op.index:
                how = "its own output (a self-loop)" if p == op.index else f"written later by operator #{p}"
                raise _fail(model, f"subgraph {sg.index} operator #{op.index} ({op.op_name})",
                            f"reads {_name(sg, t)}, {how}: the execution order is not a topological "
                            f"order (a cycle in the graph?)")


def _called_subgraphs(model: Model, sg: Subgraph, n_sg: int) -> list[tuple[int, int, str, str]]:
    """(callee, operator index, op name, option key) for every subgraph an operator names."""
    out = []
    for op in sg.operators:
        if not op.options or _KEY_SET.isdisjoint(op.options):
            continue
        for key in SUBGRAPH_KEYS:
            v = op.options.get(key)
            if v is None or isinstance(v, bool):
                continue
            for callee in (v if isinstance(v, tuple) else (v,)):
                if not isinstance(callee, int) or not 0 <= callee < n_sg:
                    raise _fail(model, f"subgraph {sg.index} operator #{op.index} ({op.op_name})",
                                f"{key} {callee} is not a subgraph (the model has {n_sg})")
                out.append((callee, op.index, op.op_name, key))
    return out


def _check_recursion(model: Model, calls: dict[int, list[tuple[int, int, str, str]]]) -> None:
    """Depth-first search for a cycle in the subgraph call graph (iterative: no recursion limit)."""
    state = dict.fromkeys(calls, 0)  # 0 unvisited, 1 on the stack, 2 done
    for root in calls:
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            sg, k = stack[-1]
            if k == len(calls[sg]):
                state[sg] = 2
                stack.pop()
                continue
            stack[-1] = (sg, k + 1)
            callee, op, op_name, key = calls[sg][k]
            if state[callee] == 1:
                how = "itself" if callee == sg else f"subgraph {callee}, which calls it back"
                raise _fail(model, f"subgraph {sg} operator #{op} ({op_name})",
                            f"{key} {callee}: subgraph {sg} calls {how} (recursive control flow "
                            f"never ends)")
            if state[callee] == 0:
                state[callee] = 1
                stack.append((callee, 0))
