"""Which tensors LiteRT sizes during Invoke, and whether their sizes depend on input *values*.

When ``allocate_tensors()`` leaves tensors without memory (dynamic outputs, a RESHAPE whose
shape input is computed: tflite/core/subgraph.cc ``PrepareOpsStartingAt``), the probe invokes
once on synthetic inputs and the arena read is the one that run needed. Whether another input
can need more depends on what sized those tensors:

- **shapes only**: every operator that starts invoke-time sizing takes its shape-determining
  operands from constants or from SHAPE / RANK / SIZE of tensors (the input shapes): the same
  input shapes give the same sizes, so the measured arena holds at these shapes;
- **input values**: control flow (WHILE, IF: iteration counts and branch results), operators
  whose output size is a function of the data (WHERE, UNIQUE, NON_MAX_SUPPRESSION...), or a
  shape operand computed from an input's values (e.g. CAST -> GATHER -> STRIDED_SLICE bounds):
  the next real input can need more than the synthetic one did.

Conservative: an operand whose origin is unclear counts as value-derived.
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.model.types import Model

#: Operators whose output depends only on their input's shape, never its values.
_SHAPE_OF = frozenset({"SHAPE", "RANK", "SIZE"})
#: Control flow: iteration counts and branches follow the values.
_CONTROL_FLOW = frozenset({"WHILE", "IF", "CALL_ONCE", "CALL", "STABLEHLO_WHILE", "STABLEHLO_CASE"})
#: Output sizes that are a function of the data itself.
_DATA_SIZED = frozenset({"WHERE", "UNIQUE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5",
                         "DYNAMIC_UPDATE_SLICE", "SPARSE_TO_DENSE", "NONZERO"})
#: Operators every operand of which shapes the output (e.g. FILL's dims, RANGE's bounds).
_ALL_OPERANDS_SHAPE = frozenset({"FILL", "RANGE", "BROADCAST_ARGS", "ZEROS_LIKE"})


@dataclass(frozen=True)
class InvokeSizing:
    """Tensors the runtime sized during Invoke, for the verdict.

    Attributes
    ----------
    tensors : int
        Model tensors LiteRT had not placed after ``allocate_tensors()`` (sized in Invoke).
    by_values : tuple of str
        Operators (``"#1 WHILE"``) whose outputs' sizes follow the input values; empty when
        only the input shapes size them.
    by_shapes : tuple of str
        Operators that start invoke-time sizing from shapes only.
    """

    tensors: int
    by_values: tuple[str, ...]
    by_shapes: tuple[str, ...]

    @property
    def value_dependent(self) -> bool:
        return bool(self.by_values)

    def as_dict(self) -> dict:
        return {"tensors": self.tensors, "by_input_values": self.value_dependent,
                "value_operators": list(self.by_values), "shape_operators": list(self.by_shapes)}


def _value_derived(model: Model, subgraph_index: int) -> set[int]:
    """Tensors whose contents follow the graph inputs' values (constants and SHAPE/RANK/SIZE
    outputs do not, nor anything computed from those alone)."""
    sg = model.subgraph(subgraph_index)
    derived = {t for t in sg.inputs if t >= 0}
    derived |= {k for k, t in enumerate(sg.tensors) if getattr(t, "is_variable", False)}
    for op in sg.operators:  # stored in execution order
        if op.op_name in _SHAPE_OF:
            continue
        if any(i in derived for i in op.inputs if i >= 0):
            derived.update(o for o in op.outputs if o >= 0)
    return derived


def _starts(probe) -> list:
    """Runtime nodes that start invoke-time sizing: a dynamic output, or a RESHAPE whose shape
    is not known at Prepare (``RuntimeProbe.node_ranges``' stops)."""
    out = []
    for node in probe.nodes:
        dyn = any(0 <= t < len(probe.tensors) and probe.tensors[t].allocation == "dynamic"
                  for t in node.outputs)
        if dyn or probe._shape_not_known(node):
            out.append(node)
    return out


def invoke_sizing(model: Model, subgraph_index: int, probe) -> InvokeSizing | None:
    """None when the probe did not invoke (every tensor placed by ``allocate_tensors()``)."""
    if probe is None or not getattr(probe, "invoked", False):
        return None
    count = int(getattr(probe, "deferred_count", 0) or 0) or len(probe.deferred)
    derived = _value_derived(model, subgraph_index)
    by_values, by_shapes = [], []
    for node in _starts(probe):
        name = node.op_name
        operands = [i for i in node.inputs if i >= 0]
        shaping = operands if name in _ALL_OPERANDS_SHAPE else operands[1:]
        values = (name in _CONTROL_FLOW or name in _DATA_SIZED
                  or any(i in derived for i in shaping))
        (by_values if values else by_shapes).append(f"#{node.index} {name}")
    if not by_values and not by_shapes:  # the probe invoked but no start is visible: be careful
        by_values.append("an operator LiteRT sized during Invoke (not identified)")
    return InvokeSizing(count, tuple(by_values), tuple(by_shapes))
