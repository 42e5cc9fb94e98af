"""What if the KV caches held N positions? (``--context-length N``)

The context length is the size of the caches' sequence dimension. It is found and changed by
these stated rules:

- **which dimension**: among the dimensions every KV cache (:func:`viewer.analysis.kv_cache.
  find_kv_caches`) has at the same axis (the batch, axis 0, excepted), the one along which a
  ``DYNAMIC_UPDATE_SLICE`` writes a shorter slice into the cache (the new positions), when
  exactly one such axis is common to every cache so updated; else the largest (caches are laid
  out ``[batch, positions, heads, head_dim]`` or ``[batch, heads, positions, head_dim]``); its
  size is the stored context length C;
- **what follows from it**: in a copy of the model, every dimension equal to C of every
  non-constant tensor (the caches, the attention scores and mask ``[.., T, C]``, the
  ``READ_VARIABLE`` outputs) becomes N, in ``shape`` and ``shape_signature``, and so does every
  entry equal to C of a small 1-D integer constant (a shape operand: ``FILL``'s dims, a
  ``RESHAPE`` shape). A weight (any other constant) with a dimension equal to C makes the
  rule ambiguous: the what-if then refuses, naming it. (A dimension of some other tensor that
  happens to equal C is changed too: the rule cannot tell it apart.)

LiteRT computes every intermediate shape again at prepare, so the copy is what the runtime
measures (:func:`context_length_whatif`); the estimate beside it is :data:`ESTIMATE_METHOD`
(our planner over the copy's stored shapes, plus the stored length's measured kernel
temporaries scaled by N / C), and the KV bytes are exact from the caches' shapes.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np

from viewer.analysis.kv_cache import KVCache, find_kv_caches
from viewer.errors import WhatIfError
from viewer.model.types import Model

#: Largest integer constant (entries) read as a shape operand.
MAX_SHAPE_OPERAND = 8
#: Largest context length accepted (positions): 2^24.
MAX_CONTEXT = 1 << 24
_INT_TYPES = {2: "<i4", 4: "<i8"}  # TensorType INT32, INT64


@dataclass(frozen=True)
class ContextAxis:
    """The caches' sequence dimension: ``length`` positions at ``axis`` of every cache."""

    length: int
    axis: int
    caches: tuple[str, ...]
    rule: str = "largest"

    def describe(self) -> str:
        how = ("the axis DYNAMIC_UPDATE_SLICE writes a shorter slice of" if self.rule == "update" else
               "their largest common dimension")
        return f"context length {self.length} (axis {self.axis} of every KV cache, {how})"


def _update_axes(model: Model, caches) -> set[int] | None:
    """Axes along which a ``DYNAMIC_UPDATE_SLICE`` writes a shorter slice into a cache (its
    operand 0 one of the cache's tensors), intersected over every cache that has one; None
    when no cache is updated so."""
    where = {(g, t): c for c in caches for g, t in c.tensors}
    found: dict[str, set[int]] = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.op_name != "DYNAMIC_UPDATE_SLICE" or len(op.inputs) < 2:
                continue
            c = where.get((sg.index, op.inputs[0]))
            if c is None or not 0 <= op.inputs[1] < len(sg.tensors):
                continue
            upd = sg.tensors[op.inputs[1]].shape
            if len(upd) != len(c.shape):
                continue
            axes = {a for a in range(1, len(upd)) if upd[a] < c.shape[a]}
            found[c.name] = found.get(c.name, axes) & axes
    if not found:
        return None
    return set.intersection(*found.values())


def context_axis(model: Model, caches: tuple[KVCache, ...] | None = None) -> ContextAxis:
    """The stored context length and the cache axis holding it (see the module rules).

    Raises
    ------
    viewer.errors.WhatIfError
        The model has no KV cache, a cache has no shape, or the caches share no dimension.
    """
    caches = find_kv_caches(model) if caches is None else caches
    shaped = [c for c in caches if c.shape]
    if not caches:
        raise WhatIfError(f"{model.path}: --context-length: the model keeps no KV cache (no resource "
                          "variable, variable tensor or signature input/output pair)")
    if len(shaped) < len(caches):
        bad = next(c.name for c in caches if not c.shape)
        raise WhatIfError(f"{model.path}: --context-length: KV cache {bad!r} has no shape in the file; "
                          "its sequence dimension cannot be told")
    rank = min(len(c.shape) for c in shaped)
    common = [(shaped[0].shape[a], a) for a in range(1, rank)
              if len({c.shape[a] for c in shaped}) == 1]
    if not common:
        raise WhatIfError(f"{model.path}: --context-length: the KV caches share no dimension "
                          f"({', '.join(f'{c.name} {list(c.shape)}' for c in shaped[:3])})")
    names = tuple(c.name for c in shaped)
    updated = _update_axes(model, shaped)
    by_update = [(n, a) for n, a in common if updated and a in updated]
    if len(by_update) == 1:
        return ContextAxis(int(by_update[0][0]), int(by_update[0][1]), names, "update")
    length, axis = max(common)
    return ContextAxis(int(length), int(axis), names)


