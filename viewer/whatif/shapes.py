"""Our own shape inference, used when the LiteRT runtime cannot propagate a resize.

The per-operator shape rules live in the operator registry (:mod:`viewer.ops`, one entry per
operator); this module walks the graph. They follow the ``Prepare`` step of LiteRT's builtin kernels (tflite/kernels/conv.cc,
depthwise_conv.cc, transpose_conv.cc, pooling.cc, reduce.cc, add.cc and the other binary
kernels with ``ProcessBroadcastShapes``, concatenation.cc, pad.cc, resize_bilinear.cc,
reshape.cc, fully_connected.cc, softmax.cc (activations.cc), slice.cc, strided_slice.cc,
transpose.cc) and the padding rule of tflite/kernels/padding.h. Layout is NHWC throughout.

Only operators whose inputs changed shape are recomputed; every other tensor keeps the shape
stored in the model, so an operator we do not know only matters when a resize reaches it.
Small integer tensors that carry shapes (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE) have their
values propagated too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from viewer import ops
from viewer.errors import WhatIfError
from viewer.model.types import Operator, Subgraph
from viewer.ops import SHAPE_OPS, ShapeContext, ShapeError, broadcast
from viewer.ops import elementwise, layout, pool
from viewer.ops.types import Shape, opt

__all__ = ["infer_shapes", "broadcast", "SUPPORTED_OPS", "check_stored_shapes", "StoredShapeCheck"]

#: Operator families, as the registry (:mod:`viewer.ops`) declares them.
UNARY_OPS = frozenset(elementwise.UNARY_OPS)
BROADCAST_OPS = frozenset(elementwise.BROADCAST_OPS)
POOL_OPS = frozenset(pool.POOL_OPS)
REDUCE_OPS = frozenset(pool.REDUCE_OPS)
RESIZE_OPS = frozenset(layout.RESIZE_OPS)

#: Every operator :func:`infer_shapes` knows (those with a shape rule in the registry).
SUPPORTED_OPS = SHAPE_OPS

#: Why one operator cannot take the new shapes (wrapped into WhatIfError).
_Fail = ShapeError


def infer_shapes(
    subgraph: Subgraph,
    input_shapes: Mapping[int, Shape],
    *,
    constants: Mapping[int, np.ndarray] | None = None,
    source: str = "",
    rescale_fixed_sizes: bool = False,
    report: list[str] | None = None,
) -> dict[int, Shape]:
    """Propagate new graph-input shapes through ``subgraph``.

    Parameters
    ----------
    subgraph : Subgraph
        Operators in execution order.
    input_shapes : Mapping[int, tuple of int]
        Tensor index (a graph input) -> its new shape.
    constants : Mapping[int, numpy.ndarray], optional
        Values of small integer constant tensors (tensor index -> array), e.g. from
        :func:`viewer.model.constants.small_int_constants`. Needed for RESHAPE's shape input,
        PAD's paddings, RESIZE's size, MEAN's axes, SLICE/STRIDED_SLICE bounds, TRANSPOSE's perm.
    source : str
        The model file, put at the start of error messages.
    rescale_fixed_sizes : bool
        Also rescale spatial sizes baked into the model at its original resolution, as a
        converter re-exporting the model at the new resolution would: a RESHAPE's fixed target,
        a RESIZE's constant size (each dimension mapped through the old -> new spatial sizes
        already seen, e.g. 16 -> 32), and a pooling window that covered its whole input (a
        global pool). Off by default: the model as it is rejects such a resize.
    report : list of str, optional
        When given, one line is appended per operator whose fixed sizes were rescaled.

    Returns
    -------
    dict
        Tensor index -> shape, for every tensor of the subgraph (unchanged ones included).

    Raises
    ------
    viewer.errors.WhatIfError
        When an operator cannot take its new input shapes (e.g. a RESHAPE whose fixed target
        no longer matches the element count, a CONCATENATION of mismatched sizes) or when a
        resized tensor reaches an operator this inference does not know. The message names
        the operator (index and op name), the tensor, and why.
    """
    shapes: dict[int, Shape] = {t.index: tuple(t.shape) for t in subgraph.tensors}
    values: dict[int, np.ndarray] = {k: np.asarray(v, dtype=np.int64) for k, v in (constants or {}).items()}
    changed: set[int] = set()
    for t, s in input_shapes.items():
        s = tuple(int(d) for d in s)
        if s != shapes[t]:
            changed.add(t)
        shapes[t] = s
    prefix = f"{source}: " if source else ""
    rescale = _Rescale(subgraph, report) if rescale_fixed_sizes else None
    if rescale is not None:
        for t in input_shapes:
            rescale.learn(t, shapes[t])
    for op in subgraph.operators:
        ins = [i for i in op.inputs if i >= 0]
        touched = any(i in changed for i in ins)
        if rescale is not None and op.op_name in RESIZE_OPS:
            touched = True  # a constant size may need rescaling though its input kept its shape
        try:
            if not touched:
                _propagate_values(op, shapes, values, changed)
                continue
            new = _infer_op(op, shapes, values, rescale)
        except _Fail as e:
            t = e.tensor if e.tensor is not None else (op.outputs[0] if op.outputs else None)
            tname = f" tensor {t} '{subgraph.tensors[t].name}'" if t is not None and t >= 0 else ""
            dyn = [i for i in ins if i not in changed and subgraph.tensors[i].is_dynamic
                   and not subgraph.tensors[i].is_constant]
            hint = (f" (input tensor {dyn[0]} has a data-dependent shape, known only when the model runs)"
                    if dyn else "")
            raise WhatIfError(
                f"{prefix}operator {op.index} ({op.op_name}){tname} cannot take the new input shape: {e}{hint}",
                fixed_size=rescale is None and not dyn,
            ) from None
        for t, s in zip(op.outputs, new):
            if t < 0:
                continue
            s = tuple(int(d) for d in s)
            if any(d < 0 for d in s):
                raise WhatIfError(
                    f"{prefix}operator {op.index} ({op.op_name}) tensor {t} "
                    f"'{subgraph.tensors[t].name}': inferred a negative dimension {list(s)}"
                )
            if s != shapes[t]:
                changed.add(t)
                values.pop(t, None)
            shapes[t] = s
            if rescale is not None:
                rescale.learn(t, s)
        _propagate_values(op, shapes, values, changed)
    return shapes


_opt = opt


class _Rescale:
    """Old -> new spatial sizes seen so far (H and W of rank-4 tensors), for rescaling fixed sizes."""

    def __init__(self, subgraph: Subgraph, report: list[str] | None):
        self.orig = {t.index: tuple(t.shape) for t in subgraph.tensors}
        self.size_map: dict[int, int] = {}
        self.ambiguous: set[int] = set()
        self.report = report

    def learn(self, t: int, new: Shape) -> None:
        old = self.orig[t]
        if len(old) != 4 or len(new) != 4:
            return
        for k in (1, 2):
            o, n = int(old[k]), int(new[k])
            if o <= 1 or o == n:
                continue
            if self.size_map.setdefault(o, n) != n:
                self.ambiguous.add(o)

    def map(self, d: int) -> int:
        d = int(d)
        if d in self.ambiguous:
            raise _Fail(f"fixed size {d} maps to several new sizes; cannot rescale it")
        return self.size_map.get(d, d)

    def note(self, op: Operator, what: str, old, new) -> None:
        if self.report is not None and list(old) != list(new):
            self.report.append(f"operator {op.index} ({op.op_name}): fixed {what} {list(old)} rescaled to {list(new)}")


def _infer_op(
    op: Operator, shapes: Mapping[int, Shape], values: Mapping[int, np.ndarray], rescale: _Rescale | None = None
) -> list[Shape]:
    """Output shapes of ``op`` given the current ``shapes``, from its registry entry; raises _Fail."""
    spec = ops.get(op.op_name)
    if spec.shapes is None:
        raise _Fail(
            f"the resized tensor reaches {op.op_name}, whose shape rule this fallback does not know "
            "(the runtime could not propagate it either)"
        )
    try:
        return spec.shapes(op, ShapeContext(shapes, values, rescale))
    except _Fail:
        raise
    except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError, OverflowError) as e:
        # A rule meeting tensors whose ranks do not fit the operator (a weight of rank 1 under
        # FULLY_CONNECTED, in a mutated file): one line naming the operator, not an internal error.
        ranks = ", ".join(f"{i}: {list(shapes[i])}" for i in op.inputs if i >= 0 and i in shapes)
        raise _Fail(f"its inputs' shapes do not fit the operator ({ranks}; {type(e).__name__})") from None


def _propagate_values(
    op: Operator, shapes: Mapping[int, Shape], values: dict[int, np.ndarray], changed: set[int]
) -> None:
    """Follow small integer shape values through SHAPE/PACK/STRIDED_SLICE/CONCATENATION/CAST/GATHER.

    A tensor whose value changes is added to ``changed``, so that its consumers are recomputed.
    """
    if not op.outputs or op.outputs[0] < 0:
        return
    out = op.outputs[0]
    _compute_value(op, shapes, values)
    if out in values and any(i in changed for i in op.inputs if i >= 0):
        changed.add(out)


def _compute_value(op: Operator, shapes: Mapping[int, Shape], values: dict[int, np.ndarray]) -> None:
    name = op.op_name
    ins = list(op.inputs)
    out = op.outputs[0]
    try:
        if name == "SHAPE":
            values[out] = np.array(shapes[ins[0]], dtype=np.int64)
        elif name in ("CAST", "IDENTITY", "RESHAPE", "SQUEEZE", "EXPAND_DIMS") and ins[0] in values:
            values[out] = np.asarray(values[ins[0]]).reshape(shapes[out]) if shapes[out] else np.ravel(values[ins[0]])[:1].reshape(())
        elif name == "PACK" and all(i in values for i in ins):
            values[out] = np.stack([values[i] for i in ins], axis=int(_opt(op, "axis", 0)))
        elif name == "CONCATENATION" and all(i in values for i in ins):
            values[out] = np.concatenate([np.atleast_1d(values[i]) for i in ins], axis=int(_opt(op, "axis", 0)))
        elif name == "STRIDED_SLICE" and all(i in values for i in ins[:4]) and np.ndim(values[ins[0]]) == 1:
            v = values[ins[0]]
            b, e = int(np.ravel(values[ins[1]])[0]), int(np.ravel(values[ins[2]])[0])
            s = int(np.ravel(values[ins[3]])[0]) if len(ins) > 3 else 1
            if _opt(op, "offset", False):
                e = b + e
            sl = slice(None if _opt(op, "begin_mask", 0) & 1 else b, None if _opt(op, "end_mask", 0) & 1 else e, s)
            r = v[sl]
            values[out] = r[0] if _opt(op, "shrink_axis_mask", 0) & 1 and len(r) else r
        elif name == "GATHER" and ins[0] in values and ins[1] in values and np.ndim(values[ins[0]]) == 1:
            values[out] = np.asarray(values[ins[0]])[np.asarray(values[ins[1]])]
        elif name in ("MUL", "ADD", "SUB", "FLOOR_DIV") and all(i in values for i in ins):
            a, b = values[ins[0]], values[ins[1]]
            values[out] = {"MUL": a * b, "ADD": a + b, "SUB": a - b, "FLOOR_DIV": a // np.where(b == 0, 1, b)}[name]
        elif name in ("REDUCE_PROD",) and ins[0] in values:
            values[out] = np.prod(values[ins[0]])
    except (IndexError, ValueError, TypeError, KeyError):
        values.pop(out, None)


@dataclass(frozen=True)
class StoredShapeCheck:
    """Whether the shapes stored in the file are those the runtime computes at prepare.

    Every operator with a shape rule in the registry is recomputed from the stored shapes of
    its inputs, in execution order (LiteRT's kernels resize their outputs in ``Prepare``, so a
    stored output shape is only a hint: tflite/core/subgraph.cc ``PrepareOpsStartingAt``).

    Attributes
    ----------
    differs : tuple of (int, tuple, tuple, int)
        ``(tensor, stored shape, shape the rules give, operator)`` for each output whose stored
        shape is not what its operator computes, in execution order.
    """

    differs: tuple[tuple[int, Shape, Shape, int], ...] = ()
    unconfirmed: tuple[tuple[int, int], ...] = ()

    @property
    def ok(self) -> bool:
        """The stored shapes are those the rules give, and none is left unconfirmed."""
        return not self.differs and not self.unconfirmed

    def caveat(self) -> str:
        """The phrase that goes on a number computed at the stored shapes ("" when ``ok``)."""
        if self.differs:
            return ("of the file's stored shapes; LiteRT computes other shapes at prepare "
                    "(shape rules): run with --measure")
        if self.unconfirmed:
            return ("of the file's stored shapes; some are unknown until LiteRT prepares "
                    "the model: run with --measure")
        return ""

    def as_dict(self, subgraph: Subgraph, limit: int = 20) -> dict:
        """JSON form: ``status`` ("as_stored", "differs", "unconfirmed"), the first ``limit``
        tensors of each kind, and the counts."""
        tensors = subgraph.tensors
        ops_ = subgraph.operators
        return {
            "status": "differs" if self.differs else ("unconfirmed" if self.unconfirmed else "as_stored"),
            "differs_count": len(self.differs),
            "differs": [{"id": t, "name": tensors[t].name, "stored_shape": list(a),
                         "computed_shape": list(b), "op": o, "op_name": ops_[o].op_name}
                        for t, a, b, o in self.differs[:limit]],
            "unconfirmed_count": len(self.unconfirmed),
            "unconfirmed": [{"id": t, "name": tensors[t].name, "op": o, "op_name": ops_[o].op_name}
                            for t, o in self.unconfirmed[:limit]],
            "note": self.caveat(),
        }


#: Element-wise operators: inputs all of one shape give that shape (the fast path of
#: :func:`check_stored_shapes` on long chains).
_SAME_SHAPE_OPS = UNARY_OPS | BROADCAST_OPS


def check_stored_shapes(subgraph: Subgraph, constants: Mapping[int, np.ndarray] | None = None,
                        kernel_sized: Iterable[int] = ()) -> StoredShapeCheck:
    """Recompute every operator's output shapes from the stored input shapes; no runtime.

    An operator with no shape rule, or whose rule fails on the stored shapes, keeps the stored
    shapes of its outputs (nothing is claimed about it). Checked against LiteRT's ``allocate_tensors``
    shapes on every shared model (tests/whatif/test_shapes.py): no difference claimed where
    LiteRT has none. Dynamic tensors (a ``-1`` in the
    shape signature, sized while the model runs) are skipped: the plan flags them already.

    Parameters
    ----------
    subgraph : Subgraph
    constants : Mapping[int, numpy.ndarray], optional
        As for :func:`infer_shapes` (RESHAPE targets, PAD paddings, ...).
    kernel_sized : iterable of int
        Tensors whose stored rank-0 shape is a placeholder the kernel replaces at prepare
        (``Analysis.kernel_sized``): listed as unconfirmed, with their producer.

    Returns
    -------
    StoredShapeCheck
    """
    shapes: dict[int, Shape] = {t.index: tuple(t.shape) for t in subgraph.tensors}
    values: dict[int, np.ndarray] = {k: np.asarray(v, dtype=np.int64) for k, v in (constants or {}).items()}
    tensors = subgraph.tensors
    differs: list[tuple[int, Shape, Shape, int]] = []
    sized = set(kernel_sized)
    unconfirmed: list[tuple[int, int]] = []
    for op in subgraph.operators:
        unconfirmed += [(t, op.index) for t in op.outputs if t in sized]
        if (op.op_name in _SAME_SHAPE_OPS and len(op.outputs) == 1 and op.outputs[0] >= 0
                and all(i < 0 or shapes[i] == shapes[op.outputs[0]] for i in op.inputs)):
            continue  # element-wise on inputs of the output's own shape: nothing to recompute
        try:
            new = _infer_op(op, shapes, values) if ops.get(op.op_name).shapes is not None else None
        except (_Fail, IndexError, KeyError, ValueError, TypeError, ZeroDivisionError):
            new = None
        for t, s in zip(op.outputs, new or ()):
            if t < 0 or t >= len(tensors) or tensors[t].is_dynamic or tensors[t].is_constant:
                continue
            s = tuple(int(d) for d in s)
            if any(d < 0 for d in s):
                continue
            if s != shapes[t]:
                differs.append((t, shapes[t], s, op.index))
                shapes[t] = s
                values.pop(t, None)
        if op.outputs and op.outputs[0] >= 0:
            _compute_value(op, shapes, values)
    return StoredShapeCheck(tuple(differs), tuple(unconfirmed))
