"""The operator registry: op name -> :class:`~viewer.ops.types.OpSpec`.

One entry per operator, grouped by family (one module each), the way LiteRT registers its
builtin kernels (tflite/kernels/register.cc). Adding an operator means adding one entry to its
family's ``ENTRIES``, with a row in tests/ops/test_registry.py.
"""

from __future__ import annotations

from typing import Mapping

from viewer.model.types import Operator, Subgraph
from viewer.ops import conv, elementwise, indexing, layout, pool
from viewer.ops.types import (
    InPlace,
    NotLocal,
    OpSpec,
    PersistentRoRule,
    Region,
    Shape,
    ShapeContext,
    TemporaryEstimate,
)

#: Operators known only for their runtime rules (no shape rule here).
_RUNTIME_ONLY = [
    OpSpec("RANK", "runtime", persistent_ro=PersistentRoRule((), source="rank.cc")),
    OpSpec("RANGE", "runtime", persistent_ro=PersistentRoRule((0, 1, 2), source="range.cc (start, limit, delta)")),
    OpSpec("BROADCAST_ARGS", "runtime",
           persistent_ro=PersistentRoRule((0, 1), source="broadcast_args.cc (shape1, shape2)")),
    # DENSIFY's input must be constant: its output always goes to the persistent arena.
    OpSpec("DENSIFY", "runtime", persistent_folding=True),
    OpSpec("BITCAST", "runtime", inplace=InPlace((0,), True)),
    OpSpec("DYNAMIC_UPDATE_SLICE", "runtime", inplace=InPlace((0,), False)),
    # READ_VARIABLE makes its output dynamic in Prepare when it has no dims (scalar/unranked in
    # the file; a ranked one stays in the arena): read_variable.cc; measured, LiteRT 2.3.
    OpSpec("READ_VARIABLE", "runtime", dynamic_output=True),
]


def _build() -> dict[str, OpSpec]:
    out: dict[str, OpSpec] = {}
    for family in (elementwise, conv, pool, layout, indexing):
        for spec in family.ENTRIES:
            assert spec.name not in out, spec.name
            out[spec.name] = spec
    for spec in _RUNTIME_ONLY:
        assert spec.name not in out, spec.name
        out[spec.name] = spec
    return out


#: Every registered operator, by op name.
REGISTRY: Mapping[str, OpSpec] = _build()
_UNKNOWN: dict[str, OpSpec] = {}


def get(name: str) -> OpSpec:
    """The entry for op ``name``; an empty entry (nothing known) for an unregistered name."""
    spec = REGISTRY.get(name)
    if spec is None:
        spec = _UNKNOWN.setdefault(name, OpSpec(name, "unknown", not_local=f"{name}: an operator we know nothing about"))
    return spec


#: Operators with a shape rule (what our shape inference covers).
SHAPE_OPS = frozenset(n for n, s in REGISTRY.items() if s.shapes is not None)


def receptive_field(op: Operator, shapes: Mapping[int, Shape], out_region: Region,
                    values: Mapping | None = None) -> list:
    """The region of each input that ``op``'s output region needs.

    Parameters
    ----------
    op : Operator
    shapes : Mapping[int, tuple of int]
        Tensor index -> shape (NHWC for spatial tensors).
    out_region : tuple of int
        (y0, y1, x0, x1) of the op's first output, half-open, in its H and W.
    values : Mapping[int, numpy.ndarray], optional
        Known small constants (PAD's paddings).

    Returns
    -------
    list
        One item per input position: a region (unclipped: what lies outside the input is the
        kernel's padding) or None for an input that is not spatial and is read whole.

    Raises
    ------
    NotLocal
        When the operator is not spatially local; the message says why.
    """
    spec = get(op.op_name)
    if op.is_custom:
        raise NotLocal(f"custom operator {op.op_name}: its receptive field is unknown")
    if spec.receptive is None:
        raise NotLocal(spec.not_local or f"{op.op_name}: receptive field not known")
    return list(spec.receptive(op, ShapeContext(shapes, values or {}), tuple(out_region)))


def macs(op: Operator, shapes: Mapping[int, Shape]) -> int:
    """Multiply-accumulates of one invocation of ``op`` at ``shapes``.

    Counted for the linear operators (CONV_2D: out elements x KH x KW x IC; DEPTHWISE_CONV_2D:
    out elements x KH x KW; TRANSPOSE_CONV, FULLY_CONNECTED, BATCH_MATMUL); 0 for every other
    operator (element-wise, pooling and layout ops do no multiply-accumulates worth counting).
    """
    spec = get(op.op_name)
    return int(spec.macs(op, shapes)) if spec.macs is not None else 0


def estimate_temporaries(op: Operator, shapes: Mapping[int, Shape], dtypes: Mapping[int, str]) -> tuple:
    """Kernel temporaries LiteRT's Prepare allocates for ``op``, estimated from shapes.

    Parameters
    ----------
    op : Operator
    shapes, dtypes : Mapping[int, ...]
        Tensor index -> shape and lower-case dtype name.

    Returns
    -------
    tuple of TemporaryEstimate
        Empty when the kernel allocates none we know of (or the op has no estimate).
    """
    spec = get(op.op_name)
    if spec.temporaries is None:
        return ()
    return tuple(spec.temporaries(op, shapes, dtypes))


def subgraph_temporaries(subgraph: Subgraph, shapes: Mapping[int, Shape] | None = None,
                         dtypes: Mapping[int, str] | None = None) -> list[tuple[int, TemporaryEstimate]]:
    """(operator index, estimate) for every estimated kernel temporary of ``subgraph``."""
    shapes = shapes or {t.index: tuple(t.shape) for t in subgraph.tensors}
    dtypes = dtypes or {t.index: t.dtype for t in subgraph.tensors}
    return [(op.index, e) for op in subgraph.operators for e in estimate_temporaries(op, shapes, dtypes)]


def scale_temporary(op: Operator, temp_dtype: str, measured_nbytes: int, input_dtype: str,
                    old_itemsize_bits: int, new_itemsize_bits: int) -> int:
    """A measured kernel temporary's bytes after the op's input changes element size.

    For storage what-ifs: a temporary that holds a copy of the input in the input's type
    (im2col of CONV_2D: :attr:`TemporaryEstimate.follows_input`) scales with the input's element
    size; any other temporary (MEAN's int32 index and accumulator, ...) keeps its measured size.

    Parameters
    ----------
    op : Operator
    temp_dtype : str
        The measured temporary's dtype (``RuntimeTensor.dtype``).
    measured_nbytes : int
        Its measured bytes.
    input_dtype : str
        The op's first input's dtype as measured.
    old_itemsize_bits, new_itemsize_bits : int
        Storage bits per element of that input before and after the what-if.

    Returns
    -------
    int
        Bytes, rounded up (ceil) for sub-byte types.
    """
    follows = get(op.op_name).temporaries_follow_input and temp_dtype == input_dtype
    if not follows or old_itemsize_bits <= 0:
        return int(measured_nbytes)
    return -(-int(measured_nbytes) * int(new_itemsize_bits) // int(old_itemsize_bits))


__all__ = [
    "REGISTRY", "SHAPE_OPS", "get", "receptive_field", "macs", "estimate_temporaries",
    "subgraph_temporaries", "scale_temporary", "NotLocal", "OpSpec",
]