@dataclass(frozen=True)
class ContextEdit:
    """A written copy at another context length.

    Attributes
    ----------
    path : str
        The copy.
    old, new : int
        Context lengths (positions).
    axis : ContextAxis
    tensors_changed : int
        Non-constant tensors whose shape changed (all subgraphs).
    operands_changed : tuple of str
        Integer constants (shape operands) whose entries changed.
    """

    path: str
    old: int
    new: int
    axis: ContextAxis
    tensors_changed: int
    operands_changed: tuple[str, ...]


def write_context_length(model: Model, n: int, dst: str | os.PathLike) -> ContextEdit:
    """Write a copy of ``model`` whose context length is ``n`` (the module's rules).

    The copy is the file's bytes with only those int32 shape entries and integer constant
    entries changed in place (same sizes, so nothing else moves: linear in the tensor count,
    ~0.3 s at 40k tensors where the schema object API takes ~5 s).

    Parameters
    ----------
    model : Model
    n : int
        Positions, 1..2^24.
    dst : path
        Where to write the copy (a file that may be replaced).

    Returns
    -------
    ContextEdit

    Raises
    ------
    viewer.errors.WhatIfError
        ``n`` out of range, no KV cache, or a weight with a dimension equal to the context length.
    viewer.errors.ModelFormatError
        The file cannot be read.
    """
    from ai_edge_litert import schema_py_generated as S

    from viewer.errors import ModelFormatError

    if not 1 <= int(n) <= MAX_CONTEXT:
        raise WhatIfError(f"--context-length {n}: need 1..{MAX_CONTEXT:,d} positions")
    ax = context_axis(model)
    old, n = ax.length, int(n)
    try:
        with open(model.path, "rb") as f:
            raw = bytearray(f.read())
    except OSError as e:
        raise ModelFormatError(model.path, "open", e.strerror or str(e)) from None
    root = S.Model.GetRootAs(raw, 0)
    changed, operands, done = 0, [], set()
    for g in range(root.SubgraphsLength()):
        sg = root.Subgraphs(g)
        for i in range(sg.TensorsLength()):
            t = sg.Tensors(i)
            buf = root.Buffers(t.Buffer()) if t.Buffer() else None
            data = _buffer_data(buf) if buf is not None else None
            if data is not None and data[1]:
                _edit_constant(model, t, raw, data, old, n, operands, done)
                continue
            hit = False
            for slot in (4, 18):  # Tensor.shape, Tensor.shape_signature (vtable offsets)
                hit |= _edit_int32_vector(raw, t._tab, slot, old, n, done)
            changed += hit
    with open(dst, "wb") as f:
        f.write(raw)
    return ContextEdit(str(dst), old, n, ax, changed, tuple(operands))


def _vector(tab, slot: int) -> tuple[int, int] | None:
    """(byte position, length) of the vector in field ``slot`` of ``tab``, or None."""
    o = tab.Offset(slot)
    return (tab.Vector(o), tab.VectorLen(o)) if o else None


def _edit_int32_vector(raw: bytearray, tab, slot: int, old: int, n: int, done: set) -> bool:
    """Entries equal to ``old`` of an int32 vector become ``n``, in place; True if any did.
    A vector shared by several tables is edited once (``done``)."""
    v = _vector(tab, slot)
    if v is None or not v[1]:
        return False
    pos, length = v
    a = np.frombuffer(raw, dtype="<i4", count=length, offset=pos)
    if old not in a:
        return pos in done
    done.add(pos)
    raw[pos:pos + 4 * length] = np.where(a == old, n, a).astype("<i4").tobytes()
    return True


def _buffer_data(buf) -> tuple[int, int] | None:
    """(byte position, bytes) of a buffer's data inside the file (in the flatbuffer, or at
    ``offset``/``size`` after it), or None."""
    v = _vector(buf._tab, 4)
    if v is not None and v[1]:
        return v
    off, size = int(buf.Offset()), int(buf.Size())
    return (off, size) if off > 1 and size else None


