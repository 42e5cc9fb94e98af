"""Memory overlays for the graph viewers people already use: Model Explorer and Netron.

Both take a side file of per-node values:

- **Model Explorer** (``model_explorer/node_data_builder.py``): node data,
  ``{graph_id: {"results": {node_id: {"value": v}}, "gradient": [...]}}``, one value per node, so
  one file carries one measure. For TFLite, Model Explorer's own adapter
  (``ConvertFlatbufferDirectlyToJson``) names a graph by the subgraph's name, else ``"main"``
  for subgraph 0 and ``"subgraph_N"`` otherwise, and gives operator ``i`` of a subgraph the node
  id ``str(i)`` (its GraphInputs / GraphOutputs / pseudo_const nodes carry no operator value).
- **Netron** (``source/metadata.js``, ``metadata.Attachment``): a ``netron:attachment`` file,
  ``{"signature": "netron:attachment", "metrics": [{"kind": "node", "identifier": "<operator
  index>", "name": ..., "value": ...}]}``; tensors are ``"kind": "value"`` with the tensor
  index as identifier. Netron's identifiers are not qualified by subgraph, so one file carries
  one subgraph, with every measure.

Units: every value is in bytes; operator indices are positions in the subgraph's execution order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from viewer.analysis.types import KIND_TEMPORARY, Analysis
from viewer.model.types import Model
from viewer.planning.types import Plan

#: Per-operator measures an overlay can carry: name -> what it is (one phrase, for labels).
MEASURES = {
    "live_bytes": "bytes of every tensor live while the operator runs, kernel temporaries included",
    "breadth_bytes": "operator breadth over the model's own tensors (no kernel temporaries)",
    "temporaries_bytes": "the operator's kernel temporaries (im2col, scratch)",
    "arena_top_bytes": "highest arena address in use while the operator runs, in the plan",
}

#: Model Explorer colour gradient: white at the smallest value, red at the largest.
GRADIENT = ({"stop": 0, "bgColor": "#ffffff"}, {"stop": 0.5, "bgColor": "#fdd49e"},
            {"stop": 1, "bgColor": "#d7301f"})


@dataclass(frozen=True)
class SubgraphOverlay:
    """Per-operator and per-tensor memory of one subgraph.

    Attributes
    ----------
    index : int
        Subgraph index in the model.
    graph_id : str
        The id Model Explorer's TFLite adapter gives this subgraph.
    op_names : tuple of str
        Operator type per operator, shape (num_ops,).
    values : Mapping[str, numpy.ndarray]
        Measure name (a key of :data:`MEASURES`) -> int64 array of shape (num_ops,), bytes.
    widest_op : int
        Index of the widest operator (-1 for a subgraph without operators).
    tensors : tuple of dict
        ``{"id", "name", "kind", "bytes", "first_op", "last_op", "offset"}`` per planned tensor;
        ``first_op``/``last_op`` inclusive, ``offset`` in bytes or None.
    planner : str
    arena_bytes : int
    measured : bool
        Kernel temporaries come from the runtime.
    """

    index: int
    graph_id: str
    op_names: tuple[str, ...]
    values: Mapping[str, np.ndarray]
    widest_op: int
    tensors: tuple[dict, ...]
    planner: str
    arena_bytes: int
    measured: bool


def graph_id(model: Model, index: int) -> str:
    """The graph id Model Explorer's TFLite adapter gives subgraph ``index``."""
    name = model.subgraphs[index].name
    if name:
        return name
    return "main" if index == 0 else f"subgraph_{index}"


