"""What-if edits: the levers a user can pull before planning.

``apply_edits`` turns a model's subgraph into a new :class:`~viewer.model.types.Subgraph` whose
tensor shapes and bytes follow the edits; analysis and planning then run unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from viewer.model.types import Model, Subgraph


@dataclass(frozen=True)
class WhatIfEdits:
    """Edits applied before analysis.

    Attributes
    ----------
    input_shapes : Mapping[str | int, tuple of int]
        Graph input (by tensor name, by input position as int, or "" for "the only image
        input") -> new shape.
    batch : int or None
        New batch size (dimension 0 of every input), N >= 1.
    activation_dtype : str or None
        Storage what-if: every non-constant float tensor stored as this dtype
        (float32, float16, bfloat16, int8). Weights are untouched.
    tensor_dtypes : Mapping[int, str]
        Per-tensor storage override (tensor index -> dtype), applied after ``activation_dtype``.
    rescale_fixed_sizes : bool
        With a resize: also rescale spatial sizes baked into the model (fixed RESHAPE targets,
        constant RESIZE sizes, global pooling windows) as a re-export at the new resolution
        would. Shapes then come from our own inference (``estimated``), since the model as
        stored cannot take the resize in the runtime.
    """

    input_shapes: Mapping[str | int, tuple[int, ...]] = field(default_factory=dict, hash=False)
    batch: int | None = None
    activation_dtype: str | None = None
    tensor_dtypes: Mapping[int, str] = field(default_factory=dict, hash=False)
    rescale_fixed_sizes: bool = False

    def is_empty(self) -> bool:
        return not (self.input_shapes or self.batch or self.activation_dtype or self.tensor_dtypes)


def edits_label(edits) -> str:
    """Short description of what-if edits for a chart's title ("" when there are none), e.g.
    ``"input 1x320x320x3, batch 2, activations float16, tensor 7 int8"``."""
    if edits is None or edits.is_empty():
        return ""
    parts = []
    for key, shape in dict(edits.input_shapes).items():
        dims = "x".join(str(d) for d in shape)
        parts.append(f"input {key}={dims}" if key not in ("", None) else f"input {dims}")
    if edits.batch:
        parts.append(f"batch {edits.batch}")
    if edits.activation_dtype:
        parts.append(f"activations {edits.activation_dtype}")
    if edits.tensor_dtypes:
        items = sorted(dict(edits.tensor_dtypes).items())
        if len(items) <= 2:
            parts += [f"tensor {t} {d}" for t, d in items]
        else:
            parts.append(f"{len(items)} tensor dtypes")
    if parts and edits.rescale_fixed_sizes:
        parts.append("fixed sizes rescaled (estimated)")
    return ", ".join(parts) or "edited"


def without_noop_storage(model: Model, subgraph_index: int,
                         edits: WhatIfEdits | None) -> tuple[WhatIfEdits | None, str]:
    """``edits`` without the storage what-ifs that change no tensor, and a note saying so.

    ``--activation-dtype D`` changes nothing when no non-constant float tensor of the subgraph
    is stored otherwise than D (e.g. ``int8`` on an int8 model: "0 float tensors changed"); a
    ``tensor_dtypes`` entry changes nothing when the tensor already has that dtype. Dropping
    them keeps the file as stored, so a measured verdict stays measured (newuser3 #20). Edits
    that :func:`apply_edits` would refuse (an unknown dtype, a bad index, a constant tensor)
    are kept, so they are still refused.

    Returns
    -------
    (WhatIfEdits or None, str)
        None when nothing is left; the note is "" when nothing was dropped.
    """
    if edits is None or edits.is_empty():
        return edits, ""
    import dataclasses as dc

    from viewer.whatif.apply import ACTIVATION_DTYPES, FLOAT_DTYPES

    tensors = model.subgraph(subgraph_index).tensors
    dropped = []
    act = edits.activation_dtype
    if act in ACTIVATION_DTYPES and not any(
            not t.is_constant and t.dtype in FLOAT_DTYPES and t.dtype != act for t in tensors):
        dropped.append(f"--activation-dtype {act}")
        act = None
    kept = {}
    for idx, dt in dict(edits.tensor_dtypes or {}).items():
        t = tensors[idx] if isinstance(idx, int) and 0 <= idx < len(tensors) else None
        if t is not None and not t.is_constant and t.dtype == dt:
            dropped.append(f"tensor {idx} {dt}")
        else:
            kept[idx] = dt
    if not dropped:
        return edits, ""
    out = dc.replace(edits, activation_dtype=act, tensor_dtypes=kept)
    note = (f"{', '.join(dropped)} changes no tensor (already stored so): the file is checked as "
            "stored")
    return (None if out.is_empty() else out), note


@dataclass(frozen=True)
class EditedSubgraph:
    """The result of :func:`apply_edits`.

    Attributes
    ----------
    subgraph : Subgraph
        With new shapes/dtypes/bytes.
    estimated : bool
        Shapes come from our own inference, not the runtime's.
    notes : tuple of str
        One line each, for the user (e.g. why the runtime could not propagate).
    input_shapes : Mapping[int, tuple of int]
        Graph input tensor index -> its shape after the edits (empty when nothing was edited).
    """

    subgraph: Subgraph
    estimated: bool = False
    notes: tuple[str, ...] = ()
    input_shapes: Mapping[int, tuple[int, ...]] = field(default_factory=dict, compare=False, hash=False)


def apply_edits(
    model: Model, subgraph_index: int, edits: WhatIfEdits | None, **options
) -> EditedSubgraph:
    """Apply ``edits`` to subgraph ``subgraph_index`` of ``model``.

    ``options`` go to :func:`viewer.whatif.apply.apply_edits` (``shape_source="auto"`` uses
    the LiteRT runtime's shape propagation, ``"inferred"`` only our own; ``timeout`` seconds).

    Raises
    ------
    viewer.errors.WhatIfError
        For an edit the model cannot take, naming the operator and why.
    viewer.errors.SubgraphError
    """
    sg = model.subgraph(subgraph_index)
    if edits is None or edits.is_empty():
        return EditedSubgraph(sg)
    from viewer.whatif import apply as _apply  # written in the what-if issue

    return _apply.apply_edits(model, subgraph_index, edits, **options)