def _edit_constant(model, t, raw, data, old, n, operands, done) -> None:
    """A shape operand's entries equal to ``old`` become ``n``; a weight with such a dimension
    is refused."""
    shape = [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else []
    name = (t.Name() or b"").decode("utf-8", "replace")
    count = int(np.prod(shape or [1]))
    if t.Type() in _INT_TYPES and len(shape) <= 1 and count <= MAX_SHAPE_OPERAND:
        dt = np.dtype(_INT_TYPES[t.Type()])
        pos, size = data
        if size < count * dt.itemsize or pos in done:
            return
        a = np.frombuffer(raw, dtype=dt, count=count, offset=pos)
        if old in a:
            done.add(pos)
            raw[pos:pos + count * dt.itemsize] = np.where(a == old, n, a).astype(dt).tobytes()
            operands.append(name)
        return
    if old in shape:
        raise WhatIfError(f"{model.path}: --context-length: cannot tell which dimensions follow from the "
                          f"context length {old}: constant {name!r} {shape} has a dimension of {old} too")


@dataclass(frozen=True)
class ContextLengthWhatIf:
    """The deployment at the stored and at another context length (bytes).

    Attributes
    ----------
    edit : ContextEdit
    baseline, edited : viewer.whatif.deployment.Deployment
        At the stored context length and at ``edit.new`` (measured by LiteRT on the copy when
        ``measure``; planned otherwise).
    planned_arenas : dict
        Signature key -> planner litert's arena over the copy's stored shapes (kernel
        temporaries not included).
    estimated_arenas : dict
        Signature key -> :data:`ESTIMATE_METHOD`'s arena (None when the stored length was not
        measured: no temporaries to scale).
    kv_bytes_before, kv_bytes_after : int
        One copy of every cache, from their shapes.
    """

    edit: ContextEdit
    baseline: object
    edited: object
    planned_arenas: dict
    estimated_arenas: dict
    kv_bytes_before: int
    kv_bytes_after: int

    def as_dict(self) -> dict:
        return {
            "context_length": {"stored": self.edit.old, "whatif": self.edit.new,
                               "axis": self.edit.axis.axis, "rule": self.edit.axis.describe()},
            "kv_cache_bytes": {"stored": self.kv_bytes_before, "whatif": self.kv_bytes_after,
                               "source": "estimated", "method": "bytes of every cache's shape"},
            "arenas": [{"key": k, "stored_bytes": self.baseline.arenas.get(k),
                        "stored_source": "measured" if self.baseline.measured else "planned",
                        "whatif_estimated_bytes": self.estimated_arenas.get(k),
                        "whatif_estimate_method": ESTIMATE_METHOD,
                        "whatif_planned_tensors_bytes": self.planned_arenas.get(k),
                        "whatif_bytes": self.edited.arenas.get(k),
                        "whatif_source": "measured" if self.edited.measured else "planned"}
                       for k in self.edited.keys],
            "tensors_changed": self.edit.tensors_changed,
            "shape_operands_changed": list(self.edit.operands_changed),
        }


#: How the arena at another context length is estimated (no runtime at that length).
ESTIMATE_METHOD = ("planner litert over the copy's tensors, plus the stored length's kernel "
                   "temporaries (LiteRT's measured arena minus our planned one there) scaled by "
                   "N / C (attention's temporaries hold rows of the cache)")


def estimate_arena(planned_copy: int, measured_base: int, planned_base: int, old: int, new: int) -> int:
    """:data:`ESTIMATE_METHOD`, in bytes (the excess never taken below 0)."""
    excess = max(0, int(measured_base) - int(planned_base))
    return int(planned_copy) + -(-excess * int(new) // int(old))


def context_length_whatif(model: Model, n: int, keys=None, *, measure: bool = True,
                          timeout: float = 120.0, workdir: str | None = None) -> ContextLengthWhatIf:
    """The deployment (:func:`viewer.whatif.deployment.deployment`) at the stored context
    length and at ``n``: the copy written in ``workdir`` (a temporary folder by default,
    removed afterwards), estimated by our planner and measured by LiteRT.

    Raises
    ------
    viewer.errors.WhatIfError
        See :func:`write_context_length`.
    """
    from viewer.model.reader import load_model
    from viewer.whatif.deployment import deployment
    from viewer.whatif.footprint import footprint

    with tempfile.TemporaryDirectory(prefix="arena-viewer-ctx-", dir=workdir) as tmp:
        dst = os.path.join(tmp, f"context_{int(n)}.tflite")
        edit = write_context_length(model, n, dst)
        copy = load_model(dst)
        base = deployment(model, keys, measure=measure, timeout=timeout)
        edited = deployment(copy, keys, measure=measure, timeout=timeout, model_path=dst)
        planned = {k: int(footprint(copy, edited.subgraphs[k], None, planner="litert",
                                    measure=False).arena_bytes) for k in edited.keys}
    estimated = {k: None for k in edited.keys}
    if base.measured:
        for k in edited.keys:
            planned_base = int(footprint(model, base.subgraphs[k], None, planner="litert",
                                         measure=False).arena_bytes)
            estimated[k] = estimate_arena(planned[k], base.arenas[k], planned_base, edit.old, edit.new)
    return ContextLengthWhatIf(edit, base, edited, planned, estimated, int(base.kv_bytes),
                               int(edited.kv_bytes))