def subgraph_overlay(model: Model, index: int, analysis: Analysis, plan: Plan,
                     measured: bool) -> SubgraphOverlay:
    """Per-operator measures of one analysed and planned subgraph.

    Parameters
    ----------
    analysis : Analysis
        The subgraph's analysis, with kernel temporaries when ``measured``.
    plan : Plan
        A plan of ``analysis.problem()``; gives ``arena_top_bytes`` and tensor offsets.
    """
    n = analysis.num_ops
    temps = np.zeros(n, dtype=np.int64)
    top = np.zeros(n, dtype=np.int64)
    offsets = analysis.resolve_alias_offsets(plan.offsets)
    tensors = []
    for u in analysis.usages:
        if u.kind == KIND_TEMPORARY:
            temps[u.first_op:u.last_op + 1] += u.nbytes
        off = offsets.get(u.tensor)
        if off is not None and u.alias_of is None and n:
            end = off + u.nbytes
            seg = top[u.first_op:u.last_op + 1]
            np.maximum(seg, end, out=seg)
        tensors.append({"id": u.tensor, "name": analysis.tensor_name(u.tensor), "kind": u.kind,
                        "bytes": u.nbytes, "first_op": u.first_op, "last_op": u.last_op,
                        "offset": off})
    live = np.asarray(analysis.breadth, dtype=np.int64)
    values = {"live_bytes": live, "breadth_bytes": live - temps, "temporaries_bytes": temps,
              "arena_top_bytes": top}
    return SubgraphOverlay(
        index=index, graph_id=graph_id(model, index),
        op_names=tuple(analysis.op_name(i) for i in range(n)), values=values,
        widest_op=int(analysis.widest_op), tensors=tuple(tensors), planner=plan.planner,
        arena_bytes=int(plan.arena_bytes), measured=measured)


def model_explorer_node_data(subgraphs: Sequence[SubgraphOverlay], measure: str,
                             label: str = "") -> dict[str, Any]:
    """Model Explorer node data for one measure over every given subgraph.

    Returns
    -------
    dict
        ``{graph_id: {"name", "results": {"<op index>": {"value": bytes}}, "gradient"}}``,
        the JSON ``model_explorer.node_data_builder.ModelNodeData`` writes.

    Raises
    ------
    KeyError
        ``measure`` is not a key of :data:`MEASURES`.
    """
    MEASURES[measure]  # noqa: B018 - unknown measure: KeyError
    name = f"{measure} ({label})" if label else measure
    out: dict[str, Any] = {}
    for s in subgraphs:
        vals = s.values[measure]
        out[s.graph_id] = {
            "name": name,
            "results": {str(i): {"value": int(vals[i])} for i in range(len(vals))},
            "gradient": [dict(g) for g in GRADIENT],
        }
    return out


def netron_attachment(s: SubgraphOverlay, label: str = "") -> dict[str, Any]:
    """A Netron ``netron:attachment`` file for one subgraph, every measure per operator.

    Returns
    -------
    dict
        ``{"signature": "netron:attachment", "metadata": [...], "metrics": [...]}``: per operator
        (``"kind": "node"``, identifier = operator index) every :data:`MEASURES` value in bytes
        and ``widest_operator`` (1 on the widest, else 0); per planned model tensor
        (``"kind": "value"``, identifier = tensor index) ``bytes``, ``first_op``, ``last_op``
        (inclusive) and ``offset`` when planned.
    """
    metrics: list[dict[str, Any]] = []
    for i in range(len(s.op_names)):
        ident = str(i)
        for m in MEASURES:
            metrics.append({"kind": "node", "identifier": ident, "name": m,
                            "value": int(s.values[m][i])})
        metrics.append({"kind": "node", "identifier": ident, "name": "widest_operator",
                        "value": int(i == s.widest_op)})
    for t in s.tensors:
        if t["kind"] == KIND_TEMPORARY:
            continue  # the runtime's own tensors: Netron has no value for them
        ident = str(t["id"])
        for key in ("bytes", "first_op", "last_op", "offset"):
            if t[key] is not None:
                metrics.append({"kind": "value", "identifier": ident, "name": key,
                                "value": int(t[key])})
    title = f"arena-viewer: {s.planner} plan, arena {s.arena_bytes} B"
    if not s.measured:
        title += ", kernel temporaries not included"
    if label:
        title += f", {label}"
    metadata = [{"kind": "graph", "target": "", "name": "arena_viewer", "value": title}]
    return {"signature": "netron:attachment", "metadata": metadata, "metrics": metrics}


def dumps(obj: Mapping[str, Any]) -> str:
    """The overlay as JSON text (one-space indent, newline at the end)."""
    return json.dumps(obj, indent=1) + "\n"
